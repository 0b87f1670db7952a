"""The writer epoch survives a restart of the apply (issue #36 section 2): the highest epoch applied is part of the
progress row, so a restarted engine still refuses a fenced writer's records that landed after the newer writer's,
and never drops a newer writer's record as a duplicate of an older writer's (DuckDB file target)."""

from __future__ import annotations

import dataclasses

import pytest

from cdc.config.models import ApplyConfig, TargetConfig
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.errors import StreamCorrupt
from streaming.targets.duckdb.target import DuckDbTarget
from tests.unit.cdc.stream.structure_streams import write
from tests.unit.streaming.apply.test_engine_structure import TOPIC, _records


def _engine(path: str) -> ApplyEngine:
    t = DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=path))
    e = ApplyEngine("src", t, TableMap.from_config(ApplyConfig(source="src", target="duck"))).start()
    e.topic = TOPIC
    return e


def _rows(recs, epochs, first_offset: int = 0):
    return [dataclasses.replace(r, epoch=e, offset=r.offset + first_offset)
            for r, e in zip(_records(recs), epochs, strict=True)]


def _apply(e: ApplyEngine, rows, batch_id: int) -> None:
    e.apply_records(rows, batch_id, {"next": {"0": rows[-1].offset + 1}, "topic": TOPIC})


def _rows_of(e: ApplyEngine) -> dict[int, int]:
    return dict(e.target.execute("SELECT id, v FROM a").fetchall())


def test_a_fenced_writers_records_stay_refused_after_a_restart(tmp_path):
    """Two publishers left the stream so: the newer writer (epoch 9) took the tail at sequence 0 and wrote
    transaction 1 (sequences 1-4); the fenced writer's queued copy of ITS next transaction (epoch 4, sequences
    5-8) landed after it; then the newer writer's transaction 2 (epoch 9, sequences 5-8 again). The live apply
    stops at sequence 5; a restarted one must stop there too, not apply the fenced copy and drop the newer
    writer's transaction as its duplicate."""
    path = str(tmp_path / "t.duckdb")
    b1 = write([("tx", [("c", "db.a", 1, 1)])], 1, "B")
    stale = write([("tx", [("c", "db.a", 2, 666)])], 5, "A", {"db.a"})
    b2 = write([("tx", [("c", "db.a", 2, 2)])], 5, "B", {"db.a"})
    rows = _rows(b1 + stale + b2, [9] * len(b1) + [4] * len(stale) + [9] * len(b2))
    e = _engine(path)
    _apply(e, rows[:len(b1)], 0)
    with pytest.raises(StreamCorrupt, match="with epoch 4"):
        _apply(e, rows[len(b1):], 1)
    assert e.target.read_progress("src").epoch == 9
    e.close()
    for attempt in range(2):  # a restart, and another: the same stop each time
        e = _engine(path)
        with pytest.raises(StreamCorrupt) as info:
            _apply(e, rows[len(b1):], 1 + attempt)
        err = info.value
        assert err.fields["sequence"] == 5 and err.fields["epoch"] == 4 and err.fields["previous_epoch"] == 9
        assert "epoch 9 or higher" in str(err) and "way back" in str(err)
        assert _rows_of(e) == {1: 1} and e.target.read_progress("src").last_sequence == 4
        e.close()


def test_a_newer_writers_record_is_never_dropped_as_a_duplicate_of_an_older_ones(tmp_path):
    """The target applied sequences 1-4 of a writer of epoch 4; records of epoch 9 under the same sequences are
    not replays of what the target holds (a newer writer never re-uses an older one's sequence): a loud stop,
    before and after a restart, never a silent drop."""
    path = str(tmp_path / "t.duckdb")
    a1 = write([("tx", [("c", "db.a", 1, 666)])], 1, "A")
    b1 = write([("tx", [("c", "db.a", 1, 1)])], 1, "B")
    e = _engine(path)
    _apply(e, _rows(a1, [4] * len(a1)), 0)
    for attempt in range(2):
        if attempt:
            e.close()
            e = _engine(path)
        with pytest.raises(StreamCorrupt) as info:
            _apply(e, _rows(b1, [9] * len(b1), len(a1)), 1 + attempt)
        err = info.value
        assert err.fields["sequence"] == 1 and err.fields["epoch"] == 9 and err.fields["previous_epoch"] == 4
        assert "duplicate" in str(err) and "way back" in str(err)
    assert _rows_of(e) == {1: 666}
    e.close()


def test_a_replay_of_what_the_target_holds_is_still_dropped(tmp_path):
    """A Spark checkpoint behind the progress row replays records the target holds, same epochs: dropped."""
    path = str(tmp_path / "t.duckdb")
    b1 = write([("tx", [("c", "db.a", 1, 1)]), ("tx", [("c", "db.a", 2, 2)])], 1, "B")
    rows = _rows(b1, [3] * 4 + [9] * (len(b1) - 4))
    e = _engine(path)
    _apply(e, rows, 0)
    e.close()
    e = _engine(path)
    assert e.target.read_progress("src").epoch == 9
    result = e.apply_records(rows, 1, {"next": {"0": rows[-1].offset + 1}, "topic": TOPIC})
    assert result.skipped or not result.transactions
    assert _rows_of(e) == {1: 1, 2: 2}
    e.close()


def test_a_progress_row_written_before_epochs_reads_as_epoch_0():
    from streaming.targets.progress_row import Progress

    assert Progress("src", 4, 0, {"kafka": {"next": {"0": 5}}}).epoch == 0
    assert Progress("src", 4, 0, {"epoch": 7}).epoch == 7
