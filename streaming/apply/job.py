"""Building and running the streaming queries of ``cdc apply``.

One streaming query per ``apply:`` item (source -> target), each with its
own checkpoint directory and its own ApplyEngine (target connection) on the
driver. The query reads the source's changes topic through ``cdc-stream``
and hands every micro-batch to the engine in ``foreachBatch``.

Exactly-once: Spark may replay a batch after a crash (offsets logged, commit
not yet logged); the engine skips what the progress row already covers.
When the checkpoint is gone, the query starts from the Kafka offsets the
progress row remembers (else from the earliest offset), and the sequence
filter drops what was applied already. Before a query starts, its
checkpoint is checked against the progress row and the topic's identity
(streaming.apply.checkpoint): a checkpoint or a target from another life of
the stream is a loud stop, never a silent skip. The default checkpoint
location is keyed by the target's settings and the topic's id.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from cdc.config.credentials import LOGIN_FIELDS
from cdc.config.models import ApplyConfig, Config
from cdc.errors import CdcError, PublishError
from cdc.metrics import ApplyMetrics
from cdc.publish.topics import topic_id
from cdc.schema.table_map import TableMap
from cdc.stream.envelope import changes_topic
from streaming.apply.checkpoint import check, default_location, read_checkpoint
from streaming.apply.engine import ApplyEngine
from streaming.apply.idle import IdleRule
from streaming.apply.retry import apply_with_retry, sequence_span
from streaming.stream.records import unpack
from streaming.targets import make_target

log = logging.getLogger(__name__)


class _ReportedByJob(logging.Filter):
    """py4j logs, with its traceback, every exception a Python callback (our foreachBatch) raises. The job's
    own errors (CdcError) are reported once by ``run`` (and printed as one line by `cdc apply`): drop
    py4j's copy of those, keep anything else it logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, CdcError)


logging.getLogger("py4j.clientserver").addFilter(_ReportedByJob())


# the source hands each micro-batch over in packed rows (runs of records as Arrow IPC, streaming.stream.records
# .pack): Spark moves a few large values instead of converting every record into its row and back.
# Packed rows per Arrow batch that Spark collects to the driver: 64 x records.PACK_BYTES stays far below
# the 2 GiB a binary Arrow column can hold (Spark's maxBytesPerBatch is not applied to toArrow)
PACKED_ARROW_ROWS = 64


# The driver's JVM plans micro-batches and hands Arrow buffers on (the rows are decoded, reduced and written in
# Python): the client compiler alone is enough for that, and the optimizing one's compile threads cost more CPU
# than they give back (cdc bench oltp, 1,000,000 single-row transactions: the apply's CPU 13 % lower, the same
# bulk rates in cdc bench apply)
DRIVER_JIT = "-XX:TieredStopAtLevel=1"


# attempts of a task before its micro-batch fails: a cluster's default (spark.task.maxFailures), which a local
# master ignores and replaces by 1 unless its URL names it. A task reads its offset range and hands it to the
# driver, which writes the target in the batch's one transaction, so an attempt again is harmless; a single
# failure of a task (a lost executor, a transient JVM error) then costs a retry instead of the whole job.
TASK_ATTEMPTS = 4
_LOCAL = re.compile(r"local(?:\[(\*|\d+)\])?")


def local_with_retries(master: str | None) -> str | None:
    """``local`` / ``local[N]`` / ``local[*]`` as ``local[N,TASK_ATTEMPTS]``; any other master (a cluster,
    a local URL naming its own attempts) unchanged."""
    m = _LOCAL.fullmatch(master or "")
    if m is None:
        return master
    return f"local[{m.group(1) or 1},{TASK_ATTEMPTS}]"


def build_session(master: str | None = None, app_name: str = "cdc-apply", log_level: str = "INFO",
                  json_logs: bool = False) -> Any:
    """The driver's SparkSession; its JVM logs as ``logging:`` says (streaming.apply.spark_logs).

    ``master`` None: spark-submit's master when spark-submit started this process (it set
    PYSPARK_GATEWAY_PORT and runs the driver JVM already), else ``local[*]``."""
    from pyspark.sql import SparkSession

    from streaming.apply.spark_logs import spark_settings, start_jvm
    from streaming.apply.worker_python import use_for_local_workers
    from streaming.stream.datasource import register

    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        master = "local[*]"
    master = local_with_retries(master)
    settings = {"spark.app.name": app_name, **({"spark.master": master} if master else {})}
    if master and master.startswith("local"):  # a local job listens on loopback only (not on whatever the hostname resolves to)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
        use_for_local_workers()  # its Python workers import pyspark byte-compiled (streaming.apply.worker_python)
    # Python workers (executors, the streaming source runner) must use this interpreter (pyarrow, our code)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings.update(spark_settings(log_level, json_logs))
    settings["spark.driver.extraJavaOptions"] += f" {DRIVER_JIT}"
    settings.update({
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(PACKED_ARROW_ROWS),
        "spark.sql.streaming.stopGracefullyOnShutdown": "true",
        # Python workers start slowly on a loaded machine: give them time to connect back
        "spark.python.authenticate.socketTimeout": "180s",
    })
    start_jvm(settings, json_logs)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark


def default_checkpoint(config: Config, apply: ApplyConfig, stream_id: str | None = None) -> str:
    """The checkpoint directory of ``apply`` when the config names none (streaming.apply.checkpoint)."""
    # who logs in is not the target's identity (and no password goes into a path); the DSN holds none;
    # nor are its timeouts (tuning them keeps the checkpoint where it is)
    target = config.target(apply.target).model_dump(by_alias=True, exclude=LOGIN_FIELDS | {"timeouts"})
    return default_location(None, config.kafka.topic_prefix, apply.source, apply.target, target,
                            config.kafka.bootstrap_servers, stream_id)


@dataclass
class ApplyStream:
    """One running (source -> target) query and what the driver knows about it."""

    apply: ApplyConfig
    engine: ApplyEngine
    query: Any = None
    failure: BaseException | None = None
    failed_batch: int | None = None  # the micro-batch that raised ``failure``
    last_activity: float = field(default_factory=time.monotonic)
    batches: int = 0
    engine_topic: str = ""
    stream_id: str | None = None  # the changes topic's id on the broker (recorded in the progress row)
    started_at: float | None = None
    restarts: int = 0
    timings: list[tuple[float, float, float, int]] = field(default_factory=list)  # (start, read, end, records)
    in_batch: bool = False  # True while on_batch runs (read + apply of one micro-batch)
    # the micro-batch in progress (the /readyz bound apply[].max_batch_s names it) and its last transient error
    batch_id: int | None = None
    batch_started: float | None = None
    batch_span: str = "?"
    retrying: str | None = None
    stop: threading.Event | None = None  # set by SIGTERM: ends the retries of a batch at once

    def on_batch(self, df: Any, batch_id: int) -> None:
        self.in_batch = True
        self.batch_id, self.batch_started, self.batch_span, self.retrying = batch_id, time.monotonic(), "?", None
        reading = True
        try:
            t0 = time.monotonic()
            table = unpack(df.toArrow())
            t1, reading = time.monotonic(), False
            self.batch_span = sequence_span(table)
            end = None
            if table.num_rows:
                last = table.group_by("part").aggregate([("offset", "max")])  # per partition, columnar
                nxt = {str(p): o + 1 for p, o in zip(last.column("part").to_pylist(),
                                                     last.column("offset_max").to_pylist())}
                end = {"next": dict(sorted(nxt.items())), "topic": self.engine_topic}
                if self.stream_id:
                    end["stream"] = self.stream_id
            result = apply_with_retry(self.engine, lambda: self.engine.apply_arrow(table, batch_id, end), batch_id,
                                      self.batch_span, self.apply.retry, self.stop, self._retrying)
            self.batches += 1
            if len(self.timings) < 10_000:
                self.timings.append((t0, t1, time.monotonic(), table.num_rows))
            if result.transactions or result.rows:
                self.last_activity = time.monotonic()
            log.info("%s batch %s: %s records, %s transactions, rows %s%s (read %.2fs, apply %.2fs)", self.apply.target, batch_id,
                     table.num_rows, result.transactions, result.rows, " (skipped: replay)" if result.skipped else "",
                     t1 - t0, time.monotonic() - t1)
        except BaseException as exc:
            if not (reading and transient_spark(str(exc))):  # else: the query restarts
                self.failure, self.failed_batch = exc, batch_id
            raise
        finally:
            self.in_batch = False
            self.batch_started = None

    def _retrying(self, error: Any, attempt: int) -> None:
        self.retrying = f"{error.fields.get('cause')} (attempt {attempt} of {self.apply.retry.attempts} failed)"


def records_behind(progress: dict[str, Any] | None) -> int | None:
    """Records the planner has seen beyond the last planned batch, from a query's progress (the source's
    ``latestOffset``, reported by cdc-stream, minus its ``endOffset``); None when the progress says nothing."""
    sources = (progress or {}).get("sources") or []
    if not sources:
        return None
    ends = []
    for key in ("endOffset", "latestOffset"):
        off = sources[0].get(key)
        off = orjson.loads(off) if isinstance(off, str) else off
        if not isinstance(off, dict) or not isinstance(off.get("next"), dict):
            return None
        ends.append(off["next"])
    end, latest = ends
    return sum(max(0, int(o) - int(end.get(p, o))) for p, o in latest.items())


def _report_lag(s: ApplyStream) -> None:
    behind = records_behind(s.query.lastProgress)
    if behind is not None:
        s.engine.metrics.records_behind(behind)


def start_stream(spark: Any, config: Config, apply: ApplyConfig, metrics_registry: Any = None) -> ApplyStream:
    target = make_target(config.target(apply.target))
    metrics = ApplyMetrics(apply.source, apply.target, metrics_registry)
    engine = ApplyEngine(apply.source, target, TableMap.from_config(apply), metrics, apply.views)
    engine.catalog.policy = apply.schema_changes  # before start(): load() reads it
    engine.catalog.source_kind = next((s.kind for s in config.sources if s.name == apply.source), None)
    engine.start()
    stream = ApplyStream(apply, engine)
    stream.engine_topic = engine.topic = changes_topic(config.kafka.topic_prefix, apply.source)
    try:
        _start_query(spark, config, stream)
    except BaseException:
        engine.close()
        raise
    return stream


def _start_query(spark: Any, config: Config, stream: ApplyStream) -> None:
    apply, topic = stream.apply, stream.engine_topic
    try:
        stream.stream_id = topic_id(config.kafka.connection(), topic)
    except PublishError as exc:  # the query's own read then reports the broker
        log.warning("cannot learn the id of %s: %s", topic, exc)
        stream.stream_id = None
    location = apply.checkpoint_dir or default_checkpoint(config, apply, stream.stream_id)
    progress = stream.engine.progress
    check(checkpoint=read_checkpoint(location), progress=progress, topic=topic, stream_id=stream.stream_id,
          target=apply.target, source=apply.source)
    reader = (spark.readStream.format("cdc-stream")
              .options(**config.kafka.connection().spark_options())  # kafka.client reaches the executors too
              .option("topic", topic)
              .option("encoding", config.kafka.encoding)
              .option("stream_id", stream.stream_id or "")
              .option("packed", "true")
              .option("max_records_per_batch", str(apply.max_records_per_batch))
              .option("max_bytes_per_batch", str(apply.max_bytes_per_batch))
              .option("freshness_interval_s", str(apply.freshness_interval_s))
              # a full batch becomes one input partition per core (a third, half-empty wave costs a whole task)
              .option("records_per_partition", str(-(-apply.max_records_per_batch // _cores(spark))))
              .option("bytes_per_partition", str(-(-apply.max_bytes_per_batch // _cores(spark)))))
    if progress is not None and progress.next_offsets and progress.next_offsets.get("topic") == topic:
        reader = reader.option("startingOffsets", orjson.dumps(progress.next_offsets).decode())
    writer = (reader.load().writeStream.foreachBatch(stream.on_batch)
              .option("checkpointLocation", location)
              .queryName(f"cdc-apply-{config.kafka.topic_prefix}-{apply.source}-{apply.target}"))
    writer = writer.trigger(processingTime=f"{int(apply.trigger_interval_s * 1000)} milliseconds") \
        if apply.trigger_interval_s > 0 else writer
    stream.failure, stream.started_at = None, None
    stream.query = writer.start()


def _cores(spark: Any) -> int:
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        return 2


# Spark-side failures that a restart of the query (from its checkpoint; the progress row keeps it exactly
# once) cures: a Python worker that started too slowly on a loaded machine, a lost local socket.
# A Python worker that died (EOFException: e.g. librdkafka crashing the source's process when its topic is
# deleted under it) is one too: the restarted query's start-up checks then judge the stream it finds.
# A task whose closure does not deserialize (OptionalDataException, StreamCorruptedException: seen once in a
# kill -9 test, on both queries' first batch after a restart) fails all its attempts, which share the one
# serialized task binary; a restarted query plans and serializes the batch anew. A failure that persists
# still stops the apply after MAX_RESTARTS, with the error.
TRANSIENT_SPARK = ("failed to connect back", "Connection reset", "SocketTimeoutException", "Broken pipe",
                   "java.io.EOFException", "java.io.OptionalDataException", "java.io.StreamCorruptedException")
MAX_RESTARTS = 5


def transient_spark(text: str) -> bool:
    """Whether a Spark-side failure's text is one a restart of the query cures (TRANSIENT_SPARK)."""
    return any(t in text for t in TRANSIENT_SPARK)

LAG_EVERY_S = 2.0  # cdc_apply_lag_records from the queries' progress (each look is a call into the JVM)


def _restart_or_raise(spark: Any, config: Config, s: ApplyStream) -> None:
    exc = s.query.exception()
    text = _failure_text(exc)
    if s.failure is None and transient_spark(text) and s.restarts < MAX_RESTARTS:
        s.restarts += 1
        log.warning("apply query %s failed (%s); restart %d of %d", s.query.name, text.splitlines()[0],
                    s.restarts, MAX_RESTARTS)
        time.sleep(min(10.0, 1.0 * 2 ** s.restarts))
        s.engine.progress = s.engine.target.read_progress(s.apply.source)
        s.engine.catalog.load()
        _start_query(spark, config, s)
        return
    if s.failure is not None:
        raise s.failure
    raise CdcError(f"apply query {s.query.name} stopped: {text}", source=s.apply.source)


def _failure_text(exc: Any) -> str:
    """The query's exception and its captured causes (Spark's top message may say only "no cause message")."""
    parts, cause = [str(exc)], getattr(exc, "_cause", None)
    while cause is not None and len(parts) < 6:
        parts.append(str(getattr(cause, "_desc", None) or cause))
        cause = getattr(cause, "_cause", None)
    return "\n".join(parts)


def run(config: Config, master: str | None = None, until_idle_s: float | None = None,
        stop_event: threading.Event | None = None, spark: Any = None, metrics_registry: Any = None,
        streams_out: list[ApplyStream] | None = None) -> int:
    """Run every apply stream of ``config``; return when stopped, idle or failed (raises the failure).

    ``streams_out`` (optional) receives each ApplyStream as it starts (the probes of /readyz read them,
    benches their per-batch timings)."""
    if not config.apply:
        raise CdcError("nothing to apply: the config has no `apply:` items", key="apply")
    from streaming.stream.datasource import warm_up

    spark = spark or build_session(master, log_level=config.logging.level, json_logs=config.logging.json_)
    warm_up(spark, _cores(spark), packed=True)
    streams: list[ApplyStream] = streams_out if streams_out is not None else []
    stop_event = stop_event or threading.Event()
    for a in config.apply:
        streams.append(start_stream(spark, config, a, metrics_registry))
        streams[-1].stop = stop_event
    idle = IdleRule(until_idle_s, config.kafka.connection(), config.kafka.encoding) if until_idle_s is not None else None
    lag_at = 0.0
    try:
        while not stop_event.is_set():
            for s in streams:
                if s.failure is not None and isinstance(s.failure, CdcError):
                    raise s.failure
                if not s.query.isActive:
                    _restart_or_raise(spark, config, s)
            if time.monotonic() - lag_at >= LAG_EVERY_S:
                lag_at = time.monotonic()
                for s in streams:
                    _report_lag(s)
            if idle is not None and all(idle.idle(s) for s in streams):
                log.info("no new transaction for %.1fs and none left in the stream: stopping", until_idle_s)
                return 0
            stop_event.wait(0.2)
        return 0
    finally:
        for s in streams:
            try:
                s.query.stop()
            except Exception:  # noqa: BLE001, S110 - stopping a failed query may raise again
                pass
            s.engine.close()
