"""An Oracle source (LogMiner simulator) with transforms, through the real reader and publisher into the real
broker (per-table Debezium topics on): a hashed, an excluded and a computed column and a row filter.

The stream must equal the simulator's model shaped by hand (filter on both images: an update leaving the
filter is a delete, one entering it an insert; NOTE absent; NAME the HMAC of its clear text; AMOUNT2 computed;
a TRUNCATE kept), whatever the pipeline (rows; columnar, where the native pass declines the shaped tables), and
no record of any topic (key, value, headers) may hold a clear NAME or NOTE. A DDL on the excluded column (the
workload's ``ddl_at``: MODIFY NOTE) leaves the shaped schema as it was. SCHEMA records and the Debezium
schemas mark the hashed column masked."""

from __future__ import annotations

import pytest

from cdc.config.models import DebeziumConfig, KafkaConfig, TopicsConfig
from cdc.metrics import SourceMetrics
from cdc.publish.publisher import Publisher
from cdc.transforms.masks import hash_mask, read_hash_key
from readers.oracle.columnar import redo_json
from readers.oracle.sim.demo import make_source, pump
from readers.oracle.sim.workload import table_name
from tests.integration.stream_check import read_stream, topic_records
from tests.unit.readers.oracle.helpers import expected

pytestmark = [pytest.mark.oracle, pytest.mark.kafka]

OPTS = ("seed=21,transactions=70,lanes=4,threads=2,log_scns=40,rows_max=6,rollback_rate=0.1,"
        "partial_rollback_rate=0.2,csf_rate=0.15,tables=3,ddl_at=20,truncate_at=41")
LIMIT = 5000  # the filter: AMOUNT < 5000 (updates draw AMOUNT from 0..9999) and NAME not x''y ... (a third of
# the inserts: the filter reads the clear value of the hashed column)


def _rule(key_file: str) -> dict:
    return {"hash_key_file": key_file, "tables": [{
        "match": "app.t*",  # read in upper case, as `tables` is
        "exclude": ["NOTE"], "columns": {"NAME": {"mask": "hash"}}, "filter": f"AMOUNT < {LIMIT} AND NAME NOT LIKE 'x%'",
        "computed": {"AMOUNT2": {"expr": "AMOUNT * 2", "type": "number(12,0)"}}}]}


def _shaped_model(hashed) -> list[tuple]:
    """The model's committed transactions as the transforms must shape them (written out by hand, not through
    the mapper): (commit SCN, XID, [(op, table, before, after)]) of those with rows left."""
    def keep(row):
        return row is not None and int(row["AMOUNT"]) < LIMIT and not row["NAME"].startswith("x")

    def shape(row):
        if row is None:
            return None
        out = {c: v for c, v in row.items() if c != "NOTE"}
        out["NAME"] = None if row["NAME"] is None else hashed(row["NAME"])
        out["AMOUNT2"] = None if row["AMOUNT"] is None else str(int(row["AMOUNT"]) * 2)
        return out

    txs = []
    for scn, xid, rows in expected(OPTS):
        out = []
        for op, db, table, before, after in rows:
            if op == "t":
                out.append((op, db, table, None, None))
                continue
            was, now = keep(before), keep(after)
            if op == "u" and was != now:
                op, before, after = ("d", before, None) if was else ("c", None, after)
            elif not (was or now):
                continue
            out.append((op, db, table, shape(before), shape(after)))
        if out:
            txs.append((scn, xid, out))
    return txs


def _clear_values() -> set[bytes]:
    """Every clear NAME and NOTE value the workload writes."""
    out = set()
    for _, _, rows in expected(OPTS):
        for _, _, _, before, after in rows:
            for row in (before, after):
                for col in ("NAME", "NOTE"):
                    if row and row.get(col):
                        out.add(row[col].encode())
    return out


@pytest.mark.parametrize(("pipeline", "workers"), [("rows", 1), ("columnar", 0)])  # rows: through the parse pool
def test_an_oracle_source_leaves_shaped_and_leaks_nothing(broker, topic_prefix, tmp_path, pipeline, workers):
    (tmp_path / "hash.key").write_bytes(b"an-oracle-hash-key-of-32-bytes!!")
    hashed = hash_mask(read_hash_key(str(tmp_path / "hash.key")))
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix, per_table_topics=True,
                        debezium=DebeziumConfig(schemas=True),
                        topics=TopicsConfig(per_table={"cleanup.policy": "delete"}))  # TRUNCATE: op 't', no key
    pub = Publisher("ora", "oracle", kafka, SourceMetrics("ora"))
    src = make_source("ora", OPTS, str(tmp_path), SourceMetrics("ora"), pipeline=pipeline, parse_workers=workers,
                      transforms=_rule(str(tmp_path / "hash.key")))
    if pipeline == "columnar":
        assert redo_json.NATIVE, "the native pass is not built here: the columnar leg would not test it"
    assert src.config.transforms.tables[0].match == "APP.T*"
    stats = pump(src, pub, pub.recover())
    pub.close()
    assert stats["transactions"] > 0
    if pipeline == "columnar":  # the native pass saw the shaped tables and declined every one
        assert src.columnar._specs and all(spec is None for _, spec in src.columnar._specs.values())

    stream = read_stream(broker.bootstrap, pub.topic)
    got = [(end["position"]["commit_scn"], txid,
            [(r["op"], r["source"]["db"], r["source"]["table"], r["before"], r["after"]) for r in rows])
           for txid, rows, end in stream.transactions if rows]
    want = _shaped_model(hashed)
    assert got == want
    unfiltered = [t for t in expected(OPTS)]
    assert len(want) < len(unfiltered)  # the filter emptied some transactions...
    assert len(stream.transactions) >= len(unfiltered)  # ...whose BEGIN/END still went out (the position moves)
    assert any(op == "d" for _, _, rows in want for op, *_ in rows)

    # the DDL on the excluded column: a SCHEMA record whose shaped schema is the table's shaped schema as before
    (ddl,) = [s for s in stream.schemas if s["ddl"] and "modify" in s["ddl"]]
    cols = {c["name"]: c for c in ddl["schema"]["columns"]}
    assert "NOTE" not in cols and cols["NAME"]["masked"] == "hash" and cols["NAME"]["type"] == "varchar2(64)"
    assert "AMOUNT2" in cols and "masked" not in cols["ID"]
    assert ddl["schema"]["table"] == f"APP.{table_name(20 % 3)}"

    # no clear value anywhere: change stream, per-table topics (their Debezium schemas mark NAME masked)
    clear = _clear_values()
    assert len(clear) > 50
    topics = topic_records(broker.bootstrap, topic_prefix)
    assert any(name.endswith(".T0") for name in topics), sorted(topics)
    marked = 0
    for name, records in topics.items():
        for rec in records:
            leaked = [v for v in clear if v in rec]
            assert not leaked, f"topic {name}: a record holds {leaked[:3]}: {rec[:300]!r}"
            assert b'"NOTE"' not in rec, f"topic {name}: the excluded column is in {rec[:300]!r}"
            marked += b'"parameters":{"__cdc.masked":"hash"},"field":"NAME"' in rec
    assert marked > 0, "no Debezium schema marks NAME masked"


def test_an_oracle_snapshot_leaves_shaped(broker, topic_prefix, tmp_path):
    """The initial snapshot (AS OF one SCN, op ``r``) goes through the same hook: its rows are filtered and
    shaped, and no topic holds a clear NAME (the pre-existing rows' ``name N``) or a NOTE."""
    import re

    opts = OPTS + ",head_step=40"
    (tmp_path / "hash.key").write_bytes(b"an-oracle-hash-key-of-32-bytes!!")
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix, per_table_topics=True,
                        topics=TopicsConfig(per_table={"cleanup.policy": "delete"}))
    pub = Publisher("ora", "oracle", kafka, SourceMetrics("ora"))
    src = make_source("ora", opts, str(tmp_path), SourceMetrics("ora"), snapshot="initial", snapshot_chunk_rows=7,
                      transforms=_rule(str(tmp_path / "hash.key")))
    pump(src, pub, pub.recover())
    pub.close()
    stream = read_stream(broker.bootstrap, pub.topic)
    snap = [r["after"] for _, rows, _ in stream.transactions for r in rows if r["op"] == "r"]
    assert len(snap) > 10
    for row in snap:
        assert set(row) == {"ID", "NAME", "AMOUNT", "CREATED", "AMOUNT2"}, row
        assert int(row["AMOUNT"]) < LIMIT and row["AMOUNT2"] == str(2 * int(row["AMOUNT"]))
        assert re.fullmatch(r"[0-9a-f]{64}", row["NAME"]), row
    clear = _clear_values()
    for name, records in topic_records(broker.bootstrap, topic_prefix).items():
        for rec in records:
            assert not re.search(rb"name \d", rec) and b'"NOTE"' not in rec, f"{name}: {rec[:300]!r}"
            assert not [v for v in clear if v in rec], f"{name}: {rec[:300]!r}"
