"""streaming.stream.datasource.settle_heap: an executor's Python worker freezes what it loaded once, at its first
read, so the full collection pyspark.daemon runs after every task of a reused worker walks only that task's
objects."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import gc, sys, time
from streaming.stream import datasource
assert gc.get_freeze_count() == 0
datasource.settle_heap()
frozen = gc.get_freeze_count()
assert frozen > 10_000, frozen  # the worker's modules: pyspark, pyarrow, DuckDB, the Kafka client
assert {"duckdb", "confluent_kafka", "pyarrow"} <= set(sys.modules)
datasource.settle_heap()
assert gc.get_freeze_count() == frozen  # once per process
garbage = [[i] for i in range(1000)]
garbage.append(garbage)  # a cycle made after the freeze is still collected
del garbage
assert gc.collect() >= 1000
print("ok")
"""


def test_settle_heap_freezes_once_and_later_garbage_is_still_collected():
    out = subprocess.run([sys.executable, "-c", CHECK], check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout + out.stderr
