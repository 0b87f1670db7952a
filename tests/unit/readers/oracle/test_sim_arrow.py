"""The simulator's ``fetch_df_batches``: python-oracledb's data-frame fetch, the same rows as fetchmany."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from readers.oracle.session import CONTENTS_SQL
from readers.oracle.sim import simulator

OPTS = "seed=5,transactions=40,lanes=4,threads=2,rows_max=6,rollback_rate=0.2,partial_rollback_rate=0.3,csf_rate=0.1"


def _mining(sim, tmp_path):
    path = tmp_path / "dict.ora"
    path.write_text(json.dumps(sim.dictionary()))
    conn = sim.connect("miner")
    lo, hi = sim.workload.base_scn, sim.head
    cur = conn.cursor()
    for name, *_ in sim.standby() + [(r[0],) for r in sim.archived(lo, hi)]:
        cur.execute("BEGIN DBMS_LOGMNR.ADD_LOGFILE(LOGFILENAME => :name, OPTIONS => DBMS_LOGMNR.ADDFILE); END;",
                    {"name": name})
    cur.execute("BEGIN DBMS_LOGMNR.START_LOGMNR(STARTSCN => :startscn, ENDSCN => :endscn, DICTFILENAME => :dictfile, "
                "OPTIONS => 0); END;", {"startscn": lo, "endscn": hi, "dictfile": str(path)})
    return conn, lo, hi


def _rows(conn, lo, hi):
    cur = conn.cursor()
    cur.execute(CONTENTS_SQL, [lo, hi])
    return cur.fetchall()


@pytest.mark.parametrize("prerendered", [False, True])
def test_fetch_df_batches_hands_out_the_fetchmany_rows_as_arrow(tmp_path, prerendered):
    sim = simulator.Simulator(simulator.Workload.parse(OPTS))
    conn, lo, hi = _mining(sim, tmp_path)
    want = _rows(conn, lo, hi)
    assert want
    if prerendered:
        sim.prerender(str(tmp_path), CONTENTS_SQL, lo, hi - lo + 1, 7, arrow=True)
        assert sim._rendered_arrow
    names = [d[0] for d in conn.cursor().execute(CONTENTS_SQL, [lo, hi]).description]
    schema = simulator.contents_schema(names, pa.int64())
    frames = list(conn.fetch_df_batches(CONTENTS_SQL, [lo, hi], 13, requested_schema=schema))
    assert [f.num_rows() for f in frames[:-1]] == [13] * (len(frames) - 1) and 0 < frames[-1].num_rows() <= 13
    table = pa.concat_tables([pa.table(f) for f in frames])  # the PyCapsule stream interface, as with oracledb
    assert table.schema == schema and table.schema.field("SCN").type == pa.int64()
    got = list(zip(*(c.to_pylist() for c in table.columns)))
    assert got == want


def test_number_columns_are_float64_unless_requested(tmp_path):
    sim = simulator.Simulator(simulator.Workload.parse(OPTS))
    conn, lo, hi = _mining(sim, tmp_path)
    frame = next(conn.fetch_df_batches(CONTENTS_SQL, [lo, hi], 5))
    batch = pa.table(frame)
    assert batch.schema.field("XIDUSN").type == pa.float64()
    assert batch.schema.field("TIMESTAMP").type == pa.timestamp("ms")
    assert batch.schema.field("SQL_REDO").type == pa.string()
    assert frame.column_names()[0] == "SCN" and frame.num_columns() == 18
