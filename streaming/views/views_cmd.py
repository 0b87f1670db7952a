"""`cdc views ...`: maintained views outside the apply job.

    cdc views check   --config FILE                 validate every view definition (no database)
    cdc views rebuild --config FILE [--view NAME]   recompute from the base tables, reset counts
    cdc views status  --config FILE                 freshness per view (the cdc_views table)

``rebuild`` runs in one target transaction per apply job: readers see the
old view or the new one, never a half-built one. Run it while the apply job
for that target is stopped, or accept that the job's next batch waits for
the rebuild's locks.
"""

from __future__ import annotations

import argparse
import json
import sys

from cdc.config.loader import load_config
from cdc.config.options import add_config_option
from cdc.progress_bar import progress
from streaming.views import maintainer
from streaming.views.build import REGISTRY
from streaming.views.definition import parse_views
from streaming.views.errors import ViewError


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="views_command", metavar="ACTION", required=True)
    for name, help_text in (("check", "validate the view definitions"),
                            ("rebuild", "recompute views from their base tables"),
                            ("status", "show each view's freshness")):
        p = sub.add_parser(name, help=help_text)
        add_config_option(p)
        p.add_argument("--apply", dest="apply_source", help="only the apply job of this source")
        if name == "rebuild":
            p.add_argument("--view", action="append", dest="views", help="only this view (repeatable)")


def main(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    jobs = [a for a in cfg.apply if a.views and (not args.apply_source or a.source == args.apply_source)]
    if not jobs:
        raise ViewError(f"no apply job in {args.config} defines views"
                        + (f" for source {args.apply_source!r}" if args.apply_source else ""), view=None)
    wanted = set(getattr(args, "views", None) or [])
    found: set[str] = set()
    for job in jobs:
        defs = parse_views(job.views)
        if args.views_command == "check":
            for v in defs:
                print(f"{job.target}.{v.name}: ok ({len(v.tables)} tables, keys {[k for k, _ in v.keys]})")
            continue
        names = [v.name for v in defs if not wanted or v.name in wanted]
        found.update(names)
        if not names:
            continue
        target = _open(cfg.target(job.target))
        try:
            if args.views_command == "rebuild":
                target.begin()
                with progress(len(names), f"rebuild views in target {job.target}") as bar:
                    done = maintainer.rebuild(target, job.views, names, on_view=lambda _name: bar.advance())
                target.commit()
                print(f"rebuilt {', '.join(done)} in target {job.target}", file=sys.stderr)
            else:
                _status(target, job.target, names)
        finally:
            target.close()
    missing = wanted - found
    if missing:
        raise ViewError(f"no view named {sorted(missing)} in {args.config}", view=min(missing))
    return 0


def _open(target_cfg):
    from streaming.targets import make_target

    return make_target(target_cfg).open()


def _status(target, target_name: str, names: list[str]) -> None:
    from streaming.views.build import existing_tables
    from streaming.views.dialect import dialect_for

    cur, d = target.cursor(), dialect_for(target.dialect)
    if REGISTRY not in existing_tables(cur, d, [REGISTRY]):
        for name in names:
            print(json.dumps({"target": target_name, "view": name, "state": "not built yet"}))
        return
    cur.execute(f"SELECT view_name, last_batch_id, last_sequence, mode, updated_at FROM {REGISTRY} "
                f"WHERE view_name IN ({', '.join([d.param] * len(names))})", names)
    rows = {r[0]: r for r in cur.fetchall()}
    target.rollback()
    for name in names:
        r = rows.get(name)
        info = ({"last_batch_id": r[1], "last_sequence": r[2], "mode": r[3], "updated_at": str(r[4])}
                if r else {"state": "not built yet"})
        print(json.dumps({"target": target_name, "view": name, **info}))
