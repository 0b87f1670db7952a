"""What the operations API reads of an apply target (cdc/ops, through cdc.registry APPLY_HOOKS)."""

from __future__ import annotations

from typing import Any

from streaming.targets.base import SqlTarget


def dead_letter_count(target: Any, source: str) -> int | None:
    """Rows of ``source`` in the target's ``dead_letter_table`` (0: none yet); None when the target keeps
    no dead letters (no ``dead_letter_table``) or is not an SQL database (its dead letters are files)."""
    if not isinstance(target, SqlTarget):
        return None
    name = target.config.dead_letter_table  # every target config has it (cdc/config/target_base.py)
    if not name:
        return None
    if target.table_columns(name) is None:
        return 0
    row = target.execute(f"SELECT COUNT(*) FROM {target.qualified(name)} WHERE source = {target.param}",
                         [source]).fetchone()
    target.commit()
    return int(row[0])
