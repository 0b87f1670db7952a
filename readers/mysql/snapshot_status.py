"""`cdc snapshot status --config FILE --source S`: how far the source's snapshot is, per table.

A snapshot keeps its progress where its resume lives: in the resume state of the last transaction
in the change stream (readers/mysql/snapshot.py: ``{"snapshot": {table, after}}`` for the initial
snapshot; readers/mysql/incremental.py: ``{"incremental": {queue, table, after}}`` for a requested
one), so this reads the stream's tail and nothing of the daemon's. Rows are counted on the source:
a table before the current one is done, the current one is done up to its ``after`` key, the rest
are to do. ``--interval S`` (default 5; 0: none) reads the tail twice, S seconds apart, for the rate
and the ETA. Counts are exact ``COUNT(*)`` (each a scan of the table's primary key).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from cdc.progress_bar import duration
from cdc.stream.events import TableId
from readers.mysql.snapshot import expand_tables, q


def main(args: argparse.Namespace, config: Any, src: Any) -> int:
    """`cdc snapshot status` of MySQL/MariaDB source ``src`` of ``config`` (cdc.registry SOURCE_COMMANDS)."""
    from cdc.publish.recovery import read_tail
    from cdc.stream.envelope import changes_topic
    from cdc.stream.serde import get_serdes
    from readers.mysql.connection import open_primary

    kafka = config.kafka
    topic = changes_topic(kafka.topic_prefix, src.name)
    kser, vser = get_serdes(kafka.encoding, kafka.avro_framing)

    def position() -> dict[str, Any]:
        return read_tail(kafka.connection(), topic, kser, vser, deadline_s=60).resume or {}

    resume = position()
    state = snapshot_state(resume)
    if state is None:
        print(f"source {src.name}: no snapshot in progress (stream {topic} at {resume or 'no position yet'})")
        return 0
    conn = open_primary(src)
    try:
        kind = state["kind"]
        tables = expand_tables(conn, src.tables) if kind == "initial" else state["tables"]
        rows = table_progress(conn, tables, state["table"], state["after"])
        rate = None
        if args.interval > 0:
            time.sleep(args.interval)
            later = snapshot_state(position())
            if later is not None and later["kind"] == kind:
                done = sum(d for _, d, _ in rows)
                rows = table_progress(conn, tables, later["table"], later["after"])
                rate = (sum(d for _, d, _ in rows) - done) / args.interval
    finally:
        conn.close()
    print(render(src.name, kind, rows, rate))
    return 0


def snapshot_state(resume: dict[str, Any]) -> dict[str, Any] | None:
    """The snapshot a resume state is in: kind, current table, its ``after`` key, the tables (incremental:
    the current one and the queue; initial: all of the source's); None when none is running."""
    initial = resume.get("snapshot")
    if initial:
        return {"kind": "initial", "table": initial.get("table"), "after": initial.get("after"), "tables": None}
    inc = resume.get("incremental")
    if inc and (inc.get("table") or inc.get("queue")):
        tables = [TableId.parse(t) for t in ([inc["table"]] if inc.get("table") else []) + list(inc["queue"])]
        return {"kind": "incremental", "table": inc.get("table"), "after": inc.get("after"), "tables": tables}
    return None


def table_progress(conn: Any, tables: list[TableId], current: str | None,
                   after: list[Any] | None) -> list[tuple[TableId, int, int]]:
    """[(table, rows done, rows in total)] in snapshot order."""
    at = TableId.parse(current) if current else None
    out = []
    with conn.cursor() as cur:
        for t in tables:
            cur.execute(f"SELECT COUNT(*) FROM {q(t.db)}.{q(t.table)}")
            total = int(cur.fetchone()[0])
            if at is None or t > at:
                done = 0
            elif t < at:
                done = total
            elif after is None:
                done = 0
            else:
                cur.execute("SELECT k.COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE k WHERE k.TABLE_SCHEMA=%s "
                            "AND k.TABLE_NAME=%s AND k.CONSTRAINT_NAME='PRIMARY' ORDER BY k.ORDINAL_POSITION",
                            (t.db, t.table))
                keys = ", ".join(q(r[0]) for r in cur.fetchall())
                cur.execute(f"SELECT COUNT(*) FROM {q(t.db)}.{q(t.table)} WHERE ({keys}) <= "
                            f"({', '.join(['%s'] * len(after))})", tuple(after))
                done = int(cur.fetchone()[0])
            out.append((t, done, total))
    return out


def render(source: str, kind: str, rows: list[tuple[TableId, int, int]], rate: float | None) -> str:
    """A plain table (no terminal control characters): per table and overall, done/total, percent, and the
    ETA at ``rate`` rows/s (a table's: until it is done, the tables before it included)."""
    left = 0  # rows to read up to and including the table of the line: its ETA

    def line(name: str, done: int, total: int) -> str:
        nonlocal left
        left += total - done
        pct = 100.0 * done / total if total else 100.0
        eta = duration(left / rate) if rate and done < total else ""
        return f"{name:<40} {done:>12} {total:>12} {pct:>7.1f}% {eta:>8}"

    width = 40 + 1 + 12 + 1 + 12 + 1 + 8 + 1 + 8
    out = [f"source {source}: {kind} snapshot" + (f", {rate:.0f} rows/s" if rate is not None else ""),
           f"{'table':<40} {'rows done':>12} {'rows total':>12} {'percent':>8} {'eta':>8}", "-" * width]
    out += [line(str(t), d, n) for t, d, n in rows]
    out.append("-" * width)
    left = 0
    out.append(line("all tables", sum(d for _, d, _ in rows), sum(n for _, _, n in rows)))
    return "\n".join(out)
