"""The whole pipeline operated only through the operations API: MariaDB or MySQL 9.7 -> `cdc run` (API and webhook
alerts on) -> broker -> Spark apply -> PostgreSQL.

While a writer keeps changing ``t``: the target of ``t`` drifts (rows deleted by hand) and POST .../resync
re-reads it; then a statement-format write to ``items`` stops the source: the daemon stays up serving the
API (its last source failed), the state names the GTID and the way back, a webhook alert says so; POST
.../skip (with resync) and POST .../restart bring it back without a shell. A column added to ``items`` (whose
schema changes stop the apply) is added to the target by hand and accepted with POST /api/v1/apply/.../schema;
the restarted apply goes on. GET /api/v1/apply shows the
target's progress row; `cdc compare` finds both tables EQUAL; each action is an operations record in the
stream with its actor, in order.
"""

from __future__ import annotations

import re

import pytest
import yaml

from cdc.cli import main as cdc_main
from cdc.config.loader import load_config
from cdc.dev.ports import free_port, wait_until
from cdc.stream.envelope import changes_topic
from streaming.errors import UnsupportedDdl
from tests.e2e.apply_pipeline import Pipeline
from tests.e2e.test_ops_api_e2e import TOKEN, Api
from tests.e2e.test_snapshot import Writer, load
from tests.integration.stream_check import read_stream
from tests.unit.cdc.ops.test_alerts import Receiver

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]


def _logged(p: Pipeline, text: str) -> bool:
    return text in p.daemon.log_tail(10 ** 7)


def test_resync_skip_and_restart_through_the_api_end_equal(tmp_path, mysql_source, broker, postgres, topic_prefix,
                                                           tmp_source_db, spark, capsys):
    db, my = tmp_source_db, mysql_source  # MariaDB or MySQL 9.7 (Pipeline: its documented capture user)
    load(my, db)
    my.query(f"CREATE TABLE `{db}`.items (id INT PRIMARY KEY, v VARCHAR(20))")
    my.query("CREATE DATABASE IF NOT EXISTS ops")  # where the documented grant lets the capture user write
    signal_table = f"ops.cdc_signal_{db[-6:]}"
    p = Pipeline(tmp_path, my, broker, postgres, topic_prefix, db, targets=("pg",),
                 source_options={"signal_table": signal_table, "snapshot": "initial", "snapshot_chunk_rows": 200})
    hook = Receiver()
    port = free_port()
    (tmp_path / "op.token").write_text(TOKEN)
    doc = yaml.safe_load(p.config_path.read_text())
    doc["apply"][0]["schema_changes"] = {"behavior": "evolve", "tables": {f"{db}.items": "exception"}}
    doc["api"] = {"enabled": True, "port": port,
                  "tokens": [{"name": "alice", "file": str(tmp_path / "op.token"), "role": "operator"}]}
    doc["alerts"] = {"enabled": True, "webhook_url": hook.url, "check_interval_s": 0.5, "timeout_s": 2}
    p.config_path.write_text(yaml.safe_dump(doc))
    p.config = load_config(p.config_path)
    api = Api(port)
    p.start()
    thread, stop, errors = p.apply_in_thread(spark)
    writer = Writer(my, db, pause=0.005)
    try:
        writer.start()
        p.wait_sentinel(p.sentinel(), p.targets, timeout=240, errors=errors)  # the initial snapshot is applied
        with p.postgres.connect() as c:  # the target drifts
            c.execute(f"DELETE FROM {p.tag}.t WHERE id BETWEEN 200 AND 249")
            c.commit()

        status, done = api.call("POST", "/sources/src/resync", {"tables": [f"{db}.t"], "reason": "drifted"})
        assert status == 200 and done["operation"]["action"] == "resync", done
        wait_until(lambda: _logged(p, f"resync of {db}.t done"), 300, "the resync of t", interval=0.5,
                   alive=lambda: p.daemon._died() or (repr(errors[0]) if errors else None))

        my.query(f"INSERT INTO `{db}`.items VALUES (1, 'a'), (2, 'b')")
        conn = my.connect(db)
        try:
            with conn.cursor() as cur:
                cur.execute("SET SESSION binlog_format = STATEMENT")
                cur.execute("BEGIN")
                cur.execute("INSERT INTO items VALUES (100, 'statement')")
                cur.execute("UPDATE items SET v = 'by statement' WHERE id = 1")
                cur.execute("COMMIT")
                cur.execute("SET SESSION binlog_format = ROW")  # the setting is fixed
                cur.execute("INSERT INTO items VALUES (3, 'c')")
        finally:
            conn.close()
        failed = wait_until(lambda: (s := api.call("GET", "/sources/src")[1]).get("state") == "failed" and s, 90,
                            "the source failed on the statement-format write", interval=0.3)
        assert p.daemon.proc.poll() is None  # the daemon stays up: the API is the way back
        gtid = re.search(r"gtid (\d+-\d+-\d+|[0-9a-f-]{36}:\d+)", failed["why"]).group(1)
        assert any(f'/skip {{"gtid": "{gtid}"' in step for step in failed["way_back"]), failed
        alert = wait_until(lambda: next((b["text"] for b in hook.bodies if "source stopped" in b["text"]), None), 30,
                           "the webhook alert of the stop", interval=0.2)
        assert "source src failed" in alert and gtid in alert and "POST /api/v1/sources/src/restart" in alert

        status, skipped = api.call("POST", "/sources/src/skip", {"gtid": gtid, "resync": True, "reason": "report job"})
        assert status == 200 and skipped["operation"]["action"] == "skip", skipped
        status, restarted = api.call("POST", "/sources/src/restart")
        assert status == 200 and restarted["operation"]["action"] == "restart", restarted
        wait_until(lambda: _logged(p, f"resync of {db}.items done"), 300, "the resync of items after the skip",
                   interval=0.5, alive=lambda: p.daemon._died() or (repr(errors[0]) if errors else None))
        assert api.call("GET", "/sources/src")[1]["state"] == "streaming"

        # a schema change the apply stops at (items: behaviour exception); the target altered by hand, accepted
        my.query(f"ALTER TABLE `{db}`.items ADD COLUMN c INT")
        my.query(f"INSERT INTO `{db}`.items VALUES (5, 'e', 7)")
        wait_until(lambda: errors, 240, "the apply stopping at the schema change of items", interval=0.3)
        thread.join(60)
        stopped = errors.pop()
        assert isinstance(stopped, UnsupportedDdl) and stopped.table == f"{db}.items", repr(stopped)
        with p.postgres.connect() as c:
            c.execute(f"ALTER TABLE {p.tag}.items ADD COLUMN c integer")
            c.commit()
        status, decided = api.call("POST", "/apply/src/pg/schema", {"decision": "accept", "table": f"{db}.items",
                                                                    "sequence": stopped.sequence})
        assert status == 200 and decided["operation"]["action"] == "schema", decided
        thread, stop, errors = p.apply_in_thread(spark)  # `cdc apply` restarted: it honours the decision

        writer.stop.set()
        writer.join(10)
        p.wait_sentinel(p.sentinel(), p.targets, timeout=240, errors=errors)
        status, apply = api.call("GET", "/apply")
        (pg,) = apply["apply"]
        assert status == 200 and pg["target"] == "pg" and pg["error"] is None, apply
        assert pg["progress"]["last_sequence"] > 0 and pg["last_batch"]["batch_id"] >= 0
    finally:
        writer.stop.set()
        stop.set()
        thread.join(60)
        p.stop()
        hook.stop()
        my.query(f"DROP TABLE IF EXISTS {signal_table}")
    assert not errors, errors
    capsys.readouterr()
    rc = cdc_main(["compare", "--config", str(p.config_path), "--source", "src", "--target", "pg",
                   "--tables", f"{db}.t", f"{db}.items"])
    out = capsys.readouterr().out
    assert rc == 0 and out.count("EQUAL") >= 2, out
    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "src"))
    ops = [hb["resume"]["operation"] for hb in stream.heartbeats if (hb.get("resume") or {}).get("operation")]
    assert [(o["action"], o["actor"]) for o in ops] == [("resync", "alice"), ("skip", "alice"), ("restart", "alice"),
                                                        ("schema", "alice")]
    assert ops[3]["detail"]["decision"] == "accept" and ops[3]["detail"]["sequence"] == stopped.sequence
    assert ops[1]["detail"]["gtid"] == gtid and ops[0]["detail"]["tables"] == [f"{db}.t"]
