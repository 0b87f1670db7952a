"""The source-agnostic event model: what a reader yields to the publisher.

A reader turns its log into a flat, ordered iterator of these events:

    Begin, Change*, Commit        one committed source transaction (a ChangeBatch may stand
                                  for consecutive Changes: a reader's serialized batch path)
    SchemaChange                  a DDL (outside any transaction)
    Heartbeat                     "nothing captured happened up to here"

Readers yield transactions in source commit order and only committed ones
(MySQL: the binlog is already commit-ordered; Oracle: the dispatcher releases
at COMMIT in commit-SCN order). Rows of one transaction may be streamed
(Begin ... Change ... Commit) without holding the whole transaction in memory.

``resume`` (on Commit, SchemaChange, Heartbeat) is the reader's opaque,
JSON-serialisable resume state AFTER that event: handing it back to the
reader's ``start()`` continues with the first event that follows. The
publisher writes it into the stream (END / SCHEMA / HEARTBEAT records), so
the tail of the stream is the checkpoint.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Union

import orjson

from cdc.schema.logical import LogicalType

Op = Literal["c", "u", "d", "r", "t"]


@dataclass(frozen=True, slots=True, order=True)
class TableId:
    """A captured table: ``db`` is the MySQL database / Oracle schema."""

    db: str
    table: str

    @classmethod
    def parse(cls, text: str) -> TableId:
        db, sep, table = text.partition(".")
        if not sep or not db or not table:
            raise ValueError(f"table name {text!r} is not of the form db.table")
        return cls(db, table)

    def __str__(self) -> str:
        return f"{self.db}.{self.table}"


@dataclass(frozen=True, slots=True)
class Column:
    """One column as the source declares it.

    ``type`` is the source's own type text in lower case, e.g. ``int``,
    ``bigint unsigned``, ``varchar(20)``, ``decimal(10,2)``, ``datetime(6)``,
    ``number(10,0)``, ``varchar2(40)``. Targets map it to their own types.

    ``default`` is the column's default as SQL text, known only where the
    reader read the catalog (the schema of a SCHEMA record after a DDL): a
    constant is a literal (``'std'``, ``0``, ``1.50``, ``b'1'``), anything
    else an expression (``current_timestamp()``, ``uuid()``); None: no
    default (NULL). It does not take part in equality: a table map's shape
    (no defaults) equals the catalog's.

    ``logical`` is the column's logical type (cdc.schema.logical), made by the reader from ``type``;
    the core switches on it, never on ``type``'s spelling. None where no reader made it (a schema
    built by hand, a SCHEMA record written before the field existed): the core then asks the source
    kind's parser (cdc.registry.logical_of). It follows from ``type``, so it takes no part in equality.

    ``masked`` names the mask the source's transforms put on the column (``hash``, ``encrypt``, ``truncate``,
    ``keep_last``, ``replace``, ``null``: cdc/transforms): its values are not the source's; None: a clear column.
    """

    name: str
    type: str
    nullable: bool = True
    default: str | None = field(default=None, compare=False)
    logical: LogicalType | None = field(default=None, compare=False)
    masked: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class TableSchema:
    table: TableId
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The schema object of SCHEMA records and of the targets' schema memory: per column ``name``,
        ``type`` (the source's text), ``nullable``, ``default`` when there is one, ``logical`` (its
        LogicalType.to_json) when the reader made one and ``masked`` (the mask's name) for a masked column."""
        return {
            "table": str(self.table),
            "columns": [{"name": c.name, "type": c.type, "nullable": c.nullable}
                        | ({"default": c.default} if c.default is not None else {})
                        | ({"logical": c.logical.to_json()} if c.logical is not None else {})
                        | ({"masked": c.masked} if c.masked is not None else {}) for c in self.columns],
            "primary_key": list(self.primary_key),
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> TableSchema:
        """The inverse of :meth:`to_json`. A column written without ``logical`` (a stream written before the
        field) gets None: cdc.registry.logical_of rebuilds it with the source kind's parser."""
        return cls(
            TableId.parse(obj["table"]),
            tuple(Column(c["name"], c["type"], c.get("nullable", True), c.get("default"),
                         LogicalType.from_json(c["logical"]) if "logical" in c else None, c.get("masked"))
                  for c in obj["columns"]),
            tuple(obj.get("primary_key") or ()),
        )


@dataclass(slots=True)
class Begin:
    """Start of a committed transaction. ``txid``: MySQL GTID, Oracle XID."""

    txid: str
    ts_ms: int  # commit time at the source, epoch milliseconds


@dataclass(slots=True)
class Change:
    """One row change. ``before``/``after`` map column name to a JSON-ready value.

    Values: int, float, str, bool or None. DECIMAL/NUMBER as str (no float
    rounding), DATE as 'YYYY-MM-DD', DATETIME as 'YYYY-MM-DDTHH:MM:SS[.ffffff]',
    TIMESTAMP (zoned) as the same with a 'Z' suffix, TIME as 'HH:MM:SS[.ffffff]',
    binary as base64 text, JSON documents as their text. Oracle values stay
    the literal text of SQL_REDO unless a conversion is configured.

    ``source`` holds the native position fields of this row (MySQL: gtid,
    file, pos, row; Oracle: scn, commit_scn, txId, rs_id, ssn); the publisher
    adds db, schema, table, ts_ms, name and connector.
    """

    table: TableId
    op: Op
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    source: dict[str, Any] = field(default_factory=dict)
    schema: TableSchema | None = None  # set when the reader knows it (always for MySQL)


@dataclass(slots=True)
class ChangeBatch:
    """Consecutive changes of the open transaction, mostly already serialized: a reader's batch path
    (the Oracle columnar pipeline) yields one per transaction instead of a Change per row.

    Row i is ``rows[i]``: either a Change (``tables[i]`` None), or the tuple ``(op, key, before,
    after, source)`` of JSON bytes exactly as ``orjson.dumps`` writes the Change's record key values
    (cdc.stream.envelope.row_key: one column's value, an object of several, or the row image), ``before``
    and ``after`` (``null`` when absent) and its ``source`` fields after the opening brace
    (``,"scn":..}``), with ``tables[i] = (TableId, TableSchema | None)``. The JSON publisher splices
    these bytes into records without decoding them; :meth:`changes` gives the Change objects (every
    other consumer)."""

    tables: list[Any]
    rows: list[Any]

    def __len__(self) -> int:
        return len(self.rows)

    def changes(self) -> Iterator[Change]:
        loads = orjson.loads
        for known, row in zip(self.tables, self.rows, strict=True):
            if known is None:
                yield row
            else:
                op, _key, before, after, source = row
                fields = loads(b"{" + source[1:]) if len(source) > 1 else {}  # b"}": no fields of its own
                yield Change(known[0], op, loads(before), loads(after), fields, known[1])


def expand(events: Iterable[Any]) -> Iterator[Any]:
    """``events`` with every ChangeBatch replaced by its Changes (for consumers that want one per row)."""
    for event in events:
        if type(event) is ChangeBatch:
            yield from event.changes()
        else:
            yield event


@dataclass(slots=True)
class Commit:
    txid: str
    ts_ms: int
    resume: dict[str, Any]
    position: dict[str, Any] = field(default_factory=dict)  # native commit position for END


@dataclass(slots=True)
class SchemaChange:
    """A DDL statement or a (re)discovered table definition.

    ``ddl`` is the statement text (None when the reader only learnt the
    table's shape, e.g. first sight of a table). ``schema`` is the table's
    definition after the change when known.
    """

    table: TableId | None
    ddl: str | None
    schema: TableSchema | None
    ts_ms: int
    resume: dict[str, Any] | None
    tables: list[dict[str, Any]] | None = None  # table-level DDL (create/drop/rename): readers/mysql/tables.py


@dataclass(slots=True)
class Heartbeat:
    ts_ms: int
    resume: dict[str, Any] | None


@dataclass(slots=True)
class Idle:
    """Nothing to publish: a reader yields this while idle (at least every cdc.contract.STOP_CHECK_S) when
    no Heartbeat is due, so whoever iterates it gets control back: the publisher takes in the broker's
    acknowledgements (metrics, /readyz) and the daemon sees a stop request. It writes no record."""


Event = Union[Begin, Change, ChangeBatch, Commit, SchemaChange, Heartbeat, Idle]
