"""docs/spark-cluster.md gives the commands the cluster test runs (tests/fixtures/spark_cluster.py): the same
classes, flags and environment, with the doc's fixed ports where the fixture takes free ones."""

from __future__ import annotations

import itertools
import re
import shlex

from tests.fixtures.prometheus import DEPLOY
from tests.fixtures.spark_cluster import SparkCluster

DOC = DEPLOY.parent / "docs" / "spark-cluster.md"


def _commands() -> list[list[str]]:
    """The doc's first code block, one argv per command (continuation lines joined, comments dropped)."""
    block = re.search(r"```\n(.*?)```", DOC.read_text(), re.DOTALL).group(1)
    text = re.sub(r"\\\n\s*", " ", block)
    return [shlex.split(line, comments=True) for line in text.splitlines() if shlex.split(line, comments=True)]


def _flags(argv: list[str]) -> dict[str, str]:
    return {a: b for a, b in itertools.pairwise(argv) if a.startswith("--")}


def test_the_documented_cluster_is_the_tested_one(tmp_path):
    cluster = SparkCluster(tmp_path)
    commands = _commands()
    master = next(c for c in commands if "org.apache.spark.deploy.master.Master" in c)
    worker = next(c for c in commands if "org.apache.spark.deploy.worker.Worker" in c)
    apply = next(c for c in commands if c[:2] == ["cdc", "apply"])
    tested_master, tested_worker = cluster.master_argv(), cluster.worker_argv(0)
    assert master[0].endswith("bin/spark-class") and tested_master[0].endswith("bin/spark-class")
    assert master[1] == tested_master[1] and worker[1] == tested_worker[1]
    assert _flags(master).keys() == _flags(tested_master).keys()
    assert _flags(master)["--host"] == _flags(tested_master)["--host"] == "127.0.0.1"
    doc_worker, test_worker = _flags(worker), _flags(tested_worker)
    for flag in ("--host", "--cores", "--memory"):
        assert doc_worker[flag] == test_worker[flag], flag
    assert worker[2] == f"spark://127.0.0.1:{_flags(master)['--port']}"
    assert _flags(apply)["--master"] == worker[2]
    exports = " ".join(" ".join(c) for c in commands if c[0] == "export")
    assert "SPARK_LOCAL_IP=127.0.0.1" in exports and cluster.env["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert "PYSPARK_PYTHON" in exports and "PYSPARK_PYTHON" in cluster.env
