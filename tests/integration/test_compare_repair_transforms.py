"""`cdc compare --repair` of a shaped table on real services (MariaDB / MySQL 9.7 source, broker, DuckDB target
with ``mode: soft_delete``): the corrective records are what the daemon would publish (email hashed, notes
left out, only the filter's rows, the computed column computed), no clear value reaches the broker, and once
the apply engine has applied them the compare says EQUAL. A row deleted at the source, or moved out of the
filter, becomes a soft delete on the target (the row stays, marked)."""

from __future__ import annotations

import duckdb
import pytest
import yaml

from cdc.cli import main as cdc_main
from cdc.config.models import ApplyConfig
from cdc.publish.recovery import make_consumer, read_range, watermarks
from cdc.schema.table_map import TableMap
from cdc.stream.serde import get_serdes
from cdc.transforms.masks import hash_mask, read_hash_key
from streaming.apply.engine import ApplyEngine
from streaming.stream.records import StreamRecord, to_row
from streaming.targets import target_class
from streaming.targets.duckdb.config import DuckDbTargetConfig
from tests.fixtures.services import capture_login

pytestmark = [pytest.mark.mysql, pytest.mark.kafka]
N = 40


def _raw(bootstrap: str, topic: str, after: int) -> list[tuple[int, bytes | None, bytes]]:
    """(offset, key, value) of the records of ``topic`` above offset ``after``."""
    consumer = make_consumer(bootstrap)
    try:
        low, high = watermarks(consumer, topic)
        return [(m.offset(), m.key(), m.value()) for m in read_range(consumer, topic, low, None, reported_high=high)
                if m.offset() > after]
    finally:
        consumer.close()


@pytest.fixture
def shaped(mysql_source, tmp_source_db, broker, topic_prefix, tmp_path):
    db = tmp_source_db
    conn = mysql_source.connect(db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE people (id INT PRIMARY KEY, email VARCHAR(80), notes TEXT, region VARCHAR(4), "
                    "amount DECIMAL(8,2))")
        cur.executemany("INSERT INTO people VALUES (%s,%s,%s,%s,%s)",
                        [(i, f"CLEAR-MAIL-{i}@x", f"CLEAR-NOTE-{i}", ("eu", "us")[i % 3 == 0], f"{i}.25")
                         for i in range(1, N + 1)])
    conn.close()
    path = str(tmp_path / "target.duckdb")
    con = duckdb.connect(path)  # the shaped table as the apply made it, empty
    con.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, email VARCHAR, region VARCHAR, amount DECIMAL(8,2), "
                "label VARCHAR, _cdc_deleted BOOLEAN, _cdc_deleted_at TIMESTAMPTZ)")
    con.close()
    (tmp_path / "hash.key").write_bytes(b"a-repair-test-hash-key-32-bytes!")
    user, password = capture_login(mysql_source)
    apply = {"source": "src", "target": "duck", "tables": [{"source": f"{db}.people", "target": "people",
                                                            "mode": "soft_delete"}]}
    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(yaml.safe_dump({
        "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": topic_prefix},
        "sources": [{"name": "src", "kind": "mysql", "hosts": [mysql_source.address], "user": user,
                     "password": password, "tables": [f"{db}.people"], "transforms": {
                         "hash_key_file": str(tmp_path / "hash.key"),
                         "tables": [{"match": f"{db}.people", "exclude": ["notes"],
                                     "columns": {"email": {"mask": "hash"}}, "filter": "region = 'eu'",
                                     "computed": {"label": {"expr": "CONCAT(UPPER(region), '#', id)",
                                                            "type": "varchar(20)"}}}]}}],
        "targets": [{"name": "duck", "kind": "duckdb", "path": path}],
        "apply": [apply],
    }))
    return str(cfg), db, path, ApplyConfig.model_validate(apply), tmp_path


def test_repair_writes_shaped_rows_into_a_soft_delete_target(shaped, mysql_source, broker, topic_prefix, capsys):
    cfg, db, path, apply_cfg, tmp_path = shaped
    topic = f"{topic_prefix}.src.changes"
    hashed = hash_mask(read_hash_key(str(tmp_path / "hash.key")))
    compare = ["compare", "--config", cfg, "--source", "src", "--target", "duck"]
    applied, batch = -1, 0

    def repair_and_apply() -> list[dict]:
        nonlocal applied, batch
        assert cdc_main([*compare, "--repair"]) == 1
        raw = _raw(broker.bootstrap, topic, applied)
        assert raw, "the repair published nothing"
        for _, k, v in raw:  # no clear value of the masked or left-out column reaches the broker
            assert b"CLEAR-" not in v and b"notes" not in v, v[:300]
        ks, vs = get_serdes("json")
        records = [StreamRecord(*to_row(0, off, k, v, ks, vs)) for off, k, v in raw]
        engine = ApplyEngine("src", target_class("duckdb")(_target(path)), TableMap.from_config(apply_cfg)).start()
        try:
            batch += 1
            engine.apply_records(records, batch)
        finally:
            engine.close()
        applied = raw[-1][0]
        return [vs.decode(v) for _, _, v in raw if vs.decode(v).get("op")]

    # 1. an empty target: every row the filter keeps is missing; the repair publishes them shaped
    rows = repair_and_apply()
    eu = [i for i in range(1, N + 1) if i % 3 != 0]
    assert sorted(r["after"]["id"] for r in rows) == eu and {r["op"] for r in rows} == {"r"}
    for r in rows:
        i = r["after"]["id"]
        assert r["after"] == {"id": i, "email": hashed(f"CLEAR-MAIL-{i}@x"), "region": "eu", "amount": f"{i}.25",
                              "label": f"EU#{i}"}
    capsys.readouterr()
    assert cdc_main(compare) == 0, capsys.readouterr().out

    # 2. changes the target missed: a delete, a row leaving the filter, a new email, a row entering it
    q = mysql_source.query
    q(f"DELETE FROM `{db}`.people WHERE id = 1")
    q(f"UPDATE `{db}`.people SET region = 'us' WHERE id = 2")
    q(f"UPDATE `{db}`.people SET email = 'CLEAR-NEW@x' WHERE id = 4")
    q(f"UPDATE `{db}`.people SET region = 'eu' WHERE id = 3")
    rows = repair_and_apply()
    got = sorted((r["op"], (r["after"] or r["before"])["id"]) for r in rows)
    assert got == [("d", 1), ("d", 2), ("r", 3), ("r", 4)], got
    assert next(r for r in rows if r["op"] == "r" and r["after"]["id"] == 4)["after"]["email"] == hashed("CLEAR-NEW@x")
    capsys.readouterr()
    assert cdc_main(compare) == 0, capsys.readouterr().out
    con = duckdb.connect(path, read_only=True)
    try:
        marked = con.execute("SELECT id, _cdc_deleted, _cdc_deleted_at IS NOT NULL FROM people "
                             "WHERE id IN (1, 2, 3) ORDER BY id").fetchall()
        label = con.execute("SELECT label FROM people WHERE id = 3").fetchone()[0]
    finally:
        con.close()
    assert marked == [(1, True, True), (2, True, True), (3, False, False)]  # soft deletes: the rows stay
    assert label == "EU#3"


def _target(path: str) -> DuckDbTargetConfig:
    return DuckDbTargetConfig(name="duck", kind="duckdb", path=path)
