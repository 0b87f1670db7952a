"""`cdc check --config FILE [--source NAME] [--json]`: check everything the service will need, before it runs.

What is checked, each as one :class:`Check` (``ok`` or ``FAIL`` with the
statement or setting that fixes it):

- every source (its reader's ``checks``, named in cdc/registry.py ``CHECKS``):
  the log settings on every host (MySQL/MariaDB: readers/mysql/check.py;
  Oracle: supplemental logging) and that each captured pattern matches at
  least one table (a FAIL names the pattern and the databases / tables that
  exist);
- Kafka: the brokers answer, and each source's changes topic, when it exists,
  has the settings the publisher creates it with (cdc/publish/topics.py
  ``topic_spec``: exactly one partition, infinite retention, delete cleanup)
  and accepts records as large as the producer sends (``max.message.bytes``
  of the topic >= ``message.max.bytes`` of the producer);
- every target: it answers and our user may create and drop a table where the
  apply writes (streaming/apply/target_check.py).

Output: one line per check; ``--json`` prints one JSON array of
``{"check", "ok", "detail", "fix"}``. Exit status 1 when any check failed,
2 on a bad config file, 0 when all passed. Checks that cannot run (a host
down) are failures naming why; a topic setting the broker does not report
(tansu reports none) is listed as ``UNVERIFIED``, never as a plain ok.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from typing import Any

from cdc.config.options import add_config_option


@dataclass(frozen=True)
class Check:
    """One finding: ``check`` names what was looked at (``source shop: table pattern shop.*``)."""

    check: str
    ok: bool
    detail: str
    fix: str = ""

    def line(self) -> str:
        head = f"{'ok  ' if self.ok else 'FAIL'}  {self.check}: {self.detail}"
        return head + (f"\n      fix: {self.fix}" if self.fix else "")


def pattern_checks(what: str, patterns: list[str], tables: list[str], where: str, key: str) -> list[Check]:
    """One Check per configured pattern against the qualified ``tables`` that exist (cdc.schema.table_glob rule).

    A pattern matching nothing is a FAIL naming what exists: the tables of its database when that database
    exists, else the databases."""
    from cdc.schema import table_glob

    out = []
    dbs = sorted({t.partition(".")[0] for t in tables})
    for p in patterns:
        hits = table_glob.select(tables, [p])
        if hits:
            shown = ", ".join(hits[:5]) + (f", ... ({len(hits)} tables)" if len(hits) > 5 else "")
            out.append(Check(f"{what}: tables {p}", True, f"matches {shown}"))
            continue
        db = p.partition(".")[0]
        in_db = sorted(t for t in tables if table_glob.db_matches(t.partition(".")[0], [p]))
        if in_db:
            seen = f"{db} has {', '.join(in_db[:10])}" + (" ..." if len(in_db) > 10 else "")
        else:
            seen = f"no database matches {db!r} on {where} (databases: {', '.join(dbs[:20]) or 'none'})"
        out.append(Check(f"{what}: tables {p}", False, f"pattern {p!r} matches no table: {seen}",
                         f"create the table, or correct {key} (globs: * any characters, ? one; case-sensitive)"))
    return out


def kafka_checks(cfg: Any, sources: list[Any], timeout_s: float = 10.0) -> list[Check]:
    """The brokers answer; each source's changes topic (if it exists) is as the publisher creates it."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import ConfigResource

    from cdc.publish.producer import DEFAULTS
    from cdc.publish.topics import admin_client, topic_spec
    from cdc.stream.envelope import changes_topic

    kafka = cfg.kafka
    where = f"kafka {kafka.bootstrap_servers}"
    fix = ("check kafka.bootstrap_servers (and kafka.client for TLS/SASL) in the config file, and that the broker "
           "listens there")
    if refused := _all_refused(kafka.bootstrap_servers):  # answered at once, not after the client's timeout
        return [Check(where, False, f"unreachable: {refused}", fix)]
    admin = admin_client(kafka.connection())
    try:
        try:
            meta = admin.client.list_topics(timeout=timeout_s)
        except KafkaException as exc:
            return [Check(where, False, f"unreachable: {admin.failure(exc)}", fix)]
        out = [Check(where, True, f"reachable ({len(meta.brokers)} broker(s), {len(meta.topics)} topics)")]
        spec = topic_spec(kafka, "changes")
        sent = int(kafka.producer.get("message.max.bytes", DEFAULTS["message.max.bytes"]))
        for src in sources:
            topic = changes_topic(kafka.topic_prefix, src.name)
            name = f"kafka topic {topic}"
            tmeta = meta.topics.get(topic)
            if tmeta is None or tmeta.error is not None:
                out.append(Check(name, True, f"does not exist yet: `cdc run` creates it with {spec.partitions} "
                                             f"partition(s) and {spec.config}"))
                continue
            parts = len(tmeta.partitions)
            if parts != spec.partitions:
                out.append(Check(name, False, f"has {parts} partitions; the change stream needs exactly "
                                              f"{spec.partitions} (one ordered log)",
                                 f"a topic's partitions cannot be reduced: stop `cdc run` for {src.name}, then "
                                 f"`cdc stream reset --config <file> --source {src.name} --yes` (recreates it; "
                                 "targets are rebuilt, see docs/faults.md)"))
            else:
                out.append(Check(name, True, f"{parts} partition"))
            res = admin.client.describe_configs([ConfigResource("topic", topic)], request_timeout=timeout_s)
            try:
                entries = next(iter(res.values())).result(timeout_s)
            except KafkaException as exc:
                out.append(Check(f"{name} settings", False, f"cannot read its settings: {admin.failure(exc)}",
                                 "grant DescribeConfigs on the topic to our principal"))
                continue
            out += _setting_checks(name, topic, kafka.bootstrap_servers, entries, spec.config, sent)
        return out
    finally:
        admin.done()


def _all_refused(bootstrap: str, timeout_s: float = 3.0) -> str | None:
    """When no bootstrap address accepts a TCP connection: what each said (else None, the client goes on)."""
    import socket

    said = []
    for address in bootstrap.split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
            return None
        except (OSError, ValueError) as exc:
            said.append(f"{address.strip()}: {getattr(exc, 'strerror', None) or exc}")
    return "; ".join(said)


def _setting_checks(name: str, topic: str, bootstrap: str, entries: dict, want: dict[str, str],
                    sent: int) -> list[Check]:
    """The topic's settings against ``want`` (unset ones: the broker's default, reported as such)."""

    def got(key: str) -> str | None:
        entry = entries.get(key)
        return None if entry is None or entry.value is None else str(entry.value)

    def alter(key: str, value: str) -> str:
        return (f"kafka-configs.sh --bootstrap-server {bootstrap} --alter --entity-type topics --entity-name "
                f"{topic} --add-config {key}={value}")

    out = []
    for key, value in sorted({"cleanup.policy": "delete", **want}.items()):
        have = got(key)
        if have is None:
            out.append(Check(f"{name} {key}", True, f"UNVERIFIED: the broker does not report it (want {value})"))
        elif have.strip() != value:
            out.append(Check(f"{name} {key}", False, f"is {have}, want {value}", alter(key, value)))
        else:
            out.append(Check(f"{name} {key}", True, have))
    limit = got("max.message.bytes")
    if limit is not None and int(limit) < sent:
        out.append(Check(f"{name} max.message.bytes", False,
                         f"is {limit}, smaller than the producer's message.max.bytes {sent}: a row between the two "
                         "stops the source", alter("max.message.bytes", str(sent)) +
                         f" (or set kafka.producer message.max.bytes: {limit})"))
    elif limit is not None:
        out.append(Check(f"{name} max.message.bytes", True, f"{limit} >= producer message.max.bytes {sent}"))
    return out


def configure(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)
    parser.add_argument("--source", help="check only this source (and Kafka; no targets)")
    parser.add_argument("--json", action="store_true", help="one JSON array of {check, ok, detail, fix}")


def run_checks(cfg: Any, source: str | None = None) -> list[Check]:
    """Every check of ``cfg`` (see the module docstring), in order: sources, Kafka, targets."""
    from cdc.registry import checker

    if source:
        cfg.source(source)  # an unknown name: ConfigError naming it and the known ones
    sources = [(i, s) for i, s in enumerate(cfg.sources) if source in (None, s.name)]
    out: list[Check] = []
    for i, src in sources:
        out += checker(src.kind)(src, f"sources[{i}]")
    out += kafka_checks(cfg, [s for _, s in sources])
    if not source:
        for target in cfg.targets:
            out += checker("target")(target, target.name)
    for item in cfg.apply:  # visible, not checked: the behaviour at a DDL (docs/schema-evolution.md)
        if source in (None, item.source):
            out.append(Check(f"apply {item.source} -> {item.target}: schema changes", True,
                             item.schema_changes.describe()))
    return out


def main(args: argparse.Namespace) -> int:
    from cdc.config.loader import load_config

    checks = run_checks(load_config(args.config), args.source)
    if args.json:
        print(json.dumps([asdict(c) for c in checks], indent=1))
    else:
        for c in checks:
            print(c.line())
        failed = sum(not c.ok for c in checks)
        print(f"{len(checks) - failed} ok, {failed} failed")
    sys.stdout.flush()
    return 1 if any(not c.ok for c in checks) else 0
