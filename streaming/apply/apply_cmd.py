"""`cdc apply --config FILE [--master URL] [--until-idle SECONDS] [--metrics-port P]`.

Runs every ``apply:`` item of the config as a Spark streaming query (default
master ``local[*]``; use ``--master`` or spark-submit for a cluster) until
stopped: the first SIGTERM/SIGINT stops the queries (a batch in flight is one
target transaction: it commits whole or not at all), the second exits at
once. ``--until-idle S`` exits 0 once no transaction was applied for S
seconds and the topic, read to its end, holds no complete transaction that
is not applied (streaming.apply.idle). ``/metrics``, ``/healthz`` and ``/readyz`` (streaming.apply.probes)
are served on ``metrics.host``:``--metrics-port`` (default
``metrics.apply_port``, else ``metrics.port`` + 1, so the daemon and the
apply job can share one config file; 0 turns them off). Logs follow
``logging:``, Spark's JVM and Python warnings included
(streaming.apply.spark_logs). Exit status: 0 done, 2 a CdcError (the message
names table, key, sequence and value for bad input).
"""

from __future__ import annotations

import argparse
import logging
import os
import threading
import warnings
from typing import Any

from cdc.config.loader import load_config
from cdc.config.options import add_config_option


def configure(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)
    parser.add_argument("--master", default=None,
                        help="Spark master URL (default local[*]; under spark-submit, spark-submit's)")
    parser.add_argument("--until-idle", type=float, nargs="?", const=5.0, default=None, metavar="SECONDS",
                        help="exit once nothing was applied for this long and no complete transaction is left "
                             "in the topic (bare flag: 5 s)")
    parser.add_argument("--metrics-port", type=int, default=None,
                        help="serve /metrics, /healthz, /readyz here (0: off)")


PICKED = -1  # the apply's port: one the system picks


def main(args: argparse.Namespace) -> int:
    from cdc.runtime.logs import setup_logging

    config = load_config(args.config)
    setup_logging(config.logging.level, config.logging.json_)
    logging.captureWarnings(True)  # pyspark's and pandas' warnings become log lines (JSON with logging.json)
    quiet_pandas_3()
    logging.getLogger("py4j").setLevel(logging.WARNING)
    from cdc.metrics import process_registry
    from cdc.runtime.signals import TwoStageSignals
    from streaming.apply import job
    from streaming.apply.preflight import check_targets

    check_targets(config)  # a target mistake is found in a second, not after Spark started
    registry = process_registry()
    streams: list[job.ApplyStream] = []
    port = next((p for p in (args.metrics_port, config.metrics.apply_port) if p is not None), None)
    if port is None:  # the daemon's + 1; with the daemon's picked by the system (0), the apply's too
        port = config.metrics.port + 1 if config.metrics.port else PICKED
    server = serve(registry, streams, config.metrics.host, 0 if port == PICKED else port) if port else None
    stop = threading.Event()
    signals = TwoStageSignals(stop.set).install()
    try:
        return job.run(config, master=args.master, until_idle_s=args.until_idle, stop_event=stop,
                       metrics_registry=registry, streams_out=streams)
    finally:
        signals.restore()
        if server is not None:
            server.stop()


def serve(registry: Any, streams: list[Any], host: str, port: int) -> Any:
    """Start /metrics, /healthz, /readyz of the apply job (``streams``: the job's ApplyStreams, filled as they
    start) on the daemon's HealthServer; returns it (``.port`` is the bound port, ``.stop()``)."""
    from cdc.runtime.health import HealthServer
    from streaming.apply import probes

    return HealthServer(registry, lambda: probes.readiness(streams), host, port,
                        alive=lambda: probes.liveness(streams)).start()


PANDAS_3 = "PySpark does not yet fully support pandas"  # pyspark's FutureWarning at import under pandas 3


def quiet_pandas_3() -> None:
    """pyspark warns at every import that pandas 3 is not fully supported; the apply uses pandas only through
    Arrow conversions that the test suite runs. Not printed by the driver nor by the Python workers."""
    warnings.filterwarnings("ignore", message=PANDAS_3, category=FutureWarning)
    rule = f"ignore:{PANDAS_3}:FutureWarning"
    os.environ["PYTHONWARNINGS"] = ",".join(filter(None, (os.environ.get("PYTHONWARNINGS"), rule)))

