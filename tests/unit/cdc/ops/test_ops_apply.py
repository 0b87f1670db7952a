"""The apply side of the operations API on a DuckDB target file and a stand-in daemon: GET /api/v1/apply reads
the progress row, the last batch, the records behind and the dead letters; POST .../schema records the decision
through `cdc schema`'s own code (same refusal for a passed sequence), is idempotent, and is an operations
record of the source."""

from __future__ import annotations

import yaml

from cdc.config.loader import load_config
from cdc.config.models import TargetConfig
from cdc.ops.config import ApiConfig
from cdc.ops.server import OpsServer
from streaming.apply.schema_cmd import list_decisions
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.targets.progress_row import Progress
from tests.unit.cdc.ops.test_ops_server import _Daemon, _Spec, _Worker, call


def _setup(tmp_path):
    db = str(tmp_path / "t.duckdb")
    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(yaml.safe_dump({"kafka": {"bootstrap_servers": "127.0.0.1:1"},
                                   "targets": [{"name": "duck", "kind": "duckdb", "path": db,
                                                "dead_letter_table": "dlq"},
                                               {"name": "gone", "kind": "duckdb", "path": str(tmp_path / "no/x.db")}],
                                   "apply": [{"source": "s1", "target": "duck"}, {"source": "s1", "target": "gone"}]}))
    t = DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=db, dead_letter_table="dlq")).open()
    t.write_progress(Progress("s1", 5, 3, {"gtid_set": "0-1-5"}, 1_700_000_000_000))
    t.dead_letter("s1", 4, "shop.t", {"id": 1}, None, "bad")
    t.dead_letter("other", 4, "shop.t", {"id": 1}, None, "bad")
    t.commit()
    t.close()
    daemon = _Daemon()
    daemon.workers = [_Worker(_Spec("s1"), acknowledged=9)]
    server = OpsServer(daemon, ApiConfig(enabled=True, port=0), config_path=str(cfg)).start()
    return server, daemon, cfg


def test_apply_items_answer_progress_last_batch_behind_and_dead_letters(tmp_path):
    server, _, _ = _setup(tmp_path)
    try:
        status, body = call(server, "GET", "/api/v1/apply")
    finally:
        server.stop()
    assert status == 200, body
    duck, gone = body["apply"]
    assert duck["progress"] == {"last_sequence": 5, "position": {"gtid_set": "0-1-5"}, "epoch": 0}
    assert duck["last_batch"]["batch_id"] == 3 and duck["last_batch"]["last_commit_ms"] == 1_700_000_000_000
    assert duck["records_behind"] == 4 and duck["lag_seconds"] > 0
    assert duck["dead_letters"] == 1 and duck["error"] is None
    assert gone["progress"] is None and gone["error"], gone  # one unreadable target answers its own error


def test_schema_decision_is_the_cli_code_idempotent_and_recorded(tmp_path):
    server, daemon, cfg = _setup(tmp_path)
    body = b'{"decision": "accept", "table": "shop.t", "sequence": 8, "reason": "altered by hand"}'
    try:
        status, first = call(server, "POST", "/api/v1/apply/s1/duck/schema", None, body)
        again = call(server, "POST", "/api/v1/apply/s1/duck/schema", None, body)[1]
        passed = call(server, "POST", "/api/v1/apply/s1/duck/schema", None,
                      b'{"decision": "skip", "table": "shop.t", "sequence": 5}')
        bad = call(server, "POST", "/api/v1/apply/s1/duck/schema", None,
                   b'{"decision": "drop", "table": "shop.t", "sequence": 9}')
        unknown = call(server, "POST", "/api/v1/apply/s1/pg/schema", None,
                       b'{"decision": "skip", "table": "shop.t", "sequence": 9}')
        nosource = call(server, "POST", "/api/v1/apply/s2/duck/schema", None,
                        b'{"decision": "skip", "table": "shop.t", "sequence": 9}')
    finally:
        server.stop()
    assert status == 200 and first["output"][0].startswith("recorded: accept the schema change of shop.t at "
                                                           "sequence 8"), first
    assert first["operation"]["action"] == "schema" and first["operation"]["detail"]["target"] == "duck"
    assert again["did"].startswith("nothing: accept is already recorded") and again["operation"] is None
    assert passed[0] == 409 and "already at sequence 5, past 5" in passed[1]["error"]
    assert bad[0] == 400 and "accept, skip, evolve" in bad[1]["error"]
    assert unknown[0] == 409 and "no apply item with source 's1' and target 'pg'" in unknown[1]["error"]
    assert nosource[0] == 404
    assert [op["action"] for _, ops in daemon.written for op in ops] == ["schema"]  # once: the repeat wrote none
    recorded = list_decisions(load_config(str(cfg)), str(cfg), "s1", "duck")
    assert [(s, t, d) for s, t, d, _ in recorded] == [(8, "shop.t", "accept")]
