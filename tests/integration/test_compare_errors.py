"""`cdc compare` never crashes on a type and keeps its exit codes (issue #14).

Faults injected: a GEOMETRY column (MariaDB refuses CAST(geometry AS CHAR): compare used to crash
with exit status 1 and no report), a target column the database cannot render (a DuckDB view column
whose every value raises an error), and a table missing in the target among tables that are equal.
The user now sees every table's report, the GEOMETRY table EQUAL, the unrenderable column named as
unsupported while the rest of its table is compared, the missing table as ERROR, and exit status 2
(0 equal, 1 differences, 2 error).
"""

from __future__ import annotations

import json

import duckdb
import pytest
import yaml

from cdc.cli import main as cdc_main
from tests.fixtures.services import capture_login

pytestmark = [pytest.mark.mysql]


def test_geometry_unrenderable_column_and_missing_table(mysql_source, tmp_source_db, tmp_path, capsys):
    db = tmp_source_db
    conn = mysql_source.connect(db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE geo (id INT PRIMARY KEY, g GEOMETRY, p POINT, name VARCHAR(10))")
        cur.execute("INSERT INTO geo VALUES (1, ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))'), "
                    "ST_GeomFromText('POINT(1 2)', 4326), 'a'), (2, NULL, NULL, 'b')")
        cur.execute("CREATE TABLE odd (id INT PRIMARY KEY, v INT, name VARCHAR(10))")
        cur.execute("INSERT INTO odd VALUES (1, 1, 'x'), (2, 2, 'y')")
        cur.execute("CREATE TABLE gone (id INT PRIMARY KEY)")
        cur.execute("SELECT id, g, p, name FROM geo ORDER BY id")
        geo_rows = cur.fetchall()
    conn.close()
    path = str(tmp_path / "target.duckdb")
    con = duckdb.connect(path)
    con.execute("CREATE TABLE geo (id INTEGER PRIMARY KEY, g BLOB, p BLOB, name VARCHAR)")
    con.executemany("INSERT INTO geo VALUES (?, ?, ?, ?)", geo_rows)
    con.execute("CREATE TABLE odd_t (id INTEGER PRIMARY KEY, name VARCHAR)")
    con.execute("INSERT INTO odd_t VALUES (1, 'x'), (2, 'changed')")
    con.execute("CREATE VIEW odd AS SELECT id, CAST(error('no text for v=' || id) AS INTEGER) AS v, name FROM odd_t")
    con.close()
    cfg = tmp_path / "cdc.yaml"
    user, password = capture_login(mysql_source)  # MySQL 9.7: the documented user
    cfg.write_text(yaml.safe_dump({
        "kafka": {"bootstrap_servers": "127.0.0.1:9", "topic_prefix": "unused"},
        "sources": [{"name": "src", "kind": "mysql", "hosts": [mysql_source.address], "user": user,
                     "password": password, "tables": [f"{db}.geo", f"{db}.odd", f"{db}.gone"]}],
        "targets": [{"name": "duck", "kind": "duckdb", "path": path}],
    }))
    assert cdc_main(["compare", "--config", str(cfg), "--source", "src", "--target", "duck", "--json"]) == 2
    tables = {t["source_table"]: t for t in json.loads(capsys.readouterr().out)["tables"]}
    assert tables[f"{db}.geo"]["equal"] is True and tables[f"{db}.geo"]["same"] == 2
    odd = tables[f"{db}.odd"]
    assert odd["different_keys"] == [{"id": 2}] and odd["same"] == 1, odd
    (unsupported,) = odd["unsupported_columns"]
    assert unsupported.startswith("column v: integer on duck (duckdb) cannot be rendered") and "no text for v" \
        in unsupported, unsupported
    gone = tables[f"{db}.gone"]
    assert gone["equal"] is False and "gone" in gone["error"] and "does not exist" in gone["error"], gone
    # the text report: every table, then the summary
    assert cdc_main(["compare", "--config", str(cfg), "--source", "src", "--target", "duck"]) == 2
    out = capsys.readouterr().out
    assert f"{db}.geo -> geo: EQUAL" in out and f"{db}.gone -> gone: ERROR" in out
    assert "unsupported: column v" in out and "1 of 3 tables equal, 1 could not be compared" in out
