"""`cdc snapshot --config FILE --source S --table db.t [--table ...] [--resync]`: ask the running daemon of
source S to re-snapshot tables while streaming continues. `cdc snapshot status --config FILE --source S`:
how far a snapshot of S is, per table.

The command is the same for every source kind; what it does is the reader's: each kind that supports it
names its ``main(args, config, src)`` in cdc.registry SOURCE_COMMANDS (MySQL/MariaDB:
readers/mysql/snapshot_cmd.py and readers/mysql/snapshot_status.py). A source of a kind that names none is
refused, naming the kind and the command.
"""

from __future__ import annotations

import argparse

from cdc.config.options import add_config_option
from cdc.errors import ConfigError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=["request", "status"], default="request",
                        help="request (default): snapshot the --table tables; status: rows done/total per table")
    add_config_option(parser)
    parser.add_argument("--source", required=True, help="source name (a kind: mysql source)")
    parser.add_argument("--table", action="append", metavar="DB.TABLE", help="table to re-snapshot (request)")
    parser.add_argument("--resync", action="store_true",
                        help="also delete target rows the source does not hold (the table ends equal to the source)")
    parser.add_argument("--interval", type=float, default=5.0,
                        help="status: seconds between two reads of the stream, for the rate and ETA (0: none)")


def main(args: argparse.Namespace) -> int:
    from cdc.config.loader import load_config
    from cdc.registry import source_command

    status = getattr(args, "action", "request") == "status"  # callers that build args by hand mean a request
    if not status and not args.table:
        raise ConfigError("cdc snapshot: name at least one --table db.table to snapshot", key="--table")
    config = load_config(args.config)
    src = config.source(args.source)
    return source_command("snapshot status" if status else "snapshot", src, file=args.config)(args, config, src)
