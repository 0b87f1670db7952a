"""`cdc oracle parse`: an operator's tool -- "what does this redo say?".

Reads SQL_REDO statements, one per line, on stdin and prints one JSON object
per statement: ``{"op": "c"|"u"|"d", "schema", "table", "before", "after"}``
or ``{"error": ..., "line": n, "statement": ...}``. It never stops on a bad
line; the exit status is 1 when any line failed.
"""

from __future__ import annotations

import argparse
import json
import sys

from cdc.errors import CdcError
from readers.oracle.parser import parse_redo


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="tool", metavar="TOOL", required=True)
    sub.add_parser("parse", help="SQL_REDO statements on stdin (one per line) -> JSON lines on stdout")


def parse_lines(lines, out) -> int:
    failed = 0
    for n, line in enumerate(lines, 1):
        sql = line.rstrip("\r\n")
        if not sql.strip():
            continue
        try:
            op, schema, table, before, after = parse_redo(sql)
            obj = {"op": op, "schema": schema, "table": table, "before": before, "after": after}
        except CdcError as exc:
            failed += 1
            obj = {"error": exc.message, "line": n, "statement": sql[:500]}
        out.write(json.dumps(obj, ensure_ascii=False) + "\n")
    return 1 if failed else 0


def main(args: argparse.Namespace) -> int:
    return parse_lines(sys.stdin, sys.stdout)
