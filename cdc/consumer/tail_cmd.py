"""`cdc tail --config FILE --source NAME`: print a source's change stream, transaction by transaction.

Built on cdc.consumer, so it shows what a consumer applies: whole transactions
(BEGIN, rows, END) in commit order, schema changes between them; duplicates
dropped, ABORTED transactions left out, a gap in ``sequence`` an error (exit 2)
naming the missing range and offset. HEARTBEATs are not printed.

Where to start: the end of the stream (only what completes from now on), unless
``--from-beginning`` or ``--from-sequence N`` (the first transaction or schema
change at or after sequence N). Stops after ``--max N`` printed records, after
``--idle-exit S`` seconds without a record other than a heartbeat, or on Ctrl-C.

``--table db.t`` (repeatable, glob patterns as in ``apply[].tables``): only the
rows and schema changes of matching tables, and only transactions that touch
one. ``--format json`` (default): one JSON object per record,
``{"offset", "key", "value"}``; ``--format text``: one readable line per record.
``--client kafka-python`` reads with the pure-Python client. ``--table-topic
DB.TABLE`` prints a per-table topic instead (plain records, no transactions).
Decodes JSON or Avro according to ``kafka.encoding``.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime, timezone
from typing import Any

import orjson

from cdc.config.options import add_config_option
from cdc.consumer.kafka_clients import CLIENTS
from cdc.schema import table_glob


def configure(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)
    parser.add_argument("--source", required=True, help="source name (its change stream)")
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true", help="start at the first record")
    start.add_argument("--from-sequence", type=int, default=None, metavar="N",
                       help="start at the first transaction or schema change at or after sequence N")
    parser.add_argument("--max", type=int, default=None, metavar="N", help="stop after N printed records")
    parser.add_argument("--idle-exit", type=float, default=None, metavar="S",
                        help="stop after S seconds without a record (heartbeats do not count)")
    parser.add_argument("--table", action="append", default=[], metavar="DB.TABLE",
                        help="only this table (glob patterns; repeatable)")
    parser.add_argument("--format", choices=("json", "text"), default="json",
                        help="json: one JSON object per line (default); text: readable lines")
    parser.add_argument("--client", choices=CLIENTS, default="confluent", help="Kafka client library")
    parser.add_argument("--table-topic", default=None, metavar="DB.TABLE",
                        help="tail the per-table topic of DB.TABLE instead of the change stream")


class _Out:
    """Writes records in the chosen format and counts them against ``--max``."""

    def __init__(self, fmt: str, limit: int | None) -> None:
        self.text = fmt == "text"
        self.limit = limit
        self.count = 0
        self.last_sequence: int | None = None  # the sequence of the last record printed, reported at the end
        self._w = sys.stdout.buffer

    @property
    def full(self) -> bool:
        return self.limit is not None and self.count >= self.limit

    def record(self, offset: int, key: Any, value: Any) -> None:
        if self.full:
            return
        line = _text(offset, key, value) if self.text else orjson.dumps({"offset": offset, "key": key, "value": value})
        self._w.write(line + b"\n")
        self.count += 1
        if isinstance(value, dict) and isinstance(value.get("sequence"), int):
            self.last_sequence = value["sequence"]

    def flush(self) -> None:
        self._w.flush()


def _text(offset: int, key: Any, v: Any) -> bytes:
    if not isinstance(v, dict):  # a tombstone of a per-table topic
        return f"@{offset} tombstone {_j(key)}".encode()
    head = f"#{v.get('sequence')} @{offset}"
    status = v.get("status")
    if status == "BEGIN":
        return f"{head} BEGIN {v.get('id')} {_ts(v.get('ts_ms'))}".encode()
    if status == "END":
        tables = ", ".join(f"{d['data_collection']} {d['event_count']}" for d in v.get("data_collections") or ())
        return f"{head} END {v.get('id')} ({v.get('event_count')} rows: {tables}) {_j(v.get('position'))}".encode()
    if status == "SCHEMA":
        what = v.get("ddl") or _j((v.get("schema") or {}).get("columns"))
        return f"{head} SCHEMA {v.get('table')}: {what}".encode()
    src = v.get("source") or {}
    table = (key or {}).get("table") if isinstance(key, dict) and "table" in key else f"{src.get('db')}.{src.get('table')}"
    pk = _j(key.get("key") if isinstance(key, dict) and "key" in key else key)
    op, before, after = v.get("op"), v.get("before"), v.get("after")
    if op == "u" and before and after:
        changed = {c: after[c] for c in after if before.get(c) != after.get(c)}
        was = {c: before.get(c) for c in changed}
        return f"{head}   u {table} {pk} {_j(was)} -> {_j(changed)}".encode()
    return f"{head}   {op} {table} {pk} {_j(after if after is not None else before)}".encode()


def _j(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _ts(ms: Any) -> str:
    if not isinstance(ms, int):
        return ""
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds")


def main(args: argparse.Namespace) -> int:
    from cdc.config.loader import load_config
    from cdc.errors import CdcError

    config = load_config(args.config)
    config.source(args.source)  # names the known sources if it is not one
    out = _Out(args.format, args.max)
    try:
        if args.table_topic:
            return _tail_table_topic(args, config, out)
        return _tail_stream(args, config, out)
    except KeyboardInterrupt:
        return 0
    except CdcError as exc:
        out.flush()
        print(f"cdc tail: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    finally:
        out.flush()


def _tail_stream(args: argparse.Namespace, config: Any, out: _Out) -> int:
    from cdc.consumer import ChangeStreamConsumer, SchemaChange

    start = "beginning" if args.from_beginning or args.from_sequence is not None else "end"
    consumer = ChangeStreamConsumer.from_config(config, args.source, client=args.client, start=start,
                                                resync_ranges=True)  # shown, not applied
    if args.from_sequence is not None:
        consumer.start_after(sequence=max(0, args.from_sequence - 1), at_boundary=False)
    patterns = args.table

    def wanted(table: str | None) -> bool:
        return not patterns or (table is not None and table_glob.matches(table, patterns))

    try:
        consumer.start()
        after = "" if consumer.last_sequence is None else f", after sequence {consumer.last_sequence}"
        print(f"cdc tail: reading {consumer.topic} from offset {consumer.start_offset}{after}", file=sys.stderr,
              flush=True)
        items = consumer if args.idle_exit is None else consumer.items(args.idle_exit)
        for item in items:
            if isinstance(item, SchemaChange):
                if wanted(item.table):
                    out.record(item.offset, item.record_key(), item.value)
            else:
                shown = [i for i in item.items if wanted(i.table)]
                if shown or not patterns:
                    out.record(item.begin_offset, None, item.begin)
                    for i in shown:
                        out.record(i.offset, i.record_key(), i.value)
                    out.record(item.end_offset, None, item.end)
            out.flush()
            if out.full:
                break
    finally:
        s = consumer.stats
        consumer.close()
        print(f"cdc tail: {out.count} records printed; {s['duplicates']} duplicates and {s['aborted']} aborted "
              f"transactions skipped; last sequence printed {out.last_sequence}", file=sys.stderr)
    return 0


def _tail_table_topic(args: argparse.Namespace, config: Any, out: _Out) -> int:
    """A per-table topic holds plain upserts and tombstones keyed by primary key: printed as they come."""
    from cdc.consumer.kafka_clients import open_client
    from cdc.stream.envelope import table_topic
    from cdc.stream.serde import get_serde, get_table_key_serde

    kafka = config.kafka
    db, _, table = args.table_topic.partition(".")
    topic = table_topic(kafka.topic_prefix, args.source, db, table)
    if kafka.avro_framing == "schema_registry":  # Debezium's Avro through the registry (cdc.debezium.schema_registry)
        from cdc.debezium.schema_registry import registry_decoders

        key_of, value_of = registry_decoders(kafka.schema_registry.client_settings(), topic)
    else:
        key_of = get_table_key_serde(kafka.encoding, kafka.avro_framing).decode
        value_of = get_serde(kafka.encoding, kafka.avro_framing).decode
    client = open_client(args.client, kafka.connection(), topic, None)
    try:
        low, high = client.watermarks()
        client.seek(low if args.from_beginning else high)  # the reported high may lie a batch before the end
        last = time.monotonic()
        while not out.full:
            raws = client.poll(500, 0.2)
            if raws:
                last = time.monotonic()
            elif args.idle_exit is not None and time.monotonic() - last >= args.idle_exit:
                break
            for offset, k, v, _headers in raws:
                out.record(offset, None if k is None else key_of(k), None if v is None else value_of(v))
            out.flush()
    finally:
        client.close()
    return 0
