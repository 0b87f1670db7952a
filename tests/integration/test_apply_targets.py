"""Each SQL target through the engine (no Spark): bulk paths, keyless tables, bad values. Part of the target
conformance suite: every registered SQL kind runs it (tests/fixtures/targets.py).

Real PostgreSQL and MariaDB. The same stream must leave every target with the
same rows; a value the target cannot hold stops with table, key and sequence.
"""

from __future__ import annotations

import pytest

from cdc.config.models import ApplyConfig
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.errors import BadRecord
from streaming.targets import make_target
from streaming.testing import StreamBuilder
from tests.fixtures.targets import conformance_kinds, fresh_target_config

pytestmark = [pytest.mark.postgres, pytest.mark.mysql]

COLS = [("id", "bigint unsigned"), ("name", "varchar(20)"), ("amount", "decimal(10,2)"), ("at", "datetime(6)"),
        ("blob", "varbinary(8)")]


@pytest.fixture(params=conformance_kinds())
def target(request, tmp_path):
    t = make_target(fresh_target_config(request, tmp_path, request.param))
    yield t
    t.close()


def _rows(t, table):
    cols = ", ".join(t.quote(c) for c in ("id", "name", "amount", "at"))  # AT: a keyword of DuckDB
    cur = t.execute(f"SELECT {cols} FROM {t.qualified(table)} ORDER BY id")
    out = [(int(r[0]), r[1], str(r[2]), r[3].isoformat()) for r in cur.fetchall()]
    t.commit()
    return out


def test_bulk_and_row_paths_agree(target):
    b = StreamBuilder().schema("shop.big", COLS, ["id"]).schema("shop.bag", [("v", "int")], [])
    model = {}
    for chunk in range(3):
        ops = []
        for i in range(chunk * 400, chunk * 400 + 400):
            row = {"id": 2**63 + i, "name": f"n{i}", "amount": f"{i}.50", "at": f"2024-01-02T03:04:05.{i:06d}",
                   "blob": "AAE="}
            ops.append(("c", "shop.big", None, row))
            model[row["id"]] = row
        for i in range(chunk * 400, chunk * 400 + 400, 3):  # deletes and updates of existing rows
            old = model.pop(2**63 + i)
            ops.append(("d", "shop.big", old, None))
        ops += [("c", "shop.bag", None, {"v": 1}), ("c", "shop.bag", None, {"v": 1})]
        b.tx(*ops)
    b.tx(("d", "shop.bag", {"v": 1}, None))
    e = ApplyEngine("src", target, TableMap.from_config(ApplyConfig(source="src", target=target.name))).start()
    e.apply_records(b.as_records(), 0)
    want = [(k, r["name"], r["amount"], r["at"]) for k, r in sorted(model.items())]
    assert _rows(target, "big") == want
    cur = target.execute(f"SELECT count(*) FROM {target.qualified('bag')}")
    assert cur.fetchone()[0] == 5
    target.commit()


@pytest.fixture(params=conformance_kinds(lambda cls: cls.text_lengths))
def length_target(request, tmp_path):
    t = make_target(fresh_target_config(request, tmp_path, request.param))
    yield t
    t.close()


def test_value_target_cannot_hold_is_named(length_target):
    target = length_target
    b = StreamBuilder().schema("shop.small", [("id", "int"), ("name", "varchar(3)")], ["id"])
    b.tx(("c", "shop.small", None, {"id": 1, "name": "abc"}), ("c", "shop.small", None, {"id": 2, "name": "abcdef"}))
    e = ApplyEngine("src", target, TableMap.from_config(ApplyConfig(source="src", target=target.name))).start()
    with pytest.raises(BadRecord) as info:
        e.apply_records(b.as_records(), 0)
    err = info.value
    assert err.table == "shop.small" and err.key == {"id": 2} and err.sequence == 4
    assert err.value["name"] == "abcdef"


def test_columnar_bulk_path_values_conflicts_and_extra_columns(target):
    """Enough rows for the bulk JSON path: awkward text, binary, NULLs, key moves; a row already in the
    target (changed behind our back) and an unknown column send the batch down the record path."""
    cols = [("id", "int"), ("name", "varchar(40)"), ("blob", "varbinary(8)")]
    names = ['a "quoted", comma', "new\nline", "", None, "é ü 😀", "back\\slash", "null", "x" * 40]
    b = StreamBuilder().schema("shop.odd", cols, ["id"])
    model = {i: {"id": i, "name": names[i % len(names)], "blob": "AAE=" if i % 3 else None} for i in range(300)}
    b.tx(*[("c", "shop.odd", None, r) for r in model.values()])
    e = ApplyEngine("src", target, TableMap.from_config(ApplyConfig(source="src", target=target.name))).start()
    e.apply_records(b.as_records(), 0)
    ops = []
    for i in range(0, 300, 7):  # key moves, updates, deletes, insert+delete
        old = model.pop(i)
        new = {**old, "id": 1000 + i, "name": "moved"}
        ops.append(("u", "shop.odd", old, new))
        model[new["id"]] = new
    for i in range(1, 300, 7):
        old = model[i]
        model[i] = {**old, "name": "upd"}
        ops.append(("u", "shop.odd", old, model[i]))
    for i in range(2, 300, 7):
        ops.append(("d", "shop.odd", model.pop(i), None))
    ops += [("c", "shop.odd", None, {"id": 5000 + i, "name": "n", "blob": None}) for i in range(250)]
    ops += [("d", "shop.odd", {"id": 5000 + i, "name": "n", "blob": None}, None) for i in range(0, 250, 2)]
    model.update({5000 + i: {"id": 5000 + i, "name": "n", "blob": None} for i in range(1, 250, 2)})
    b.tx(*ops)
    target.execute(f"INSERT INTO {target.qualified('odd')} (id, name) VALUES (5001, 'behind our back')")
    target.commit()
    e.apply_records(b.as_records(), 1)  # the first transaction is a replay now: skipped by sequence

    def rows():
        cur = target.execute(f"SELECT id, name, {target.quote('blob')} FROM {target.qualified('odd')} ORDER BY id")
        out = [(int(r[0]), r[1], bytes(r[2]) if r[2] is not None else None) for r in cur.fetchall()]
        target.commit()
        return out

    def blob(v):
        return b"\x00\x01" if v else None

    assert rows() == [(k, r["name"], blob(r["blob"])) for k, r in sorted(model.items())]
    b.tx(*[("c", "shop.odd", None, {"id": 9000 + i, "name": "z", "blob": None, **({"zz": 1} if i == 7 else {})})
           for i in range(250)])
    with pytest.raises(BadRecord, match="zz") as info:
        e.apply_records(b.as_records(), 2)
    assert info.value.table == "shop.odd" and info.value.sequence is not None


def test_a_resync_range_deletes_what_it_does_not_keep_with_unsigned_and_composite_keys(target):
    from cdc.stream.resync_range import ResyncRange

    cols = [("a", "bigint unsigned"), ("b", "int"), ("v", "int")]
    b = StreamBuilder().schema("shop.pair", cols, ["a", "b"])
    big = 2**63
    b.tx(*[("c", "shop.pair", None, {"a": a, "b": k, "v": 0}) for a in (1, big) for k in range(5)])
    rng = ResyncRange(("a", "b"), (1, 2), (big, 1), frozenset({(1, 3), (big, 0)}))
    b.tx(("r", "shop.pair", None, {"a": 1, "b": 3, "v": 1}), ("r", "shop.pair", None, {"a": big, "b": 0, "v": 1}),
         ("x", "shop.pair", None, None, {"resync": rng.to_text()}))
    e = ApplyEngine("src", target, TableMap.from_config(ApplyConfig(source="src", target=target.name))).start()
    e.apply_records(b.as_records(), 0)
    cur = target.execute(f"SELECT a, b, v FROM {target.qualified('pair')} ORDER BY a, b")
    got = [(int(a), int(k), int(v)) for a, k, v in cur.fetchall()]
    target.commit()
    # (1, 4) and (big, 1) were in the range and not kept; (1, 0..2) and (big, 2..4) lie outside it
    assert got == [(1, 0, 0), (1, 1, 0), (1, 2, 0), (1, 3, 1), (big, 0, 1), (big, 2, 0), (big, 3, 0), (big, 4, 0)]
