"""`cdc compare --config FILE --source S --target T [--tables ...] [--repair]`.

Proves a target equals its source, table by table (cdc.compare.table_diff),
and prints one report per table (``--json``: one JSON document). Exit
status: 0 all tables equal, 1 some differ, 2 error (bad config, or a table
that could not be compared: missing, key order disagreement, a database
error; its report says ERROR and every other table is still compared and
reported). A column whose type a database cannot render is left out and
named in its table's report ("unsupported"); the rest of the table is compared.

Tables: ``--tables db.t`` (target name from the ``apply`` mapping of this
source/target pair, else ``t`` in the target's default schema) or
``db.t=schema.t2`` to name the target table. Default: the source's
configured tables (``db.*`` expanded from the source's catalog).

``--repair`` publishes corrective changes for the differences found into
the source's change stream (cdc.compare.repair), one transaction per table.
"""

from __future__ import annotations

import argparse
import sys

from cdc.compare.errors import CompareError
from cdc.config.options import add_config_option
from cdc.schema import table_glob


def configure(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)
    parser.add_argument("--source", required=True, help="source name (sources[].name)")
    parser.add_argument("--target", required=True, help="target name (targets[].name), or another source")
    parser.add_argument("--tables", nargs="+", metavar="DB.TABLE[=SCHEMA.TABLE]", help="tables to compare")
    parser.add_argument("--repair", action="store_true", help="publish corrective changes into the stream")
    parser.add_argument("--json", action="store_true", help="print the reports as one JSON document")
    parser.add_argument("--sample", type=int, default=10, help="keys shown per kind of difference")
    parser.add_argument("--bucket-rows", type=int, default=64, help="rows per bucket of the bucket pass")
    parser.add_argument("--no-buckets", action="store_true", help="row pass only (no bucket pre-pass)")
    parser.add_argument("--parallel", type=int, default=2,
                        help="connections per side for the bucket pass (consecutive key ranges at once)")


def table_pairs(config, source: str, target: str, tables: list[str] | None, src_ep) -> list[tuple[str, str]]:
    """(source table, target table) pairs to compare; see the module docstring."""
    from cdc.schema.table_map import TableMap

    apply = next((a for a in config.apply if a.source == source and a.target == target), None)
    mapper = TableMap.from_config(apply) if apply is not None else None
    if tables is None:
        src_cfg = next((s for s in config.sources if s.name == source), None)
        tables = list(getattr(src_cfg, "tables", []) or [])
        if not tables:
            raise CompareError(f"no tables to compare: give --tables (source {source} lists none)", source=source)
        tables = _expand(tables, src_ep)
        if mapper is not None:
            tables = [t for t in tables if mapper.wanted(t)]
    pairs = []
    for item in tables:
        src, sep, tgt = item.partition("=")
        if not sep:
            tgt = mapper.target_name(src) if mapper is not None else src.rpartition(".")[2]
        pairs.append((src, tgt))
    return pairs


def _expand(patterns: list[str], src_ep) -> list[str]:
    if all(table_glob.is_literal(p) for p in patterns):
        return patterns
    conn = src_ep.connect()
    try:
        rows = src_ep.query(conn, "SELECT table_schema, table_name FROM information_schema.tables "
                                  "WHERE table_type = 'BASE TABLE'")
    finally:
        conn.close()
    names = sorted(f"{s}.{t}" for s, t in rows)
    return table_glob.select(names, patterns)


def source_transforms(config, source: str):
    """The shaping of ``source``'s stream (sources[].transforms), None for none: compare and repair shape the
    source rows the same way before fingerprinting or publishing them."""
    from cdc.transforms.mapper import SourceTransforms

    cfg = next((s for s in config.sources if s.name == source), None)
    shaping = getattr(cfg, "transforms", None)
    return SourceTransforms(source, shaping) if shaping is not None else None


def target_modes(config, source: str, target: str):
    """The apply's target modes of (source, target) (apply[].tables[].mode, metadata_columns), None for none."""
    from cdc.registry import apply_hook
    from cdc.schema.table_map import TableMap

    TargetModes = apply_hook("target_modes")

    apply = next((a for a in config.apply if a.source == source and a.target == target), None)
    table_map = TableMap.from_config(apply) if apply is not None else None
    return TargetModes.of_map(table_map) if table_map is not None and table_map.modes else None


def main(args: argparse.Namespace) -> int:
    from cdc.compare.endpoints import from_config
    from cdc.compare.report import TableReport, dumps
    from cdc.compare.table_diff import TableCompare
    from cdc.config.loader import load_config
    from cdc.progress_bar import progress

    config = load_config(args.config)
    src_ep, tgt_ep = from_config(config, args.source), from_config(config, args.target)
    pairs = table_pairs(config, args.source, args.target, args.tables, src_ep)
    transforms = source_transforms(config, args.source)
    modes = target_modes(config, args.source, args.target)
    reports = []
    for src, tgt in pairs:
        with progress(None, f"compare {src}") as bar:
            cmp = TableCompare(src_ep, src, tgt_ep, tgt, bucket_rows=args.bucket_rows,
                               use_buckets=not args.no_buckets, parallel=args.parallel, advance=bar.advance,
                               transforms=transforms, modes=modes)
            try:
                report = cmp.run()
            except Exception as exc:  # noqa: BLE001 - one table's failure is reported; the others are compared
                report = TableReport(src, tgt, (), error=f"{type(exc).__name__}: {exc}")
        reports.append(report)
        if not args.json:
            print(report.render(args.sample), flush=True)
    if args.json:
        print(dumps(reports, args.sample))
    failed = [r for r in reports if r.error is not None]
    differ = [r for r in reports if not r.equal and r.error is None]
    if args.repair and differ:
        from cdc.compare.repair import repair

        for r in differ:
            n = repair(config, args.source, src_ep, tgt_ep, r, transforms=transforms)
            print(f"repair {r.source_table}: published {n} corrective changes", file=sys.stderr)
    if not args.json:
        print(f"{len(reports) - len(differ) - len(failed)} of {len(reports)} tables equal"
              + (f", {len(failed)} could not be compared" if failed else ""), flush=True)
    return 2 if failed else 1 if differ else 0
