"""A console consumer for the demo: follows one change stream and counts what goes by.

``StreamWatcher(bootstrap, topic).start()`` runs a background thread that
reads the topic from the beginning (JSON or Avro values, decoded with
cdc.stream.serde) and keeps counters: records, data changes per op, BEGIN/END/
ABORTED/SCHEMA/HEARTBEAT markers, the last sequence and END id. ``line()``
renders them as one progress line; ``stop()`` ends the thread (bounded).
It never commits offsets and never changes the stream.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from typing import Any


class StreamWatcher:
    def __init__(self, bootstrap: str, topic: str, encoding: str = "json") -> None:
        self.bootstrap, self.topic, self.encoding = bootstrap, topic, encoding
        self.counts: Counter = Counter()
        self.last_sequence: int | None = None
        self.last_end: dict[str, Any] | None = None
        self.errors: list[str] = []
        self.sample: list[dict[str, Any]] = []  # the first few data records, for show
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stream-watcher", daemon=True)
        self._lock = threading.Lock()

    def start(self) -> "StreamWatcher":
        self._thread.start()
        return self

    def stop(self, timeout: float = 10) -> None:
        self._stop.set()
        self._thread.join(timeout)

    @property
    def transactions(self) -> int:
        return self.counts["END"]

    def line(self) -> str:
        c = self.counts
        return (f"stream {self.topic}: {c['records']} records | {c['END']} transactions "
                f"(+{c['BEGIN'] - c['END'] - c['ABORTED']} open, {c['ABORTED']} aborted) | "
                f"c={c['c']} u={c['u']} d={c['d']} r={c['r']} | schema={c['SCHEMA']} "
                f"heartbeat={c['HEARTBEAT']} | last sequence {self.last_sequence}")

    def wait_for(self, transactions: int, timeout: float, on_tick=None) -> bool:
        """Block until at least ``transactions`` END markers were seen or ``timeout`` passed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.transactions >= transactions:
                return True
            if on_tick:
                on_tick()
            time.sleep(0.25)
        return self.transactions >= transactions

    def _run(self) -> None:
        from confluent_kafka import Consumer, TopicPartition

        from cdc.config.kafka_settings import KafkaConnection
        from cdc.stream.serde import get_serde

        serde = get_serde(self.encoding)
        consumer = Consumer(KafkaConnection.of(self.bootstrap).settings("consumer", {
            "group.id": f"cdc-demo-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100}))
        try:
            consumer.assign([TopicPartition(self.topic, 0, 0)])
            while not self._stop.is_set():
                msg = consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error():
                    if len(self.errors) < 20:
                        self.errors.append(str(msg.error()))
                    continue
                try:
                    value = serde.decode(msg.value()) if msg.value() is not None else None
                except Exception as exc:  # noqa: BLE001 - shown, not fatal, in a demo viewer
                    self.errors.append(f"offset {msg.offset()}: cannot decode: {exc}")
                    continue
                self._count(value)
        finally:
            consumer.close()

    def _count(self, value: dict[str, Any] | None) -> None:
        with self._lock:
            self.counts["records"] += 1
            if value is None:
                return
            self.last_sequence = value.get("sequence", self.last_sequence)
            status = value.get("status")
            if status:
                self.counts[status] += 1
                if status == "END":
                    self.last_end = value
            else:
                self.counts[value.get("op", "?")] += 1
                if len(self.sample) < 3:
                    self.sample.append(value)
