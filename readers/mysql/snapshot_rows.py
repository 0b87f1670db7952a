"""A snapshot chunk's SELECT, its rows read off the socket in blocks and decoded in C.

:func:`fetch_rows` (or :func:`send_query` now and :meth:`Pending.rows` later) returns the rows that
``cursor.execute(sql, params); cursor.fetchall()`` returns on a PyMySQL connection (every value decoded
and converted by PyMySQL's own converters), each then made a dict by :class:`Shape` (column name ->
value, a value passed through the column's ``post`` function), about six times cheaper than PyMySQL,
which reads each row packet with several Python calls and decodes it value by value (most of a
snapshot's CPU). PyMySQL still sends the query and reads the column definitions (so its converters, TLS,
timeouts and errors are the same); the row packets are then read in blocks from the connection's
buffered socket and decoded by readers/mysql/_snapshot_native.c. A packet the C code does not vouch for
(an error, a row of 16 MB or more, a malformed row) is read and decoded here by PyMySQL's own packet
class and row decoder, so it raises or decodes exactly as before. Without the compiled module, the
cursor reads the rows.

A failure in the middle of the rows (lost connection, a value that does not decode) closes the
connection: its stream is no longer at a packet boundary.
"""

from __future__ import annotations

import codecs
import errno
from collections.abc import Callable, Sequence
from typing import Any

from pymysql import err
from pymysql.connections import MAX_PACKET_LEN, MysqlPacket
from pymysql.constants import CR

try:
    from readers.mysql import _snapshot_native  # type: ignore[attr-defined]
except ImportError:  # not compiled here: PyMySQL reads the rows
    _snapshot_native = None

NATIVE = _snapshot_native is not None
# At most this much per read of the socket: a TLS socket hands out one record (16 KB) per read whatever is
# asked, and each read allocates a buffer of the size asked (256 KB cost 30 % more CPU per row over TLS;
# without TLS the size made no difference)
READ_BYTES = 1 << 14
_PLAIN = frozenset({int, str, float, bool})


class Shape:
    """How a row tuple becomes the snapshot's dict: ``names`` (one per column of the SELECT) and, per
    column, ``post`` (None: the value as PyMySQL gives it) called on a value that is not None, on every
    such value when ``post_all``, else only on one whose type is not exactly int, str, float or bool."""

    def __init__(self, names: Sequence[str], posts: Sequence[tuple[Callable[[Any], Any] | None, bool]]) -> None:
        if len(names) != len(posts):
            raise ValueError(f"{len(names)} column names for {len(posts)} column conversions")
        self.names, self.posts = tuple(names), tuple(posts)

    def row(self, values: Sequence[Any]) -> dict[str, Any]:
        """One row tuple as its dict (a row shorter than the columns: the columns it has)."""
        out = {}
        for name, v, (post, post_all) in zip(self.names, values, self.posts):
            if v is not None and post is not None and (post_all or type(v) not in _PLAIN):
                v = post(v)
            out[name] = v
        return out


def fetch_rows(conn: Any, sql: str, params: tuple | None, shape: Shape) -> list[dict[str, Any]]:
    """``sql`` (with ``params`` escaped in as PyMySQL does) run on ``conn``; its rows as PyMySQL's
    ``fetchall()`` gives them, each made a dict by ``shape``. Raises what PyMySQL raises (and then the
    connection is closed when the failure came in the middle of the rows)."""
    return send_query(conn, sql, params).rows(shape)


class Pending:
    """A query sent whose rows are not read yet (:func:`send_query`): the server reads them into the socket
    while the caller works. Read them with :meth:`rows` (or :meth:`drop` them) before the next query on
    the connection; :meth:`drop` also makes closing the connection quiet."""

    def __init__(self, conn: Any, result: Any, rows: Sequence[tuple] | None) -> None:
        self.conn, self.result, self.fetched = conn, result, rows

    def rows(self, shape: Shape) -> list[dict[str, Any]]:
        """The rows, each made a dict by ``shape`` (see :func:`fetch_rows`)."""
        result, self.result = self.result, None
        if result is None or not result.unbuffered_active:  # read already (no compiled decoder, not rows)
            return [shape.row(r) for r in (self.fetched if result is None else result.rows) or ()]
        if len(result.converters) != len(shape.names):
            result._finish_unbuffered_query()
            raise ValueError(f"{len(shape.names)} column names for a result of {len(result.converters)} columns")
        try:
            return _read_rows(self.conn, result, shape)
        except BaseException:
            result.unbuffered_active = False
            self.conn._force_close()
            raise
        finally:
            result.connection = None  # as PyMySQL does once the rows are read: no reference cycle

    def drop(self) -> None:
        """Forget the rows (idempotent): read to their end while the connection is open, else let go."""
        result, self.result = self.result, None
        if result is not None and result.unbuffered_active:
            try:
                if self.conn.open:
                    result._finish_unbuffered_query()
            except Exception:  # noqa: BLE001 - rows nobody reads, on a connection that failed: close it
                self.conn._force_close()
            result.unbuffered_active, result.connection = False, None


def send_query(conn: Any, sql: str, params: tuple | None) -> Pending:
    """Send ``sql`` (``params`` escaped in as PyMySQL does) and read the columns of its result; its rows
    stay on the socket until :meth:`Pending.rows`. Without the compiled decoder the cursor reads them now."""
    with conn.cursor() as cur:
        if _snapshot_native is None:
            cur.execute(sql, params)
            return Pending(conn, None, cur.fetchall())
        query = cur.mogrify(sql, params)
    conn.query(query, unbuffered=True)
    return Pending(conn, conn._result, None)


def _specs(result: Any, shape: Shape) -> tuple:
    """One (codec, name, converter, int_fast, post, post_all) per column: readers/mysql/_snapshot_native.c."""
    specs = []
    for (encoding, converter), (post, post_all) in zip(result.converters, shape.posts):
        if encoding is None:
            codec = 0
        else:
            codec = {"utf-8": 1, "ascii": 2}.get(codecs.lookup(encoding).name, 3)
        specs.append((codec, encoding or "", converter, converter is int, post, post_all))
    return tuple(specs)


def _read_rows(conn: Any, result: Any, shape: Shape) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    specs, names = _specs(result, shape), shape.names
    decode = _snapshot_native.rows
    need, end = _snapshot_native.NEED, _snapshot_native.END
    if conn._current_timeout != conn._read_timeout:  # as PyMySQL's _read_packet
        conn._sock.settimeout(conn._read_timeout)
        conn._current_timeout = conn._read_timeout
    buf, pos, seq = b"", 0, conn._next_seq_id
    while True:
        pos, seq, status = decode(buf, pos, specs, seq, rows, names)
        if status == end:
            break
        if status == need:
            buf = buf[pos:] + _read_some(conn, READ_BYTES)
            pos = 0
            continue
        packet, buf, pos, seq = _packet(conn, buf, pos, seq)  # one the C code left to PyMySQL
        if packet.is_error_packet():
            packet.raise_for_error()
        if result._check_packet_is_eof(packet):
            break
        rows.append(shape.row(result._read_row_from_packet(packet)))
    conn._next_seq_id = seq
    if pos != len(buf):
        raise err.InternalError(f"{len(buf) - pos} bytes after the end of a result set")
    result.unbuffered_active = False
    result.affected_rows = len(rows)
    return rows


def _packet(conn: Any, buf: bytes, pos: int, seq: int) -> tuple[MysqlPacket, bytes, int, int]:
    """The packet at ``buf[pos:]`` (continued packets joined), read on as PyMySQL's ``_read_packet``."""
    parts = []
    while True:
        while len(buf) - pos < 4:
            buf, pos = buf[pos:] + _read_some(conn, READ_BYTES), 0
        n = int.from_bytes(buf[pos:pos + 3], "little")
        number = buf[pos + 3]
        if number != seq:
            conn._force_close()
            if number == 0:  # MariaDB sends an error packet with sequence 0 at shutdown
                raise err.OperationalError(CR.CR_SERVER_LOST, "Lost connection to MySQL server during query")
            raise err.InternalError(f"Packet sequence number wrong - got {number} expected {seq}")
        seq = (seq + 1) % 256
        while len(buf) - pos < 4 + n:
            buf, pos = buf[pos:] + _read_some(conn, max(READ_BYTES, 4 + n - (len(buf) - pos))), 0
        parts.append(buf[pos + 4:pos + 4 + n])
        pos += 4 + n
        if n < MAX_PACKET_LEN:
            return MysqlPacket(b"".join(parts), conn.encoding), buf, pos, seq


def _read_some(conn: Any, limit: int) -> bytes:
    """Whatever the socket has (at least one byte, at most ``limit``); a closed or failed socket raises as
    PyMySQL's ``_read_bytes``."""
    while True:
        try:
            data = conn._rfile.read1(limit)
            break
        except OSError as e:
            if e.errno == errno.EINTR:
                continue
            conn._force_close()
            raise err.OperationalError(CR.CR_SERVER_LOST, f"Lost connection to MySQL server during query ({e})")
    if not data:
        conn._force_close()
        raise err.OperationalError(CR.CR_SERVER_LOST, "Lost connection to MySQL server during query")
    return data
