"""One stream record as a Spark row: the schema of the `cdc-stream` source.

``read()`` on executors turns each Kafka message into one row of
:data:`SCHEMA`; the apply engine on the driver turns rows back into
:class:`StreamRecord`. Row images travel as JSON text (rows are
heterogeneous; Spark columns are not). A message that does not decode is
NOT dropped: it becomes a row of kind ``UNDECODABLE`` with the error and
the raw bytes (base64, capped), and the engine stops there (or dead-letters).

``key`` is the record key's primary-key values as JSON text (the after-image's
key; the before-image's for a delete). An update that changes the primary key
also carries ``bkey``, the before-image's key in the same column order, so the
driver can reduce a batch to its net effect per key without decoding images.

``epoch`` is the record's writer epoch (its ``cdc.epoch`` header, cdc.stream.envelope.record_epoch: 0 without
one; null where a reader did not read headers): the structure check holds it to the epoch rules.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import orjson

from cdc.stream.envelope import ABORTED, BEGIN, END, HEARTBEAT, SCHEMA

DATA, UNDECODABLE = "data", "UNDECODABLE"
KINDS = (DATA, BEGIN, END, ABORTED, SCHEMA, HEARTBEAT, UNDECODABLE)

SCHEMA_DDL = ("part int, offset long, sequence long, kind string, txid string, tbl string, op string, "
              "key string, before string, after string, ts_ms long, meta string, error string, bkey string, "
              "torder long, epoch long")
FIELDS = ("part", "offset", "sequence", "kind", "txid", "tbl", "op", "key", "before", "after", "ts_ms",
          "meta", "error", "bkey", "torder", "epoch")
RAW_CAP = 4096

# packed rows (the ``packed`` option of the cdc-stream source): each row carries a run of records of one
# input partition as an Arrow IPC stream in :data:`FIELDS` order, so Spark moves a few large values
# instead of converting every record into its row and back again; :func:`unpack` restores the rows
PACKED_DDL = "part int, records int, arrow binary"
PACK_BYTES = 16 << 20  # at most this many bytes of Arrow buffers in one packed row


def _pack_options() -> Any:
    """Packed runs are zstd-compressed (Arrow IPC buffer compression): JSON row images shrink about 8x, so the
    JVM copies, holds and sends an eighth of the bytes between the Python workers and the driver, for a few
    ms of compression per 100,000 records; ``unpack`` needs nothing (IPC readers decompress)."""
    import pyarrow as pa
    return pa.ipc.IpcWriteOptions(compression="zstd")


def arrow_schema() -> Any:
    import pyarrow as pa
    s, i, l = pa.string(), pa.int32(), pa.int64()
    return pa.schema([("part", i), ("offset", l), ("sequence", l), ("kind", s), ("txid", s), ("tbl", s),
                      ("op", s), ("key", s), ("before", s), ("after", s), ("ts_ms", l), ("meta", s), ("error", s),
                      ("bkey", s), ("torder", l), ("epoch", l)])


def _row_bytes(batch: Any) -> Any:
    """Each row's bytes in Arrow buffers (string lengths + 4 offset bytes, fixed widths): numpy int64."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    sizes = np.zeros(batch.num_rows, dtype=np.int64)
    for column in batch.columns:
        if pa.types.is_string(column.type) or pa.types.is_binary(column.type):
            sizes += np.asarray(pc.fill_null(pc.binary_length(column), 0).to_numpy(zero_copy_only=False)) + 4
        else:
            sizes += max(1, column.type.bit_width // 8)
    return sizes


def pack(batches: Any) -> Any:
    """Yield one packed row (a one-row RecordBatch of PACKED_DDL) per run of at most PACK_BYTES of the
    record ``batches`` (RecordBatches of :func:`arrow_schema`; a single larger record alone), in order.
    Runs are cut on the rows' own sizes, so a batch of very unequal records never packs a run far above
    the bound (the job's Arrow batches of packed rows stay under the 2 GiB of a binary column)."""
    import numpy as np
    import pyarrow as pa

    for batch in batches:
        if not batch.num_rows:
            continue
        ends = np.cumsum(_row_bytes(batch))
        start = 0
        while start < batch.num_rows:
            base = int(ends[start - 1]) if start else 0
            stop = max(start + 1, int(np.searchsorted(ends, base + PACK_BYTES, side="right")))
            part = batch.slice(start, stop - start)
            start = stop
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, part.schema, options=_pack_options()) as w:
                w.write_batch(part)
            buf = sink.getvalue()
            blob = pa.Array.from_buffers(pa.binary(), 1, [None, pa.array([0, buf.size], pa.int32()).buffers()[1], buf])
            yield pa.RecordBatch.from_arrays([pa.array([part.column(0)[0].as_py()], pa.int32()),
                                              pa.array([part.num_rows], pa.int32()), blob],
                                             names=["part", "records", "arrow"])


def unpack(table: Any) -> Any:
    """The record rows (a pyarrow Table of :func:`arrow_schema`) of a collected table of packed rows; a packed
    row that does not hold the records it says it holds is an error, never a silent gap."""
    import pyarrow as pa

    parts = [pa.ipc.open_stream(v.as_buffer()).read_all()
             for chunk in table.column("arrow").chunks for v in chunk if v.is_valid]
    out = pa.concat_tables(parts) if parts else arrow_schema().empty_table()
    said = sum(n or 0 for n in table.column("records").to_pylist())
    if out.num_rows != said:
        raise ValueError(f"packed rows hold {out.num_rows} records but say {said}: the cdc-stream source's "
                         "packed transfer is broken")
    return out


def _dumps(v: Any) -> str | None:
    return None if v is None else orjson.dumps(v).decode()


def to_row(part: int, offset: int, key_bytes: bytes | None, value_bytes: bytes | None, key_serde: Any,
           value_serde: Any, epoch: int | None = None) -> tuple:
    """Decode one Kafka message into a row tuple in FIELDS order (never raises). ``epoch``: its writer epoch
    (None: not read)."""
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
            if op not in ("c", "u", "d", "r", "t", "x"):
                raise ValueError(f"data record with unknown op {op!r}")
            if op == "x":  # a resync range (cdc.stream.resync_range): the range travels in ``meta``
                return (part, offset, seq, DATA, (value.get("transaction") or {}).get("id"), table, op, None, None,
                        None, src.get("ts_ms"), src.get("resync"), None, None, None, epoch)
            pk = (key or {}).get("key")
            before = value.get("before")
            bkey = None
            if op == "u" and isinstance(pk, dict) and isinstance(before, dict):
                old = {c: before.get(c) for c in pk}
                if old != pk:
                    bkey = _dumps(old)
            where = value.get("transaction") or {}
            order = where.get("total_order")
            return (part, offset, seq, DATA, where.get("id"), table, op, _dumps(pk), _dumps(before),
                    _dumps(value.get("after")), src.get("ts_ms"), None, None, bkey,
                    order if type(order) is int else None, epoch)
        if status not in KINDS:
            raise ValueError(f"unknown record status {status!r}")
        return (part, offset, seq, status, value.get("id"), value.get("table"), None, None, None, None,
                value.get("ts_ms"), _dumps(value), None, None, None, epoch)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a visible row
        raw = base64.b64encode((value_bytes or b"")[:RAW_CAP]).decode()
        return (part, offset, None, UNDECODABLE, None, None, None, None, None, None, None, raw,
                f"{type(exc).__name__}: {exc}", None, None, epoch)


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
    bkey: str | None = None
    torder: int | None = None  # a data record's transaction.total_order (its place in its transaction)
    epoch: int | None = None  # its writer epoch (header cdc.epoch); None: not read

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StreamRecord:
        return cls(**{f: d.get(f) for f in FIELDS})

    def meta_dict(self) -> dict[str, Any]:
        return orjson.loads(self.meta) if self.meta else {}


class Batch:
    """One micro-batch as columns (a pyarrow Table of :data:`FIELDS`), in stream order.

    Built from ``df.toArrow()`` (or from StreamRecords in tests). The engine
    reads whole columns (sequences, kinds, tables) as numpy arrays and turns
    only the records it walks (markers, TRUNCATEs) into StreamRecords; the
    record-by-record path asks for :meth:`records`."""

    NO_SEQUENCE = -(2 ** 62)  # stands for the missing sequence of an UNDECODABLE record

    def __init__(self, table: Any) -> None:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        schema = arrow_schema()
        if table.num_rows and table.schema.names != list(FIELDS):
            table = pa.table({f: table.column(f) if f in table.schema.names else pa.nulls(table.num_rows,
                              schema.field(f).type) for f in FIELDS})
        if table.num_rows > 1:
            part = table.column("part").to_numpy()
            off = table.column("offset").to_numpy()
            if (part[1:] != part[:-1]).any() or (off[1:] < off[:-1]).any():
                table = table.sort_by([("part", "ascending"), ("offset", "ascending")])
        self.table = table
        self.n = table.num_rows
        seq = table.column("sequence") if self.n else pa.array([], pa.int64())
        self.seq = np.asarray(pc.fill_null(seq, self.NO_SEQUENCE).to_numpy(), dtype=np.int64) \
            if self.n else np.empty(0, np.int64)
        self.offset = table.column("offset").to_numpy() if self.n else np.empty(0, np.int64)
        self.is_data = pc.fill_null(pc.equal(table.column("kind"), DATA), False).to_numpy(zero_copy_only=False) \
            if self.n else np.empty(0, bool)
        self._records: list[StreamRecord] | None = None
        self._columns: Any = None
        self._table_index: tuple[list[str], Any] | None = None

    @classmethod
    def from_records(cls, records: list[StreamRecord]) -> Batch:
        import pyarrow as pa

        schema = arrow_schema()
        return cls(pa.table({f: pa.array([getattr(r, f) for r in records], schema.field(f).type) for f in FIELDS},
                            schema=schema))

    def head(self, n: int) -> Batch:
        """The batch of the first ``n`` records."""
        return Batch(self.table.slice(0, n))

    def columns(self, names: tuple[str, ...]) -> Any:
        """The table with only ``names``, each column in one piece (cheap to filter and take)."""
        if self._columns is None or self._columns.schema.names != list(names):
            self._columns = self.table.select(list(names)).combine_chunks()
        return self._columns

    def table_index(self) -> tuple[list[str], Any]:
        """(the distinct ``tbl`` values, each record's index into them; records without a table get
        ``len(names)``), computed once per batch."""
        if self._table_index is None:
            import numpy as np
            import pyarrow.compute as pc

            if not self.n:
                self._table_index = ([], np.zeros(0, dtype=np.int64))
            else:
                enc = pc.dictionary_encode(self.table.column("tbl")).combine_chunks()
                names = enc.dictionary.to_pylist()
                codes = enc.indices.fill_null(len(names)) if enc.indices.null_count else enc.indices
                self._table_index = (names, codes.to_numpy(zero_copy_only=False))
        return self._table_index

    def records(self) -> list[StreamRecord]:
        if self._records is None:
            cols = [self.table.column(f).to_pylist() for f in FIELDS]
            self._records = [StreamRecord(*vals) for vals in zip(*cols)]
        return self._records

    def records_at(self, positions: Any) -> list[StreamRecord]:
        import numpy as np

        if self._records is not None:
            return [self._records[int(i)] for i in positions]
        if not len(positions):
            return []
        if len(positions) <= 16:  # a few markers: slices are views, a take copies whole columns of many chunks
            import pyarrow as pa

            part = pa.concat_tables([self.table.slice(int(i), 1) for i in positions])
        else:
            part = self.table.take(np.asarray(positions, dtype=np.int64))
        cols = [part.column(f).to_pylist() for f in FIELDS]
        return [StreamRecord(*vals) for vals in zip(*cols)]
