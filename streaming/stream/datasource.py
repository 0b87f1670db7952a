"""The Spark adapter: a pyspark.sql.datasource stream source named ``cdc-stream``.

This is the only module that speaks Spark's camelCase API; the work is done
by streaming.stream.batches (cutting, reading) and streaming.stream.offsets.

Options (``spark.readStream.format("cdc-stream").option(...)``):

    bootstrap_servers   broker address (required)
    kafka.<setting>     a librdkafka setting of every consumer, driver and
                        executors (``kafka.client``: security.protocol, ssl.*,
                        sasl.*; ``kafka.sasl.password_file``: only the path
                        travels to executors, each reads the file itself);
                        kafka.consumer.<setting>: consumer-only
                        (cdc.config.kafka_settings.KafkaConnection.spark_options)
    topic               the changes topic, ``<prefix>.<source>.changes`` (required)
    encoding            json (default) | avro
    max_records_per_batch   admission control: records per micro-batch (a
                        transaction is never split, so one bigger than this
                        makes a batch of its own); default 100000
    max_bytes_per_batch admission control: bytes of records (keys and values
                        as the broker holds them) per micro-batch, as above;
                        default none (records only)
    records_per_partition   a batch range is split into the fewest input
                        partitions of at most this many records, of equal size
                        (read in parallel); default 50000
    bytes_per_partition ... and of at most about this many bytes (where the
                        scan knows the range's bytes); default none
    startingOffsets     "earliest" (default) or an offset JSON (see offsets.py)
    freshness_interval_s    an idle stream (only HEARTBEATs since the last
                        batch) makes a batch at most this often (default 0:
                        every heartbeat; streaming.stream.batches, "Idle streams")
    packed              "true": each row carries a run of records of one input
                        partition (up to records.PACK_BYTES of Arrow buffers) as
                        an Arrow IPC stream, schema records.PACKED_DDL, and
                        records.unpack turns a collected batch back into the
                        record rows (the apply job reads this way: Spark then
                        moves a few large values instead of converting every
                        record into its rows and back, about a third less JVM
                        CPU); default "false": one row per record, SCHEMA_DDL
    stream_id           the topic's id on the broker when the query starts
                        (cdc.publish.topics.topic_id): every offset carries it,
                        and an offset of another life of the topic (a
                        checkpoint written before the topic was deleted and
                        created again) is refused with StreamCorrupt; the
                        planner also re-checks the id every ID_CHECK_S

Micro-batches end at transaction boundaries only. Trigger.AvailableNow is
supported (the target is the last boundary seen when the query starts).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator, Sequence
from typing import Any

import orjson
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from cdc.config.kafka_settings import KafkaConnection
from cdc.errors import ConfigError, StreamCorrupt
from streaming.stream.batches import BoundaryScanner, RangePartition, read_range, split_range
from streaming.stream.offsets import StreamOffset
from streaming.stream.records import PACKED_DDL, SCHEMA_DDL, pack

NAME = "cdc-stream"
ID_CHECK_S = 10.0  # how often the planner makes sure the topic was not recreated under the query


class CdcStreamDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return PACKED_DDL if _packed(self.options) else SCHEMA_DDL

    def streamReader(self, schema: Any) -> CdcStreamReader:
        return CdcStreamReader(dict(self.options))


class _Partition(InputPartition):
    def __init__(self, rng: RangePartition) -> None:
        super().__init__(rng)
        self.rng = rng


class CdcStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: dict[str, str]) -> None:
        for req in ("bootstrap_servers", "topic"):
            if not options.get(req):
                raise ConfigError(f"cdc-stream source needs option {req!r}", key=req)
        self.kafka = KafkaConnection.from_options(options)
        self.topic = options["topic"]
        self.encoding = options.get("encoding", "json")
        self.max_records = int(options.get("max_records_per_batch", 100_000))
        self.per_split = int(options.get("records_per_partition", 50_000))
        self.max_bytes = int(options["max_bytes_per_batch"]) if options.get("max_bytes_per_batch") else None
        self.bytes_per_split = int(options["bytes_per_partition"]) if options.get("bytes_per_partition") else None
        self.starting = options.get("startingOffsets", "earliest")
        self.stream_id = options.get("stream_id") or None
        self.freshness_s = float(options.get("freshness_interval_s", 0))
        self.packed = _packed(options)
        self._id_checked = time.monotonic()
        self._scanner: BoundaryScanner | None = None
        self._until: StreamOffset | None = None
        self._initial: dict | None = None

    def __getstate__(self) -> dict[str, Any]:  # executors get the options, never a live consumer
        state = dict(self.__dict__)
        state["_scanner"] = None
        return state

    @property
    def scanner(self) -> BoundaryScanner:
        if self._scanner is None:
            self._scanner = BoundaryScanner(self.kafka, self.topic, self.encoding)
        return self._scanner

    # ---- Spark API -------------------------------------------------------------------
    def initialOffset(self) -> dict:
        if self._initial is None:  # Spark asks more than once; the answer must not move
            if self.starting not in ("", "earliest"):
                given = self._same_stream(StreamOffset.from_json(orjson.loads(self.starting)), "startingOffsets")
                self._initial = StreamOffset.of(self.topic, dict(given.next), self.stream_id).to_json()
            else:
                s = self.scanner
                self._initial = StreamOffset.of(self.topic, {p: s.earliest(p) for p in s.partitions()},
                                                self.stream_id).to_json()
        return self._initial

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_records)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = self._same_stream(StreamOffset.from_json(start), "the checkpoint")
        self._check_topic_id()
        per_part = None
        if isinstance(limit, ReadMaxRows):
            per_part = limit.max_rows
        elif not isinstance(limit, ReadAllAvailable):
            per_part = self.max_records
        end = {}
        for p, o in begin.next:
            not_after = self._until.get(p) if self._until is not None else None
            # AvailableNow runs to a fixed end: nothing held back there
            end[p] = self.scanner.cut(p, o, per_part, not_after, self.freshness_s if self._until is None else 0.0,
                                      self.max_bytes if per_part is not None else None)
        if self._until is None:  # scan on while Spark runs this batch (AvailableNow knows where it stops)
            self.scanner.scan_ahead(end, per_part or self.max_records, self.max_bytes)
        return StreamOffset.of(self.topic, end, self.stream_id).to_json()

    def _check_topic_id(self) -> None:
        """Every ID_CHECK_S: the topic still has the id it had at start (not deleted and created again
        under the query, e.g. by `cdc stream reset`: its new records would be taken for replays)."""
        now = time.monotonic()
        if not self.stream_id or now - self._id_checked < ID_CHECK_S:
            return
        self._id_checked = now
        from cdc.errors import PublishError
        from cdc.publish.topics import topic_id

        try:
            current = topic_id(self.kafka, self.topic)
        except PublishError:
            return  # the broker is away: the scan reports that
        if current is not None and current != self.stream_id:
            raise StreamCorrupt(f"{self.topic} was deleted and created again while the apply ran (topic id "
                                f"{self.stream_id} -> {current}): its records are another stream; the target must "
                                f"be rebuilt from it (see `cdc stream reset`)", topic=self.topic,
                                topic_id=self.stream_id, new_topic_id=current)

    def _same_stream(self, offset: StreamOffset, where: str) -> StreamOffset:
        """``offset`` unless it names another topic, or another life of this one (another topic id)."""
        if offset.topic != self.topic or (self.stream_id and offset.stream and offset.stream != self.stream_id):
            raise StreamCorrupt(f"{where} holds offsets {offset.to_json()} of another stream than {self.topic} "
                                f"(topic id {self.stream_id}); resuming there could skip or misread records: "
                                f"remove the checkpoint directory (the target's progress row is the authority)",
                                topic=self.topic, topic_id=self.stream_id, offset_topic=offset.topic,
                                offset_stream=offset.stream)
        return offset

    def prepareForTriggerAvailableNow(self) -> None:
        s = self.scanner  # records that exist now; later ones wait for the next run
        self._until = StreamOffset.of(self.topic, {p: s.true_end(p) for p in s.partitions()})

    def reportLatestOffset(self) -> dict | None:
        """The head of the topic as far as the planner scanned (``latestOffset`` in Spark's progress: the job
        reports records not yet in a batch, cdc_apply_lag_records)."""
        seen = self._scanner.seen_to() if self._scanner is not None else {}
        return StreamOffset.of(self.topic, seen, self.stream_id).to_json() if seen else None

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        a, b = StreamOffset.from_json(start), StreamOffset.from_json(end)
        out: list[InputPartition] = []
        for p, e in b.next:
            s = a.get(p) or 0
            size = None  # the range's bytes, where this planner's scan passed it
            if self._scanner is not None and self.bytes_per_split:
                first, last = self._scanner.size_at(p, s), self._scanner.size_at(p, e)
                size = last - first if first is not None and last is not None else None
            out.extend(_Partition(r) for r in split_range(self.kafka, self.topic, p, s, e, self.encoding,
                                                          self.per_split, size, self.bytes_per_split))
        return out

    def read(self, partition: InputPartition) -> Iterator[Any]:
        settle_heap()
        return pack(read_range(partition.rng)) if self.packed else read_range(partition.rng)

    def commit(self, end: dict) -> None:
        pass  # progress lives in the target (cdc_progress), written with the data

    def stop(self) -> None:
        if self._scanner is not None:
            self._scanner.close()


_settled = False


def settle_heap() -> None:
    """Once per Python worker, at its first read: one last full collection, then every object alive (the
    modules pyspark, pyarrow, DuckDB and the Kafka client loaded) frozen out of the collector's walks. A reused
    worker runs a full ``gc.collect()`` after each task (pyspark.daemon), which otherwise walks that whole heap
    every time, tens of milliseconds per task; frozen, it walks only what the task left."""
    global _settled
    if not _settled:
        _settled = True
        _warm_decoder()  # loaded first (the Kafka client, pyarrow, DuckDB's JSON functions), then frozen
        gc.collect()
        gc.freeze()


def _packed(options: Any) -> bool:
    return str(options.get("packed", "false")).lower() == "true"


class _WarmUpReader(DataSourceReader):
    def __init__(self, parts: int, rows: int, packed: bool = False) -> None:
        self.parts, self.rows, self.packed = parts, rows, packed

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(i) for i in range(self.parts)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import pyarrow as pa

        from streaming.stream.records import DATA, arrow_schema

        _warm_decoder()  # the stream's reads run in these Python workers: load what they load
        n = max(1, self.rows // self.parts)
        size = min(n, 32768)
        batch = pa.RecordBatch.from_pylist(
            [{"part": partition.value, "offset": i, "sequence": i, "kind": DATA, "txid": f"0-1-{i // 100}",
              "tbl": "warm.up", "op": "c", "key": f'{{"id":{i}}}', "ts_ms": 1_700_000_000_000,
              "after": f'{{"id":{i},"name":"name {i} v0","amount":"{i}.00","at":"2024-05-06T07:08:01.000001"}}'}
             for i in range(size)], schema=arrow_schema())
        for start in range(0, n, size):
            if self.packed:
                from streaming.stream.records import pack

                yield from pack([batch.slice(0, min(size, n - start))])
            else:
                yield batch.slice(0, min(size, n - start))


class WarmUpDataSource(DataSource):
    """A batch source of prepared data rows in the ``cdc-stream`` schema (options ``partitions``, ``rows``,
    ``packed`` as for ``cdc-stream``): the warm-up read of :func:`warm_up`, and `cdc bench apply`'s measure
    of the Spark read path alone."""

    @classmethod
    def name(cls) -> str:
        return "cdc-warm-up"

    def schema(self) -> str:
        return PACKED_DDL if _packed(self.options) else SCHEMA_DDL

    def reader(self, schema: Any) -> _WarmUpReader:
        return _WarmUpReader(int(self.options.get("partitions", "2")), int(self.options.get("rows", "1")),
                             _packed(self.options))


def _warm_decoder() -> None:
    """Import the readers' modules and decode one record, so DuckDB's JSON functions are loaded."""
    import confluent_kafka  # noqa: F401 - imported for its load time

    from streaming.stream.decode import JsonChunkDecoder

    JsonChunkDecoder(0).decode([0], [b'{"table":"warm.up","key":{"id":0}}'],
                               [b'{"sequence":1,"op":"c","before":null,"after":{"id":0}}'])


def warm_up(spark: Any, partitions: int, rows: int = 1, packed: bool = False) -> Any:
    """Start what Spark starts on its first Python data source read (the executors' Python workers,
    the data source planner, the Arrow path back to the driver) before the stream's first batch, so a
    one-time start-up of several seconds is not paid inside the first micro-batch (and its latency).
    Returns what the read collected (a pyarrow Table of ``rows`` rows; ``packed``: read packed, then
    unpacked as the apply job does)."""
    from streaming.stream.records import unpack

    _warm_decoder()  # the driver's engine converts row images with DuckDB's JSON functions too
    table = (spark.read.format(WarmUpDataSource.name()).option("partitions", str(partitions))
             .option("rows", str(rows)).option("packed", str(packed).lower()).load().toArrow())
    return unpack(table) if packed else table


def register(spark: Any) -> None:
    """Register the ``cdc-stream`` format (and the warm-up source) with ``spark`` (idempotent)."""
    spark.dataSource.register(CdcStreamDataSource)
    spark.dataSource.register(WarmUpDataSource)
