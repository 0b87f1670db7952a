"""Helpers for the MySQL reader integration tests: build a reader, collect its events."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cdc.contract import SourceContext
from cdc.metrics import SourceMetrics
from cdc.stream.events import Begin, Change, Commit, Heartbeat, SchemaChange
from cdc.stream.events import expand as expand_events
from readers.mysql.config import MySqlSourceConfig
from readers.mysql.reader import MySqlSource
from tests.fixtures.services import capture_login


def make_source(hosts: list[str], tables: list[str], name: str = "src", **kw: Any) -> MySqlSource:
    cfg = MySqlSourceConfig(name=name, hosts=hosts, user=kw.pop("user", "cdc"), password=kw.pop("password", "cdc"),
                            tables=tables, heartbeat_interval_s=kw.pop("heartbeat_interval_s", 0.3),
                            reconnect_backoff_s=kw.pop("reconnect_backoff_s", 0.2),
                            snapshot=kw.pop("snapshot", "never"), **kw)
    return MySqlSource(cfg, SourceContext(metrics=SourceMetrics(name)))


def collect(src: MySqlSource, until: Callable[[list[Any]], bool], timeout: float = 30,
            expand: bool = True) -> list[Any]:
    """Iterate events() until ``until(events)`` holds at a heartbeat or commit; bounded by ``timeout``.
    ``expand``: every ChangeBatch (rows the native pass decoded) as its Changes."""
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    for ev in (expand_events(src.events()) if expand else src.events()):
        out.append(ev)
        if isinstance(ev, (Heartbeat, Commit, SchemaChange)) and until(out):
            src.request_stop()
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s with {len(out)} events; last: {out[-3:]}")
    return out


def transactions(events: list[Any]) -> list[tuple[str, list[Change]]]:
    """[(gtid, changes)] of complete transactions, checking Begin/Commit pairing."""
    out, cur, rows = [], None, []
    for ev in events:
        if isinstance(ev, Begin):
            assert cur is None, f"Begin {ev.txid} inside {cur}"
            cur, rows = ev.txid, []
        elif isinstance(ev, Change):
            assert cur is not None
            rows.append(ev)
        elif isinstance(ev, Commit):
            assert ev.txid == cur
            out.append((cur, rows))
            cur = None
    return out


def marks(events: list[Any], table: str = "log") -> list[int]:
    """The ``id`` values inserted into the workload's log table, in stream order."""
    return [ch.after["id"] for _, rows in transactions(events) for ch in rows
            if ch.table.table == table and ch.op == "c"]


def is_mysql(db: Any) -> bool:
    """Whether ``db`` is an Oracle MySQL server (cdc.dev.mysql.MySQL), not MariaDB."""
    from cdc.dev.mysql import MySQL

    return isinstance(db, MySQL)


def source_for(db: Any, tables: list[str], **kw: Any) -> MySqlSource:
    """``make_source`` on ``db`` with the user a test should capture as: on MySQL 9.7 the session server's
    user made by the documented MySQL 8 statements (``capture_user``), else cdc/cdc."""
    user, password = capture_login(db)
    kw.setdefault("user", user)
    kw.setdefault("password", password)
    return make_source([db.address], tables, **kw)


def fill_sql(table: str, n: int, columns: str = "seq, seq") -> str:
    """One ``INSERT ... SELECT`` writing ``n`` rows (``seq`` = 1..n) into ``table``, on MariaDB and MySQL alike:
    a recursive CTE (its depth limit raised first: see ``fill``)."""
    return (f"INSERT INTO {table} WITH RECURSIVE s(seq) AS (SELECT 1 UNION ALL SELECT seq + 1 FROM s "
            f"WHERE seq < {n}) SELECT {columns} FROM s")


def fill(db: Any, table: str, n: int, columns: str = "seq, seq") -> None:
    """Write rows 1..n into ``table`` in one transaction (see ``fill_sql``)."""
    conn = db.connect()
    try:
        with conn.cursor() as cur:
            limit = "cte_max_recursion_depth" if is_mysql(db) else "max_recursive_iterations"
            cur.execute(f"SET SESSION {limit} = {n + 1}")
            cur.execute(fill_sql(table, n, columns))
            cur.execute("COMMIT")
    finally:
        conn.close()


def gtid_since(db: Any, before: str) -> str:
    """The one GTID ``db`` wrote since its GTID state was ``before`` (``gtid_binlog_pos()`` text): MariaDB
    ``domain-server-seq``, MySQL ``uuid:n``."""
    from readers.mysql.position import GtidSet

    return str(GtidSet.parse(db.gtid_binlog_pos()) - GtidSet.parse(before))
