"""Maintained views across a schema change of a base table, through the apply engine (no Spark) on real
PostgreSQL and MariaDB targets: ADD COLUMN keeps the view equal to its recomputation; a DROP of a column the
view reads stops naming view, table, statement and sequence; after the definition is edited and
`cdc views rebuild` ran, the apply goes on."""

from __future__ import annotations

import pytest

from cdc.config.models import ApplyConfig
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.testing import StreamBuilder
from streaming.views import maintainer
from streaming.views.errors import ViewError
from tests.integration.test_apply_targets import target  # noqa: F401 - the fixture (PostgreSQL, MariaDB)

pytestmark = [pytest.mark.postgres, pytest.mark.mysql]

BASE = [("id", "int", False), ("grp", "varchar(10)"), ("qty", "int")]
VIEW = {"name": "by_grp", "sql": "SELECT t.grp, COUNT(*) AS n, SUM(t.qty) AS total FROM t GROUP BY t.grp"}
EDITED = {"name": "by_grp", "sql": "SELECT t.grp, COUNT(*) AS n FROM t GROUP BY t.grp"}


def _engine(t, views: list[dict]) -> ApplyEngine:
    cfg = ApplyConfig(source="src", target=t.name, views=views)
    e = ApplyEngine("src", t, TableMap.from_config(cfg), views=cfg.views)
    if t.dialect == "postgres":  # views name their tables unqualified: the target's schema first
        t.open()
        t.execute(f"SET search_path TO {t.schema}")
        t.commit()
    return e.start()


def _q(t, sql: str) -> list[tuple]:
    out = [tuple(int(v) if hasattr(v, "as_integer_ratio") and not isinstance(v, float) else v for v in r)
           for r in t.execute(sql).fetchall()]
    t.commit()
    return out


def test_add_column_then_drop_of_a_read_column_then_edit_and_rebuild(target):  # noqa: F811
    t = target
    b = StreamBuilder().schema("shop.t", BASE, ["id"])
    b.tx(*[("c", "shop.t", None, {"id": i, "grp": "ab"[i % 2], "qty": i}) for i in range(1, 7)])
    _engine(t, []).apply_records(b.as_records(), 0)  # MariaDB: views are built at start, over existing tables
    b0, b = b, StreamBuilder(start_sequence=b.seq)
    b.schemas = b0.schemas
    b.tx(("u", "shop.t", {"id": 1, "grp": "b", "qty": 1}, {"id": 1, "grp": "a", "qty": 100}))
    added = BASE + [("tier", "varchar(10)", True, "'std'")]
    b.schema("shop.t", added, ["id"], ddl="ALTER TABLE t ADD COLUMN tier VARCHAR(10) DEFAULT 'std'")
    b.tx(("c", "shop.t", None, {"id": 7, "grp": "b", "qty": 7, "tier": "gold"}),
         ("d", "shop.t", {"id": 2, "grp": "a", "qty": 2, "tier": "std"}, None))
    e = _engine(t, [VIEW])
    e.apply_records(b.as_records(50), 1)
    recompute = "SELECT grp, COUNT(*), SUM(qty) FROM t GROUP BY grp ORDER BY grp"
    assert _q(t, "SELECT grp, n, total FROM by_grp ORDER BY grp") == _q(t, recompute) == [("a", 3, 110), ("b", 3, 15)]

    b2 = StreamBuilder(start_sequence=b.seq)
    b2.schemas = b.schemas
    b2.tx(("c", "shop.t", None, {"id": 9, "grp": "a", "qty": 9, "tier": "x"}))
    ddl = "ALTER TABLE t DROP COLUMN qty"
    b2.schema("shop.t", [c for c in added if c[0] != "qty"], ["id"], ddl=ddl)
    at = b2.seq - 1
    b2.tx(("c", "shop.t", None, {"id": 10, "grp": "b", "tier": "y"}))
    with pytest.raises(ViewError) as info:
        e.apply_records(b2.as_records(100), 2)
    msg = str(info.value)
    assert info.value.fields["column"] == "qty" and info.value.sequence == at
    assert ddl in msg and f"sequence {at}" in msg and "cdc views rebuild --config <file> --view by_grp" in msg
    assert t.read_progress("src").last_sequence == at
    t.rollback()
    assert _q(t, "SELECT mode FROM cdc_views") == [("stopped",)]
    assert _q(t, "SELECT grp, n, total FROM by_grp ORDER BY grp") == [("a", 4, 119), ("b", 3, 15)]

    t.begin()
    assert maintainer.rebuild(t, [EDITED]) == ["by_grp"]  # what `cdc views rebuild` runs
    t.commit()
    e2 = _engine(t, [EDITED])
    e2.apply_records(b2.as_records(100), 3)
    assert t.read_progress("src").last_sequence == b2.seq - 1
    t.rollback()
    assert _q(t, "SELECT grp, n FROM by_grp ORDER BY grp") == _q(t, "SELECT grp, COUNT(*) FROM t GROUP BY grp "
                                                                   "ORDER BY grp") == [("a", 4), ("b", 4)]
