"""What the readers tell the operations API (cdc.contract.Observable) and how a source's state shows it:
snapshotting, lag in transactions (MySQL: counted GTID sets), Oracle open transactions (dispatcher and
columnar stage, read-only)."""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from prometheus_client import CollectorRegistry

from cdc.contract import Observation
from cdc.errors import CdcError
from cdc.ops.control import SourceControl
from cdc.ops.handlers import Handlers
from cdc.ops.status_page import render
from readers.mysql import observe as mysql_observe
from readers.mysql.position import GtidSet
from readers.oracle.columnar.stage import ColumnarFeed
from readers.oracle.session import CONTENTS_COLUMNS, CONTENTS_SCHEMA
from tests.unit.readers.oracle.test_dispatcher import TS, X1, X2, dispatcher, ins, row

TS_MS = int(TS.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


# -- MySQL: lag in transactions ---------------------------------------------------------------------
def test_count_mysql_intervals_and_mariadb_domains():
    u = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    server, have = GtidSet.parse(f"{u}:1-10:20-24"), GtidSet.parse(f"{u}:1-4")
    assert mysql_observe.count(server - have, have) == 6 + 5
    server, have = GtidSet.parse("0-1-10,1-1-5"), GtidSet.parse("0-1-7")
    assert mysql_observe.count(server - have, have) == 3 + 5
    assert mysql_observe.count(have - have, have) == 0


class _Probed:
    def __init__(self, gtids: str) -> None:
        self.gtid_state = GtidSet.parse(gtids)


class _MySql:
    """What observe.py reads of a MySqlSource."""

    def __init__(self, server: str | None = "0-1-12", host: str | None = "127.0.0.1:3306") -> None:
        self.host, self.server, self.probes = host, server, 0
        self.config = type("Config", (), {"snapshot": "initial"})()
        self._snapshot_running = self._initial_snapshot = self._incremental = None

    def _prober(self, host: str) -> _Probed:
        self.probes += 1
        if self.server is None:
            raise CdcError("unreachable")
        return _Probed(self.server)


def test_lag_counts_the_server_set_minus_the_checkpoint_and_probes_at_most_every_ttl(monkeypatch):
    src = _MySql()
    lag = mysql_observe.LagCounter(src)
    assert lag.lag({"gtid_set": "0-1-9"}) == (3, None)
    assert lag.lag({"gtid_set": "0-1-12"}) == (0, None)
    assert src.probes == 1  # within LAG_TTL_S: the server's set is the one probed
    monkeypatch.setattr(mysql_observe, "LAG_TTL_S", 0.0)
    src.server = None
    n, why = lag.lag({"gtid_set": "0-1-9"})
    assert n is None and "cannot ask 127.0.0.1:3306" in why and "CdcError" in why
    assert lag.lag(None) == (None, "no checkpoint in the stream yet")
    n, why = mysql_observe.LagCounter(_MySql(host=None)).lag({"gtid_set": "0-1-1"})
    assert n is None and "not connected" in why


@dataclass
class _Initial:
    tables: list[str]
    progress: dict[str, Any]


@dataclass
class _Incremental:
    table: str | None
    queue: list[str]
    after: list | None = None
    resyncing: bool = False


def test_snapshot_state_initial_then_incremental_then_none():
    src = _MySql()
    opening = mysql_observe.snapshot_state(src, None)  # no stream yet: the reader opens its snapshot
    assert (opening["kind"], opening["table"], opening["tables_total"]) == ("initial", None, None)
    cut = mysql_observe.snapshot_state(src, {"gtid_set": "0-1-3", "snapshot": {"table": "app.b", "after": [9]}})
    assert (cut["table"], cut["after"]) == ("app.b", [9])  # a restart inside the snapshot
    src._snapshot_running = _Initial(["app.a", "app.b", "app.c"], {"table": "app.b", "after": [41], "gtid_set": "x"})
    assert mysql_observe.snapshot_state(src, None) == {"kind": "initial", "table": "app.b", "tables_done": 1,
                                                 "tables_total": 3, "after": [41], "resync": False}
    src._snapshot_running, src._incremental = None, _Incremental("app.c", ["app.d"], [7], True)
    snap = mysql_observe.snapshot_state(src, {"gtid_set": "0-1-3"})
    assert (snap["kind"], snap["table"], snap["tables_queued"], snap["after"], snap["resync"]) == \
        ("incremental", "app.c", ["app.d"], [7], True)
    src._incremental = _Incremental(None, [])
    assert mysql_observe.snapshot_state(src, {"gtid_set": "0-1-3"}) is None
    src.config.snapshot = "never"
    assert mysql_observe.snapshot_state(src, None) is None


# -- Oracle: open transactions ----------------------------------------------------------------------
def test_dispatcher_open_transactions_are_the_uncommitted_ones_oldest_first(tmp_path):
    d = dispatcher(tmp_path)
    list(d.feed([row(1, X1, 6), ins(2, X1, 1), ins(3, X2, 2), ins(4, X1, 3), row(5, X2, 7)]))
    (tx,) = d.open_transactions()  # X2 committed
    assert (tx["xid"], tx["start_scn"], tx["rows"], tx["started_ms"]) == ("5.7.100", 1, 2, TS_MS)
    assert tx["bytes"] > 0 and tx["age_s"] > 0
    list(d.feed([row(6, X1, 7)]))
    assert d.open_transactions() == []


def test_columnar_stage_open_transactions_include_the_rows_it_holds(tmp_path):
    d = dispatcher(tmp_path)
    feed = ColumnarFeed(d, serialize=False)
    rows = [row(1, X1, 6), ins(2, X1, 1), ins(3, X2, 2), ins(4, X1, 3)]
    table = pa.Table.from_pylist([dict(zip(CONTENTS_COLUMNS, r)) for r in rows], schema=CONTENTS_SCHEMA)
    list(feed.feed(table))
    got = feed.open_transactions()
    assert [(t["xid"], t["start_scn"], t["rows"], t["started_ms"]) for t in got] == \
        [("5.7.100", 1, 3, TS_MS), ("6.1.42", 3, 1, TS_MS)]


# -- a source's state in the API ----------------------------------------------------------------------
@dataclass
class _Spec:
    name: str
    connector: str = "mysql"


class _Observed:
    def __init__(self, seen: Observation) -> None:
        self.seen, self.asked = seen, []

    def observe(self, checkpoint):
        self.asked.append(checkpoint)
        return self.seen


class _Publisher:
    next_sequence, acked_sequence, epoch = 5, 4, 1


@dataclass
class _Worker:
    spec: _Spec
    source: Any = None
    control: SourceControl = field(default_factory=SourceControl)
    publisher: Any = field(default_factory=_Publisher)
    thread: Any = None
    error: BaseException | None = None
    done: bool = False
    waiting: str | None = None
    holding: bool = False
    lease: Any = None
    acknowledged: int = 4
    last_resume: Any = field(default_factory=lambda: {"gtid_set": "0-1-5"})


class _Daemon:
    def __init__(self, workers) -> None:
        self.workers, self.registry, self.stop = workers, CollectorRegistry(), threading.Event()


def test_a_snapshot_in_progress_is_snapshotting_with_its_table_and_lag_in_transactions():
    snap = {"kind": "initial", "table": "app.b", "tables_done": 1, "tables_total": 3, "after": [41], "resync": False}
    reader = _Observed(Observation(snapshot=snap, lag_transactions=12))
    w = _Worker(_Spec("m"), source=reader)
    s = Handlers(_Daemon([w]), None)._state(w)
    assert (s["state"], s["snapshot"], s["lag_transactions"], s["open_transactions"]) == ("snapshotting", snap, 12, None)
    assert reader.asked == [{"gtid_set": "0-1-5"}]  # the acknowledged checkpoint
    page = render([s], [], None, {})
    assert "snapshotting (initial snapshot of app.b, table 2 of 3)" in page and "<td>12</td>" in page


def test_streaming_with_open_transactions_and_readers_that_do_not_say():
    opened = [{"xid": "5.7.100", "start_scn": 1, "started_ms": None, "age_s": None, "rows": 2, "bytes": 300}]
    why = "LogMiner does not count"
    w = _Worker(_Spec("o", "oracle"), source=_Observed(Observation(open_transactions=opened,
                                                                   lag_transactions_why=why)))
    s = Handlers(_Daemon([w]), None)._state(w)
    assert (s["state"], s["open_transactions"], s["lag_transactions"], s["lag_transactions_why"]) == \
        ("streaming", opened, None, why)
    assert "1 (oldest 5.7.100)" in render([s], [], None, {})
    plain = _Worker(_Spec("s", "shadow"), source=object())
    s = Handlers(_Daemon([plain]), None)._state(plain)
    assert (s["state"], s["lag_transactions"], s["lag_transactions_why"]) == \
        ("streaming", None, "the shadow reader does not say")
    stopped = _Worker(_Spec("m"), source=_Observed(Observation(lag_transactions=3)), done=True)
    s = Handlers(_Daemon([stopped]), None)._state(stopped)
    assert (s["state"], s["lag_transactions"], s["lag_transactions_why"]) == ("stopped", None, "the source is stopped")


def test_an_observation_that_fails_is_said_not_raised():
    class Broken:
        def observe(self, checkpoint):
            raise RuntimeError("dictionary changed size during iteration")

    w = _Worker(_Spec("o", "oracle"), source=Broken())
    s = Handlers(_Daemon([w]), None)._state(w)
    assert s["state"] == "streaming" and s["lag_transactions_why"] == "observing the reader failed: RuntimeError"
