"""Fail closed: every binlog event type the reader does not decode stops it before its checkpoint passes.

On a real MariaDB and MySQL 9.7 (``mysql_source``), one committed transaction of a captured table is read again and again; each time
an event of one more type code is injected into the replication stream just before the transaction's
first rows event (as a server that writes it would send it). Each run must stop with a named Terminal
error, yield nothing of the transaction, and leave every resume state it yielded before the transaction.
A last run without injection then publishes the transaction, once.
"""

from __future__ import annotations

import struct
import zlib
from types import SimpleNamespace

import pytest

from cdc.errors import CdcError, Terminal
from cdc.stream.events import Begin, Change, Commit, Heartbeat, expand
from readers.mysql import reader as reader_mod
from readers.mysql.binlog import fastevents
from readers.mysql.binlog.binlog_events import KNOWN_CODES, PASSIVE_CODES
from readers.mysql.position import GtidSet
from tests.integration.mysql_helpers import collect, is_mysql, source_for, transactions

pytestmark = pytest.mark.mysql

# the codes the reader decodes, and those that carry no change of a table by definition (binlog_events.py)
DECODED = {0x02, 0x04, 0x0F, 0x10, 0x13, 0x17, 0x18, 0x19, 0x1E, 0x1F, 0x20, 0x21, 0x26, 0xA2}
PASSIVE = {0x03, 0x05, 0x0D, 0x0E, 0x1B, 0x1D, 0x23, 0xA0, 0xA1, 0xA3, 0xA4} | PASSIVE_CODES
ROWS_CODES = {0x17, 0x18, 0x19, 0x1E, 0x1F, 0x20, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xAB}
# every named code not decoded, and every code no server writes today (0x2B-0x9F, 0xAC-0xFF) in steps
INJECTED = sorted((set(KNOWN_CODES) | set(range(0x06, 0x2C)) | set(range(0x2C, 0xA0, 7)) | set(range(0xA4, 0xAC))
                   | set(range(0xAC, 0x100, 9))) - DECODED - PASSIVE)


def _event(code: int, real: bytes, body: bytes = bytes(32)) -> bytes:
    """A packet carrying an event of type ``code`` with the header fields of the real packet ``real``."""
    timestamp, _, server_id, _, log_pos, _ = struct.unpack_from("<IBIIIH", real, 1)
    raw = struct.pack("<IBIIIH", timestamp, code, server_id, 19 + len(body) + 4, log_pos, 0) + body
    return b"\x00" + raw + struct.pack("<I", zlib.crc32(raw))


@pytest.fixture
def inject(monkeypatch):
    """inject(code): the next rows event of the binlog connection is preceded by an event of type ``code``."""
    original = reader_mod._Guarded._read_guarded
    armed: list[int] = []

    def read(self, packet_type):
        if getattr(self, "_held", None) is not None:
            held, self._held = self._held, None
            return held
        pkt = original(self, packet_type)
        data = pkt.get_all_data()
        if armed and self._inflater is not None and len(data) > 6 and data[0] == 0 and data[5] in ROWS_CODES:
            self._held = pkt
            return packet_type(_event(armed[0], data), self.encoding)
        return pkt

    original_data = reader_mod._Guarded.next_data

    def next_data(self):  # the reader's packet-bytes read (FastStream): the same injection
        held = getattr(self, "_held_data", None)
        if held is not None:
            self._held_data = None
            return held
        data = original_data(self)
        if data is not None and armed and self._inflater is not None and len(data) > 6 and data[0] == 0 \
                and data[5] in ROWS_CODES:
            self._held_data = data
            return _event(armed[0], data)
        return data

    monkeypatch.setattr(reader_mod._Guarded, "_read_guarded", read)
    monkeypatch.setattr(reader_mod._Guarded, "next_data", next_data)
    if fastevents._native is not None:  # its buffer read takes packets past next_data: the C decoding only
        monkeypatch.setattr(fastevents, "_native", SimpleNamespace(next=lambda stream, conn: None,
                                                                   event=fastevents._native.event))
    def arm(code: int | None) -> None:
        armed[:] = [] if code is None else [code]

    return arm


def test_every_undecoded_event_type_stops_before_the_checkpoint(mysql_source, tmp_source_db, inject):
    db = tmp_source_db
    q = mysql_source.query
    q(f"CREATE TABLE `{db}`.acct (id INT PRIMARY KEY, bal INT)")
    before = GtidSet.parse(mysql_source.gtid_binlog_pos())  # the checkpoint: just before the transaction
    conn = mysql_source.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute(f"INSERT INTO `{db}`.acct VALUES (1, 100), (2, 200)")
            cur.execute(f"UPDATE `{db}`.acct SET bal = bal - 50 WHERE id = 1")
            cur.execute("COMMIT")
    finally:
        conn.close()
    after = GtidSet.parse(mysql_source.gtid_binlog_pos())
    gtid = str(after - before)  # the transaction's own GTID
    assert not before.issuperset(after)

    stopped: dict[int, str] = {}
    for code in INJECTED:
        inject(code)
        src = source_for(mysql_source, [f"{db}.*"], heartbeat_interval_s=0.2, reconnect_attempts=0)
        src.start({"gtid_set": str(before)})
        seen: list = []
        try:
            with pytest.raises(CdcError) as info:
                for ev in expand(src.events()):
                    seen.append(ev)
                    assert not isinstance(ev, (Begin, Change, Commit)), f"code {code}: published {ev!r}"
                    if isinstance(ev, Heartbeat):
                        assert not GtidSet.parse(ev.resume["gtid_set"]).issuperset(after), \
                            f"code {code}: a heartbeat moved past the transaction: {ev.resume}"
                    assert len(seen) < 200, f"code {code}: the reader went on: {seen[-3:]}"
        finally:
            src.close()
        err = info.value
        assert isinstance(err, Terminal), f"code {code}: {err!r} is not Terminal"
        assert not src.state.issuperset(after), f"code {code}: state passed the transaction: {src.state}"
        text = str(err)
        assert ("mysql-bin." if is_mysql(mysql_source) else "mariadb-bin.") in text and (gtid is None or gtid in text), f"code {code}: {text}"
        if code in KNOWN_CODES:
            assert KNOWN_CODES[code][0] in text, f"code {code}: the event type is not named: {text}"
        stopped[code] = type(err).__name__
    assert set(stopped) == set(INJECTED)

    inject(None)
    src = source_for(mysql_source, [f"{db}.*"], heartbeat_interval_s=0.2)
    src.start({"gtid_set": str(before)})
    try:
        events = collect(src, lambda evs: src.state.issuperset(after), timeout=20)
    finally:
        src.close()
    txs = transactions(events)
    assert len(txs) == 1 and [c.op for c in txs[0][1]] == ["c", "c", "u"]
