"""The Spark apply job on a faulty change stream (real broker, Spark, PostgreSQL): producer-retry
duplicates are applied once, a sequence gap is a stop that names the missing range."""

from __future__ import annotations

import re

import orjson
import pytest

from cdc.errors import StreamCorrupt
from streaming.apply import job
from streaming.testing import StreamBuilder, produce
from tests.fixtures.spark import pg_apply_config

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

COLS = [("id", "int"), ("name", "varchar(20)")]


def _config(broker, postgres, prefix: str, tmp_path, schema: str, **apply_extra):
    return pg_apply_config(broker, postgres, prefix, schema, tmp_path / "ck", **apply_extra)


def _stream(n_tx: int) -> tuple[StreamBuilder, dict[int, str]]:
    b = StreamBuilder().schema("shop.orders", COLS, ["id"])
    model: dict[int, str] = {}
    for i in range(n_tx):
        b.tx(("c", "shop.orders", None, {"id": i, "name": f"n{i}"}),
             ("u", "shop.orders", {"id": i, "name": f"n{i}"}, {"id": i, "name": f"v{i}"}))
        model[i] = f"v{i}"
        if i % 4 == 3:  # an update of an earlier row: applying a transaction twice would be visible... once
            b.tx(("u", "shop.orders", {"id": i - 1, "name": model[i - 1]},
                  {"id": i - 1, "name": model[i - 1] + "+"}))
            model[i - 1] += "+"
    return b, model


def _status(value: bytes) -> str | None:
    return orjson.loads(value).get("status")


def _pg(postgres, schema: str) -> tuple[list[tuple], int | None]:
    with postgres.connect() as c:
        rows = c.execute(f'SELECT id, name FROM "{schema}".orders ORDER BY id').fetchall()
        prog = c.execute(f'SELECT last_sequence FROM "{schema}".cdc_progress').fetchone()
    return rows, None if prog is None else prog[0]


def test_runs_appended_twice_are_applied_once(spark, broker, postgres, topic_prefix, tmp_path):
    b, model = _stream(24)
    recs = b.encoded()
    out: list = []
    ends, skip_next = 0, False
    for i, rec in enumerate(recs):
        if skip_next:
            skip_next = False
            continue
        out.append(rec)
        if _status(rec[1]) != "END":
            continue
        ends += 1
        if ends % 3 == 0 and i + 1 < len(recs) and _status(recs[i + 1][1]) == "BEGIN":
            out += [recs[i + 1], rec]  # this END again after the next transaction's BEGIN
            skip_next = True
        elif ends % 5 == 1:  # the whole transaction (BEGIN..END) appended twice
            begin = max(j for j in range(i) if _status(recs[j][1]) == "BEGIN")
            out.extend(recs[begin:i + 1])
    seqs = [orjson.loads(v)["sequence"] for _, v in out]
    assert len(seqs) > len(set(seqs)) + 10  # duplicates went in
    topic = f"{topic_prefix}.src.changes"
    broker.create_topic(topic)
    produce(broker.bootstrap, topic, out)
    schema = topic_prefix.replace("-", "_")[:40]
    cfg = _config(broker, postgres, topic_prefix, tmp_path, schema, max_records_per_batch=9)
    assert job.run(cfg, until_idle_s=3, spark=spark) == 0
    rows, last = _pg(postgres, schema)
    assert rows == sorted(model.items()) and last == b.seq - 1
    # a restart from the checkpoint passes the start-up check (batches of duplicates moved the offsets on)
    assert job.run(cfg, until_idle_s=2, spark=spark) == 0
    assert _pg(postgres, schema) == (rows, last)


def test_a_sequence_gap_stops_the_apply_before_it(spark, broker, postgres, topic_prefix, tmp_path):
    b, model = _stream(12)
    recs = b.encoded()
    cut = len(recs) // 2
    while _status(recs[cut][1]) is not None:  # lose three data records in the middle of a transaction
        cut += 1
    lost = recs[cut:cut + 3]
    first, last_lost = orjson.loads(lost[0][1])["sequence"], orjson.loads(lost[-1][1])["sequence"]
    topic = f"{topic_prefix}.src.changes"
    broker.create_topic(topic)
    produce(broker.bootstrap, topic, recs[:cut] + recs[cut + 3:])
    schema = topic_prefix.replace("-", "_")[:40]
    cfg = _config(broker, postgres, topic_prefix, tmp_path, schema, max_records_per_batch=7)
    with pytest.raises(StreamCorrupt) as err:
        job.run(cfg, until_idle_s=3, spark=spark)
    assert f"sequence {first}..{last_lost} missing in {topic}[0] after offset {cut - 1}" in str(err.value)
    rows, last = _pg(postgres, schema)
    assert last is not None and last < first  # the progress row stays before the gap
    assert len(rows) < len(model)


def test_a_checkpoint_or_a_target_from_another_life_of_the_topic_is_a_loud_stop(
        spark, broker, postgres, topic_prefix, tmp_path):
    from cdc.publish.topics import KEEP_FOREVER, TopicSpec, recreate_topic

    topic = f"{topic_prefix}.src.changes"
    old, _ = _stream(8)
    broker.create_topic(topic)
    produce(broker.bootstrap, topic, old.encoded())
    first = topic_prefix.replace("-", "_")[:36] + "_a"
    cfg = _config(broker, postgres, topic_prefix, tmp_path, first)
    assert job.run(cfg, until_idle_s=2, spark=spark) == 0
    assert _pg(postgres, first)[1] == old.seq - 1

    # a NEW stream under the same topic name (deleted and created again), into a fresh target of the same
    # name, with the same checkpoint directory: the old offsets would land mid-stream (or skip records)
    recreate_topic(broker.bootstrap, topic, TopicSpec(config=KEEP_FOREVER))
    new, model = _stream(5)
    produce(broker.bootstrap, topic, new.encoded())
    second = topic_prefix.replace("-", "_")[:36] + "_b"
    cfg2 = _config(broker, postgres, topic_prefix, tmp_path, second)
    with pytest.raises(StreamCorrupt, match=r"Spark checkpoint .*/ck was written for another stream .*remove "
                                            r"that directory"):
        job.run(cfg2, until_idle_s=2, spark=spark)
    with postgres.connect() as c:
        assert c.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = %s AND "
                         "table_name = 'orders'", (second,)).fetchone()[0] == 0

    # the OLD target (progress of the old stream) with a fresh checkpoint: the new records would be replays
    cfg_old = _config(broker, postgres, topic_prefix, tmp_path / "other", first)
    with pytest.raises(StreamCorrupt, match=r"target 'pg' was applied from another life of .*topic id"):
        job.run(cfg_old, until_idle_s=2, spark=spark)
    assert _pg(postgres, first)[1] == old.seq - 1

    # the way out the error names: remove the checkpoint; the fresh target is built from the new stream
    import shutil
    shutil.rmtree(tmp_path / "ck")
    assert job.run(cfg2, until_idle_s=2, spark=spark) == 0
    rows, last = _pg(postgres, second)
    assert rows == sorted(model.items()) and last == new.seq - 1


def test_a_topic_recreated_while_the_apply_runs_stops_it(spark, broker, postgres, topic_prefix, tmp_path):
    import threading
    import time

    from cdc.publish.topics import KEEP_FOREVER, TopicSpec, recreate_topic

    topic = f"{topic_prefix}.src.changes"
    old, model = _stream(6)
    broker.create_topic(topic)
    produce(broker.bootstrap, topic, old.encoded())
    schema = topic_prefix.replace("-", "_")[:40]
    cfg = _config(broker, postgres, topic_prefix, tmp_path, schema)
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["exit"] = job.run(cfg, until_idle_s=60, spark=spark)
        except Exception as exc:  # noqa: BLE001 - the test looks at it
            outcome["error"] = exc

    th = threading.Thread(target=run, daemon=True)
    th.start()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not outcome:
        with postgres.connect() as c:
            has = c.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = %s AND "
                            "table_name = 'cdc_progress'", (schema,)).fetchone()[0]
            last = c.execute(f'SELECT max(last_sequence) FROM "{schema}".cdc_progress').fetchone()[0] if has else None
        if last == old.seq - 1:
            break
        time.sleep(0.5)
    assert not outcome and _pg(postgres, schema)[1] == old.seq - 1, outcome
    recreate_topic(broker.bootstrap, topic, TopicSpec(config=KEEP_FOREVER))  # `cdc stream reset` under a running apply
    new, _ = _stream(12)
    produce(broker.bootstrap, topic, new.encoded())
    th.join(90)
    assert not th.is_alive()
    # the planner sees the new topic id; or, where librdkafka crashes the source's Python process on the
    # deletion of an assigned topic (seen with tansu), the restarted query's start-up check does
    assert isinstance(outcome.get("error"), StreamCorrupt), outcome
    assert re.search(r"was deleted and created again while the apply ran|target 'pg' was applied from another "
                     r"life", str(outcome["error"]))
    assert _pg(postgres, schema) == (sorted(model.items()), old.seq - 1)  # nothing of the new stream applied
