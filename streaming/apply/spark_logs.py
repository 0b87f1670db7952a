"""The Spark side's logs follow ``logging:`` like the Python side's.

Spark's JVM logs through log4j2. Left alone it prints a banner, INFO chatter
and a "falling behind" warning per slow micro-batch in its own text format,
so a log pipeline that expects one JSON object per line (``logging.json:
true``) breaks on the first Spark line. The package ships one log4j2
configuration (``log4j2.properties`` next to this module) that the driver JVM
loads; :func:`spark_settings` gives the Spark settings that point the driver
at it and choose its level and layout through system properties, so the same
file serves a local job and a spark-submit to a cluster (ship it with
``--files`` and pass :func:`java_options`).

What log4j2 does not print (the JVM's own start-up warnings, a Python
worker's stderr, which Spark copies to the JVM's stderr as it is) is caught
by :func:`start_jvm`: it starts the driver JVM with its stdout and stderr
piped into a relay thread that drops the JVM's start-up notices and, with
JSON lines, passes JSON lines through and logs any other line through Python logging (logger ``spark.stderr``;
a line repeated, digits aside, at most every 30 s with the count it stood for:
cdc.kafka_log.RepeatLimit).

JVM levels are one step quieter than the Python side's: Spark's INFO lines
are per task and per stage, so ``logging.level: INFO`` gives WARN in the JVM,
``DEBUG`` gives INFO, ``WARNING``/``ERROR`` the same.
"""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path
from subprocess import PIPE
from typing import IO

from cdc.kafka_log import RepeatLimit

CONFIG_FILE = Path(__file__).with_name("log4j2.properties")
JVM_LEVEL = {"DEBUG": "INFO", "INFO": "WARN", "WARNING": "WARN", "ERROR": "ERROR"}
_RELAY_LOG = logging.getLogger("spark.stderr")
_RELAY_LOG.addFilter(RepeatLimit())


def java_options(level: str = "INFO", json_lines: bool = False, config_file: str | Path = CONFIG_FILE) -> str:
    """The ``-D`` options that make a JVM log through ``config_file`` at the level matching ``level``."""
    return (f"-Dlog4j2.configurationFile={config_file} -Dcdc.log.level={JVM_LEVEL[level]} "
            f"-Dcdc.log.appender={'json' if json_lines else 'text'}")


def spark_settings(level: str = "INFO", json_lines: bool = False) -> dict[str, str]:
    """Settings for the SparkSession builder: the driver's logging, and no console progress bar
    unless stderr is a terminal (its carriage-return fragments are noise in a log file)."""
    return {"spark.driver.extraJavaOptions": java_options(level, json_lines),
            "spark.ui.showConsoleProgress": "true" if sys.stderr.isatty() else "false"}


def start_jvm(settings: dict[str, str], json_lines: bool) -> None:
    """Start the driver's JVM (py4j gateway) with ``settings`` unless this process has one already.

    Its stdout and stderr are relayed (:func:`_relay`): with ``json_lines`` so that every line this process
    writes is JSON; in both modes without the JVM's start-up notices. Under spark-submit the JVM exists already and writes where it was told."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:  # one JVM per process; a second session reuses it
        return
    conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
    gateway = launch_gateway(conf, {"stdout": PIPE, "stderr": PIPE})
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        for name, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            threading.Thread(target=_relay, args=(pipe, json_lines), name=f"spark-{name}", daemon=True).start()
    SparkContext._ensure_initialized(gateway=gateway)


# What the JVM prints at start-up on every healthy run (Spark 4 runs with the incubating Vector API module)
_JVM_NOTICES = ("WARNING: Using incubator modules: jdk.incubator.vector",)


def _relay(pipe: IO[bytes], json_lines: bool = True) -> None:
    """Copy the JVM's output to our stderr: JSON lines (and, in text mode, every line) as they are, any other
    line as a log record; the JVM's start-up notices (``_JVM_NOTICES``) only at DEBUG."""
    log = _RELAY_LOG
    for raw in iter(pipe.readline, b""):
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if line in _JVM_NOTICES:
            log.debug("%s", line)
        elif not json_lines or (line.startswith("{") and line.endswith("}")):
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        elif line.strip():
            log.warning("%s", line)
