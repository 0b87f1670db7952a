"""Debezium records for the per-table topics: one source change -> the Kafka records Debezium would write.

The interface (shared with the Avro encoding, cdc/debezium/avro.py; keep its shape stable)::

    records = DebeziumRecords(source_name, connector, topic_prefix, options)   # options: DebeziumConfig
    for rec in records.records(change, TxContext(txid, commit_ts_ms, total_order,
                                                 data_collection_order, sequence, now_ms)):
        rec.topic            # <prefix>.<source>.<db>.<table>
        rec.key_schema       # Connect struct schema of the key (JsonConverter's JSON form) or None
        rec.key              # key payload {pk column: value} or None (no primary key, TRUNCATE)
        rec.value_schema     # Connect schema of the envelope (<topic>.Envelope), None for a tombstone
        rec.value            # envelope payload {before, after, source, transaction, op, ts_ms, ts_us, ts_ns}
                             #   or None (tombstone)
        rec.headers          # ((name, bytes), ...): __debezium.oldkey / __debezium.newkey, cdc.sequence

``json_bytes(rec, schemas)`` gives the (key, value) bytes of the JSON encoding: the payloads as they are, or
``{"schema": ..., "payload": ...}`` as Kafka Connect's JsonConverter writes them with ``schemas.enable``.

What one change becomes (Debezium's MySQL/Oracle connectors, https://debezium.io/documentation/reference/
stable/connectors/mysql.html#mysql-events and "primary key updates"):

- insert / snapshot row / update: one record (``c`` / ``r`` / ``u``) keyed by the primary key;
- delete: ``d`` then a tombstone (null value), same key, so compaction can forget the key;
- an update that changes the primary key: ``d`` for the old key, a tombstone for the old key (both with
  header ``__debezium.newkey``), then ``c`` for the new key (header ``__debezium.oldkey``): a consumer
  that upserts by key and deletes on tombstones, and a compacted topic, keep no ghost of the old key;
- TRUNCATE: one ``t`` record with a null key, before and after null.

Every record carries header ``cdc.sequence``: the ordered stream's sequence of the change (the three
records of a key change share it). The ``source`` block has every field Debezium's connector documents
(null where the log gives us no value; required Connect fields such as MySQL ``file``/``pos`` are ``""``/0
for rows that have no binlog event: snapshot and repair rows). MySQL ``row`` is the row's index within
its binlog event, as Debezium counts it (the ordered stream's ``row`` counts within the transaction).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from cdc.debezium.connect_schema import TableSchemas
from cdc.debezium.errors import DebeziumValueError
from cdc.stream.envelope import table_topic
from cdc.stream.events import Change, Column, TableSchema

VERSION = "cdc-1"  # source.version, as in the ordered stream
OLDKEY, NEWKEY, SEQUENCE = "__debezium.oldkey", "__debezium.newkey", "cdc.sequence"


@dataclass(frozen=True, slots=True)
class TxContext:
    """Where a change sits: its transaction, its order in it, its ordered-stream sequence, the time now."""

    txid: str
    commit_ts_ms: int
    total_order: int
    data_collection_order: int
    sequence: int
    now_ms: int


@dataclass(frozen=True, slots=True)
class ConnectRecord:
    """One Kafka record as Kafka Connect sees it: schemas in JsonConverter's JSON form, payloads as dicts."""

    topic: str
    key_schema: dict[str, Any] | None
    key: dict[str, Any] | None
    value_schema: dict[str, Any] | None
    value: dict[str, Any] | None
    headers: tuple[tuple[str, bytes], ...] = ()


class DebeziumRecords:
    """Builds the per-table records of one source's changes, in publish order (it remembers the binlog
    event of the previous row to number rows within an event). One per publisher, one thread."""

    def __init__(self, source_name: str, connector: str, topic_prefix: str, options: Any) -> None:
        self.source_name, self.connector, self.prefix = source_name, connector, topic_prefix
        self.temporal, self.decimal = options.temporal, options.decimal
        self._oracle = connector == "oracle"
        self._tables: dict[int, tuple[TableSchema, TableSchemas]] = {}  # id(TableSchema) -> its schemas
        self._event: tuple[Any, Any] = (None, None)  # (file, pos) of the last row's binlog event
        self._event_first = 0  # the transaction row number of that event's first row

    def table_schemas(self, change: Change) -> TableSchemas:
        """The schemas of the change's table (cached per TableSchema object, as readers reuse them)."""
        schema = change.schema
        if schema is None:  # a reader that knows no definition: the row's columns, as text, no key
            row = change.after if change.after is not None else change.before or {}
            schema = TableSchema(change.table, tuple(Column(c, "") for c in row), ())
        hit = self._tables.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
        if len(self._tables) > 10_000:
            self._tables.clear()
        topic = table_topic(self.prefix, self.source_name, change.table.db, change.table.table)
        out = TableSchemas(schema, topic, self.connector, self.temporal, self.decimal)
        self._tables[id(schema)] = (schema, out)
        return out

    def records(self, change: Change, tx: TxContext) -> list[ConnectRecord]:
        """The per-table records of one change (see the module docstring), in produce order.

        Raises DebeziumValueError naming table, column, type, value and position when a value does not
        fit the configured encoding (the source stops there)."""
        ts = self.table_schemas(change)
        topic = ts.topic  # worked out once per table schema (table_schemas)
        source = self._source(change, tx.commit_ts_ms)
        before = self._row(change, ts, change.before, source)
        after = self._row(change, ts, change.after, source)
        seq = ((SEQUENCE, str(tx.sequence).encode()),)
        op = change.op
        if op == "t":
            return [ConnectRecord(topic, None, None, ts.envelope, self._value(None, None, source, tx, "t"), seq)]
        old_key, new_key = self._key(ts, before), self._key(ts, after)
        if op == "u" and old_key is not None and old_key != new_key:
            moved = ((NEWKEY, orjson.dumps(new_key)), *seq)
            return [ConnectRecord(topic, ts.key, old_key, ts.envelope, self._value(before, None, source, tx, "d"), moved),
                    ConnectRecord(topic, ts.key, old_key, None, None, moved),
                    ConnectRecord(topic, ts.key, new_key, ts.envelope, self._value(None, after, source, tx, "c"),
                                  ((OLDKEY, orjson.dumps(old_key)), *seq))]
        key = new_key if new_key is not None else old_key
        out = [ConnectRecord(topic, ts.key, key, ts.envelope, self._value(before, after, source, tx, op), seq)]
        if op == "d" and key is not None:
            out.append(ConnectRecord(topic, ts.key, key, None, None, seq))
        return out

    # ------------------------------------------------------------ parts
    def _key(self, ts: TableSchemas, row: dict[str, Any] | None) -> dict[str, Any] | None:
        """The key payload of a row image; None without a primary key or when the image lacks a key column
        (an Oracle before image without supplemental key logging: never taken for a key change)."""
        if row is None or not ts.key_columns or not all(k in row for k in ts.key_columns):
            return None
        return {k: row[k] for k in ts.key_columns}

    def _value(self, before: Any, after: Any, source: dict[str, Any], tx: TxContext, op: str) -> dict[str, Any]:
        now = tx.now_ms
        return {"before": before, "after": after, "source": source,
                "transaction": {"id": tx.txid, "total_order": tx.total_order,
                                "data_collection_order": tx.data_collection_order},
                "op": op, "ts_ms": now, "ts_us": now * 1000, "ts_ns": now * 1_000_000}

    def _row(self, change: Change, ts: TableSchemas, image: dict[str, Any] | None,
             source: dict[str, Any]) -> dict[str, Any] | None:
        if image is None:
            return None
        codecs = ts.codecs
        out = {}
        for name, value in image.items():
            c = codecs.get(name)
            if c is None or c.convert is None or value is None:
                out[name] = value
                continue
            try:
                out[name] = c.convert(value)
            except (ValueError, ArithmeticError, TypeError) as exc:
                col = next((x for x in (change.schema.columns if change.schema else ()) if x.name == name), None)
                raise DebeziumValueError(
                    f"value {value!r} of {change.table}.{name} ({col.type if col else '?'}) cannot be written as "
                    f"{c.name or c.type} (kafka.debezium temporal={self.temporal}, decimal={self.decimal}): {exc}",
                    table=str(change.table), column=name, type=col.type if col else None, value=repr(value)[:200],
                    position=_position(source)) from None
        return out

    def _source(self, change: Change, commit_ts_ms: int) -> dict[str, Any]:
        src = change.source
        if change.op == "r":  # the readers mark a snapshot's first and last rows (cdc.stream.snapshot_marks)
            snapshot = src.get("snapshot") or ("incremental" if src.get("incremental_snapshot") else "true")
        else:
            snapshot = "false"
        head = {"version": VERSION, "connector": self.connector, "name": self.source_name, "ts_ms": commit_ts_ms,
                "snapshot": snapshot, "db": change.table.db, "sequence": None, "ts_us": commit_ts_ms * 1000,
                "ts_ns": commit_ts_ms * 1_000_000}
        if self._oracle:
            scn, commit_scn = src.get("scn"), src.get("commit_scn")
            return {**head, "schema": change.table.db, "table": change.table.table, "txId": src.get("txId"),
                    "scn": None if scn is None else str(scn),
                    "commit_scn": None if commit_scn is None else str(commit_scn), "lcr_position": None,
                    "rs_id": src.get("rs_id"), "ssn": src.get("ssn"), "redo_thread": src.get("redo_thread"),
                    "user_name": None, "redo_sql": None, "row_id": None}
        file, pos = src.get("file"), src.get("pos")
        return {**head, "table": change.table.table, "server_id": src.get("server_id") or 0, "gtid": src.get("gtid"),
                "file": file or "", "pos": pos or 0,
                "row": 0 if change.op == "r" else self._event_row(file, pos, src.get("row")),
                "thread": src.get("thread"), "query": None}

    def _event_row(self, file: Any, pos: Any, row: Any) -> int:
        """The row's index within its binlog event: rows of one event share ``file``/``pos`` (the event's
        end) and number consecutively in the transaction's ``row`` count."""
        if file is None or pos is None or row is None:
            return 0
        if (file, pos) != self._event:
            self._event, self._event_first = (file, pos), row
        return row - self._event_first


def _position(source: dict[str, Any]) -> str:
    if "scn" in source:
        return f"scn {source['scn']} commit_scn {source['commit_scn']} txId {source['txId']}"
    return f"{source['file']}:{source['pos']} gtid {source['gtid']} row {source['row']}"


def json_bytes(rec: ConnectRecord, schemas: bool) -> tuple[bytes | None, bytes | None]:
    """(key, value) bytes of ``rec`` in JSON: the payloads, or JsonConverter's ``{schema, payload}`` (the
    same bytes as dumping that dict; a table's schema JSON is rendered once, see _schema_json)."""
    dumps = orjson.dumps
    if not schemas:
        return (None if rec.key is None else dumps(rec.key)), (None if rec.value is None else dumps(rec.value))
    key = None if rec.key is None else b'{"schema":%b,"payload":%b}' % (_schema_json(rec.key_schema), dumps(rec.key))
    value = None if rec.value is None else \
        b'{"schema":%b,"payload":%b}' % (_schema_json(rec.value_schema), dumps(rec.value))
    return key, value


_SCHEMA_JSON: dict[int, tuple[Any, bytes]] = {}  # id(schema dict) -> (the dict, its JSON): kept alive, so ids hold


def _schema_json(schema: Any) -> bytes:
    hit = _SCHEMA_JSON.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    if len(_SCHEMA_JSON) > 4096:
        _SCHEMA_JSON.clear()
    text = orjson.dumps(schema)
    _SCHEMA_JSON[id(schema)] = (schema, text)
    return text
