"""One stream record as a Spark row: the schema of the `cdc-stream` source.

``read()`` on executors turns each Kafka message into one row of
:data:`SCHEMA`; the apply engine on the driver turns rows back into
:class:`StreamRecord`. Row images travel as JSON text (rows are
heterogeneous; Spark columns are not). A message that does not decode is
NOT dropped: it becomes a row of kind ``UNDECODABLE`` with the error and
the raw bytes (base64, capped), and the engine stops there (or dead-letters).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import orjson

from cdc.envelope import ABORTED, BEGIN, END, HEARTBEAT, SCHEMA

DATA, UNDECODABLE = "data", "UNDECODABLE"
KINDS = (DATA, BEGIN, END, ABORTED, SCHEMA, HEARTBEAT, UNDECODABLE)

SCHEMA_DDL = ("part int, offset long, sequence long, kind string, txid string, tbl string, op string, "
              "key string, before string, after string, ts_ms long, meta string, error string")
FIELDS = ("part", "offset", "sequence", "kind", "txid", "tbl", "op", "key", "before", "after", "ts_ms",
          "meta", "error")
RAW_CAP = 4096


def arrow_schema() -> Any:
    import pyarrow as pa
    s, i, l = pa.string(), pa.int32(), pa.int64()
    return pa.schema([("part", i), ("offset", l), ("sequence", l), ("kind", s), ("txid", s), ("tbl", s),
                      ("op", s), ("key", s), ("before", s), ("after", s), ("ts_ms", l), ("meta", s), ("error", s)])


def _dumps(v: Any) -> str | None:
    return None if v is None else orjson.dumps(v).decode()


def to_row(part: int, offset: int, key_bytes: bytes | None, value_bytes: bytes | None, key_serde: Any,
           value_serde: Any) -> tuple:
    """Decode one Kafka message into a row tuple in FIELDS order (never raises)."""
    try:
        if value_bytes is None:
            raise ValueError("record has no value (tombstone) on the changes topic")
        value = value_serde.decode(value_bytes)
        if not isinstance(value, dict) or not isinstance(value.get("sequence"), int):
            raise ValueError("record value has no integer 'sequence'")
        status = value.get("status")
        seq = value["sequence"]
        if status is None:
            src = value.get("source") or {}
            key = key_serde.decode(key_bytes) if key_bytes is not None else None
            table = (key or {}).get("table") or f"{src.get('db')}.{src.get('table')}"
            op = value.get("op")
            if op not in ("c", "u", "d", "r", "t"):
                raise ValueError(f"data record with unknown op {op!r}")
            return (part, offset, seq, DATA, (value.get("transaction") or {}).get("id"), table, op,
                    _dumps((key or {}).get("key")), _dumps(value.get("before")), _dumps(value.get("after")),
                    src.get("ts_ms"), None, None)
        if status not in KINDS:
            raise ValueError(f"unknown record status {status!r}")
        return (part, offset, seq, status, value.get("id"), value.get("table"), None, None, None, None,
                value.get("ts_ms"), _dumps(value), None)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a visible row
        raw = base64.b64encode((value_bytes or b"")[:RAW_CAP]).decode()
        return (part, offset, None, UNDECODABLE, None, None, None, None, None, None, None, raw,
                f"{type(exc).__name__}: {exc}")


@dataclass(slots=True)
class StreamRecord:
    part: int
    offset: int
    sequence: int | None
    kind: str
    txid: str | None
    tbl: str | None
    op: str | None
    key: str | None
    before: str | None
    after: str | None
    ts_ms: int | None
    meta: str | None
    error: str | None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StreamRecord:
        return cls(**{f: d.get(f) for f in FIELDS})

    def meta_dict(self) -> dict[str, Any]:
        return orjson.loads(self.meta) if self.meta else {}
