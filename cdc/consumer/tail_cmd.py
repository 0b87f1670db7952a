"""`cdc tail --config FILE --source NAME [--from-beginning] [--max N] [--idle-exit S]`.

A console consumer of ``<prefix>.<source>.changes``: one decoded record per
line, as JSON ``{"offset": n, "key": ..., "value": ...}``. Starts at the end
of the stream (only new records) unless ``--from-beginning``. Stops after
``--max`` records, after ``--idle-exit`` seconds without a record, or on
Ctrl-C. Decodes JSON or Avro according to ``kafka.encoding``.
"""

from __future__ import annotations

import argparse
import sys
import time


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="YAML config file")
    parser.add_argument("--source", required=True, help="source name (its change stream)")
    parser.add_argument("--from-beginning", action="store_true", help="start at the first record")
    parser.add_argument("--max", type=int, default=None, help="stop after N records")
    parser.add_argument("--idle-exit", type=float, default=None, help="stop after S seconds without a record")
    parser.add_argument("--table-topic", default=None, metavar="DB.TABLE",
                        help="tail the per-table topic of DB.TABLE instead of the change stream")


def main(args: argparse.Namespace) -> int:
    import orjson
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    from cdc.config import load_config
    from cdc.envelope import changes_topic, table_topic
    from cdc.publish.recovery import make_consumer, read_range, watermarks
    from cdc.serde import get_serdes, get_table_key_serde

    config = load_config(args.config)
    config.source(args.source)  # names the known sources if it is not one
    kafka = config.kafka
    kser, vser = get_serdes(kafka.encoding, kafka.avro_framing)
    if args.table_topic:
        db, _, table = args.table_topic.partition(".")
        topic = table_topic(kafka.topic_prefix, args.source, db, table)
        kser = get_table_key_serde(kafka.encoding, kafka.avro_framing)
    else:
        topic = changes_topic(kafka.topic_prefix, args.source)
    consumer = make_consumer(kafka.bootstrap_servers, {"fetch.wait.max.ms": 200})
    start = OFFSET_BEGINNING
    if not args.from_beginning:  # the TRUE end: some brokers report the last batch's base offset as the end
        _, high = watermarks(consumer, topic)
        start = high
        for m in read_range(consumer, topic, high, None, reported_high=high, idle_s=0.5):
            start = m.offset() + 1
    consumer.assign([TopicPartition(topic, 0, start)])
    out = sys.stdout.buffer
    count, last = 0, time.monotonic()
    try:
        while args.max is None or count < args.max:
            msgs = consumer.consume(min(500, (args.max or 500) - count), 0.2)
            if not msgs:
                if args.idle_exit is not None and time.monotonic() - last > args.idle_exit:
                    break
                continue
            last = time.monotonic()
            for m in msgs:
                if m.error():
                    print(f"cdc tail: {m.error()}", file=sys.stderr)
                    continue
                key = kser.decode(m.key()) if m.key() is not None else None
                value = vser.decode(m.value()) if m.value() is not None else None
                out.write(orjson.dumps({"offset": m.offset(), "key": key, "value": value}) + b"\n")
                count += 1
            out.flush()
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    return 0
