"""Pool mode (SQL_REDO parsed in a worker process): the same events, in the same order, as inline parsing."""

from __future__ import annotations

import pytest

from cdc.stream.events import Change
from readers.oracle.errors import DictionaryMismatch, RedoParseError
from readers.oracle.parse_pool import ParsePool
from tests.unit.readers.oracle.test_dispatcher import X1, X2, dispatcher, ins, row


@pytest.fixture(scope="module")
def pool():
    p = ParsePool(1)
    yield p
    p.close()


def _rows():
    out, scn = [], 1
    for t in range(12):
        xid = X1 if t % 2 else X2
        for i in range(t % 4 + 1):
            out.append(ins(scn, xid, t * 10 + i))
            scn += 1
        if t == 5:
            out.append(row(scn, "0000000000000000", 5, "alter table x", table="T"))  # a DDL between transactions
            scn += 1
        out.append(row(scn, xid, 7))
        scn += 1
    return out


def _drained(d, rows):
    evs = list(d.feed(rows))
    return evs + list(d.drain())


def test_pool_mode_emits_what_inline_parsing_emits(tmp_path, pool):
    rows = _rows()
    inline = list(dispatcher(tmp_path / "a").feed(rows))
    pooled = _drained(dispatcher(tmp_path / "b", pool=pool, job_rows=3, max_jobs=1), rows)
    assert [type(e) for e in pooled] == [type(e) for e in inline]
    for a, b in zip(inline, pooled):
        if isinstance(a, Change):
            assert (a.table, a.op, a.before, a.after, a.source) == (b.table, b.op, b.before, b.after, b.source)
        else:
            assert a == b


def test_pool_mode_parse_error_after_the_earlier_transactions(tmp_path, pool):
    rows = [ins(1, X2, 1), row(2, X2, 7),
            ins(3, X1, 2), row(4, X1, 1, 'insert into "APP"."T"("ID") values (oops', rid="R"), row(5, X1, 7)]
    d = dispatcher(tmp_path, pool=pool, job_rows=1)
    got = []
    with pytest.raises(RedoParseError) as err:
        for ev in d.feed(rows):
            got.append(ev)  # noqa: PERF402 -- keeps what came before the error
        for ev in d.drain():
            got.append(ev)  # noqa: PERF402
    e = err.value
    assert (e.scn, e.xid, e.table) == (4, "5.7.100", "APP.T") and "oops" in e.text and e.offset is not None
    assert [type(x).__name__ for x in got] == ["Begin", "Change", "Commit", "Begin", "Change"]
    assert d.failed and list(d.drain()) == []


def test_pool_mode_dictionary_mismatch_keeps_its_class(tmp_path, pool):
    sql = 'insert into "UNKNOWN"."OBJ# 7"("COL 1") values (HEXTORAW(\'01\'));'
    d = dispatcher(tmp_path, pool=pool)
    with pytest.raises(DictionaryMismatch):
        _drained(d, [row(1, X1, 1, sql, rid="R"), row(2, X1, 7)])
