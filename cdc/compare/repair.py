"""`cdc compare --repair`: publish the changes that make the target equal its source.

For one table's report: every missing or different key becomes an ``op: r``
record carrying the source's current row; every extra key becomes an
``op: d`` record carrying the target's row as ``before``. They go into the
source's change stream as ONE transaction (BEGIN ... END) through the
ordinary Publisher, so the apply job treats them like any other change and
the target never sees half a repair. The END carries the resume state the
stream's tail already had, so a daemon restarted afterwards resumes where it
was: a repair never moves the checkpoint.

It takes the stream's writer lease (cdc.publish.opening, as the daemon and
``cdc source skip`` do): a daemon still running for the source is fenced
and stops, and the repair's records carry the lease's epoch. Restart the
daemon afterwards. Tables without a primary key are refused (which copy of
a duplicate row to delete is ambiguous).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from cdc.compare.endpoints import Endpoint
from cdc.compare.errors import CompareError
from cdc.compare.fingerprint import quote
from cdc.compare.merge import DIFFERENT, EXTRA, MISSING
from cdc.compare.report import TableReport
from cdc.compare.shapes import TableShape, describe
from cdc.compare.table_diff import split_name
from cdc.schema.logical import LogicalType
from cdc.schema.values import select_expr, stream_value, value_kind
from cdc.stream.events import Begin, Change, Column, Commit, TableId, TableSchema

BATCH = 500
# the compare family of a column as a logical type: enough for the transforms' checks (cdc/transforms/mapper.py)
_LOGICAL = {"int": LogicalType("integer"), "string": LogicalType("string"), "bool": LogicalType("boolean"),
            "decimal": LogicalType("decimal"), "float": LogicalType("double"), "binary": LogicalType("binary"),
            "date": LogicalType("date"), "datetime": LogicalType("timestamp"), "time": LogicalType("time"),
            "timestamptz": LogicalType("timestamp_tz", time_zone="utc"), "json": LogicalType("other"), "other": LogicalType("other")}


def fetch_rows(ep: Endpoint, conn, shape: TableShape, key_cols: list[str], keys: list[tuple]) -> Iterator[dict]:
    """The rows of ``keys`` (JSON-ready values), in batches of BATCH keys."""
    kinds = [value_kind(c.type, c.family, ep.dialect) for c in shape.columns]
    cols = ", ".join(select_expr(quote(ep.dialect, c.name), k) for c, k in zip(shape.columns, kinds))
    table = f"{quote(ep.dialect, shape.schema)}.{quote(ep.dialect, shape.table)}"
    ph = ep.placeholder
    one = "(" + " AND ".join(f"{quote(ep.dialect, k)} = {ph}" for k in key_cols) + ")"
    for i in range(0, len(keys), BATCH):
        batch = keys[i:i + BATCH]
        sql = f"SELECT {cols} FROM {table} WHERE " + " OR ".join([one] * len(batch))
        params = tuple(v for k in batch for v in k)
        for row in ep.query(conn, sql, params):
            yield {c.name: stream_value(v, k) for c, v, k in zip(shape.columns, row, kinds)}


def repair(config, source_name: str, src_ep: Endpoint, tgt_ep: Endpoint, report: TableReport,
           publisher=None, transforms=None) -> int:
    """Publish one transaction that repairs ``report``'s table; return the number of changes.

    ``transforms`` (the source's cdc.transforms.mapper.SourceTransforms): the source rows are filtered and shaped
    as the daemon shapes them before they are published (no clear value of a masked or left-out column reaches
    Kafka, computed columns are computed; a row the filter keeps out is a delete of its key); the target's rows
    (deletes) are already shaped. A soft-delete or history target (apply[].tables[].mode) turns the records
    into its own rows as it does any change's (streaming/apply/target_modes.py)."""
    if report.mode == "full-row":
        raise CompareError(f"cannot repair {report.source_table}: it has no primary key, so which copy of a row "
                           "to delete or keep is ambiguous", table=report.source_table)
    own = publisher is None
    lease = None
    if own:  # with the writer lease, like the daemon and `cdc source skip` (a running daemon is fenced)
        from cdc.publish.opening import open_publisher

        publisher, lease = open_publisher(config.kafka, source_name, "repair")
    src_conn, tgt_conn = src_ep.connect(), tgt_ep.connect()
    try:
        resume = publisher.recover()
        s_shape = describe(src_ep.dialect, src_conn, *split_name(report.source_table, src_ep.default_schema))
        t_shape = describe(tgt_ep.dialect, tgt_conn, *split_name(report.target_table, tgt_ep.default_schema))
        key = list(report.key_columns)
        t_key = [next(c.name for c in t_shape.columns if c.name.lower() == k.lower()) for k in key]
        table = TableId(s_shape.schema, s_shape.table)
        schema = TableSchema(table, tuple(Column(c.name, c.type, c.nullable, None, _LOGICAL.get(c.family))
                                          for c in s_shape.columns), tuple(key))
        mapper = transforms.mapper(schema) if transforms else None
        shaped = schema if mapper is None else mapper.schema
        now = int(time.time() * 1000)
        txid = f"repair:{table}:{now}"
        publisher.publish(Begin(txid, now))
        n = 0
        upserts = report.keys(MISSING) + report.keys(DIFFERENT)
        for row in fetch_rows(src_ep, src_conn, s_shape, key, upserts):
            if mapper is not None:  # filtered on the clear row, then shaped: what the daemon would publish
                kept = mapper.rows([row])
                if not kept:  # it left the filter since the compare: the target must not hold it
                    before = {k: v for k, v in mapper.row(row).items() if k in report.key_columns}
                    publisher.publish(Change(table, "d", before, None, {"repair": True}, shaped))
                    n += 1
                    continue
                row = kept[0]
            publisher.publish(Change(table, "r", None, row, {"repair": True}, shaped))
            n += 1
        by_lower = {c.name.lower(): c.name for c in s_shape.columns}
        for row in fetch_rows(tgt_ep, tgt_conn, t_shape, t_key, report.keys(EXTRA)):
            before = {by_lower.get(k.lower(), k): v for k, v in row.items()}
            publisher.publish(Change(table, "d", before, None, {"repair": True}, shaped))
            n += 1
        publisher.publish(Commit(txid, now, resume=resume, position={"repair": True}))
        publisher.flush()
        return n
    finally:
        src_conn.close()
        tgt_conn.close()
        if own:
            from cdc.publish.opening import close_publisher

            close_publisher(publisher, lease)
