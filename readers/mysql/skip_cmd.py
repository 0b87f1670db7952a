"""`cdc source skip --config FILE --source S --gtid G --yes [--resync]` for a MySQL/MariaDB source: move a
stopped source past one refused transaction, record it in the stream, and bring the tables it touched back
to equality. The command (cdc/runtime/source_cmd.py) hands the source here through cdc.registry
SOURCE_COMMANDS; an Oracle source's transaction is named by ``--xid`` (readers/oracle/skip_cmd.py).

A source that stops on a transaction it will not publish (a statement-format write, a partial row image,
a partition DDL that removes rows, an event it does not decode) stops on the same GTID at every
restart: its checkpoint is the stream's tail, which ends before that transaction. This is the way
past it without a rebuild:

1. The writer lease of the stream is taken (cdc/publish/lease.py): a daemon still running for the
   source is fenced and stops; nothing else writes the stream meanwhile.
2. The stream's checkpoint is read (the publisher's recovery) and the source's binlog is read from
   it: the first transaction after the checkpoint must be G (so exactly one transaction is skipped,
   never a range), and the tables it touched are taken from its table maps and statements.
3. A HEARTBEAT record is written whose resume state is the checkpoint plus G, and whose ``skipped``
   entry names G, the tables and the time: the stream records what was skipped, and every consumer
   already accepts the record. The next `cdc run` resumes after G.
4. With ``--resync`` (the source needs a ``signal_table``), a resync of each captured table G touched
   is requested (as `cdc snapshot --resync` does): the restarted daemon re-reads those tables while
   everything else streams, deleting the target rows the source does not hold (G may have deleted
   rows), and every target ends equal to the source. A table that cannot take range deletes (a
   non-integer key, per-table topics on) gets a plain incremental snapshot, and the command says to
   check it with `cdc compare` (rows G deleted may remain on the target). Without ``--resync``, the
   command prints the `cdc snapshot` lines to run after the restart.

Refuses, naming what it found, when the stream has no checkpoint yet, when G is already in the
checkpoint, or when the next transaction on the source is not G.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from cdc.errors import CdcError, ConfigError, Terminal


class SkipRefused(CdcError, Terminal):
    """`cdc source skip` cannot move past the named transaction (``source``, ``gtid``, ``found``)."""


def main(args: argparse.Namespace, config: Any, src: Any) -> int:
    """`cdc source skip` of MySQL/MariaDB source ``src`` of ``config`` (cdc.registry SOURCE_COMMANDS)."""
    from cdc.publish.opening import close_publisher, open_publisher
    from cdc.stream.events import Heartbeat
    from readers.mysql.position import GtidSet

    if not args.gtid:
        raise ConfigError(f"source {src.name} is a MySQL/MariaDB source: name the transaction with --gtid (its error "
                          "names it)", key="--gtid")
    gtid = GtidSet.parse(args.gtid)
    publisher, lease = open_publisher(config.kafka, src.name, "mysql")  # with the writer lease
    try:
        resume = publisher.recover()
        publisher.recovered()
        if not resume or resume.get("gtid_set") is None:
            raise SkipRefused(f"the stream {publisher.topic} holds no checkpoint of source {src.name} yet: there is "
                              "nothing to skip from", source=src.name, gtid=args.gtid, found=None)
        state = GtidSet.parse(resume["gtid_set"])
        if state.issuperset(gtid):
            raise SkipRefused(f"the checkpoint of {src.name} ({state}) already holds {args.gtid}: the source is past "
                              f"it{_resync_hint(args, src, resume)}", source=src.name, gtid=args.gtid,
                              found=str(state))
        found, tables = next_transaction(src, state)
        if found is None or GtidSet.parse(found) != gtid:
            raise SkipRefused(
                f"the next transaction of {src.name} after its checkpoint {state} is {found or 'not written yet'}, "
                f"not {args.gtid}: only the transaction the source stopped on can be skipped (exactly one)",
                source=src.name, gtid=args.gtid, found=found)
        captured = [t for t in tables if _captured(src, t)]
        # the resync's prerequisites are checked BEFORE the skip is recorded: check first, record once
        refused = _resync_refusals(args, config, src, captured) if captured and args.resync else {}
        skipped = {"gtid": found, "tables": tables, "at_ms": int(time.time() * 1000), "reason": args.reason}
        publisher.publish(Heartbeat(skipped["at_ms"], {**resume, "gtid_set": str(state.add(found)),
                                                       "skipped": skipped}))
        publisher.flush()
    finally:
        close_publisher(publisher, lease)
    print(f"source {src.name}: moved past {found} (not published); tables it touched: "
          f"{', '.join(tables) or 'none seen'}; recorded in {publisher.topic}")
    if captured and args.resync:
        from readers.mysql import snapshot_cmd

        for resync, tables in ((True, [t for t in captured if t not in refused]), (False, list(refused))):
            if tables:
                snapshot_cmd.main(argparse.Namespace(action="request", config=args.config, source=src.name,
                                                     table=tables, interval=0, resync=resync), config, src)
        for t, why in refused.items():
            print(f"{t}: plain snapshot, not a resync ({why}); rows the skipped transaction deleted may remain on "
                  f"the target: check with `cdc compare --config {args.config} --tables {t}`")
        print("restart the daemon (`cdc run`): it streams on and resyncs those tables")
    elif captured:
        print("restart the daemon (`cdc run`), then resync what the transaction changed:")
        for t in captured:
            print(f"  cdc snapshot --config {args.config} --source {src.name} --table {t} --resync")
    else:
        print("restart the daemon (`cdc run`): none of those tables is captured")
    return 0


def _resync_refusals(args: argparse.Namespace, config: Any, src: Any, captured: list[str]) -> dict[str, str]:
    """The resync's prerequisites, checked before the skip is recorded: a ConfigError without a signal table
    (nothing recorded: fix it and run the command again); per table, why it gets a plain snapshot instead of a
    resync (its keys, per-table topics), read on the source's primary."""
    from readers.mysql import snapshot_cmd
    from readers.mysql.connection import open_primary

    if not src.signal_table:
        raise ConfigError(f"source {src.name} has no signal_table, which --resync needs to request the snapshot of "
                          f"{', '.join(captured)}; nothing was recorded: add e.g. `signal_table: ops.cdc_signal` to "
                          "the source and run the same command again (or run it without --resync and resync later)",
                          key="signal_table", file=args.config)
    conn = open_primary(src)
    try:
        with conn.cursor() as cur:
            return {t: why for t in captured if (why := snapshot_cmd.resync_refusal(cur, t, config))}
    finally:
        conn.close()


def _resync_hint(args: argparse.Namespace, src: Any, resume: dict[str, Any]) -> str:
    """For a re-run with --resync of a skip already recorded: how to request the resync of the tables it
    touched (from the skip's record at the stream's tail, when that is the last checkpoint)."""
    if not args.resync:
        return ""
    skipped = resume.get("skipped") or {}
    tables = [t for t in skipped.get("tables") or () if _captured(src, t)] if skipped.get("gtid") == args.gtid else []
    if not tables:
        return ("; if the resync of the tables it touched was not requested, request it: `cdc snapshot --config "
                f"{args.config} --source {src.name} --table DB.TABLE --resync` for each")
    return ("; if the resync was not requested (a prerequisite failed after the skip was recorded), request it: "
            + "; ".join(f"`cdc snapshot --config {args.config} --source {src.name} --table {t} --resync`"
                        for t in tables))


def _captured(src: Any, table: str) -> bool:
    from cdc.stream.events import TableId
    from readers.mysql.tables import TableFilter

    db, _, name = table.partition(".")
    return TableFilter(src.tables).matches(TableId(db, name))


def next_transaction(src: Any, state: Any, timeout_s: float = 30.0) -> tuple[str | None, list[str]]:
    """(GTID, tables touched) of the first transaction after ``state`` in the source's binlog, read from its
    first writable host; (None, []) when none is written yet. Events are not decoded, only named."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import GtidEvent, MariadbGtidEvent, QueryEvent, XidEvent
    from pymysqlreplication.row_event import TableMapEvent

    from readers.mysql.binlog.binlog_events import install_decoders
    from readers.mysql.binlog.mysql8_events import GtidTaggedLogEvent
    from readers.mysql.connection import connection_settings
    from readers.mysql.failover import choose_primary, default_prober
    from readers.mysql.tables import ddl_table, dml_tables

    install_decoders()  # tagged GTIDs, VECTOR table maps, MySQL 9 query status variables
    password = src.password.get_secret_value()
    info = choose_primary(src.hosts, default_prober(src.user, password, src.connect_timeout_s, src.tls), state)
    settings = connection_settings(info.address, src.user, password, src.connect_timeout_s, tls=src.tls)
    stream = BinLogStreamReader(
        connection_settings=settings, server_id=2_000_000_000 + int(time.time()) % 100_000, blocking=False,
        auto_position=str(state) if (state or info.flavor == "mariadb") else None,
        is_mariadb=info.flavor == "mariadb", enable_logging=False,
        only_events=[GtidEvent, MariadbGtidEvent, GtidTaggedLogEvent, TableMapEvent, QueryEvent, XidEvent])
    gtid: str | None = None
    began = False  # the transaction opened with BEGIN (else it is one statement: a DDL)
    tables: list[str] = []
    deadline = time.monotonic() + timeout_s
    try:
        for ev in stream:
            if time.monotonic() > deadline:
                break
            if isinstance(ev, (GtidEvent, MariadbGtidEvent, GtidTaggedLogEvent)):
                if gtid is not None:
                    break  # the next transaction began: the first one ended
                gtid = ev.gtid
            elif gtid is None:
                continue
            elif isinstance(ev, TableMapEvent):
                name = f"{ev.schema}.{ev.table}"
                if name not in tables:
                    tables.append(name)
            elif isinstance(ev, QueryEvent):
                text = ev.query.strip()
                word = text.split(None, 1)[0].upper() if text else ""
                if word == "BEGIN":
                    began = True
                    continue
                db = ev.schema.decode() if isinstance(ev.schema, bytes) else (ev.schema or "")
                for t in dml_tables(text, db) or [ddl_table(text, db)]:
                    if t is not None and str(t) not in tables:
                        tables.append(str(t))
                if word == "COMMIT" or not began:
                    break
            elif isinstance(ev, XidEvent):
                break
    finally:
        stream.close()
    return gtid, tables
