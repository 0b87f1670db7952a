"""A deterministic stream: the same reader events, through every producer of record bytes, into the
recording producer of tests/unit/cdc/publish/fakes.py; returns every record's (topic, key, value, headers).

Run as a script it writes that stream as JSON lines (bytes as latin-1 text) to stdout; its output on the
commit before cdc/stream/wire.py existed is tests/unit/cdc/stream/golden/wire_stream.jsonl, and
test_wire_conformance.py holds today's stream equal to it byte for byte.

The producers it drives: the publisher's Change path (JSON hot path, the dict path, Avro, per-table
topics), its ChangeBatch splice in C and in Python, the MySQL reader's serialized rows
(readers.mysql.reader._serialized) and the Oracle columnar pipeline's native and reference bytes
(readers.oracle.columnar.redo_json), over hostile values.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from typing import Any

import orjson

import cdc.publish.publisher as publisher_module
from cdc.stream.events import (
    Begin,
    Change,
    ChangeBatch,
    Column,
    Commit,
    Heartbeat,
    SchemaChange,
    TableId,
    TableSchema,
)
from readers.mysql.binlog.decode import ConvertedRow
from readers.mysql.reader import _serialized
from readers.oracle.columnar import redo_json
from tests.unit.cdc.publish.fakes import publisher

NOW = 1_700_000_000.25
A, B, K = TableId("shop", "or\"d\\ers"), TableId("shop", "items"), TableId("s\u00e9", "k\u2028less")
SA = TableSchema(A, (Column("id", "bigint", False), Column("v", "varchar(9)"), Column("x", "double")), ("id",))
SB = TableSchema(B, (Column("oid", "int", False), Column("n", "varchar(3)", False), Column("q", "int")),
                 ("oid", "n"))
SK = TableSchema(K, (Column("a", "text"), Column("b", "int")), ())
ORA = TableId("HR", "EMP\"S")
SO = TableSchema(ORA, (Column("ID", "NUMBER", False), Column("NAME", "VARCHAR2(20)"), Column("CREATED", "DATE")),
                 ("ID",))

# hostile values: unicode, quotes, backslashes, control characters, huge ints, NULLs, empty strings
HOSTILE = ["", "é\"\\\n\u2028\t\x00\x1f\x7f", "\U0001f600'\"", "a\\\\b", None, 2**63 - 1, -2**63, 2**64 - 1,
           0, -1.5, 1e300, True, False, "null", "}", '{"x":1}', "%d%b%s"]


def _images() -> list[dict[str, Any]]:
    return [{"id": i, "v": v, "x": HOSTILE[(i + 3) % len(HOSTILE)]} for i, v in enumerate(HOSTILE)]


def _events() -> list[Any]:
    rows = _images()
    evs: list[Any] = [SchemaChange(A, "CREATE TABLE \"x\" (id int) -- é\\", SA, 1000, {"gtid_set": "g:1"}),
                      Heartbeat(1001, {"gtid_set": "g:1"})]
    # the publisher's Change paths: JSON hot path, the dict path (source fields overriding the base), keyless,
    # two-column keys, every op
    evs.append(Begin("g:2", 2000))
    for i, r in enumerate(rows):
        evs.append(Change(A, "cudr"[i % 4], None if i % 4 in (0, 3) else rows[i - 1],
                          None if i % 4 == 2 else r, {"gtid": "g:2", "row": i}, SA))
    evs.append(Change(A, "u", rows[1], rows[2], {"ts_ms": 7, "table": "over\"", "x": "\\"}, SA))
    evs.append(Change(B, "c", None, {"oid": 2**64 - 1, "n": "\"", "q": None}, {}, SB))
    evs.append(Change(K, "d", {"a": "\u2028", "b": -2**63}, None, {"scn": 5}, SK))
    evs.append(Change(K, "c", None, {"a": "", "b": None}, {}, None))
    evs.append(Commit("g:2", 2000, {"gtid_set": "g:1-2"}, {"gtid": "g:2", "pos": 4}))
    evs.append(Begin("g:3", 3000))
    evs.append(Change(A, "t", None, None, {"gtid": "g:3"}, SA))
    evs.append(Commit("g:3", 3000, {"gtid_set": "g:1-3"}, {"gtid": "g:3"}))
    # MySQL: the reader's serialized rows of a native rows event, one per op and key shape
    for n, (op, schema) in enumerate([("c", SA), ("u", SA), ("d", SA), ("c", SB), ("u", SK)]):
        txid = f"0-1-{10 + n}"
        table = schema.table
        imgs = ([{"id": i, "v": v, "x": None} for i, v in enumerate(HOSTILE)] if table is A else
                [{"oid": i, "n": str(v), "q": i * 7} for i, v in enumerate(HOSTILE)] if table is B else
                [{"a": v if isinstance(v, str) else None, "b": i} for i, v in enumerate(HOSTILE)])
        conv = [ConvertedRow(r) for r in imgs]
        raw = ([{"values": r} for r in conv] if op in "cd" else
               [{"before_values": conv[i - 1], "after_values": r} for i, r in enumerate(conv)])
        batch = _serialized(raw, op, (table, schema), txid, "mysql-bin.0000\"1" if n % 2 else None, 4 + n, n,
                            12, None if n % 2 else 77)
        assert batch is not None
        evs += [Begin(txid, 4000 + n), batch, Commit(txid, 4000 + n, {"gtid_set": txid}, {"gtid": txid})]
    # Oracle: the columnar pipeline's rows (native bytes where it vouches for them, else the reference)
    specs = [(("CREATED",), ("ID",))]
    sqls = [
        ("insert into \"HR\".\"EMP\"\"S\"(\"ID\",\"NAME\",\"CREATED\") values ('1','O''Brien \\ é',"
        "TO_DATE('2024-01-02 03:04:05', 'YYYY-MM-DD HH24:MI:SS'));"),
        ("update \"HR\".\"EMP\"\"S\" set \"NAME\" = 'a\"b' where \"ID\" = '1' and \"NAME\" = 'O''Brien \\ é' and "
        "\"CREATED\" = TO_DATE('2024-01-02 03:04:05', 'YYYY-MM-DD HH24:MI:SS');"),
        "delete from \"HR\".\"EMP\"\"S\" where \"ID\" = '1' and \"NAME\" = 'a\"b' and \"CREATED\" IS NULL;",
        "insert into \"HR\".\"EMP\"\"S\"(\"ID\",\"NAME\",\"CREATED\") values ('2',NULL,NULL);",
    ]
    scns, cscns = [100, 101, 102, 103], [110, 110, 110, 110]
    xids, rs_ids, ssns = [orjson.dumps("0a.1.2")] * 4, [" 0x00001.2.3 ", None, "\u00e9\"", None], [0, 1, None, 3]
    built = redo_json.build(sqls, [0] * 4, specs, (scns, cscns, xids, rs_ids, ssns))
    out = []
    for i, sql in enumerate(sqls):
        b = built[i]
        if b is None:
            op, key, before, after = redo_json.reference(sql, specs[0])
            b = (op, key, before, after, redo_json.reference_source(scns[i], cscns[i], "0a.1.2", rs_ids[i], ssns[i]))
        out.append(b)
    evs += [Begin("0a.1.2", 5000), ChangeBatch([(ORA, SO)] * len(out), out),
            Commit("0a.1.2", 5000, {"scn": 110}, {"commit_scn": 110})]
    # a batch mixing Changes and serialized rows
    evs += [Begin("g:9", 6000), ChangeBatch([None, (A, SA), None], [
        Change(A, "c", None, rows[1], {"gtid": "g:9"}, SA),
        ("c", b"3", b"null", orjson.dumps(rows[3]), b',"gtid":"g:9"}'),
        Change(B, "d", {"oid": 1, "n": "", "q": 1}, None, {}, SB)]), Commit("g:9", 6000, {"g": "9"}, {})]
    evs.append(Heartbeat(7000, {"gtid_set": "all"}))
    return evs


def _run(events: list[Any], encoding: str, native: bool, **kafka: Any) -> list[tuple]:
    with contextlib.ExitStack() as stack:
        original_time = time.time
        time.time = lambda: NOW  # the records' ts_ms
        stack.callback(setattr, time, "time", original_time)
        off = publisher_module._NATIVE_OFF
        publisher_module._NATIVE_OFF = not native
        stack.callback(setattr, publisher_module, "_NATIVE_OFF", off)
        pub, fake, _ = publisher(encoding, **kafka)
        pub.epoch, pub._headers = 7, publisher_module.epoch_headers(7)
        pub._ensure_topic = lambda topic: None  # no broker: per-table topics are taken as existing
        for ev in events:
            pub.publish(ev)
        return [(t, k, v, h) for (t, v, k), h in zip(fake.records, fake.headers, strict=True)]


CONFIGS = {"json-native": ("json", True, {}), "json-python": ("json", False, {}),
           "avro": ("avro", True, {}), "json-per-table": ("json", True, {"per_table_topics": True})}


def stream() -> list[tuple]:
    """(config, topic, key, value, headers) of every record, in order, for every configuration."""
    events = _events()
    # per-table topics are compacted by default, which refuses a TRUNCATE (Debezium's null key): left out there
    no_truncate = [ev for ev in events if not (type(ev) is Change and ev.op == "t")]
    return [(name, *rec) for name, (enc, native, kafka) in CONFIGS.items()
            for rec in _run(no_truncate if kafka else events, enc, native, **kafka)]


def _text(b: Any) -> Any:
    if isinstance(b, bytes):
        return b.decode("latin-1")
    if isinstance(b, dict):
        return {k: _text(v) for k, v in b.items()}
    if isinstance(b, (list, tuple)):
        return [_text(v) for v in b]
    return b


def lines() -> list[str]:
    return [json.dumps(_text(rec), ensure_ascii=True) for rec in stream()]


if __name__ == "__main__":
    sys.stdout.write("\n".join(lines()) + "\n")
