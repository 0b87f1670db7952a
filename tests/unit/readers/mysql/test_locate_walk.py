"""`cdc gtid locate`'s walk over SHOW BINLOG EVENTS rows: where each GTID state holds.

MariaDB writes a Binlog_checkpoint into a new binlog file when it gets to it: right after the
header, or after the file's first transactions. Neither placement may move a boundary.
"""

from __future__ import annotations

from readers.mysql.locate import state_at, walk
from readers.mysql.position import GtidSet


class Rows:
    """A cursor whose SHOW BINLOG EVENTS gives ``rows`` (Log_name, Pos, Event_type, Server_id, End_log_pos, Info)."""

    def __init__(self, rows):
        self.rows = rows

    def execute(self, sql):
        assert sql.startswith("SHOW BINLOG EVENTS")

    def fetchall(self):
        return self.rows


def _file(checkpoint_after_first: bool):
    """A MariaDB file: header (state 0-1-5), one transaction 0-1-6, a checkpoint early or late, then 0-1-7."""
    head = [("b.2", 4, "Format_desc", 1, 256, ""), ("b.2", 256, "Gtid_list", 1, 299, "[0-1-5]")]
    checkpoint = [("b.2", 0, "Binlog_checkpoint", 1, 0, "b.2")]
    one = [("b.2", 0, "Gtid", 1, 0, "BEGIN GTID 0-1-6"), ("b.2", 0, "Write_rows_v1", 1, 0, ""),
           ("b.2", 0, "Xid", 1, 0, "COMMIT")]
    two = [("b.2", 0, "Gtid", 1, 0, "BEGIN GTID 0-1-7"), ("b.2", 0, "Query", 1, 0, "COMMIT")]
    events = head + (one + checkpoint if checkpoint_after_first else checkpoint + one) + two
    rows, pos = [], 299
    for i, (log, p, etype, sid, end, info) in enumerate(events):
        if i < 2:
            rows.append((log, p, etype, sid, end, info))
            continue
        rows.append((log, pos, etype, sid, pos + 40, info))
        pos += 40
    return rows


def _ends(rows, etype):
    return [end for _l, _p, t, _s, end, _i in rows if t == etype]


def test_a_checkpoint_after_the_header_does_not_move_the_header_state():
    rows = _file(checkpoint_after_first=False)
    checkpoint_end = _ends(rows, "Binlog_checkpoint")[0]
    # read before the checkpoint was written (at the Gtid_list's end) and after it: the header's state
    assert state_at(Rows(rows), "b.2", 299) == GtidSet.parse("0-1-5")
    assert state_at(Rows(rows), "b.2", checkpoint_end) == GtidSet.parse("0-1-5")
    assert state_at(Rows(rows), "b.2", 298) == GtidSet()


def test_a_checkpoint_after_a_transaction_does_not_extend_it():
    rows = _file(checkpoint_after_first=True)
    xid_end = _ends(rows, "Xid")[0]
    # the first transaction ends at its Xid whether or not the checkpoint had been written behind it
    assert state_at(Rows(rows), "b.2", xid_end) == GtidSet.parse("0-1-6")
    assert (GtidSet.parse("0-1-6"), xid_end) in list(walk(Rows(rows), "b.2"))
    last_end = rows[-1][4]
    assert list(walk(Rows(rows), "b.2"))[-1] == (GtidSet.parse("0-1-7"), last_end)


def test_the_first_boundary_holding_a_state_is_the_header_end():
    rows = _file(checkpoint_after_first=False)
    states = list(walk(Rows(rows), "b.2"))
    assert states[0] == (GtidSet.parse("0-1-5"), 299)
