"""`cdc stream reset --config FILE --source NAME [--yes]`: start a source's change stream afresh.

What reset means: the changes topic ``<prefix>.<source>.changes`` is DELETED
with every record in it and created again, empty (one partition,
``retention.ms=-1``, ``retention.bytes=-1``). The broker gives the new
topic a new id. The next ``cdc run`` then finds no stream and begins a NEW
one: sequence 1, from the source's current position (MySQL: the current
GTID state / binlog position; Oracle: the current SCN). Changes made
between the old stream's last published position and that start are not
in the new stream.

Consumers cannot take the new stream for replays of the old one: a
target's progress row and its Spark checkpoint record the old topic id, so
``cdc apply`` refuses such a target (streaming.apply.checkpoint) until it
is rebuilt from the new stream (drop its tables and its ``cdc_progress``
row for the source, or use a new target; remove its checkpoint directory).

Without ``--yes`` the command only says what it would do (exit status 1).
The daemon of the source must be stopped first.
"""

from __future__ import annotations

import argparse

from cdc.config.options import add_config_option


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="stream_command", metavar="ACTION", required=True)
    p = sub.add_parser("reset", help="delete a source's change stream and start a new one at the next `cdc run`")
    add_config_option(p)
    p.add_argument("--source", required=True, help="the source whose stream is reset")
    p.add_argument("--yes", action="store_true", help="do it (without: only say what would be done)")


def main(args: argparse.Namespace) -> int:
    from cdc.config.loader import load_config
    from cdc.publish.topics import recreate_topic, topic_id, topic_spec
    from cdc.stream.envelope import changes_topic

    config = load_config(args.config)
    config.source(args.source)  # names the known sources if it is not one
    conn, bootstrap = config.kafka.connection(), config.kafka.bootstrap_servers
    topic, spec = changes_topic(config.kafka.topic_prefix, args.source), topic_spec(config.kafka, "changes")
    old_id = topic_id(conn, topic)
    state = _describe(config, topic) if old_id is not None else "it does not exist"
    print(f"cdc stream reset: source {args.source!r}, topic {topic} (broker {bootstrap}): {state}.")
    settings = ", ".join(f"{k}={v}" for k, v in sorted(spec.config.items()))
    print(f"This DELETES {topic} with every record in it and creates it again, empty (1 partition, "
          f"{settings}).\n"
          f"The next `cdc run` then begins a NEW stream of {args.source!r}: sequence 1, from the source's current "
          f"position. Changes made between the old stream's last position and then are NOT in the new stream.\n"
          f"Targets applied from the old stream refuse the new one (their progress row names the old topic id) "
          f"until rebuilt: drop their tables and their cdc_progress row for {args.source!r} (or use new targets), "
          f"remove their Spark checkpoint directories, then apply the new stream (re-snapshot the tables).\n"
          f"Stop the daemon of {args.source!r} before running this.")
    if not args.yes:
        print("Nothing was changed. Run again with --yes to do it.")
        return 1
    recreate_topic(conn, topic, spec)
    print(f"Done: {topic} was deleted and created again (topic id {old_id} -> {topic_id(conn, topic)}). "
          f"Start `cdc run` to begin the new stream.")
    return 0


def _describe(config: object, topic: str) -> str:
    """Watermarks and, when readable, the last sequence and resume state of the stream."""
    from cdc.errors import CdcError
    from cdc.publish.recovery import make_consumer, read_tail, watermarks
    from cdc.stream.serde import get_serdes

    kafka = config.kafka  # type: ignore[attr-defined]
    consumer = make_consumer(kafka.connection())
    try:
        low, high = watermarks(consumer, topic)
    finally:
        consumer.close()
    kser, vser = get_serdes(kafka.encoding, kafka.avro_framing)
    try:
        tail = read_tail(kafka.connection(), topic, kser, vser, deadline_s=60)
    except CdcError as exc:
        return f"watermarks {low}..{high}; its tail cannot be used: {exc.message}"
    if tail.last_sequence is None:
        return f"watermarks {low}..{high}; no record"
    return (f"watermarks {low}..{high}; records up to offset {tail.end_offset - 1}, last sequence "
            f"{tail.last_sequence}, last published position {tail.resume}")
