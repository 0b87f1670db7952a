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
