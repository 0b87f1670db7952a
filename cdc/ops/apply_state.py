"""The apply jobs' side of the operations API, read from the targets through the config.

The apply job (Spark) keeps everything an operator asks about in the target itself, in the same
transaction as the data: the progress row (streaming/targets/progress_row.py: last sequence, last
batch, when), the schema decisions (`cdc schema`), the dead-letter table. So the daemon's API answers
for every apply item of its config file by opening each target and reading them, the way
`cdc schema list` and `cdc status` do: no listener in the Spark driver, and the answer is right
whether the apply job runs or not (a stopped job's progress row says where it stopped).

A target that cannot be read answers its own ``error`` (the error class and message), never the
whole call: one unreachable target does not hide the others.
"""

from __future__ import annotations

import time
from typing import Any

from cdc.errors import CdcError


def apply_items(config: Any, config_path: str, tails: dict[str, int]) -> list[dict[str, Any]]:
    """One answer per ``apply`` item of ``config``; ``tails``: {source: highest sequence in its stream}
    of the sources this daemon writes (the records the target is behind are counted from it)."""
    return [_item(config, config_path, a.source, a.target, tails.get(a.source)) for a in config.apply]


def _item(config: Any, config_path: str, source: str, target: str, tail: int | None) -> dict[str, Any]:
    from cdc.registry import apply_hook

    open_apply_target, dead_letter_count = apply_hook("open_apply_target"), apply_hook("dead_letter_count")

    out: dict[str, Any] = {"source": source, "target": target, "progress": None, "last_batch": None,
                           "records_behind": None, "lag_seconds": None, "dead_letters": None,
                           "schema_decisions": [], "error": None}
    try:
        t = open_apply_target(config, config_path, source, target)
    except Exception as exc:  # noqa: BLE001 - one target's failure is its own answer
        out["error"] = _describe(exc)
        return out
    try:
        p = t.read_progress(source)
        if p is not None:
            out["progress"] = {"last_sequence": p.last_sequence, "position": {k: v for k, v in p.last_position.items()
                                                                              if k != "kafka"},
                               "epoch": p.epoch}
            out["last_batch"] = {"batch_id": p.batch_id, "applied_at": p.applied_at.isoformat() + "Z"
                                 if p.applied_at is not None else None,
                                 "last_commit_ms": p.last_commit_ts_ms}
            if tail is not None:
                out["records_behind"] = max(0, tail - p.last_sequence)
                if p.last_commit_ts_ms is not None and tail > p.last_sequence:
                    out["lag_seconds"] = max(0.0, time.time() - p.last_commit_ts_ms / 1000.0)
                elif p.last_commit_ts_ms is not None:
                    out["lag_seconds"] = 0.0  # caught up with the stream: nothing waits
        out["dead_letters"] = dead_letter_count(t, source)
        out["schema_decisions"] = [{"sequence": seq, "table": table, "decision": decision, "at": str(when)}
                                   for seq, table, decision, when in t.schema_decisions(source)]
    except Exception as exc:  # noqa: BLE001
        out["error"] = _describe(exc)
    finally:
        t.close()
    return out


def _describe(exc: BaseException) -> str:
    if isinstance(exc, CdcError):
        return f"{type(exc).__name__}: {exc}"
    return f"{type(exc).__name__}: {str(exc)[:300]}"
