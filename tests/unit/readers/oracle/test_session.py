"""Session management against the simulator: logs, gaps, dictionaries, recycling, bad rows."""

from __future__ import annotations

import pytest

from readers.oracle.config import OracleSourceConfig
from readers.oracle.errors import DictionaryMismatch, MissingLog, RedoGap
from readers.oracle.position import ResumeState, Xid
from readers.oracle.session import LogMinerSession, Standby
from tests.unit.readers.oracle.helpers import run, source


def _cfg(opts, tmp, **kw):
    return OracleSourceConfig(name="o", dsn=f"simulator:{opts}", tables=["APP.*"], dictionary_path=str(tmp), **kw)


def test_redo_gap_names_thread_and_missing_sequences(tmp_path):
    opts = "seed=1,transactions=60,threads=2,log_scns=20,drop_log=2:3"
    standby = Standby(_cfg(opts, tmp_path))
    with pytest.raises(RedoGap) as err:
        standby.logs_for(1_000_000, 1_000_100)
    assert (err.value.thread, err.value.missing_from, err.value.missing_to) == (2, 3, 3)
    assert "2: log sequences 3..3 are missing" in str(err.value)


def test_reader_stops_on_a_gap(tmp_path):
    with pytest.raises(RedoGap):
        run(source("seed=2,transactions=60,threads=2,log_scns=20,drop_log=1:2", tmp_path, sessions=2,
                   scn_range_size=15))


def test_missing_first_log(tmp_path):
    standby = Standby(_cfg("seed=1,transactions=60,log_scns=20,drop_log=1:1", tmp_path))
    with pytest.raises(MissingLog, match="no log holds SCN 1000000"):
        standby.logs_for(1_000_000, 1_000_030)


def test_dictionary_mismatch_stops_with_scn_xid_table(tmp_path):
    with pytest.raises(DictionaryMismatch) as err:
        run(source("seed=4,transactions=30,tables=3,unknown_table=1,rollback_rate=0", tmp_path))
    e = err.value
    assert e.table.startswith("UNKNOWN.OBJ# ") and e.scn >= 1_000_000 and Xid.parse(e.xid)
    assert '"UNKNOWN"."OBJ#' in e.text


def test_online_catalog_on_a_separate_mining_instance_is_a_mismatch(tmp_path):
    with pytest.raises(DictionaryMismatch):
        run(source("seed=5,transactions=10,rollback_rate=0", tmp_path, dictionary="online_catalog"))


def test_redo_log_dictionary_strategy_mines(tmp_path):
    txs, _ = run(source("seed=6,transactions=10", tmp_path, dictionary="redo_log"))
    assert txs


def test_log_switch_and_session_recycling(tmp_path):
    now = [0.0]
    cfg = _cfg("seed=7,transactions=40,log_scns=30", tmp_path, session_recycle_s=5)
    standby = Standby(cfg)
    path = standby.build_dictionary()
    session = LogMinerSession(cfg, lambda: path, clock=lambda: now[0])
    rows = 0
    for lo in range(1_000_000, 1_000_150, 25):
        rows += sum(len(b) for b in session.mine(lo, lo + 24, standby.logs_for(lo, lo + 24)))
        now[0] += 2
    assert rows > 0 and session.log_switches >= 3 and session.recycles >= 1
    session.close()


def test_resume_state_round_trip_and_filter():
    s = ResumeState(10, 20, frozenset({"1.2.3"}))
    assert ResumeState.from_json(s.to_json()) == s
    assert s.already_published(19, "9.9.9") and s.already_published(20, "1.2.3")
    assert not s.already_published(20, "1.2.4") and not s.already_published(21, "1.2.3")


def test_archived_logs_deleted_past_the_checkpoint_name_the_scn_range_and_the_way_out(tmp_path):
    """The simulator deletes archived logs below sequence 3 (RMAN DELETE ARCHIVELOG); a resume state in
    sequence 1 stops the reader at its first mining range, naming the SCN range it cannot mine and how to get out."""
    from readers.oracle.errors import ArchiveLogMissing

    resume = {"low_watermark_scn": 1_000_005, "commit_scn": 1_000_004, "xids_at_commit_scn": []}
    with pytest.raises(ArchiveLogMissing) as err:
        run(source("seed=3,transactions=60,log_scns=20,threads=1,purged_before=3", tmp_path), resume)
    e = err.value
    assert (e.scn, e.oldest_sequence, e.oldest_scn, e.thread) == (1_000_005, 3, 1_000_040, 1)
    assert "SCN 1000005..1000039 (sequences before 3) can no longer be mined" in str(e)
    assert "RESTORE ARCHIVELOG" in str(e) and "snapshot: when_needed" in str(e) and "cdc stream reset" in str(e)
    txs, _ = run(source("seed=3,transactions=60,log_scns=20,threads=1,purged_before=3", tmp_path),
                 {"low_watermark_scn": 1_000_045, "commit_scn": 1_000_044, "xids_at_commit_scn": []})
    assert txs and all(scn > 1_000_044 for scn, _, _ in txs)  # from inside the logs still there: it mines
