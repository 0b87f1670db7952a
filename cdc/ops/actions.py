"""The actions the CLI also has, run through the CLI's own code: one implementation.

The API builds the command line an operator would type (``cdc source skip ...``, ``cdc snapshot
...``) and runs it through cdc.cli's parser and the command's ``main`` (cdc.registry.COMMANDS names the
module), so the checks, refusals and records are the CLI's, byte for byte. What the command prints is
the answer's ``output``; a CdcError it raises is the refusal (its message and fields).
"""

from __future__ import annotations

import contextlib
import io
import threading
from typing import Any

from cdc.errors import CdcError

_STDOUT = threading.Lock()  # redirect_stdout is process-wide: one command at a time


class CommandRefused(CdcError):
    """The CLI command refused (its own error, or its arguments): ``argv``, ``status``."""


def run_cli(argv: list[str]) -> list[str]:
    """Run ``cdc ARGV`` in this process; the lines it printed. Raises the command's CdcError, or
    CommandRefused for arguments argparse refuses or a non-zero status."""
    from cdc.cli import build_parser

    out = io.StringIO()
    err = io.StringIO()
    with _STDOUT, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            args = build_parser(argv).parse_args(argv)
        except SystemExit:
            raise CommandRefused(f"cdc {' '.join(argv[:2])}: {err.getvalue().strip().splitlines()[-1:]}",
                                 argv=argv, status=2) from None
        status = int(args._main(args) or 0)
    if status:
        raise CommandRefused(f"cdc {argv[0]} ended with status {status}: {out.getvalue().strip()}", argv=argv,
                             status=status)
    return out.getvalue().splitlines()


def skip_argv(config_path: str, source: str, body: dict[str, Any]) -> list[str]:
    """`cdc source skip` as the operator types it, from an API body ``{gtid|xid, resync, reason}``."""
    argv = ["source", "skip", "--config", config_path, "--source", source, "--yes"]
    for key in ("gtid", "xid"):
        if body.get(key):
            argv += [f"--{key}", str(body[key])]
    if body.get("resync"):
        argv.append("--resync")
    if body.get("reason"):
        argv += ["--reason", str(body["reason"])]
    return argv


def resync_argv(config_path: str, source: str, body: dict[str, Any]) -> list[str]:
    """`cdc snapshot` as the operator types it, from an API body ``{tables, resync}`` (resync by default)."""
    argv = ["snapshot", "request", "--config", config_path, "--source", source]
    for table in body["tables"]:
        argv += ["--table", str(table)]
    if body.get("resync", True):
        argv.append("--resync")
    return argv
