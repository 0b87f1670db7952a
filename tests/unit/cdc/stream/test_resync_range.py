"""cdc.resync_range: the key range of a resync chunk, its SQL and which target keys it deletes."""

from __future__ import annotations

import duckdb
import pytest

from cdc.stream.resync_range import ResyncRange, ResyncRangeError, integer_key, range_sql
from readers.mysql.types import logical_type


def _sql_keys(key: tuple[str, ...], after, through, rows: list[tuple]) -> list[tuple]:
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t ({', '.join(f'{k} BIGINT' for k in key)})")
    con.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(key))})", rows)
    where, params = range_sql(lambda n: f'"{n}"', "?", key, after, through)
    return sorted(con.execute(f"SELECT * FROM t WHERE {where}", params).fetchall())


@pytest.mark.parametrize(("after", "through"), [(None, None), (None, (1, 5)), ((1, 5), (2, 3)), ((2, 3), None),
                                               ((0, 9), (1, 0)), ((1, 1), (1, 1))])
def test_composite_range_in_sql_is_the_lexicographic_order(after, through):
    rows = [(a, b) for a in range(4) for b in range(8)]
    rng = ResyncRange(("a", "b"), after, through, frozenset())
    assert _sql_keys(("a", "b"), after, through, rows) == sorted(k for k in rows if rng.contains(k))


def test_three_column_key_and_single_column_key():
    rows3 = [(a, b, c) for a in range(3) for b in range(3) for c in range(3)]
    rng = ResyncRange(("a", "b", "c"), (0, 2, 1), (2, 0, 1), frozenset())
    assert _sql_keys(("a", "b", "c"), (0, 2, 1), (2, 0, 1), rows3) == sorted(k for k in rows3 if rng.contains(k))
    assert _sql_keys(("id",), (3,), (6,), [(i,) for i in range(10)]) == [(4,), (5,), (6,)]


def test_doomed_keys_are_in_range_and_neither_in_the_chunk_nor_changed_in_the_window():
    # chunk read keys 2, 3, 5 (after 1, through 6); the stream changed 4 (inserted) and 9 (outside) in the window
    rng = ResyncRange(("id",), (1,), (6,), frozenset({(2,), (3,), (5,), (4,), (9,)}))
    target = [(1,), (2,), (3,), (4,), (5,), (6,), (7,), (8,)]
    assert rng.doomed(target) == [(6,)]  # 1 is the previous chunk's, 7 and 8 the next one's


def test_first_and_last_chunk_are_open_and_an_empty_table_deletes_all_but_the_window():
    empty = ResyncRange(("id",), None, None, frozenset({(3,)}))
    assert empty.doomed([(1,), (3,), (10 ** 18,)]) == [(1,), (10 ** 18,)]
    last = ResyncRange(("id",), (5,), None, frozenset())
    assert last.doomed([(5,), (6,), (2 ** 64 - 1,)]) == [(6,), (2 ** 64 - 1,)]


def test_text_round_trip_and_unsigned_keys_beyond_64_bits_as_text():
    rng = ResyncRange(("a", "b"), (1, 2), None, frozenset({(1, 3), (2, 0)}))
    assert ResyncRange.from_text(rng.to_text(), "d.t") == rng
    big = ResyncRange.from_text('{"key":["id"],"after":["18446744073709551610"],"through":null,"keep":[]}', "d.t")
    assert big.after == (18446744073709551610,)


@pytest.mark.parametrize("text", [None, "{}", "[1]", '{"key":["id"],"after":[1,2],"through":null,"keep":[]}',
                                  '{"key":["id"],"after":null,"through":null,"keep":[["x"]]}',
                                  '{"key":[],"after":null,"through":null,"keep":[]}'])
def test_a_record_that_is_not_a_range_is_refused_naming_the_table(text):
    with pytest.raises(ResyncRangeError, match="resync range record of d.t does not decode"):
        ResyncRange.from_text(text, "d.t")


def test_only_integer_keys_qualify():
    def ints(*texts: str) -> bool:  # the MySQL reader's reading of its key column types
        return integer_key([logical_type(t) for t in texts])

    assert ints("int", "bigint unsigned", "tinyint(3)")
    assert not ints("int", "varchar(20)") and not ints("decimal(10,0)") and not ints()
