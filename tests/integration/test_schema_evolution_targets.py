"""Column DDL through the engine (no Spark) on every SQL target kind (tests/fixtures/targets.py): the SQL each dialect writes
for a backfilled add, rename, retype, NULL change and the value checks of a narrowing, and lenient."""

from __future__ import annotations

import decimal

import pytest

from cdc.config.models import ApplyConfig
from cdc.schema.evolution import SchemaChangeConfig
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.errors import UnsupportedDdl
from streaming.testing import StreamBuilder
from tests.integration.test_apply_targets import target  # noqa: F401 - the fixture: every conformance kind

pytestmark = [pytest.mark.postgres, pytest.mark.mysql]

BASE = [("id", "int", False), ("name", "varchar(20)"), ("amount", "decimal(10,2)"), ("n", "bigint")]


def _engine(t, behavior: str = "evolve") -> ApplyEngine:
    cfg = ApplyConfig(source="src", target=t.name, schema_changes=SchemaChangeConfig(behavior=behavior))
    e = ApplyEngine("src", t, TableMap.from_config(cfg))
    e.catalog.policy = cfg.schema_changes
    return e.start()


def _rows(t, cols: str) -> list[tuple]:
    out = [tuple(str(v) if isinstance(v, decimal.Decimal) else v for v in r)
           for r in t.execute(f"SELECT {cols} FROM {t.qualified('acct')} ORDER BY id").fetchall()]
    t.commit()
    return out


def _base() -> StreamBuilder:
    b = StreamBuilder().schema("shop.acct", BASE, ["id"])
    b.tx(("c", "shop.acct", None, {"id": 1, "name": "a", "amount": "1.50", "n": 7}),
         ("c", "shop.acct", None, {"id": 2, "name": "it's", "amount": "22.25", "n": 8}))
    return b


def test_evolve_on_each_sql_target(target):  # noqa: F811
    t = target
    b = _base()
    b.schema("shop.acct", BASE + [("tier", "varchar(10)", False, "'gold'")], ["id"],
             ddl="ALTER TABLE acct ADD COLUMN tier VARCHAR(10) NOT NULL DEFAULT 'gold' FIRST")
    cols = [("id", "int", False), ("label", "varchar(20)", False), ("amount", "decimal(12,3)"), ("n", "int"),
            ("tier", "varchar(10)", False, "'gold'")]
    b.schema("shop.acct", cols, ["id"], ddl="ALTER TABLE acct CHANGE name label VARCHAR(20) NOT NULL, "
                                            "MODIFY amount DECIMAL(12,3), MODIFY n INT")
    b.tx(("c", "shop.acct", None, {"id": 3, "label": "c", "amount": "3.125", "n": 9, "tier": "x"}))
    e = _engine(t)
    e.apply_records(b.as_records(), 0)
    assert _rows(t, "id, label, amount, n, tier") == [
        (1, "a", "1.500", 7, "gold"), (2, "it's", "22.250", 8, "gold"), (3, "c", "3.125", 9, "x")]


def test_constant_default_fills_and_narrowing_checks_values(target):  # noqa: F811
    t = target
    b = _base()
    b.schema("shop.acct", BASE + [("tier", "varchar(10)", False, "'o''k'")], ["id"],
             ddl="ALTER TABLE acct ADD COLUMN tier VARCHAR(10) NOT NULL DEFAULT 'o''k'")
    b.schema("shop.acct", [("id", "int", False), ("name", "varchar(20)"), ("amount", "decimal(4,1)"),
                           ("n", "bigint"), ("tier", "varchar(10)", False, "'o''k'")], ["id"],
             ddl="ALTER TABLE acct MODIFY amount DECIMAL(4,1)")
    stop = b.seq - 1
    e = _engine(t)
    with pytest.raises(UnsupportedDdl) as info:
        e.apply_records(b.as_records(), 0)
    # 1.50 fits DECIMAL(4,1) as 1.5; 22.25 would be rounded
    assert info.value.fields["column"] == "amount" and info.value.fields["key"] == {"id": 2}
    assert str(info.value.fields["value"]) == "22.25"
    assert info.value.sequence == stop
    assert _rows(t, "id, tier") == [(1, "o'k"), (2, "o'k")]


def test_lenient_keeps_the_old_column_beside_the_renamed_one(target):  # noqa: F811
    t = target
    b = _base()
    b.schema("shop.acct", [("id", "int", False), ("label", "varchar(20)"), ("amount", "decimal(10,2)"),
                           ("n", "bigint")], ["id"], ddl="ALTER TABLE acct RENAME COLUMN name TO label")
    b.tx(("c", "shop.acct", None, {"id": 3, "label": "c", "amount": "3.00", "n": 1}))
    e = _engine(t, "lenient")
    e.apply_records(b.as_records(), 0)
    assert _rows(t, "id, name, label") == [(1, "a", "a"), (2, "it's", "it's"), (3, None, "c")]


def test_a_swap_of_column_names_moves_the_values_also_after_a_failure_halfway(target, monkeypatch):  # noqa: F811
    """``CHANGE name n ..., CHANGE n name ..., ADD z``: the names move through temporary ones; the ADD fails the
    first time, after the moves, and the batch run again moves them once. A target whose DDL commits on its own
    (MySQL, Oracle) cannot tell a finished exchange from none: it stops with the way back."""
    t = target
    if t.ddl_commits:
        b = _base()
        b.schema("shop.acct", [("id", "int", False), ("n", "varchar(20)"), ("amount", "decimal(10,2)"),
                               ("name", "bigint")], ["id"], ddl="ALTER TABLE acct CHANGE name n VARCHAR(20), "
                                                                "CHANGE n name BIGINT")
        with pytest.raises(UnsupportedDdl) as info:
            _engine(t).apply_records(b.as_records(), 0)
        assert "exchanged" in str(info.value) and "cdc schema accept" in str(info.value)
        return
    b = _base()
    b.schema("shop.acct", [("id", "int", False), ("n", "varchar(20)"), ("amount", "decimal(10,2)"),
                           ("name", "bigint"), ("z", "int", True, "1")], ["id"],
             ddl="ALTER TABLE acct CHANGE name n VARCHAR(20), CHANGE n name BIGINT, ADD COLUMN z INT DEFAULT 1")
    b.tx(("c", "shop.acct", None, {"id": 3, "n": "c", "amount": "3.00", "name": 9, "z": 2}))
    real = type(t).evolve_add

    def fail(self, *args, **kwargs):
        raise RuntimeError("the target went away")

    monkeypatch.setattr(type(t), "evolve_add", fail)
    with pytest.raises(Exception, match="went away"):
        _engine(t).apply_records(b.as_records(), 0)
    t.rollback()
    monkeypatch.setattr(type(t), "evolve_add", real)
    _engine(t).apply_records(b.as_records(), 1)
    assert _rows(t, "id, name, n, z") == [(1, 7, "a", 1), (2, 8, "it's", 1), (3, 9, "c", 2)]
