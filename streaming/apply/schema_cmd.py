"""`cdc schema accept|skip|evolve|list`: the way back from a schema change the apply stopped at.

When the apply meets a DDL it does not follow (streaming/apply/catalog.py), it commits
everything before the DDL and stops naming the table, the statement and the SCHEMA record's
sequence. The operator records a decision for that sequence in the target (table
``cdc_schema_decisions``, committed at once) and restarts ``cdc apply``, which honours it at
the same barrier and goes on, without a rebuild:

    cdc schema evolve --config cdc.yaml --source shop --target pg --table shop.orders --sequence 812
        follow the change as the ``evolve`` behaviour would (e.g. under ``exception``)
    cdc schema accept ... --sequence 812
        the target already matches the new definition (you altered or filled it by hand): take the
        new definition as it is, run no DDL
    cdc schema skip ... --sequence 812
        keep the target's shape: from then on the apply writes only the columns the target has
    cdc schema list --config cdc.yaml --source shop --target pg

A decision for a sequence the target's progress row has already passed is refused (it would
never be read). Exit status 0, 2 on a CdcError (unknown source/target, a passed sequence).
"""

from __future__ import annotations

import argparse
from typing import Any

from cdc.config.options import add_config_option
from cdc.errors import ConfigError

DECISIONS = ("accept", "skip", "evolve")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=(*DECISIONS, "list"))
    add_config_option(parser)
    parser.add_argument("--source", required=True, help="the apply item's source name")
    parser.add_argument("--target", required=True, help="the apply item's target name")
    parser.add_argument("--table", help="the source table (db.table) the stop named")
    parser.add_argument("--sequence", type=int, help="the SCHEMA record's sequence the stop named")


def main(args: argparse.Namespace) -> int:
    from cdc.config.loader import load_config

    config = load_config(args.config)
    if args.action == "list":
        for seq, table, decision, when in list_decisions(config, args.config, args.source, args.target):
            print(f"sequence {seq}  {table}  {decision}  {when}")
        return 0
    print(record_decision(config, args.config, args.source, args.target, args.action, args.table, args.sequence))
    return 0


def open_apply_target(config: Any, config_path: str, source: str, target: str) -> Any:
    """The opened target of the apply item ``source -> target`` of ``config`` (read from ``config_path``);
    ConfigError when the config has no such item."""
    from streaming.targets import make_target

    if not any(a.source == source and a.target == target for a in config.apply):
        raise ConfigError(f"no apply item with source {source!r} and target {target!r} in {config_path}",
                          key="apply")
    return make_target(config.target(target)).open()


def list_decisions(config: Any, config_path: str, source: str, target: str) -> list[tuple[int, str, str, Any]]:
    """Every decision recorded for ``source`` in ``target``: (sequence, source table, decision, when)."""
    t = open_apply_target(config, config_path, source, target)
    try:
        return t.schema_decisions(source)
    finally:
        t.close()


def record_decision(config: Any, config_path: str, source: str, target: str, action: str, table: str | None,
                    sequence: int | None) -> str:
    """Record ``action`` (accept, skip, evolve) for the SCHEMA record at ``sequence`` of ``table`` in the
    target (committed at once); the line that says so. ConfigError for an unknown apply item, a missing
    table or sequence, or a sequence the target's progress row has already passed. The one implementation
    of `cdc schema accept|skip|evolve` and of the operations API's schema route (cdc/ops)."""
    if action not in DECISIONS:
        raise ConfigError(f"unknown schema decision {action!r}; use one of {', '.join(DECISIONS)}", key="action")
    if sequence is None or not table:
        raise ConfigError(f"`cdc schema {action}` needs --table and --sequence (the apply's stop names both)",
                          key="--sequence")
    t = open_apply_target(config, config_path, source, target)
    try:
        progress = t.read_progress(source)
        if progress is not None and progress.last_sequence >= sequence:
            raise ConfigError(f"target {target!r} is already at sequence {progress.last_sequence}, past "
                              f"{sequence}: a decision there would never be read", key="--sequence")
        t.save_schema_decision(source, sequence, table, action)
        return (f"recorded: {action} the schema change of {table} at sequence {sequence} ({source} -> {target}); "
                "restart `cdc apply` to go on")
    finally:
        t.close()
