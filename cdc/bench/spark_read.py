"""The Spark read path's own limit, for `cdc bench apply`: decoded stream rows, already Arrow record
batches in the Python workers (no broker, no decoding, no target), read through a Python data source
and collected on the driver with ``toArrow()``, exactly the way the apply job gets each micro-batch."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

BATCH = 32768


class _Reader(DataSourceReader):
    def __init__(self, rows: int, parts: int) -> None:
        self.rows, self.parts = rows, parts

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(i) for i in range(self.parts)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import pyarrow as pa

        from streaming.records import DATA, arrow_schema

        n = self.rows // self.parts
        rows = [{"part": 0, "offset": i, "sequence": i, "kind": DATA, "txid": f"0-1-{i // 100}", "tbl": "bench.t",
                 "op": "c", "key": f'{{"id":{i}}}', "ts_ms": 1_700_000_000_000,
                 "after": f'{{"id":{i},"name":"name {i} v0","amount":"{i}.00","at":"2024-05-06T07:08:01.000001"}}'}
                for i in range(BATCH)]
        batch = pa.RecordBatch.from_pylist(rows, schema=arrow_schema())
        for start in range(0, n, BATCH):
            yield batch.slice(0, min(BATCH, n - start))


class SparkReadLimit(DataSource):
    @classmethod
    def name(cls) -> str:
        return "cdc-bench-spark-read"

    def schema(self) -> str:
        from streaming.records import SCHEMA_DDL

        return SCHEMA_DDL

    def reader(self, schema: Any) -> _Reader:
        return _Reader(int(self.options["rows"]), int(self.options["partitions"]))


def spark_read_rows_per_s(spark: Any, rows: int, partitions: int, repeat: int = 3) -> float:
    """Best of ``repeat`` reads of ``rows`` rows (after one read to warm the path)."""
    spark.dataSource.register(SparkReadLimit)
    reader = spark.read.format(SparkReadLimit.name()).option("rows", str(rows)).option("partitions", str(partitions))
    reader.load().toArrow()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.monotonic()
        n = reader.load().toArrow().num_rows
        best = min(best, time.monotonic() - t0)
    return n / best
