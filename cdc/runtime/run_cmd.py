"""`cdc run --config FILE [--source NAME ...]`: the capture daemon.

Reads the config, sets up logging, builds one worker per selected source
(reader from cdc.registry, publisher per source), serves /metrics /healthz
/readyz on ``metrics.host:metrics.port``, installs two-stage signals and
exits with the daemon's status (see cdc.runtime.daemon). On failure the
last line on stderr names the source, its position and the error.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from cdc.config.options import add_config_option

log = logging.getLogger("cdc.run")


def configure(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)
    parser.add_argument("--source", action="append", default=None,
                        help="run only this source (repeatable); default: all")


def main(args: argparse.Namespace) -> int:
    from cdc.config.loader import load_config
    from cdc.metrics import process_registry
    from cdc.registry import open_source
    from cdc.runtime.daemon import Daemon, SourceSpec
    from cdc.runtime.logs import setup_logging
    from cdc.runtime.signals import TwoStageSignals

    config = load_config(args.config)
    setup_logging(config.logging.level, config.logging.json_)
    chosen = [config.source(n) for n in args.source] if args.source else list(config.sources)
    if not chosen:
        log.error("cdc run: error: the config has no sources")  # through logging: JSON with logging.json
        return 2
    context_args = {"spill_dir": config.spill_dir, "max_buffer_bytes": config.max_buffer_bytes}
    specs = [SourceSpec(name=s.name, connector=s.kind,
                        make=lambda ctx, s=s: open_source(s, ctx),
                        heartbeat_interval_s=getattr(s, "heartbeat_interval_s", 1.0),
                        context_args=context_args, outbox=getattr(s, "outbox", None)) for s in chosen]
    daemon = Daemon(specs, config.kafka, process_registry(), metrics_host=config.metrics.host,
                    metrics_port=config.metrics.port, drain_timeout_s=config.drain_timeout_s,
                    source_restart_limit=config.source_restart_limit, api=config.api, alerts=config.alerts,
                    config_path=str(args.config))
    signals = TwoStageSignals(daemon.request_stop).install()
    try:
        status = daemon.run()
    finally:
        signals.restore()
    if status == 2 and daemon.failure:
        log.error("cdc run: error: %s", daemon.failure)
    log.info("exiting with status %d", status)
    if status == 1:  # a worker thread is still inside its reader: do not wait for it at exit
        logging.shutdown()
        sys.stderr.flush()
        os._exit(1)
    return status
