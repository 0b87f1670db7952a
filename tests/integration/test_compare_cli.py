"""`cdc compare` from the command line: exit status, JSON report, --repair into the real broker.

Each test runs on both MySQL flavours (``mysql_source``: MariaDB and MySQL 9.7, where the source is read
as the capture user docs/setup.md makes)."""

from __future__ import annotations

import json

import duckdb
import pytest
import yaml

from cdc.cli import main as cdc_main
from tests.fixtures.services import capture_login
from tests.integration.stream_check import read_stream

pytestmark = [pytest.mark.mysql, pytest.mark.kafka]


@pytest.fixture
def setup(mysql_source, tmp_source_db, broker, topic_prefix, tmp_path):
    conn = mysql_source.connect(tmp_source_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2))")
        cur.executemany("INSERT INTO items VALUES (%s, %s, %s)", [(i, f"n{i}", i) for i in range(1, 51)])
    conn.close()
    path = str(tmp_path / "target.duckdb")
    con = duckdb.connect(path)
    con.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name VARCHAR, price DECIMAL(8,2))")
    con.executemany("INSERT INTO items VALUES (?, ?, ?)", [(i, f"n{i}", i) for i in range(1, 51)])
    con.execute("DELETE FROM items WHERE id = 3")
    con.execute("UPDATE items SET name = NULL WHERE id = 4")
    con.execute("INSERT INTO items VALUES (99, 'x', 1)")
    con.close()
    user, password = capture_login(mysql_source)
    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(yaml.safe_dump({
        "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": topic_prefix},
        "sources": [{"name": "src", "kind": "mysql", "hosts": [mysql_source.address], "user": user,
                     "password": password, "tables": [f"{tmp_source_db}.items"]}],
        "targets": [{"name": "duck", "kind": "duckdb", "path": path}],
    }))
    return str(cfg), tmp_source_db, path


def test_compare_reports_and_exits_non_zero(setup, capsys):
    cfg, _, _ = setup
    assert cdc_main(["compare", "--config", cfg, "--source", "src", "--target", "duck", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    (table,) = report["tables"]
    assert report["equal"] is False and table["target_table"] == "items"
    assert (table["missing"], table["extra"], table["different"]) == (1, 1, 1)
    assert table["missing_keys"] == [{"id": 3}] and table["extra_keys"] == [{"id": 99}]
    assert table["different_keys"] == [{"id": 4}]


def test_repair_publishes_one_corrective_transaction(setup, broker, topic_prefix, capsys):
    cfg, _, _ = setup
    assert cdc_main(["compare", "--config", cfg, "--source", "src", "--target", "duck", "--repair"]) == 1
    out = capsys.readouterr().out
    assert "1 missing, 1 extra, 1 different" in out
    stream = read_stream(broker.bootstrap, f"{topic_prefix}.src.changes")
    (_, rows, end), = stream.transactions
    got = sorted((r["op"], (r["after"] or r["before"])["id"]) for r in rows)
    assert got == [("d", 99), ("r", 3), ("r", 4)]
    assert next(r for r in rows if r["op"] == "r" and r["after"]["id"] == 4)["after"]["name"] == "n4"
    assert end["event_count"] == 3


def test_unknown_target_is_a_clear_error(setup, capsys):
    cfg, _, _ = setup
    assert cdc_main(["compare", "--config", cfg, "--source", "src", "--target", "nope"]) == 2
    assert "no source or target named 'nope'" in capsys.readouterr().err
