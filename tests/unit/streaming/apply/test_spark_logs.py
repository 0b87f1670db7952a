"""The apply job's JVM logging settings and the relay of the JVM's raw output (no Spark needed)."""

from __future__ import annotations

import io
import json
import logging
import os
import sys

from cdc.runtime.logs import setup_logging
from streaming.apply import spark_logs


def test_the_shipped_log4j2_file_has_both_layouts_and_the_level_by_system_property():
    text = spark_logs.CONFIG_FILE.read_text()
    assert "JsonTemplateLayout" in text and "PatternLayout" in text
    assert "${sys:cdc.log.level:-WARN}" in text and "${sys:cdc.log.appender:-text}" in text
    opts = spark_logs.java_options("INFO", True)
    assert f"-Dlog4j2.configurationFile={spark_logs.CONFIG_FILE}" in opts
    assert "-Dcdc.log.level=WARN" in opts and "-Dcdc.log.appender=json" in opts
    assert "-Dcdc.log.level=ERROR -Dcdc.log.appender=text" in spark_logs.java_options("ERROR", False)


def test_relay_passes_json_lines_and_logs_the_others_as_json_once_per_kind(monkeypatch):
    out = io.StringIO()
    setup_logging("INFO", True, stream=out)
    monkeypatch.setattr(sys, "stderr", out)  # the relay writes JSON lines straight to our stderr
    r, w = os.pipe()
    lines = ['{"ts": "t", "level": "WARNING", "logger": "org.apache.spark.X", "msg": "from log4j2"}',
             "WARNING: Using incubator modules: jdk.incubator.vector",
             "worker 1 says hello", "worker 2 says hello", "worker 3 says hello"]
    os.write(w, ("\n".join(lines) + "\n\n").encode())
    os.close(w)
    with os.fdopen(r, "rb") as pipe:
        spark_logs._relay(pipe)
    got = [json.loads(ln) for ln in out.getvalue().splitlines()]  # every line is JSON
    assert got[0]["msg"] == "from log4j2"
    relayed = [d["msg"] for d in got[1:]]
    assert relayed == ["worker 1 says hello"]  # the JVM's start-up notice only at DEBUG (spark_logs._JVM_NOTICES)
    assert {d["logger"] for d in got[1:]} == {"spark.stderr"}
    logging.getLogger().handlers = [h for h in logging.getLogger().handlers if not getattr(h, "_cdc", False)]
