"""Run OracleSource with both pipelines and collect every event it yields (heartbeats and idles aside;
a ChangeBatch of the serialized release as its Changes, so both pipelines compare event for event)."""

from __future__ import annotations

from cdc.stream.events import ChangeBatch, Commit, Heartbeat, Idle
from tests.unit.readers.oracle.helpers import source


def events(options: str, tmp, resume=None, stop_after: int | None = None, after_start=None, **cfg):
    """(events, last resume state): everything but Heartbeat/Idle, until caught up or ``stop_after`` commits.
    ``after_start(source)`` runs once the source started (to set a bound, say)."""
    out, last, _ = collect(source(options, tmp, **cfg), resume, stop_after, after_start)
    return out, last


def collect(src, resume=None, stop_after: int | None = None, after_start=None, expand: bool = True,
            until: tuple[type[BaseException], ...] = ()):
    """``events`` of a source made already: (events, last resume state, the error of a kind in ``until`` that
    ended it, or None). ``expand``: a ChangeBatch as its Changes."""
    src.start(resume)
    if after_start is not None:
        after_start(src)
    out, last, commits = [], resume, 0
    try:
        for ev in src.events():
            if isinstance(ev, Idle):
                continue
            if isinstance(ev, Heartbeat):
                last = ev.resume or last
                if src.caught_up():
                    break
                continue
            if expand and isinstance(ev, ChangeBatch):
                out.extend(ev.changes())
                continue
            out.append(ev)
            if isinstance(ev, Commit):
                last, commits = ev.resume, commits + 1
                if stop_after is not None and commits >= stop_after:
                    break
    except until as exc:
        return out, last, exc
    finally:
        src.close()
    return out, last, None
