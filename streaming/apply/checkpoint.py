"""Spark's checkpoint against the target's progress row: the progress row is the authority.

A query restarts where its checkpoint says: the end offsets of the last
batch Spark logged as committed (``commits/<id>``), re-running a batch that
was planned (``offsets/<id>``) but not committed. The target's progress row
(written in the same transaction as the data) says what is really applied.
Before a query starts, :func:`check` compares the two and the identity of
the stream (the broker's topic id, cdc.publish.topics.topic_id, recorded in
every offset and in the progress row), and refuses with a StreamCorrupt
that says which disagree and how to fix it:

- the target was applied from another life of the topic (the topic was
  deleted and created again, e.g. by ``cdc stream reset``): its rows and
  progress belong to a stream that no longer exists;
- the checkpoint was written for another life of the topic;
- the checkpoint has committed batches but the target has no progress row
  (a new or emptied target with an old checkpoint): its first batch would
  start in the middle of the stream, not at its beginning;
- the checkpoint resumes after the target's progress: Spark would skip the
  records in between.

A checkpoint BEHIND the progress is safe (the engine drops what the
progress row covers, by sequence) and passes. The default checkpoint
location (:func:`default_location`) is keyed by the target's identity and
the topic's id, so a recreated topic or another target never meets an old
checkpoint there.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from streaming.errors import StreamCorrupt
from streaming.targets.progress_row import Progress


@dataclass(frozen=True)
class CheckpointState:
    """What a Spark checkpoint directory says about the ``cdc-stream`` source."""

    path: str
    resume_from: dict[str, Any] | None  # end offsets of the last committed batch (None: nothing committed)
    planned: dict[str, Any] | None  # end offsets of the last planned batch
    last_batch: int | None


def _batch_files(directory: Path) -> dict[int, Path]:
    if not directory.is_dir():
        return {}
    return {int(p.name): p for p in directory.iterdir() if p.name.isdigit()}


def _source_offset(path: Path) -> dict[str, Any] | None:
    """The cdc-stream offset in an ``offsets/<id>`` file (``v1``, batch metadata, one line per source)."""
    for line in reversed(path.read_text().splitlines()):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "next" in obj and "topic" in obj:
            return obj
    return None


def read_checkpoint(location: str) -> CheckpointState | None:
    """The state of the checkpoint at ``location`` (None: no batch was ever planned there)."""
    root = Path(location)
    offsets = _batch_files(root / "offsets")
    if not offsets:
        return None
    commits = _batch_files(root / "commits")
    last = max(offsets)
    done = [b for b in commits if b in offsets]
    return CheckpointState(location, _source_offset(offsets[max(done)]) if done else None,
                           _source_offset(offsets[last]), last)


def check(*, checkpoint: CheckpointState | None, progress: Progress | None, topic: str, stream_id: str | None,
          target: str, source: str) -> None:
    """Raise StreamCorrupt when the checkpoint, the progress row and the stream do not belong together."""
    kept = (progress.next_offsets or {}) if progress is not None else {}
    if progress is not None and stream_id and kept.get("stream") and kept["stream"] != stream_id:
        raise StreamCorrupt(
            f"target {target!r} was applied from another life of {topic} (topic id {kept['stream']}, up to "
            f"sequence {progress.last_sequence}); the topic now has id {stream_id} (it was deleted and created "
            f"again, e.g. by `cdc stream reset`): its new records would be taken for replays and dropped. Rebuild "
            f"the target from the new stream (drop its tables and its cdc_progress row for source {source!r}, or "
            f"use a new target)", topic=topic, target=target, source=source, target_stream=kept["stream"],
            topic_id=stream_id, sequence=progress.last_sequence)
    if checkpoint is None:
        return
    where = checkpoint.path
    for name, off in (("resumes at", checkpoint.resume_from), ("planned", checkpoint.planned)):
        if off is None:
            continue
        if off.get("topic") != topic or (stream_id and off.get("stream") and off["stream"] != stream_id):
            raise StreamCorrupt(
                f"the Spark checkpoint {where} was written for another stream ({off.get('topic')}, topic id "
                f"{off.get('stream')}; it {name} {off.get('next')}), not for {topic} (topic id {stream_id}): "
                f"remove that directory (the query then starts from the target's progress row, or from the "
                f"beginning of the stream for an empty target)", checkpoint=where, topic=topic,
                checkpoint_topic=off.get("topic"), checkpoint_stream=off.get("stream"), topic_id=stream_id)
    resume = checkpoint.resume_from
    if resume is None:
        return  # nothing committed: the first batch starts at the initial offset (the progress row's, or earliest)
    if progress is None and not any(int(at) for at in (resume.get("next") or {}).values()):
        return  # only empty batches committed (a driver killed before the first data): still at the start
    if progress is None:
        raise StreamCorrupt(
            f"target {target!r} has no progress row for source {source!r} (a new or emptied target) but the Spark "
            f"checkpoint {where} resumes at offsets {resume.get('next')} of {topic}: the first batch into an empty "
            f"target must start at the beginning of the stream. Remove that directory (a checkpoint from another "
            f"life), or restore the target that belongs to it", checkpoint=where, target=target, source=source,
            topic=topic, offsets=resume.get("next"))
    have = kept.get("next") if kept.get("topic") == topic else None
    if not have:
        return  # a progress row without offsets (written by an older version): the sequence filter decides
    for part, at in sorted(resume.get("next", {}).items()):
        applied_to = have.get(part)
        if applied_to is not None and int(applied_to) < int(at):
            raise StreamCorrupt(
                f"the Spark checkpoint {where} resumes {topic}[{part}] at offset {at}, but target {target!r} has "
                f"applied only up to offset {applied_to} (sequence {progress.last_sequence}): Spark would skip "
                f"records {applied_to}..{int(at) - 1}. The target's progress row is the authority: remove that "
                f"directory and the query starts from the progress row", checkpoint=where, target=target,
                topic=topic, partition=part, checkpoint_offset=at, progress_offset=applied_to,
                sequence=progress.last_sequence)


def default_location(root: str | None, prefix: str, source: str, target: str, target_identity: dict[str, Any],
                     bootstrap: str, stream_id: str | None) -> str:
    """``<root>/<prefix>.<source>.<target>-<digest>``: the digest covers the target's settings (its
    identity: where it writes), the broker and the topic's id. Root: ``$CDC_CHECKPOINT_ROOT``, else
    ``$XDG_STATE_HOME/cdc/checkpoints`` (``~/.local/state/cdc/checkpoints``): a user's own directory,
    not a shared /tmp path."""
    base = root or os.environ.get("CDC_CHECKPOINT_ROOT") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state"),
        "cdc", "checkpoints")
    ident = orjson.dumps({"target": target_identity, "bootstrap": bootstrap, "stream": stream_id},
                         option=orjson.OPT_SORT_KEYS, default=str)
    return os.path.join(base, f"{prefix}.{source}.{target}-{hashlib.sha256(ident).hexdigest()[:12]}")
