"""`cdc views check|rebuild|status` against a DuckDB file target."""

from __future__ import annotations

import json

import duckdb
import yaml

from cdc.cli import main


def _config(tmp_path, views):
    db = tmp_path / "t.duckdb"
    with duckdb.connect(str(db)) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, cust INTEGER, amount INTEGER)")
        conn.execute("INSERT INTO orders VALUES (1, 1, 10), (2, 1, 5), (3, 2, 7)")
    cfg = {"kafka": {"bootstrap_servers": "127.0.0.1:9"},
           "targets": [{"name": "wh", "kind": "duckdb", "path": str(db)}],
           "apply": [{"source": "shop", "target": "wh", "views": views}]}
    path = tmp_path / "cdc.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path), str(db)


VIEW = {"name": "per_cust", "sql": "SELECT cust, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY cust"}


def test_rebuild_then_status(tmp_path, capsys):
    path, db = _config(tmp_path, [VIEW])
    assert main(["views", "status", "--config", path]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "not built yet"
    assert main(["views", "rebuild", "--config", path, "--view", "per_cust"]) == 0
    with duckdb.connect(db) as conn:
        assert sorted(conn.execute("SELECT cust, n, total, __count FROM per_cust").fetchall()) == [
            (1, 2, 15, 2), (2, 1, 7, 1)]
    capsys.readouterr()
    assert main(["views", "status", "--config", path]) == 0
    assert json.loads(capsys.readouterr().out)["mode"] == "rebuild"


def test_check_reports_unsupported_construct(tmp_path, capsys):
    path, _ = _config(tmp_path, [{"name": "bad", "sql": "SELECT cust FROM orders WHERE a = 1 OR b = 2"}])
    assert main(["views", "check", "--config", path]) == 2
    err = capsys.readouterr().err
    assert "view 'bad'" in err and "OR in conditions" in err


def test_unknown_view_is_an_error(tmp_path, capsys):
    path, _ = _config(tmp_path, [VIEW])
    assert main(["views", "rebuild", "--config", path, "--view", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_rebuild_piped_reports_progress_lines_without_bar_fragments(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    path, _ = _config(tmp_path, [VIEW, dict(VIEW, name="per_cust2")])
    env = {k: v for k, v in os.environ.items() if k != "CDC_PROGRESS"}
    cdc = str(Path(sys.executable).with_name("cdc"))
    done = subprocess.run([cdc, "views", "rebuild", "--config", path], capture_output=True, text=True, timeout=120,
                          env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert "rebuild views in target wh: 2/2 (100.0%)" in done.stderr, done.stderr
    assert "\r" not in done.stderr and "\x1b" not in done.stderr
