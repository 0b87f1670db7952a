"""`cdc source skip --config FILE --source S (--gtid G | --xid X) --yes [--resync] [--reason TEXT]`: move a
stopped source past the one transaction it refused, record that in the stream, and (``--resync``) bring
the tables it touched back to equality.

The command is the same for every source kind; what it does is the reader's: each kind that supports it
names its ``main(args, config, src)`` in cdc.registry SOURCE_COMMANDS (MySQL/MariaDB:
readers/mysql/skip_cmd.py, by GTID; Oracle: readers/oracle/skip_cmd.py, by XID). A source of a kind that
names none is refused, naming the kind and the command.
"""

from __future__ import annotations

import argparse

from cdc.config.options import add_config_option
from cdc.errors import ConfigError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["skip"], help="skip: move a stopped source past one transaction")
    add_config_option(parser)
    parser.add_argument("--source", required=True, help="source name")
    parser.add_argument("--gtid", help="MySQL/MariaDB source: the GTID the source stopped on (named in its error)")
    parser.add_argument("--xid", help="Oracle source: the XID of the transaction the source stopped on (named in "
                        "its error, usn.slot.sqn)")
    parser.add_argument("--yes", action="store_true", help="acknowledge that the transaction is not published")
    parser.add_argument("--resync", action="store_true",
                        help="re-read the tables it touched: MySQL: an incremental snapshot (needs signal_table); "
                        "Oracle: a snapshot of those tables as of the transaction's commit SCN")
    parser.add_argument("--reason", default="", help="free text recorded in the stream with the skip")


def main(args: argparse.Namespace) -> int:
    from cdc.config.loader import load_config
    from cdc.registry import source_command

    if not args.yes:
        raise ConfigError("cdc source skip: add --yes to acknowledge that transaction "
                          f"{args.gtid or args.xid} is NOT published (its tables are resynced instead)", key="--yes")
    config = load_config(args.config)
    src = config.source(args.source)
    return source_command("source skip", src, file=args.config)(args, config, src)
