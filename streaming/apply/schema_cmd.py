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

from cdc.config.options import add_config_option
from cdc.errors import ConfigError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("accept", "skip", "evolve", "list"))
    add_config_option(parser)
    parser.add_argument("--source", required=True, help="the apply item's source name")
    parser.add_argument("--target", required=True, help="the apply item's target name")
    parser.add_argument("--table", help="the source table (db.table) the stop named")
    parser.add_argument("--sequence", type=int, help="the SCHEMA record's sequence the stop named")


def main(args: argparse.Namespace) -> int:
    from cdc.config.loader import load_config
    from streaming.targets import make_target

    config = load_config(args.config)
    if not any(a.source == args.source and a.target == args.target for a in config.apply):
        raise ConfigError(f"no apply item with source {args.source!r} and target {args.target!r} in {args.config}",
                          key="apply")
    target = make_target(config.target(args.target)).open()
    try:
        if args.action == "list":
            for seq, table, decision, when in target.schema_decisions(args.source):
                print(f"sequence {seq}  {table}  {decision}  {when}")
            return 0
        if args.sequence is None or not args.table:
            raise ConfigError(f"`cdc schema {args.action}` needs --table and --sequence (the apply's stop names "
                              f"both)", key="--sequence")
        progress = target.read_progress(args.source)
        if progress is not None and progress.last_sequence >= args.sequence:
            raise ConfigError(f"target {args.target!r} is already at sequence {progress.last_sequence}, past "
                              f"{args.sequence}: a decision there would never be read", key="--sequence")
        target.save_schema_decision(args.source, args.sequence, args.table, args.action)
        print(f"recorded: {args.action} the schema change of {args.table} at sequence {args.sequence} "
              f"({args.source} -> {args.target}); restart `cdc apply` to go on")
        return 0
    finally:
        target.close()
