"""The change-stream records: what goes into `<prefix>.<source>.changes`.

This module is the contract between the daemon and every consumer (our
Spark apply job, Debezium-minded Kafka consumers). Values are plain dicts;
cdc.stream.serde turns them into bytes (JSON or Avro).

Every value has a top-level ``sequence`` that strictly increases along the
stream of one source, without gaps. One exception, by design: when the
broker loses an acknowledgement, the producer's retry may append a run of
records AGAIN (same sequences, same content); consumers drop any record
whose sequence is at or below the last one they took, which removes it. Kinds of record, told apart by ``status`` (markers)
or by ``op`` (data):

data     key {"table": "db.t", "key": {pk...}}
         value {sequence, op, before, after, ts_ms, source{...}, transaction{...}}
BEGIN    key None; value {sequence, status: "BEGIN", id, event_count: None,
         data_collections: None, ts_ms}
END      key None; value {sequence, status: "END", id, event_count,
         data_collections: [{data_collection, event_count}], ts_ms,
         position{native commit position}, resume{reader resume state}}
ABORTED  key None; value {sequence, status: "ABORTED", id, ts_ms}: closes a
         transaction whose END never made it (publisher crash); consumers
         drop everything since its BEGIN.
SCHEMA   key {"table": "db.t"} (None for a DDL with no table); value
         {sequence, status: "SCHEMA", table, ddl, schema{table, columns, [kind,]
         primary_key} or None, ts_ms, resume}
HEARTBEAT key None; value {sequence, status: "HEARTBEAT", ts_ms, resume}
RESYNC   a data record of ``op: "x"`` (key {"table": "db.t", "key": None}, no images): the target
         rows of a key range that the source no longer holds, in ``source.resync``
         (cdc.stream.resync_range); consumers that do not apply it must stop on it.

Writer epoch: every record of the stream carries the Kafka header
``cdc.epoch`` (ASCII decimal; cdc.stream.wire owns it and the record bytes): the epoch of the daemon that wrote it, taken
from the writer lease (cdc.publish.lease) when the daemon takes the stream
over; a later writer's epoch is higher. A record without the header (written
before epochs) has epoch 0 (:func:`record_epoch`). Consumers hold the epoch to
the structure rules (cdc.stream.stream_structure): the same from a BEGIN to its END,
never lower than an earlier transaction's.

Checkpoint rule: the resume state to restart from is the ``resume`` of the
last END, SCHEMA or HEARTBEAT record (see :func:`resume_of`).
"""

from __future__ import annotations

from typing import Any

from cdc.stream.events import Change, TableSchema
from cdc.stream.wire import EPOCH_HEADER, epoch_headers, key_values, record_epoch, source_base  # noqa: F401 - re-exported: the header is the wire's

BEGIN, END, ABORTED, SCHEMA, HEARTBEAT = "BEGIN", "END", "ABORTED", "SCHEMA", "HEARTBEAT"
CHECKPOINT_STATUSES = frozenset({END, SCHEMA, HEARTBEAT})


def changes_topic(prefix: str, source: str) -> str:
    return f"{prefix}.{source}.changes"


def table_topic(prefix: str, source: str, db: str, table: str) -> str:
    return f"{prefix}.{source}.{db}.{table}"


def row_key(change: Change) -> dict[str, Any]:
    """The primary-key values of a change (all columns when there is no key)."""
    row = change.after if change.after is not None else change.before
    assert row is not None
    return key_values(row, change.schema.primary_key if change.schema is not None else ())


def data_record(
    change: Change,
    *,
    sequence: int,
    source_name: str,
    connector: str,
    txid: str,
    commit_ts_ms: int,
    total_order: int,
    data_collection_order: int,
    now_ms: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    source = source_base(change.table.db, change.table.table, source_name, connector)
    source["ts_ms"] = commit_ts_ms
    source["snapshot"] = "true" if change.op == "r" else "false"
    source.update(change.source)
    # TRUNCATE (op t) and a resync range (op x, cdc.stream.resync_range) have no row image and no key
    imaged = change.after is not None or change.before is not None
    key = {"table": str(change.table), "key": row_key(change) if imaged else None}
    value = {
        "sequence": sequence,
        "before": change.before,
        "after": change.after,
        "op": change.op,
        "ts_ms": now_ms,
        "source": source,
        "transaction": {
            "id": txid,
            "total_order": total_order,
            "data_collection_order": data_collection_order,
        },
    }
    return key, value


def begin_record(sequence: int, txid: str, ts_ms: int) -> dict[str, Any]:
    return {"sequence": sequence, "status": BEGIN, "id": txid, "event_count": None,
            "data_collections": None, "ts_ms": ts_ms}


def end_record(sequence: int, txid: str, ts_ms: int, counts: dict[str, int],
               resume: dict[str, Any], position: dict[str, Any]) -> dict[str, Any]:
    return {
        "sequence": sequence,
        "status": END,
        "id": txid,
        "event_count": sum(counts.values()),
        "data_collections": [{"data_collection": t, "event_count": n} for t, n in counts.items()],
        "ts_ms": ts_ms,
        "position": position,
        "resume": resume,
    }


def aborted_record(sequence: int, txid: str, ts_ms: int) -> dict[str, Any]:
    return {"sequence": sequence, "status": ABORTED, "id": txid, "ts_ms": ts_ms}


def schema_record(sequence: int, table: str | None, ddl: str | None, schema: TableSchema | None,
                  ts_ms: int, resume: dict[str, Any] | None, changes: list[dict[str, Any]] | None = None,
                  tables: list[dict[str, Any]] | None = None, kind: str | None = None) -> dict[str, Any]:
    """``changes``: what the DDL changed (cdc.schema.evolution.diff), written as ``schema.changes`` (inside the
    free-form schema object, so it travels in the Avro encoding too); ``tables``: what a CREATE/DROP/RENAME
    did to the captured tables (streaming/apply/table_ddl.py); ``kind``: the source kind whose reader read the
    column types, written as ``schema.kind`` next to the columns' logical types (a schema without them is
    written as before; the apply reads a column without its logical type with that kind's parser)."""
    shape = schema.to_json() if schema is not None else None
    if shape is not None and changes is not None:
        shape["changes"] = changes
    if shape is not None and kind is not None and any(c.logical is not None for c in schema.columns):
        shape["kind"] = kind
    record = {"sequence": sequence, "status": SCHEMA, "table": table, "ddl": ddl, "schema": shape,
              "ts_ms": ts_ms, "resume": resume}
    if tables is not None:
        record["tables"] = tables
    return record


def heartbeat_record(sequence: int, ts_ms: int, resume: dict[str, Any] | None) -> dict[str, Any]:
    return {"sequence": sequence, "status": HEARTBEAT, "ts_ms": ts_ms, "resume": resume}


def is_marker(value: dict[str, Any]) -> bool:
    return "status" in value and value.get("status") is not None


def resume_of(value: dict[str, Any]) -> dict[str, Any] | None:
    """The resume state a record carries, or None if it is not a checkpoint."""
    if value.get("status") in CHECKPOINT_STATUSES:
        return value.get("resume")
    return None
