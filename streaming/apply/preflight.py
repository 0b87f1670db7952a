"""Before `cdc apply` builds its Spark session: every target it writes answers and lets us write.

Starting Spark takes seconds to minutes on a loaded host; a wrong DSN, a missing database or a missing
privilege is known in a second by doing what `cdc check` does for targets (streaming/apply/target_check.py:
connect, then create, fill and drop a scratch table). The first failure stops the apply with the finding
and its fix, before any JVM starts.
"""

from __future__ import annotations

from typing import Any

from cdc.errors import CdcError, Terminal


class TargetUnusable(CdcError, Terminal):
    """A target of the apply does not answer or refuses to be written (the message names it and the fix)."""


def check_targets(config: Any) -> None:
    """Raise TargetUnusable for the first target of ``config.apply`` that fails its `cdc check`."""
    from streaming.apply.target_check import checks

    for name in dict.fromkeys(a.target for a in config.apply):
        for found in checks(config.target(name), name):
            if not found.ok:
                raise TargetUnusable(f"{found.check}: {found.detail}; fix: {found.fix} (checked before starting "
                                     "Spark; `cdc check` reports the same)")
