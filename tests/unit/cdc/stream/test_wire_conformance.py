"""One conformance matrix for the record bytes of the JSON changes topic: every producer of records is held
byte for byte to the owner, cdc.stream.wire (whose templates are themselves held to orjson of
cdc.stream.envelope's dicts), over the same hostile inputs (unicode, quotes, backslashes, control
characters, huge integers, NULLs, empty strings).

Producers: the envelope's dicts through the JSON serde (the reference); the publisher's JSON hot path
through the C splice and through the Python splice, its dict path, its ChangeBatch splice (C and Python);
the MySQL reader's serialized rows (readers.mysql.reader._serialized); the Oracle columnar pipeline's
native bytes and their Python definition (readers.oracle.columnar.redo_json). The C files that still hold
literals of their own (_redo_native.c: the Oracle source fields and orjson's string escapes) are held here
to the owner's bytes; _splice_native.c holds none (it takes cdc.stream.wire.VALUE_FRAGMENTS at import).

Last, the whole stream of tests/unit/cdc/stream/wire_stream.py is byte-identical to the one recorded on the
commit before the owner module existed (golden/wire_stream.jsonl).
"""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from cdc.publish import publisher as publisher_module
from cdc.stream import envelope, wire
from cdc.stream.events import Begin, Change, ChangeBatch, Column, Commit, TableId, TableSchema
from cdc.stream.serde import get_serdes
from readers.mysql.binlog.decode import ConvertedRow
from readers.mysql.reader import _serialized
from readers.oracle.columnar import redo_json
from tests.unit.cdc.publish.fakes import decoded, publisher
from tests.unit.cdc.stream import wire_stream

A, B = TableId("shop", "orders"), TableId("shop", "items")
SA = TableSchema(A, (Column("id", "int", False), Column("v", "varchar(9)")), ("id",))
SB = TableSchema(B, (Column("oid", "int", False), Column("n", "int", False), Column("q", "int")), ("oid", "n"))
SK = TableSchema(A, SA.columns, ())
NOW = 1_700_000_000.5
HOSTILE = wire_stream.HOSTILE
GOLDEN = Path(__file__).parent / "golden" / "wire_stream.jsonl"


def _owner_record(change: Change, seq: int, txid: str, commit_ts: int, total: int, n: int,
                  source_name: str = "s", connector: str = "mysql") -> tuple[bytes, bytes]:
    """(key, value) of a data record from cdc.stream.wire's pieces alone."""
    schema = change.schema
    pk = schema.primary_key if schema is not None else ()
    row = change.after if change.after is not None else change.before
    name = str(change.table)
    kbytes = wire.key_head(name, pk) + wire.key_json(row, pk) + wire.key_close(pk)
    head, tail, tail_r = wire.source_parts(wire.source_base(change.table.db, change.table.table, source_name,
                                                            connector))
    dumps = orjson.dumps
    vbytes = wire.VALUE % (seq, dumps(change.before), dumps(change.after), wire.OPS[change.op],
                           int(NOW * 1000), head, dumps(commit_ts), tail_r if change.op == "r" else tail,
                           wire.source_fields(change.source), dumps(txid), total, n)
    return kbytes, vbytes


def _reference_record(change: Change, seq: int, txid: str, commit_ts: int, total: int, n: int) -> tuple[bytes, bytes]:
    """(key, value) of a data record: the envelope's dicts through the JSON serde."""
    key, value = envelope.data_record(change, sequence=seq, source_name="s", connector="mysql", txid=txid,
                                      commit_ts_ms=commit_ts, total_order=total, data_collection_order=n,
                                      now_ms=int(NOW * 1000))
    ks, vs = get_serdes("json")
    return ks.encode(key), vs.encode(value)


def _hostile_changes() -> list[Change]:
    out = []
    for i, v in enumerate(HOSTILE):
        w = HOSTILE[(i + 5) % len(HOSTILE)]
        pk_value = v if v is not None and not isinstance(v, (bool, float)) else i
        schema = (SA, SK, SB)[i % 3]
        if schema is SB:
            before, after = {"oid": pk_value, "n": w, "q": v}, {"oid": pk_value, "n": w, "q": None}
        else:
            before, after = {"id": pk_value, "v": v}, {"id": pk_value, "v": w}
        op = "cudr"[i % 4]
        out.append(Change(schema.table, op, None if op in "cr" else before, None if op == "d" else after,
                          {"gtid": f"0-1-{i}", "file": w if isinstance(w, str) else None, "row": i}
                          if i % 5 else {}, schema))
    return out


CHANGES = _hostile_changes()
PATHS = ["hot-native", "hot-python", "dict", "batch-native", "batch-python"]


def _published(change: Change, path: str, monkeypatch) -> tuple[bytes, bytes]:
    monkeypatch.setattr(time, "time", lambda: NOW)
    monkeypatch.setattr(publisher_module, "_NATIVE_OFF", path.endswith("python"))
    pub, fake, _ = publisher()
    if path == "dict":
        pub._json = False  # the dict path, through the JSON serde
    pk = change.schema.primary_key
    row = change.after if change.after is not None else change.before
    event = change if not path.startswith("batch") else ChangeBatch(
        [(change.table, change.schema)],
        [(change.op, wire.key_json(row, pk), orjson.dumps(change.before), orjson.dumps(change.after),
          wire.source_fields(change.source))])
    for ev in [Begin("x\"1\\é", 1000), event, Commit("x\"1\\é", 1000, {"g": 1}, {})]:
        pub.publish(ev)
    (_, vbytes, kbytes), = [r for r in fake.records if r[1] is not None and r[1].startswith(b'{"sequence":3,')]
    return kbytes, vbytes


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("i", range(len(CHANGES)))
def test_every_publisher_path_writes_the_owners_bytes(i, path, monkeypatch):
    change = CHANGES[i]
    want = _owner_record(change, 3, "x\"1\\é", 1000, 1, 1)
    assert want == _reference_record(change, 3, "x\"1\\é", 1000, 1, 1)
    assert _published(change, path, monkeypatch) == want


@pytest.mark.parametrize("op", "cud")
@pytest.mark.parametrize("schema", [SA, SB, SK], ids=["one", "two", "none"])
@pytest.mark.parametrize("thread", [None, 77])
def test_mysql_serialized_rows_are_the_owners_bytes(op, schema, thread):
    if schema is SB:
        images = [{"oid": i, "n": 2**64 - 1 - i, "q": v} for i, v in enumerate(HOSTILE)]
    else:
        images = [{"id": i, "v": v} for i, v in enumerate(HOSTILE)]
    conv = [ConvertedRow(r) for r in images]
    raw = ([{"values": r} for r in conv] if op in "cd" else
           [{"before_values": conv[i - 1], "after_values": r} for i, r in enumerate(conv)])
    batch = _serialized(raw, op, (schema.table, schema), "0-1-9", "bin.0\"1\\", 4, 3, 12, thread)
    pk = schema.primary_key
    for i, (got, r) in enumerate(zip(batch.rows, raw, strict=True)):
        before = None if op == "c" else r.get("before_values", r.get("values"))
        after = None if op == "d" else r.get("after_values", r.get("values"))
        fields = {"gtid": "0-1-9", "file": "bin.0\"1\\", "pos": 4, "row": 3 + i, "server_id": 12}
        if thread is not None:
            fields["thread"] = thread
        want = (op, wire.key_json(after if after is not None else before, pk), orjson.dumps(before),
                orjson.dumps(after), wire.source_fields(fields))
        assert got == want


@pytest.mark.parametrize("op", "cud")
def test_mysql_natively_shaped_rows_are_the_owners_bytes(op, tmp_path):
    """A shaped table's rows shaped by the C pass (readers/mysql/binlog/native_rows.py shaped_rows: excluded
    column, hash, truncate, keep_last, replace, null over the hostile values) serialize to the owner's bytes of
    the mapper's images, and hold no clear value of a masked or excluded column."""
    from cdc.transforms.config import TransformsConfig
    from cdc.transforms.mapper import SourceTransforms
    from readers.mysql.binlog import native_rows
    from readers.mysql.types import logical_type

    if not native_rows.NATIVE:
        pytest.skip("the C rows pass is not compiled here")
    cols = [("id", "bigint"), ("h", "varchar(99)"), ("t", "varchar(99)"), ("k", "varchar(99)"), ("r", "double"),
            ("z", "varchar(99)"), ("x", "varchar(99)"), ("v", "varchar(99)")]
    schema = TableSchema(A, tuple(Column(c, t, True, None, logical_type(t)) for c, t in cols), ("id",))
    (tmp_path / "k").write_bytes(b"hash key of the conformance test")
    mapper = SourceTransforms("s", TransformsConfig.model_validate({"hash_key_file": str(tmp_path / "k"), "tables": [
        {"match": "shop.*", "exclude": ["x"], "columns": {"id": {"mask": "hash"}, "h": {"mask": "hash"},
         "t": {"mask": "truncate", "length": 2}, "k": {"mask": "keep_last", "length": 2},
         "r": {"mask": "replace", "value": "é\"\\"}, "z": {"mask": "null"}}}]})).mapper(schema)
    text = [v for v in HOSTILE if isinstance(v, str) or v is None]
    images = [ConvertedRow({"id": i, "h": v, "t": v, "k": v, "r": HOSTILE[i % len(HOSTILE)], "z": v,
                            "x": f"excluded {i}", "v": v}) for i, v in enumerate(text)]
    raw = ([{"values": r} for r in images] if op in "cd" else
           [{"before_values": images[i - 1], "after_values": r} for i, r in enumerate(images)])
    assert native_rows.shaped_rows(raw, op, mapper) is not None  # the C pass shapes these
    batch = _serialized(raw, op, (A, mapper.schema), "0-1-9", "bin.1", 4, 3, 12, None, mapper)
    for i, (got, r) in enumerate(zip(batch.rows, raw, strict=True)):
        before = None if op == "c" else mapper.row(r.get("before_values", r.get("values")))
        after = None if op == "d" else mapper.row(r.get("after_values", r.get("values")))
        fields = {"gtid": "0-1-9", "file": "bin.1", "pos": 4, "row": 3 + i, "server_id": 12}
        want = (op, wire.key_json(after if after is not None else before, ("id",)), orjson.dumps(before),
                orjson.dumps(after), wire.source_fields(fields))
        assert got == want
        assert b"excluded" not in b"".join(got[1:4])


ORACLE_SQLS = [
    ("insert into \"HR\".\"E\"(\"ID\",\"NAME\",\"CREATED\") values ('1','O''Brien \\ é \U0001f600',"
    "TO_DATE('2024-01-02 03:04:05', 'YYYY-MM-DD HH24:MI:SS'));"),
    "insert into \"HR\".\"E\"(\"ID\",\"NAME\",\"CREATED\") values ('2','a\tb\nc\x01\x1f\x7f\"',NULL);",
    "insert into \"HR\".\"E\"(\"ID\",\"NAME\",\"CREATED\") values ('18446744073709551615','',NULL);",
    ("update \"HR\".\"E\" set \"NAME\" = NULL where \"ID\" = '1' and \"NAME\" = 'O''Brien \\ é' and "
    "\"CREATED\" IS NULL;"),
    "delete from \"HR\".\"E\" where \"ID\" = '2' and \"NAME\" = '\u2028}' and \"CREATED\" IS NULL;",
]
ORACLE_SPECS = [(("CREATED",), ("ID",)), (("CREATED",), None), (("CREATED",), ("ID", "NAME"))]


@pytest.mark.parametrize("spec", ORACLE_SPECS, ids=["one", "none", "two"])
def test_oracle_redo_json_native_and_python_are_the_owners_bytes(spec):
    n = len(ORACLE_SQLS)
    rs_ids = [" 0x0001.2.3 ", None, "é\"\\\n", "", None]
    sources = (list(range(100, 100 + n)), [2**63 - 1] * n, [orjson.dumps("0a.1\"2")] * n, rs_ids, [0, None, 3, -1, 5])
    built = redo_json.build(ORACLE_SQLS, [0] * n, [spec], sources)
    assert redo_json.NATIVE and all(b is not None for b in built)  # the C pass vouches for every one of these
    for i, sql in enumerate(ORACLE_SQLS):
        op, key, before, after = redo_json.reference(sql, spec)
        b, a = orjson.loads(before), orjson.loads(after)
        row = a if a is not None else b
        want_key = orjson.dumps(row) if spec[1] is None else wire.key_json(row, spec[1])
        fields = {"scn": sources[0][i], "commit_scn": sources[1][i], "txId": "0a.1\"2", "rs_id": rs_ids[i],
                  "ssn": sources[4][i]}
        assert (op, key) == (built[i][0], want_key)
        assert built[i] == (op, want_key, before, after, wire.source_fields(fields))
        assert redo_json.reference_source(*(sources[j][i] for j in (0, 1)), "0a.1\"2", rs_ids[i],
                                          sources[4][i]) == wire.source_fields(fields)


def test_the_c_splice_holds_no_record_literal_and_refuses_bad_fragments():
    """_splice_native.c writes only the fragments it was given (cdc.stream.wire.VALUE_FRAGMENTS)."""
    text = (Path(publisher_module.__file__).parent / "_splice_native.c").read_text()
    for name in ("sequence", "before", "transaction", "total_order", "data_collection_order"):
        assert f'\\"{name}\\"' not in text, name
    native = publisher_module._native
    assert native is not None
    with pytest.raises(ValueError):
        native.configure(wire.VALUE_FRAGMENTS[:-1])
    with pytest.raises(TypeError):
        native.configure((*wire.VALUE_FRAGMENTS[:-1], "}}"))
    native.configure(wire.value_fragments())


def test_the_stream_is_byte_identical_to_the_one_recorded_before_the_owner():
    """tests/unit/cdc/stream/wire_stream.py's records (4 publisher configurations, every producer) are the
    bytes recorded on commit 2cd26ee, before cdc/stream/wire.py, but for one deliberate change since: the
    per-table (Debezium) records carry the writer's ``cdc.epoch`` header too (the fenced-writer guard)."""
    want = GOLDEN.read_text().splitlines()
    got = wire_stream.lines()
    assert len(got) == len(want) == 731
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g == w, f"record {i} differs"


@pytest.mark.parametrize("change", [
    Change(A, "u", {"id": 5, "v": "x"}, {"id": 5, "v": "y"}, {"gtid": "u:9", "pos": 4}, SA),
    Change(A, "c", None, {"id": 6, "v": "é\"\\\n\u2028"}, {}, SA),
    Change(A, "r", None, {"id": 7, "v": None}, {"scn": 12}, SA),
    Change(B, "d", {"oid": 1, "n": 2, "q": 1.5}, None, {"scn": 1, "commit_scn": 2, "txId": "1.2.3"}, SB),
    Change(TableId("s\"q", "t\u00e9"), "u", {"a": True}, {"a": False, "b": -3}, {"row": 1}, None),
    Change(A, "u", {"id": 5, "v": "x"}, {"id": 5, "v": "y"}, {"ts_ms": 3, "table": "over", "x": 1}, SA),
])
def test_data_record_bytes_are_orjson_of_the_envelope_dicts(change):
    pub, fake, _ = publisher()
    for ev in [Begin("x\"1", 1000), change, Commit("x\"1", 1000, {"g": 1}, {})]:
        pub.publish(ev)
    _, vbytes, kbytes = [r for r in fake.records if b'"op"' in (r[1] or b"")][0]
    value = decoded(fake)[-2][2]
    ekey, evalue = envelope.data_record(change, sequence=value["sequence"], source_name="s", connector="mysql",
                                        txid="x\"1", commit_ts_ms=1000, total_order=1, data_collection_order=1,
                                        now_ms=value["ts_ms"])
    ks, vs = get_serdes("json")
    assert vbytes == vs.encode(evalue)
    assert kbytes == ks.encode(ekey)


def test_multi_column_key_and_keyless_table_bytes():
    keyless = TableSchema(A, SA.columns, ())
    pub, fake, _ = publisher()
    for ev in [Begin("t", 5), Change(B, "u", {"oid": 1, "n": 2, "q": 3}, {"oid": 1, "n": 2, "q": 4}, {}, SB),
               Change(A, "c", None, {"id": 1, "v": "a"}, {}, keyless), Commit("t", 5, {}, {})]:
        pub.publish(ev)
    keys = [k for _, v, k in fake.records if b'"op"' in (v or b"")]
    assert keys == [b'{"table":"shop.items","key":{"oid":1,"n":2}}', b'{"table":"shop.orders","key":{"id":1,"v":"a"}}']



@pytest.mark.parametrize("txid,ts", [("1.2.3", 1700000000123), ("x\"é", 0), ("u:1", 1.5)])
def test_begin_record_bytes(txid, ts):
    pub, fake, _ = publisher()
    pub.publish(Begin(txid, ts))
    pub.flush()  # a BEGIN may wait for its transaction's rows (Publisher._held): a flush produces it
    _, vbytes, kbytes = fake.records[0]
    assert kbytes is None and vbytes == get_serdes("json")[1].encode(envelope.begin_record(1, txid, ts))


@pytest.mark.parametrize("tables", [[], [A], [A, B, A]])
def test_end_record_bytes(tables):
    """END (spliced from constants) is orjson of envelope.end_record's dict: counts per table in first-row
    order, the resume state and the native position as given."""
    pub, fake, _ = publisher()
    resume = {"low_watermark_scn": 5, "commit_scn": 7, "xids_at_commit_scn": ["1.2.3", "x\"é"]}
    position = {"scn": 7, "commit_scn": 7, "txId": "x\"é"}
    schemas = {A: SA, B: SB}
    rows = [Change(t, "c", None, {"id": i, "oid": i, "n": i, "v": "x"}, {"row": i}, schemas[t])
            for i, t in enumerate(tables)]
    for ev in [Begin("x\"é", 1000), *rows, Commit("x\"é", 1001, resume, position)]:
        pub.publish(ev)
    counts: dict[str, int] = {}
    for t in tables:
        counts[str(t)] = counts.get(str(t), 0) + 1
    value = fake.records[-1][1]
    seq = 2 + len(tables) + len(set(tables))  # BEGIN, a SCHEMA record per table, the rows, then END
    assert value == get_serdes("json")[1].encode(envelope.end_record(seq, "x\"é", 1001, counts, resume, position))
