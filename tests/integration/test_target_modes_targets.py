"""Target-side modes (apply[].tables[].mode / metadata_columns) on real PostgreSQL and MariaDB targets: the
engine creates the mode's columns with the target's types and writes soft deletes, history rows and metadata;
`cdc compare` (against the source state in DuckDB) says EQUAL on the soft-delete table with the modes and
finds the soft-deleted row without them."""

from __future__ import annotations

import duckdb
import pytest

from cdc.compare.endpoints import Endpoint, from_dsn
from cdc.compare.table_diff import TableCompare
from cdc.config.models import ApplyConfig
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.apply.target_modes import TargetModes
from streaming.targets import target_class
from streaming.testing import StreamBuilder
from tests.fixtures.targets import fresh_target_config

pytestmark = [pytest.mark.postgres, pytest.mark.mysql]
COLS = [("id", "int"), ("name", "varchar(20)")]


@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_soft_delete_history_and_metadata_on_a_real_target(kind, request, tmp_path):
    tc = fresh_target_config(request, tmp_path, kind)
    cfg = ApplyConfig(source="src", target=tc.name, tables=[
        {"source": "*.a", "mode": "soft_delete", "metadata_columns": True}, {"source": "*.h", "mode": "history"}])
    e = ApplyEngine("src", target_class(kind)(tc), TableMap.from_config(cfg)).start()
    b = StreamBuilder().schema("main.a", COLS, ["id"]).schema("main.h", COLS, ["id"])
    for t in ("main.a", "main.h"):
        b.tx(("c", t, None, {"id": 1, "name": "x"}), ("c", t, None, {"id": 2, "name": "y"}))
        b.tx(("u", t, {"id": 1, "name": "x"}, {"id": 1, "name": "x2"}), ("d", t, {"id": 2, "name": "y"}, None))
    recs = b.as_records()
    e.apply_records(recs, 0)
    assert e.apply_records(recs, 0).skipped
    q = e.target.qualified
    rows = e.target.execute(f"SELECT id, name, _cdc_op, _cdc_sequence FROM {q('h')} ORDER BY _cdc_sequence").fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [(1, "x", "c"), (2, "y", "c"), (1, "x2", "u"), (2, "y", "d")]
    rows = e.target.execute(f"SELECT id, _cdc_deleted, _cdc_op, _cdc_txid FROM {q('a')} ORDER BY id").fetchall()
    assert [(r[0], bool(r[1]), r[2]) for r in rows] == [(1, False, "u"), (2, True, "d")] and all(r[3] for r in rows)
    t_name = q("a").replace('"', "").replace("`", "")  # schema.a as the target names it
    e.close()

    src_path = tmp_path / "src.duckdb"
    con = duckdb.connect(str(src_path))
    con.execute("CREATE TABLE a (id INTEGER PRIMARY KEY, name VARCHAR(20)); INSERT INTO a VALUES (1, 'x2')")
    con.close()
    src = Endpoint("src", "duckdb", {"path": str(src_path)}, "main")
    if kind == "postgres":
        tgt = Endpoint("tgt", "postgres", {"dsn": request.getfixturevalue("postgres").dsn}, None)
    else:
        db = request.getfixturevalue("mariadb_primary")
        tgt = from_dsn("tgt", f"mysql://root@127.0.0.1:{db.port}/{t_name.split('.')[0]}")
    modes = TargetModes.of_map(TableMap.from_config(cfg))
    report = TableCompare(src, "main.a", tgt, t_name, modes=modes).run()
    assert report.equal and report.same == 1 and not report.type_mismatches, report.render()
    assert not TableCompare(src, "main.a", tgt, t_name).run().equal  # the control: the soft-deleted row
