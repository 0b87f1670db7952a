"""Spark's checkpoint (its on-disk offset and commit logs) against the target's progress row."""

from __future__ import annotations

import orjson
import pytest

from streaming.apply.checkpoint import check, default_location, read_checkpoint
from streaming.errors import StreamCorrupt
from streaming.targets.progress_row import Progress

T = "cdc.src.changes"


def _spark_checkpoint(root, planned: dict[int, int], committed: list[int], stream: str | None = "ID1"):
    """Write offsets/<id> and commits/<id> files as Spark does (v1, batch metadata, one line per source)."""
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    for batch, end in planned.items():
        off = {"next": {"0": end}, **({"stream": stream} if stream else {}), "topic": T}
        (root / "offsets" / str(batch)).write_text("v1\n" + orjson.dumps({"batchWatermarkMs": 0}).decode() + "\n"
                                                  + orjson.dumps(off).decode())
        (root / "offsets" / f".{batch}.crc").write_text("x")
    for batch in committed:
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return read_checkpoint(str(root))


def _progress(seq: int, next_offset: int, stream: str | None = "ID1") -> Progress:
    kafka = {"next": {"0": next_offset}, **({"stream": stream} if stream else {}), "topic": T}
    return Progress("src", seq, 3, {"kafka": kafka})


def _check(ck, progress, stream_id="ID1"):
    check(checkpoint=ck, progress=progress, topic=T, stream_id=stream_id, target="pg", source="src")


def test_the_checkpoint_resumes_after_its_last_committed_batch(tmp_path):
    ck = _spark_checkpoint(tmp_path, {0: 10, 1: 20, 2: 30}, [0, 1])
    assert ck.resume_from["next"] == {"0": 20} and ck.planned["next"] == {"0": 30} and ck.last_batch == 2
    assert read_checkpoint(str(tmp_path / "none")) is None
    _check(ck, _progress(25, 20))  # the progress row at the committed end: Spark re-runs batch 2
    _check(ck, _progress(35, 30))  # batch 2 applied, its commit not logged yet
    _check(ck, _progress(45, 40))  # checkpoint behind the target: re-read records are dropped by sequence


def test_a_checkpoint_ahead_of_the_progress_row_would_skip_records(tmp_path):
    ck = _spark_checkpoint(tmp_path, {0: 10, 1: 20}, [0, 1])
    with pytest.raises(StreamCorrupt, match=r"resumes .*\[0\] at offset 20, but target 'pg' has applied only up "
                                            r"to offset 10 .*skip records 10\.\.19"):
        _check(ck, _progress(9, 10))


def test_an_empty_target_with_a_committed_checkpoint_is_refused(tmp_path):
    ck = _spark_checkpoint(tmp_path, {0: 10}, [0])
    with pytest.raises(StreamCorrupt, match=r"target 'pg' has no progress row .*must start at the beginning"):
        _check(ck, None)
    _check(_spark_checkpoint(tmp_path / "planned", {0: 10}, []), None)  # nothing committed: starts at the start
    _check(_spark_checkpoint(tmp_path / "empty", {0: 0}, [0]), None)  # only an empty batch committed: at the start


def test_another_life_of_the_topic_is_refused_in_the_checkpoint_and_in_the_target(tmp_path):
    ck = _spark_checkpoint(tmp_path, {0: 10}, [0], stream="OLD")
    with pytest.raises(StreamCorrupt, match=r"checkpoint .* was written for another stream .*topic id OLD"):
        _check(ck, _progress(11, 10, stream="NEW"), stream_id="NEW")
    with pytest.raises(StreamCorrupt, match=r"target 'pg' was applied from another life .*topic id OLD.*now has id "
                                            r"NEW"):
        _check(None, _progress(11, 10, stream="OLD"), stream_id="NEW")
    _check(_spark_checkpoint(tmp_path / "legacy", {0: 10}, [0], stream=None), _progress(11, 10, None))


def test_the_default_location_is_keyed_by_target_and_topic_id(tmp_path, monkeypatch):
    monkeypatch.delenv("CDC_CHECKPOINT_ROOT", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    a = default_location(None, "cdc", "src", "pg", {"dsn": "postgresql://h/db1"}, "b:9092", "ID1")
    assert a.startswith(str(tmp_path / "cdc" / "checkpoints" / "cdc.src.pg-"))
    assert a != default_location(None, "cdc", "src", "pg", {"dsn": "postgresql://h/db2"}, "b:9092", "ID1")
    assert a != default_location(None, "cdc", "src", "pg", {"dsn": "postgresql://h/db1"}, "b:9092", "ID2")
    assert a == default_location(None, "cdc", "src", "pg", {"dsn": "postgresql://h/db1"}, "b:9092", "ID1")
