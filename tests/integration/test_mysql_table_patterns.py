"""Source table patterns on a real MariaDB follow the apply side's glob rule (cdc/schema/table_glob.py).

``db.order_*`` takes ``order_items`` (``_`` is a plain character, ``*`` any run of characters) and
neither ``orders`` nor ``orders_archive``; the same tables in the initial snapshot and in the binlog."""

from __future__ import annotations

import pytest

from cdc.stream.events import Change
from readers.mysql.position import GtidSet
from tests.integration.mysql_helpers import collect, source_for, transactions

pytestmark = pytest.mark.mysql


def test_glob_pattern_captures_the_same_tables_in_snapshot_and_binlog(mysql_source, tmp_source_db):
    db, q = tmp_source_db, mysql_source.query
    for t in ("order_items", "orderXitems", "orders", "orders_archive"):
        q(f"CREATE TABLE `{db}`.`{t}` (id INT PRIMARY KEY)")
        q(f"INSERT INTO `{db}`.`{t}` VALUES (1)")
    src = source_for(mysql_source, [f"{db}.order_*"], snapshot="initial")
    src.start(None)
    for t in ("order_items", "orderXitems", "orders", "orders_archive"):
        q(f"INSERT INTO `{db}`.`{t}` VALUES (2)")
    end = GtidSet.parse(mysql_source.gtid_binlog_pos())
    try:
        events = collect(src, lambda evs: src.state.issuperset(end), timeout=30)
    finally:
        src.close()
    rows = [(ch.table.table, ch.op, ch.after["id"]) for _, chs in transactions(events) for ch in chs]
    assert rows == [("order_items", "r", 1), ("order_items", "c", 2)]
    assert all(ev.table.db == db for ev in events if isinstance(ev, Change))


def test_shadow_source_expands_the_same_glob(mariadb_primary, tmp_mysql_db):
    from cdc.contract import SourceContext
    from cdc.metrics import SourceMetrics
    from readers.shadow.config import ShadowSourceConfig
    from readers.shadow.reader import ShadowSource

    db, q = tmp_mysql_db, mariadb_primary.query
    for t in ("order_items", "orders_archive"):
        q(f"CREATE TABLE `{db}`.`{t}` (id INT PRIMARY KEY)")
        q(f"INSERT INTO `{db}`.`{t}` VALUES (1)")
    cfg = ShadowSourceConfig(name="sh", dsn=f"mysql://cdc:cdc@{mariadb_primary.address}/{db}",
                             tables=[f"{db}.order_*"], shadow_schema=f"{db}_shadow"[:60])
    src = ShadowSource(cfg, SourceContext(metrics=SourceMetrics("sh")))
    src.start(None)
    try:
        rows = [(ev.table.table, ev.op) for ev in src.run_cycle() if isinstance(ev, Change)]
    finally:
        src.close()
        q(f"DROP DATABASE IF EXISTS `{db}_shadow`")
    assert rows == [("order_items", "r")]
