"""Decoding a run of Kafka messages into stream rows, a batch at a time.

:func:`streaming.stream.records.to_row` decodes one message in Python (~8 us a record
with the Arrow build). For JSON records this module does the same for a whole
chunk in DuckDB (yyjson, one pass, ~2 us a record) and falls back to ``to_row``
only for the records DuckDB's answer cannot be trusted with: not UTF-8, not a
JSON object, no integer ``sequence``, an unknown status or op, a key without
its table. Those become exactly what ``to_row`` makes of them (usually an
``UNDECODABLE`` row naming the error), so both paths agree record for record.

Row images, keys and ``bkey`` are JSON text as DuckDB writes it. Keys are
compared as text within a batch (net effect per key), so every key of a batch
is written by the same writer: the before-image key of a key-changing update
is re-serialized by DuckDB too.
"""

from __future__ import annotations

from typing import Any

import orjson

from streaming.stream.records import DATA, FIELDS, KINDS, UNDECODABLE, arrow_schema, to_row

_CONTROL = "[" + ", ".join(f"'{k}'" for k in KINDS if k not in (DATA, UNDECODABLE)) + "]"

# f: the value's fields; kk: the key's. A row is "slow" when to_row must decide it. An integer sequence
# means the value is a JSON object, a string table in the key that the key is one. {src} is the input:
# the messages themselves, or (when some are not JSON at all) with what is not JSON as NULL (so slow).
_QUERY = f"""
WITH j AS (
    SELECT "offset", v,
           json_extract(v, ['$.sequence', '$.status', '$.op', '$.before', '$.after', '$.transaction.id',
                            '$.source.ts_ms', '$.id', '$.table', '$.ts_ms', '$.transaction.total_order']) AS f,
           json_extract(k, ['$.table', '$.key']) AS kk
    FROM {{src}}
), t AS (
    SELECT *, f[2] ->> '$' AS status, f[3] ->> '$' AS op FROM j
)
SELECT "offset",
       TRY_CAST(f[1] AS BIGINT) AS sequence,
       coalesce(status, '{DATA}') AS kind,
       CASE WHEN status IS NULL THEN f[6] ->> '$' ELSE f[8] ->> '$' END AS txid,
       CASE WHEN status IS NULL THEN kk[1] ->> '$' ELSE f[9] ->> '$' END AS tbl,
       CASE WHEN status IS NULL THEN op END AS op,
       CASE WHEN status IS NULL THEN nullif(kk[2]::VARCHAR, 'null') END AS "key",
       CASE WHEN status IS NULL THEN nullif(f[4]::VARCHAR, 'null') END AS before,
       CASE WHEN status IS NULL THEN nullif(f[5]::VARCHAR, 'null') END AS after,
       TRY_CAST(CASE WHEN status IS NULL THEN f[7] ELSE f[10] END AS BIGINT) AS ts_ms,
       CASE WHEN status IS NOT NULL THEN v END AS meta,
       CASE WHEN status IS NULL AND json_type(f[11]) IN ('UBIGINT', 'BIGINT') THEN TRY_CAST(f[11] AS BIGINT) END
           AS torder,
       coalesce(json_type(f[1]) NOT IN ('UBIGINT', 'BIGINT')
                OR (status IS NULL AND (json_type(kk[1]) IS DISTINCT FROM 'VARCHAR'
                                        OR op IS NULL OR op NOT IN ('c', 'u', 'd', 'r', 't')))
                OR (status IS NOT NULL AND status NOT IN {_CONTROL}), true) AS slow
FROM t
"""
_FAST = _QUERY.format(src="src")
_CHECKED = _QUERY.format(src='(SELECT "offset", CASE WHEN json_valid(k) THEN k END AS k, '
                                'CASE WHEN json_valid(v) THEN v END AS v FROM src)')


class JsonChunkDecoder:
    """Decodes chunks of JSON-encoded messages of one topic partition (one DuckDB connection)."""

    def __init__(self, partition: int) -> None:
        import duckdb

        from cdc.stream.serde import get_serdes

        self.partition = partition
        self.serdes = get_serdes("json")
        self.con = duckdb.connect()
        self.con.execute("SET threads = 1")  # one per Spark task: the tasks are the parallelism

    def decode(self, offsets: list[int], keys: list[bytes | None], values: list[bytes | None],
               epochs: list[int] | None = None) -> Any:
        """An Arrow RecordBatch of streaming.stream.records rows (FIELDS order) for these messages (``epochs``:
        their writer epochs; None: not read)."""
        import duckdb
        import pyarrow as pa
        import pyarrow.compute as pc

        n = len(offsets)
        if not n:
            return pa.RecordBatch.from_pylist([], schema=arrow_schema())
        ks, vs = _texts(keys), _texts(values)
        if ks is None or vs is None:  # some bytes are not UTF-8: NULL here (so slow: to_row decides them)
            ks, vs = _texts_checked(keys), _texts_checked(values)
        src = pa.table({"offset": pa.array(offsets, pa.int64()), "k": ks, "v": vs})
        self.con.register("src", src)
        try:
            try:
                out = self.con.sql(_FAST).to_arrow_table()
            except duckdb.InvalidInputException:  # some message is not JSON: decode the others, to_row those
                out = self.con.sql(_CHECKED).to_arrow_table()
        finally:
            self.con.unregister("src")
        # one thread, projections only: DuckDB keeps the input order (preserve_insertion_order)
        redo = pc.indices_nonzero(out.column("slow")).to_pylist()
        table = out.drop_columns(["slow"])
        table = table.append_column("part", pa.repeat(pa.scalar(self.partition, pa.int32()), n))
        table = table.append_column("error", pa.nulls(n, pa.string()))
        table = table.append_column("bkey", self._bkeys(table))
        table = table.append_column("epoch", pa.nulls(n, pa.int64()) if epochs is None else pa.array(epochs, pa.int64()))
        table = table.select(list(FIELDS)).cast(arrow_schema())
        if redo:
            table = self._redo(table, redo, offsets, keys, values, epochs)
        return table.combine_chunks().to_batches()[0]

    def _bkeys(self, table: Any) -> Any:
        """``bkey`` per row: the before-image's key where an update changed the primary key, else null."""
        import pyarrow as pa
        import pyarrow.compute as pc

        n = table.num_rows
        upd = pc.fill_null(pc.equal(table.column("op"), "u"), False)
        if not pc.any(upd).as_py():
            return pa.nulls(n, pa.string())
        idx = pc.indices_nonzero(upd).to_pylist()
        keys = table.column("key").take(idx).to_pylist()
        befores = table.column("before").take(idx).to_pylist()
        changed: list[int] = []
        olds: list[str] = []
        for i, k, b in zip(idx, keys, befores):
            try:
                pk, before = orjson.loads(k) if k else None, orjson.loads(b) if b else None
            except orjson.JSONDecodeError:
                continue
            if isinstance(pk, dict) and isinstance(before, dict):
                old = {c: before.get(c) for c in pk}
                if old != pk:
                    changed.append(i)
                    olds.append(orjson.dumps(old).decode())
        out: list[str | None] = [None] * n
        if changed:  # written by DuckDB like every other key of the batch
            self.con.register("olds", pa.table({"o": pa.array(olds, pa.string())}))
            try:
                texts = self.con.execute("SELECT json(o)::VARCHAR FROM olds").fetchall()
            finally:
                self.con.unregister("olds")
            for i, (text,) in zip(changed, texts):
                out[i] = text
        return pa.array(out, pa.string())

    def _redo(self, table: Any, rows: list[int], offsets: list[int], keys: list, values: list,
              epochs: list[int] | None = None) -> Any:
        """``table`` with the rows at ``rows`` replaced by what to_row makes of their messages."""
        import pyarrow as pa
        import pyarrow.compute as pc

        schema = arrow_schema()
        kd, vd = self.serdes
        redone = [to_row(self.partition, offsets[i], keys[i], values[i], kd, vd, None if epochs is None else epochs[i])
                  for i in rows]
        fixed = pa.table({f: pa.array([r[j] for r in redone], schema.field(f).type) for j, f in enumerate(FIELDS)},
                         schema=schema)
        keep = pc.invert(pc.is_in(pa.array(range(table.num_rows), pa.int64()), value_set=pa.array(rows, pa.int64())))
        return pa.concat_tables([table.filter(keep), fixed]).sort_by([("offset", "ascending")])


def _texts(raw: list[bytes | None]) -> Any:
    """The messages as an Arrow string column, or None when some are not UTF-8."""
    import pyarrow as pa

    try:
        return pa.array(raw, pa.binary()).cast(pa.string())
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None


def _texts_checked(raw: list[bytes | None]) -> Any:
    """The messages as an Arrow string column, NULL where not UTF-8."""
    import pyarrow as pa

    out: list[str | None] = []
    for b in raw:
        try:
            out.append(None if b is None else b.decode())
        except UnicodeDecodeError:
            out.append(None)
    return pa.array(out, pa.string())
