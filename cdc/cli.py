"""The `cdc` console script: a thin dispatcher to one module per command.

Each command module exposes ``configure(parser)`` (add its arguments or its
own sub-commands) and ``main(args) -> int``; the table of commands is cdc.registry.COMMANDS. Modules are imported only when
their command runs, so `cdc oracle parse` never pays for pyspark.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from importlib import metadata

from cdc.errors import CdcError
from cdc.registry import COMMANDS


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cdc", description="log-based change data capture")
    parser.add_argument("--version", action="version", version=f"cdc {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        if name == chosen:  # import only the module of the command being run
            mod = importlib.import_module(module)
            mod.configure(p)
            p.set_defaults(_main=mod.main)
    return parser


def _version() -> str:
    try:
        return metadata.version("cdc-service")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown (not installed)"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    try:
        return int(args._main(args) or 0)
    except CdcError as exc:
        print(f"cdc {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
