"""`cdc lake ...`: the Delta and Iceberg targets outside the apply job.

    cdc lake snapshot --config FILE --target T [--source S]
        print the latest consistent point as JSON:
        {"source", "last_sequence", "batch_id", "last_commit_ts", "applied_at", "position",
         "tables": {table: Delta version | Iceberg snapshot id}}
        (exit 1 when the target has no applied batch yet)
    cdc lake compact --config FILE --target T [--retention-hours H]
        Delta: optimize (compact small files) + vacuum + log cleanup of every table, keeping H hours
        of history (default 168); Iceberg: rewrite each table's files into few and expire snapshots
        older than H hours, never those of the latest consistent point. Prints one JSON line per table.

Reading all tables as of the point (time travel) is in docs/targets-lake.md. Compaction keeps
every table's recorded (source, sequence); run the Iceberg compaction while the apply job is stopped (its
commits would conflict with the rewrite), the Delta one at any time.
"""

from __future__ import annotations

import argparse
import json
import sys

from cdc.config.loader import load_config
from cdc.config.options import add_config_option
from cdc.errors import ConfigError
from streaming.targets import make_target
from streaming.targets.lake import LakeTarget


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="lake_command", metavar="ACTION", required=True)
    for name, help_text in (("snapshot", "print the latest consistent point (table versions) as JSON"),
                            ("compact", "compact small files and expire old versions")):
        p = sub.add_parser(name, help=help_text)
        add_config_option(p)
        p.add_argument("--target", required=True, help="name of a delta or iceberg target")
        if name == "snapshot":
            p.add_argument("--source", help="the source (needed when the target holds several)")
        else:
            p.add_argument("--retention-hours", type=float, default=168.0,
                           help="history kept for time travel (default 168 = 7 days)")


def open_lake(config_path: str, target_name: str):
    """The opened lake target named ``target_name`` in the config file (ConfigError naming key and file)."""
    cfg = load_config(config_path)
    tcfg = next((t for t in cfg.targets if t.name == target_name), None)
    if tcfg is None:
        raise ConfigError(f"{config_path}: no target named {target_name!r} (targets: {[t.name for t in cfg.targets]})",
                          key="targets", file=config_path)
    target = make_target(tcfg)
    if not isinstance(target, LakeTarget):
        raise ConfigError(f"{config_path}: target {target_name!r} is {tcfg.kind}, not a lake target (a table format "
                          "that commits per table with a progress log, such as delta or iceberg)",
                          key=f"targets.{target_name}.kind", file=config_path)
    return target.open()


def latest_point(config_path: str, target_name: str, source: str | None = None) -> dict | None:
    """The latest consistent point of a lake target (what `cdc lake snapshot` prints), or None."""
    target = open_lake(config_path, target_name)
    try:
        return target.latest_point(source)
    finally:
        target.close()


def main(args: argparse.Namespace) -> int:
    if args.lake_command == "snapshot":
        point = latest_point(args.config, args.target, args.source)
        if point is None:
            print(f"target {args.target!r} has no applied batch yet", file=sys.stderr)
            return 1
        print(json.dumps(point))
        return 0
    target = open_lake(args.config, args.target)
    try:
        for table, figures in target.compact(args.retention_hours).items():
            print(json.dumps({"table": table, **figures}))
    finally:
        target.close()
    return 0
