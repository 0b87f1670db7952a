"""`cdc bench NAME`: run one benchmark, print ONE JSON line with its figures.

Each benchmark module ``cdc.bench.<name>`` exposes ``configure(parser)`` and
``run(args) -> dict``; the dict is printed as a single JSON line on stdout
(progress goes to stderr). Every benchmark measures its baseline in the
same run on the same machine.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

BENCHES = {
    "mysql": ("cdc.bench.mysql", "binlog -> Kafka vs the raw mysql-replication decode loop"),
    "apply": ("cdc.bench.apply", "Spark apply into PostgreSQL vs naive upsert and COPY"),
    "oracle": ("cdc.bench.oracle", "LogMiner simulator -> Kafka vs raw confluent-kafka produce"),
    "compare": ("cdc.bench.compare", "MD5 merge compare vs NOT EXISTS anti-join"),
    "views": ("cdc.bench.views", "incremental view maintenance vs full recomputation"),
    "oltp": ("cdc.bench.oltp", "firenibble-shaped single-row commits, MariaDB -> cdc run -> cdc apply -> PostgreSQL"),
    "ddl": ("cdc.bench.ddl", "the apply's ADD COLUMN DEFAULT barrier vs the statement run on the target"),
    "snapshot": ("cdc.bench.snapshot", "a 1,000 tx/s writer's p99 commit latency with and without the initial snapshot"),
}


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="bench", metavar="NAME", required=True)
    for name, (module, help_text) in BENCHES.items():
        p = sub.add_parser(name, help=help_text)
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue  # that benchmark is not written yet: the others still run
        mod.configure(p)
        p.set_defaults(_bench=mod.run)


def main(args: argparse.Namespace) -> int:
    result = args._bench(args)
    result = {"bench": args.bench, **result}
    sys.stdout.write(json.dumps(result, sort_keys=False) + "\n")
    sys.stdout.flush()
    return 0
