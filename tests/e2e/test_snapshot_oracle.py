"""Oracle initial snapshot (AS OF SCN), against a flashback stand-in.

No Oracle server runs here. This stand-in keeps row versions by SCN and
answers the exact SQL shapes readers/oracle/snapshot.py sends, and fails
V$TRANSACTION as a standby does. It checks the contract (one SCN for every
chunk, keyset paging, resume mid-table, the streaming resume state), not
Oracle itself; tests/integration/test_oracle_snapshot.py runs the snapshot
inside the Oracle source against the LogMiner simulator's flashback reads.
"""

from __future__ import annotations

import re

import pytest

from cdc.stream.events import Change, Commit, Heartbeat, TableId
from readers.oracle.snapshot import FlashbackError, OracleSnapshot

pytestmark = [pytest.mark.oracle]


class Flashback:
    """Row versions of APP.T: (scn, id, row or None)."""

    def __init__(self):
        self.head = 200
        self.versions = [(100, i, {"ID": i, "NAME": f"n{i}"}) for i in range(1, 26)]
        self.versions += [(150, 3, {"ID": 3, "NAME": "changed"}), (150, 4, None), (150, 26, {"ID": 26, "NAME": "x"})]

    def at(self, scn):
        state = {}
        for s, k, row in sorted(self.versions, key=lambda v: v[0]):
            if s <= scn:
                state[k] = row
        return {k: r for k, r in state.items() if r is not None}

    def cursor(self):
        return Cursor(self)


class Cursor:
    def __init__(self, db):
        self.db, self.rows = db, []

    def execute(self, sql, binds):
        if "V$DATABASE" in sql:
            self.rows = [(self.db.head,)]
        elif "V$TRANSACTION" in sql:
            raise RuntimeError("ORA-00942: table or view does not exist")  # a standby
        elif "ALL_TAB_COLUMNS" in sql:
            self.rows = [("ID", "NUMBER", "N", None, 22, 0, None, None),
                         ("NAME", "VARCHAR2", "Y", None, 40, 40, None, None)] if binds["name"] == "T" else []
        elif "ALL_CONS_COLUMNS" in sql:
            self.rows = [("ID",)] if binds["name"] == "T" else []
        elif "AS OF SCN :scn" in sql:
            limit = int(re.search(r"FETCH FIRST (\d+) ROWS ONLY", sql).group(1))
            rows = sorted(self.db.at(binds["scn"]).values(), key=lambda r: r["ID"])
            if "a0" in binds:
                rows = [r for r in rows if r["ID"] > int(binds["a0"])]  # Oracle: NUMBER > '10' compares numbers
            assert 'TO_CHAR("ID")' in sql  # NUMBER is read as Oracle's own text of it, as SQL_REDO shows it
            self.rows = [(str(r["ID"]), r["NAME"]) for r in rows[:limit]]
        else:
            raise AssertionError(sql)

    def fetchall(self):
        return self.rows

    def close(self):
        pass


def rows_of(events):
    return [e.after for e in events if isinstance(e, Change)]


def test_flashback_snapshot_reads_every_chunk_at_one_scn_and_resumes():
    db = Flashback()
    snap = OracleSnapshot(db, [TableId("APP", "T")], chunk_rows=10, scn=120)
    events = list(snap.events())
    assert [r["ID"] for r in rows_of(events)] == [str(i) for i in range(1, 26)]  # the SCN-120 image
    assert rows_of(events)[2]["NAME"] == "n3"
    commits = [e for e in events if isinstance(e, Commit)]
    assert len(commits) == 3 and all(c.resume["snapshot"]["scn"] == 120 for c in commits)
    assert isinstance(events[-1], Heartbeat)
    assert events[-1].resume == {"low_watermark_scn": 120, "commit_scn": 121, "xids_at_commit_scn": []}
    # restart after the first chunk: the rest comes from the SAME scn, though the head moved on
    resumed = OracleSnapshot(db, [TableId("APP", "T")], progress=commits[0].resume["snapshot"], chunk_rows=10)
    assert [r["ID"] for r in rows_of(resumed.events())] == [str(i) for i in range(11, 26)]


def test_unknown_table_is_a_clear_error():
    snap = OracleSnapshot(Flashback(), [TableId("APP", "NOKEY")], scn=120)
    with pytest.raises(FlashbackError, match="does not exist"):
        list(snap.events())


def test_values_are_rendered_as_sql_redo_shows_them():
    import datetime as dt
    from decimal import Decimal

    from readers.oracle.snapshot import redo_text

    assert redo_text(dt.datetime(2024, 9, 13, 8, 20), "DATE") == "TO_DATE('2024-09-13 08:20:00', 'YYYY-MM-DD HH24:MI:SS')"
    assert redo_text(dt.datetime(2020, 2, 1, 0, 0, 0, 5), "TIMESTAMP(6)") == "TO_TIMESTAMP('2020-02-01 00:00:00.000005')"
    assert redo_text(Decimal("12.50"), "NUMBER") == "12.50" and redo_text("12.5", "NUMBER") == "12.5"
    assert redo_text(None, "DATE") is None and redo_text("x''y", "VARCHAR2") == "x''y"


def test_snapshot_scn_beyond_the_head_is_a_flashback_error_naming_the_scn(tmp_path):
    from readers.oracle.sim import simulator

    sim = simulator.instance("seed=4,transactions=10,lanes=2")
    snap = OracleSnapshot(sim.connect("standby"), [TableId("APP", "T1")], scn=sim.head + 10)
    with pytest.raises(FlashbackError, match=r"ORA-08181.*") as err:
        list(snap.events())
    assert err.value.scn == sim.head + 10
