"""At start, a ``tables`` pattern that matches no table is named in a WARNING.

Not an error: a table created later that matches is captured from its first row. But a daemon whose
patterns match nothing streams nothing, so the operator is told which pattern and what exists instead
(the same wording as `cdc check`, which reports it as a failure: cdc.checks.pattern_checks).
"""

from __future__ import annotations

import logging

from cdc.checks import pattern_checks
from readers.mysql.check import _base_tables

log = logging.getLogger(__name__)


def warn_unmatched(config, address: str) -> list[str]:
    """Log one WARNING per pattern of ``config.tables`` matching no base table on ``address``; returns them."""
    tables = [f"{db}.{t}" for db, t in _base_tables(address, config)]
    unmatched = []
    for check in pattern_checks(f"source {config.name}", config.tables, tables, address, "the source's `tables`"):
        if not check.ok:
            unmatched.append(check.check.rpartition(" ")[2])
            log.warning("source %s: %s; nothing is captured for it until such a table is created; fix: %s",
                        config.name, check.detail, check.fix)
    return unmatched
