"""`cdc source skip --config FILE --source S --xid XID --yes [--resync]` for an Oracle source: move a stopped
source past one refused transaction, record it in the stream, and bring the tables it touched back to
equality.

An Oracle source stops on a committed transaction it cannot publish (an UNSUPPORTED row, an
OPERATION_CODE it does not decode, a LOB operation it cannot assemble: ``unsupported: fail``, no
dead-letter topic), naming its XID and commit SCN, and stops there again at every restart: its
checkpoint is the stream's tail, which ends before that transaction. This is the way past it:

1. The writer lease of the stream is taken (cdc/publish/lease.py): a daemon still running for the
   source is fenced; nothing else writes the stream meanwhile.
2. The stream's checkpoint is read and the source is mined from it (the reader itself, with the rows it
   cannot publish collected instead of raised): the first transaction committed after the checkpoint
   must be XID (exactly one transaction is skipped, never a range); the tables it touched are those of
   its rows, published or not.
3. A HEARTBEAT record is written whose resume state is the checkpoint moved past XID (its commit SCN,
   XID among the transactions published at it, the same low watermark) and whose ``skipped`` entry names
   XID, its commit SCN, the tables and the time. The next `cdc run` resumes after XID.
4. With ``--resync``: the same resume state carries a ``snapshot`` entry for the captured tables XID
   touched (readers/oracle/snapshot.py), so the restarted daemon first re-reads those tables ``AS OF``
   the skipped transaction's commit SCN, each starting with an ``op: "t"`` record (rows XID deleted
   leave the target too), then streams on from there. The undo must still cover that SCN (ORA-01555
   otherwise, named with the table).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

from cdc.errors import CdcError, ConfigError, Terminal


class SkipRefused(CdcError, Terminal):
    """`cdc source skip` cannot move past the named transaction (``source``, ``xid``, ``found``)."""


def main(args: argparse.Namespace, config: Any, src: Any) -> int:
    """`cdc source skip` of Oracle source ``src`` of ``config`` (cdc.registry SOURCE_COMMANDS)."""
    from cdc.publish.opening import close_publisher, open_publisher
    from cdc.stream.events import Heartbeat
    from readers.oracle.position import ResumeState, Xid

    if not args.xid:
        raise ConfigError(f"source {src.name} is an Oracle source: name the transaction with --xid (its error "
                          "names it)", key="--xid")
    xid = str(Xid.parse(args.xid.strip()))  # usn.slot.sqn as the stop names it, or the RAW hex form
    publisher, lease = open_publisher(config.kafka, src.name, "oracle")  # with the writer lease
    try:
        resume = publisher.recover()
        publisher.recovered()
        if not resume or "low_watermark_scn" not in resume:
            raise SkipRefused(f"the stream {publisher.topic} holds no checkpoint of source {src.name} yet: there is "
                              "nothing to skip from", source=src.name, xid=xid, found=None)
        if xid in (resume.get("xids_at_commit_scn") or ()) or (resume.get("skipped") or {}).get("xid") == xid:
            raise SkipRefused(f"the checkpoint of {src.name} (commit SCN {resume.get('commit_scn')}) already holds "
                              f"{xid}: the source is past it", source=src.name, xid=xid, found=None)
        if "snapshot" in resume:
            raise SkipRefused(f"source {src.name} is in the middle of a snapshot ({resume['snapshot']}): let it "
                              "finish first", source=src.name, xid=xid, found=None)
        state = ResumeState.from_json(resume)
        found, commit_scn, tables = next_transaction(src, resume)
        if found != xid:
            raise SkipRefused(
                f"the next transaction of {src.name} after its checkpoint (commit SCN {state.commit_scn}) is "
                f"{found or 'not mined yet'}, not {xid}: only the transaction the source stopped on can be skipped "
                "(exactly one)", source=src.name, xid=xid, found=found)
        assert commit_scn is not None
        at = set(state.xids_at_commit_scn) if commit_scn == state.commit_scn else set()
        moved = {"low_watermark_scn": state.low_watermark_scn, "commit_scn": commit_scn,
                 "xids_at_commit_scn": sorted(at | {xid})}
        skipped = {"xid": xid, "commit_scn": commit_scn, "tables": tables, "at_ms": int(time.time() * 1000),
                   "reason": args.reason}
        captured = [t for t in tables if _captured(src, t)]
        record = {**moved, "skipped": skipped}
        if args.resync and captured:
            record["snapshot"] = {"scn": commit_scn, "table": None, "after": None, "replace": True,
                                  "tables": captured, "low_watermark_scn": state.low_watermark_scn,
                                  "streaming": moved}
        publisher.publish(Heartbeat(skipped["at_ms"], record))
        publisher.flush()
    finally:
        close_publisher(publisher, lease)
    print(f"source {src.name}: moved past {xid} (commit SCN {commit_scn}, not published); tables it touched: "
          f"{', '.join(tables) or 'none seen'}; recorded in {publisher.topic}")
    if captured and args.resync:
        print(f"restart the daemon (`cdc run`): it re-reads {', '.join(captured)} as of SCN {commit_scn}, then "
              "streams on")
    elif captured:
        print(f"restart the daemon (`cdc run`), then re-snapshot what the transaction changed ({', '.join(captured)}"
              f"): run this command's --resync form, or compare and repair those tables")
    else:
        print("restart the daemon (`cdc run`): none of those tables is captured")
    return 0


def _captured(src: Any, table: str) -> bool:
    from cdc.schema import table_glob

    return table_glob.matches(table, [t.upper() for t in src.tables])


def next_transaction(src: Any, resume: dict[str, Any], timeout_s: float = 60.0) -> tuple[str | None, int | None,
                                                                                        list[str]]:
    """(XID, commit SCN, tables touched) of the first transaction committed after the checkpoint ``resume``,
    mined by the reader itself with its refused rows collected instead of raised; (None, None, []) when none
    is mined within ``timeout_s``, or a DDL comes first (its text as the XID: a DDL is not skipped here)."""
    from cdc.contract import SourceContext
    from cdc.metrics import SourceMetrics
    from cdc.stream.events import Begin, Change, ChangeBatch, Commit, Heartbeat, SchemaChange
    from readers.oracle.reader import OracleSource

    refused: list[dict] = []  # the fields of each row the reader could not publish (its XID, commit SCN, table)
    cfg = src.model_copy(update={"snapshot": "never", "pipeline": "rows", "parse_workers": 0})
    with tempfile.TemporaryDirectory() as spill:
        source = OracleSource(cfg, SourceContext(SourceMetrics(src.name), spill_dir=spill,
                                                 dead_letter=lambda err, raw: refused.append(dict(raw))))
        tables: set[str] = set()
        deadline = time.monotonic() + timeout_s

        def first_refused() -> tuple[str, int, list[str]]:
            x = refused[0]["xid"]
            return x, int(refused[0]["commit_scn"]), sorted(tables | {r["table"] for r in refused if r["xid"] == x})
        try:
            source.start(resume)
            for ev in source.events():
                kind = type(ev)
                txid = ev.txid if kind in (Begin, Commit) else ev.source.get("txId") if kind is Change else None
                if refused and txid != refused[0]["xid"]:
                    return first_refused()  # a transaction of refused rows only: nothing of it was published
                if kind is Change:
                    tables.add(str(ev.table))
                elif kind is ChangeBatch:
                    tables.update(str(c.table) for c in ev.changes())
                elif kind is Commit:
                    return ev.txid, int(ev.position["commit_scn"]), sorted(tables | {r["table"] for r in refused})
                elif kind is SchemaChange:
                    return f"a DDL ({(ev.ddl or '')[:80]})", None, []
                elif kind is Heartbeat and source.caught_up():
                    break
                if time.monotonic() > deadline:
                    break
        finally:
            source.close()
    if refused:
        return first_refused()
    return None, None, []
