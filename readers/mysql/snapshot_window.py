"""The initial snapshot without a global lock: its consistent read rolled back to the GTID state it streams from.

MySQL reports no binlog position for a consistent read (MariaDB does: ``binlog_snapshot_position``), and
taking one with ``FLUSH TABLES WITH READ LOCK`` blocks every writer behind the longest running query. So
the read is opened between two watermarks, as the DBLog/Debezium watermark method opens a chunk's window,
with no lock and no write:

* LOW: ``@@GLOBAL.gtid_executed`` read BEFORE ``START TRANSACTION WITH CONSISTENT SNAPSHOT``. A GTID is
  added to it only after its transaction committed in the engine, so the read sees every transaction in
  LOW. Streaming starts at LOW.
* HIGH: the binlog file and position read AFTER the read opened. A transaction is written to the binlog
  before it commits in the engine, so every transaction the read sees ends at or before HIGH.

The read sits somewhere in the window (LOW, HIGH]. :func:`window_images` reads the binlog of the window
(a second, short-lived reader of the same source, the same decoding) and keeps, per captured table and
key, the row as it was at LOW: the BEFORE image of the key's first change in the window, or None when
that change created the key. The snapshot puts those rows in place of what its read saw for the same keys
(a row the read no longer sees goes out with the chunk whose key range holds it), so every snapshot row is
exactly the row the first streamed change of its key starts from: nothing lost, nothing applied twice, and
the stream continues from LOW with no seam.

The same roll-back makes a restart in the middle of a snapshot exact: the rest is read in a new
consistent read, whose window then runs from the ORIGINAL low watermark (still the stream's state) to
the new read's high watermark.

Fail closed: a window that a row image cannot roll back (a TRUNCATE or DDL of a captured table, a change
to a captured table without a primary key) raises :class:`WindowUnusable`; the snapshot opens again (at
most ``OPEN_ATTEMPTS`` times, the window is milliseconds wide) and then stops with an error naming the
table. Privileges: SELECT, REPLICATION CLIENT and REPLICATION SLAVE, the capture grant; not RELOAD.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from cdc.contract import SourceContext
from cdc.errors import CdcError, Terminal
from cdc.metrics import SourceMetrics
from cdc.stream.events import Change, Commit, SchemaChange, TableId, expand
from readers.mysql.connection import binlog_status
from readers.mysql.position import GtidSet

log = logging.getLogger(__name__)

OPEN_ATTEMPTS = 5
WINDOW_TIMEOUT_S = 600.0  # a restart's window reads the binlog written since the snapshot began

Images = dict[TableId, dict[tuple, dict[str, Any] | None]]


class WindowUnusable(CdcError):
    """The window holds a change the snapshot cannot roll back by row images (``table``: which)."""


class SnapshotWindowError(WindowUnusable, Terminal):
    """Every attempt to open the initial snapshot met a window it cannot roll back."""


def open_watermarked(cur: Any) -> tuple[str, dict[str, Any]]:
    """On a MySQL session: LOW (gtid_executed), open the consistent read, HIGH (binlog file/pos). No lock."""
    cur.execute("SELECT @@GLOBAL.gtid_executed")
    low = cur.fetchone()[0] or ""
    cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    at = binlog_status(cur)  # SHOW BINARY LOG STATUS on MySQL 8.2+ (8.4 has no SHOW MASTER STATUS)
    return low, ({"file": at[0], "pos": at[1]} if at else {})


def _passed(file: str | None, pos: int | None, high: dict[str, Any]) -> bool:
    """The binlog reader is at or past ``high`` (file names are zero-padded: they order as text)."""
    return file is not None and pos is not None and (file, int(pos)) >= (high["file"], int(high["pos"]))


def window_images(source: Any, low: str, high: dict[str, Any], keys: dict[TableId, list[str]]) -> Images:
    """The rows of the captured tables as they were at ``low``, for every key changed between ``low`` and
    ``high`` (a binlog position): None for a key created in the window. ``keys``: primary key columns per
    captured table ([]: none). Raises WindowUnusable (see the module docstring)."""
    if not high:
        return {}
    cfg = source.config.model_copy(update={"snapshot": "never", "signal_table": None, "transforms": None,
                                           "heartbeat_interval_s": 0.05, "reconnect_attempts": 0})
    reader = type(source)(cfg, SourceContext(  # a second reader of the source's own class (MySqlSource)
metrics=SourceMetrics(f"{source.name}-snapshot-window")))
    reader.host, reader.flavor = source.host, source.flavor
    reader.state = GtidSet.parse(low)
    images: Images = {}
    deadline = time.monotonic() + WINDOW_TIMEOUT_S
    try:
        for ev in expand(reader.events()):
            t = type(ev)
            if t is Change and ev.table in keys:
                _remember(images, ev, keys[ev.table])
            elif t is SchemaChange and ev.table in keys:
                raise WindowUnusable(f"a schema change of {ev.table} while the snapshot opened", table=str(ev.table))
            stream = reader._stream
            if t is Commit and _passed(ev.position.get("file"), ev.position.get("pos"), high):
                break
            if t is not Commit and stream is not None and _passed(stream.log_file, stream.log_pos, high):
                break
            if source._stop.is_set():
                break
            if time.monotonic() > deadline:
                raise WindowUnusable(f"the binlog up to {high['file']}:{high['pos']} was not read within "
                                     f"{WINDOW_TIMEOUT_S:.0f}s")
    finally:
        reader.close()
    return images


def _remember(images: Images, ev: Change, key: list[str]) -> None:
    if ev.op == "t":
        raise WindowUnusable(f"TRUNCATE of {ev.table} while the snapshot opened", table=str(ev.table))
    if not key:
        raise WindowUnusable(f"a change of {ev.table}, which has no primary key, while the snapshot opened",
                             table=str(ev.table))
    seen = images.setdefault(ev.table, {})
    if ev.before is not None:
        seen.setdefault(tuple(ev.before[c] for c in key), ev.before)  # the row just before its first change
    if ev.after is not None:
        seen.setdefault(tuple(ev.after[c] for c in key), None)  # first seen as created: absent at LOW


def rolled_back(rows: list[dict[str, Any]], key: list[str], images: dict[tuple, dict | None],
                used: set[tuple]) -> list[dict[str, Any]]:
    """A chunk's ``rows`` with every key the window changed put back as it was at LOW (dropped when it did not
    exist then); the keys replaced are added to ``used``."""
    if not images or not key:
        return rows
    out = []
    for r in rows:
        k = tuple(r[c] for c in key)
        if k in images:
            used.add(k)
            if images[k] is not None:
                out.append(images[k])
        else:
            out.append(r)
    return out


def unseen(key: list[str], images: dict[tuple, dict | None], used: set[tuple], after: list | None,
           upto: list | None = None) -> list[dict]:
    """Rows that existed at LOW and that the read no longer saw (deleted in the window), keys above ``after``
    (the key a restart resumed after, or the key the chunk's range starts after; None: all) and, given
    ``upto`` (the chunk's last key), at or below it; in key order where the keys order (else as found). The
    keys returned are added to ``used``: each such row goes out once.

    A chunk takes the deleted rows of its own key range (``upto``), so a restart after it (which reads on
    above its last key, and takes deleted rows above it only) has each of them in the stream once. Keys that
    do not order in Python go out with the table's last chunk (``upto`` None) only."""
    rows = [(k, r) for k, r in images.items() if r is not None and k not in used]
    try:
        if after is not None:
            rows = [(k, r) for k, r in rows if k > tuple(after)]
        if upto is not None:
            rows = [(k, r) for k, r in rows if k <= tuple(upto)]
        rows.sort(key=lambda kr: kr[0])
    except TypeError:  # keys that do not order in Python: all of them, with the table's last chunk
        if upto is not None:
            return []
    used.update(k for k, _ in rows)
    return [r for _, r in rows]
