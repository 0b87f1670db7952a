"""`cdc snapshot --config FILE --source S --table db.t [--table ...]` for a MySQL/MariaDB source: re-snapshot
tables live. The command (cdc/runtime/snapshot_cmd.py) hands the source here through cdc.registry
SOURCE_COMMANDS; `cdc snapshot status` is readers/mysql/snapshot_status.py.

Asks the RUNNING daemon of source S for an incremental snapshot (watermark
method, readers/mysql/incremental.py) by inserting one row into the
source's signal table (``signal_table`` in the source config; created here
if missing). The daemon captures that row from the binlog, so the request
is ordered with the data and survives daemon restarts (it is in the stream
position the daemon resumes from). Returns at once; the chunks appear in the
change stream as ``op: r`` transactions while streaming continues.

With ``--resync`` the chunks also delete the target rows that the source does not hold (rows deleted
at the source while the table was not streamed, rows added or left on the target by hand): each chunk
transaction ends with a resync range record (cdc.stream.resync_range), and the table ends equal to the
source while everything else keeps streaming. Needs a primary key of integer columns and
``kafka.per_table_topics`` off (Debezium consumers have no range delete); refused otherwise, naming why.

Refuses, naming the table, when it does not exist or has no primary key.
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any

from cdc.errors import ConfigError


def main(args: argparse.Namespace, config: Any, src: Any) -> int:
    """`cdc snapshot` (a request) of MySQL/MariaDB source ``src`` of ``config`` (cdc.registry SOURCE_COMMANDS)."""
    from cdc.compare.errors import CompareError
    from readers.mysql.connection import open_primary
    from readers.mysql.incremental import EXECUTE, RESYNC, SIGNAL_DDL
    from readers.mysql.snapshot import q

    if not src.signal_table:
        raise ConfigError(f"source {src.name} has no signal_table: add e.g. `signal_table: ops.cdc_signal` to it "
                          "(and restart the daemon) to accept snapshot requests", key="signal_table", file=args.config)
    resync = bool(getattr(args, "resync", False))
    conn = open_primary(src)
    try:
        with conn.cursor() as cur:
            for table in args.table:
                db, _, name = table.partition(".")
                cur.execute("SELECT COUNT(*) FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA=%s AND "
                            "TABLE_NAME=%s AND CONSTRAINT_NAME='PRIMARY'", (db, name))
                if not cur.fetchone()[0]:
                    cur.execute("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA=%s AND "
                                "TABLE_NAME=%s", (db, name))
                    why = "has no primary key" if cur.fetchone()[0] else "does not exist"
                    raise CompareError(f"cannot snapshot {table}: it {why}", table=table)
                why = resync_refusal(cur, table, config) if resync else None
                if why:
                    raise CompareError(f"cannot resync {table}: {why}", table=table)
            sdb, _, stable = src.signal_table.partition(".")
            cur.execute(SIGNAL_DDL.format(table=f"{q(sdb)}.{q(stable)}"))
            request = uuid.uuid4().hex
            cur.execute(f"INSERT INTO {q(sdb)}.{q(stable)} (id, type, data) VALUES (%s, %s, %s)",
                        (request, RESYNC if resync else EXECUTE, ",".join(args.table)))
    finally:
        conn.close()
    what = "resync" if resync else "snapshot"
    print(f"{what} of {', '.join(args.table)} requested from source {src.name} (signal {request})")
    return 0


def resync_refusal(cur, table: str, config) -> str | None:
    """Why ``table`` cannot be resynced with range deletes (None: it can). ``cur``: a cursor on the source."""
    from cdc.stream.resync_range import integer_key
    from readers.mysql.types import logical_type

    if config.kafka.per_table_topics:
        return ("kafka.per_table_topics is on, and Debezium consumers of the per-table topics have no record for "
                "a range delete; turn it off, or stop the daemon and use `cdc compare --repair`")
    db, _, name = table.partition(".")
    cur.execute("SELECT c.COLUMN_TYPE FROM information_schema.KEY_COLUMN_USAGE k JOIN information_schema.COLUMNS c "
                "ON c.TABLE_SCHEMA = k.TABLE_SCHEMA AND c.TABLE_NAME = k.TABLE_NAME AND c.COLUMN_NAME = k.COLUMN_NAME "
                "WHERE k.TABLE_SCHEMA=%s AND k.TABLE_NAME=%s AND k.CONSTRAINT_NAME='PRIMARY' ORDER BY k.ORDINAL_POSITION",
                (db, name))
    types = [str(r[0].decode() if isinstance(r[0], bytes) else r[0]) for r in cur.fetchall()]
    if not integer_key([logical_type(t) for t in types]):
        return (f"its primary key ({', '.join(types) or 'none'}) is not all integer columns, and only integers "
                "order the same in the source and every target; stop the daemon and use `cdc compare --repair`")
    return None
