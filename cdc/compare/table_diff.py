"""Compare one table on two endpoints: plan, bucket pass, row pass.

Plan: read both catalogs, pair columns by name (case-insensitive), name
every type mismatch, choose the key (the source's primary key; none ->
full-row multiset mode with a warning) and the decimal rendering.

Row pass: each database computes ``key, md5(row)`` ordered by key (binary
order for strings); both streams are read through server-side cursors by
one prefetch thread per side, and cdc.compare.merge walks them once.

Bucket pass (single integer key, a database whose CompareDialect has
``buckets``: MySQL/PostgreSQL/DuckDB): each database
first folds its rows into buckets of ``(key - lo) / width`` holding
``count`` and the MD5 of the bucket's canonical row texts joined
(cdc.compare.fingerprint.bucket_digest_sql); only buckets whose
(count, digest) differ get a row pass over their key range. Each side
runs its slabs of buckets over ``parallel`` connections at once (the
databases fold rows on several cores), handed to the merge in key order.
Equal buckets
cost one row per bucket on the network, and the database runs MD5 once per
bucket instead of once per row, which is what makes compare of
mostly-equal tables cheap. A difference can hide only behind an MD5
collision.

Digest: MD5 where both databases have it. MySQL 9 has no MD5() (nor SHA1()): a
comparison with a side that lacks it fingerprints rows on both sides with the
first 32 hex characters of SHA-256 instead (each CompareDialect's ``sha256_sql``), row pass only
(the bucket digests are MD5 aggregates of the dialects).
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from cdc.compare.dialects import CompareDialect
from cdc.compare.endpoints import Endpoint
from cdc.compare.errors import CompareError
from cdc.compare.fingerprint import ColumnInfo, bucket_digest_sql, md5_sql, quote, row_text_sql
from cdc.compare.merge import merge, merge_multiset, walk
from cdc.compare.report import TableReport
from cdc.compare.shapes import TableShape, describe
from cdc.compare.transformed import computed_select, filter_sql, left_out, shape_columns, target_mode
from cdc.stream.events import TableId
from cdc.transforms.mapper import SourceTransforms

RANGES_PER_QUERY = 200
SLAB_BUCKETS = 128  # buckets per bucket-pass query
EXACT_BELOW = 100_000  # row estimates under this are replaced by COUNT(*)
# The row fingerprint when a side has no MD5 (MySQL 9): the first 32 hex characters of the
# SHA-256 of the UTF-8 row text, the same width as an MD5 so merge and reports are unchanged
# (each CompareDialect's ``sha256_sql``).
NO_MD5_ERRORS = (1046, 1305)  # MySQL 9: MD5 resolves as a stored function (no database / does not exist)
COMPATIBLE = {frozenset({"int", "bool"}), frozenset({"datetime", "timestamptz"}), frozenset({"int", "decimal"})}


@dataclass
class Side:
    endpoint: Endpoint
    shape: TableShape
    columns: list[ColumnInfo]  # fingerprinted columns, paired in order with the other side
    key: list[str]
    trim: frozenset[str]
    digest: str = "md5"  # or "sha256" when a side has no MD5 (module docstring)
    where: str = ""  # the source's row filter as SQL (sources[].transforms: cdc/compare/transformed.py)
    computed: str = ""  # the source's computed columns as select items (", CAST(...) AS name, ...")

    @property
    def dialect(self) -> str:
        return self.endpoint.dialect

    @property
    def sql(self) -> CompareDialect:
        return self.endpoint.compare

    def table_sql(self) -> str:
        q = lambda n: quote(self.dialect, n)
        if self.where or self.computed:  # only the rows the filter lets move, with the computed columns
            where = f" WHERE {self.where}" if self.where else ""
            return f"(SELECT *{self.computed} FROM {q(self.shape.schema)}.{q(self.shape.table)}{where}) cdc_shaped"
        return f"{q(self.shape.schema)}.{q(self.shape.table)}"

    def md5(self, columns: list[ColumnInfo] | None = None) -> str:
        """The row fingerprint of ``columns`` (default: the fingerprinted ones), 32 hex characters."""
        columns = self.columns if columns is None else columns
        if self.digest == "md5":
            return md5_sql(self.dialect, columns, self.trim)
        return self.sql.sha256_sql.format(row_text_sql(self.dialect, columns, self.trim))

    def text(self) -> str:
        """The row text the bucket digests join (string lengths in bytes: see row_text_sql)."""
        return row_text_sql(self.dialect, self.columns, self.trim, lengths="bytes")

    def order_by(self) -> str:
        return ", ".join(self.sql.order_key(quote(self.dialect, name), self.shape.column(name).family)
                         for name in self.key)


def split_name(name: str, default_schema: str | None) -> tuple[str, str]:
    schema, sep, table = name.rpartition(".")
    if not sep:
        if not default_schema:
            raise CompareError(f"table {name!r} needs a schema (db.table)", table=name)
        return default_schema, table
    return schema, table


def plan(src_ep: Endpoint, src_conn, src_name: str, tgt_ep: Endpoint, tgt_conn, tgt_name: str,
         report: TableReport, transforms: SourceTransforms | None = None, modes: Any = None) -> tuple[Side, Side]:
    """Pair the two tables' columns, name mismatches, choose key and rendering; ``transforms``: the source's
    (sources[].transforms): its columns are rendered as the stream shaped them (cdc/compare/transformed.py);
    ``modes``: the apply's target modes (streaming.apply.target_modes.TargetModes): soft-deleted rows are
    absent, the modes' columns are not compared, a history table is refused."""
    s_shape = describe(src_ep.dialect, src_conn, *split_name(src_name, src_ep.default_schema))
    t_shape = describe(tgt_ep.dialect, tgt_conn, *split_name(tgt_name, tgt_ep.default_schema))
    t_by = {c.name.lower(): c for c in t_shape.columns}
    s_table = TableId(s_shape.schema, s_shape.table)
    t_where = target_mode(modes, s_table, t_by, lambda n: quote(tgt_ep.dialect, n), report.warnings)
    dropped = left_out(transforms, s_table, [c.name for c in s_shape.columns])
    s_cols, t_cols, trim = [], [], set()
    for sc in s_shape.columns:
        if sc.name.lower() in dropped and sc.name.lower() not in t_by:
            report.warnings.append(f"column {sc.name}: left out by the source's transforms; not compared")
            continue
        tc = t_by.pop(sc.name.lower(), None)
        if tc is None:
            report.type_mismatches.append(f"column {sc.name}: in source ({sc.type}) but not in target; not compared")
            continue
        if {sc.family, tc.family} == {"decimal", "string"}:
            # a DECIMAL too wide for the target (DuckDB: VARCHAR holding the stream's exact text)
            dec = sc if sc.family == "decimal" else tc
            report.warnings.append(f"column {sc.name}: source {sc.type} vs target {tc.type}; the text holds the "
                                   "decimal: compared as decimals")
            sc, tc = replace(sc, family="decimal", scale=dec.scale), replace(tc, family="decimal", scale=dec.scale)
        if {sc.family, tc.family} == {"json", "string"}:
            # a JSON column held as text (DuckDB: VARCHAR holding the stream's compact text)
            report.warnings.append(f"column {sc.name}: source {sc.type} vs target {tc.type}; the text holds the "
                                   "JSON document: compared as JSON")
            sc, tc = replace(sc, family="json"), replace(tc, family="json")
        if sc.family == tc.family == "float" and sc.scale != tc.scale:
            digits = min(sc.scale or 15, tc.scale or 15)  # FLOAT on one side: its precision on both
            sc, tc = replace(sc, scale=digits), replace(tc, scale=digits)
        if sc.family != tc.family:
            how = ("compared as UTC instants" if {sc.family, tc.family} == {"datetime", "timestamptz"}
                   else "compared by canonical text")
            report.type_mismatches.append(
                f"column {sc.name}: source {sc.type} ({sc.family}) vs target {tc.type} ({tc.family}); {how}")
        elif sc.family == "decimal" and sc.scale != tc.scale:
            report.type_mismatches.append(
                f"column {sc.name}: source {sc.type} (scale {sc.scale}) vs target {tc.type} (scale {tc.scale}); "
                "compared with trailing zeros trimmed")
        if (sc.family == "decimal" or tc.family == "decimal") and \
                not (sc.family == tc.family == "decimal" and sc.scale == tc.scale and sc.scale is not None):
            trim.add(sc.name.lower())
        nullable = sc.nullable or tc.nullable  # both sides must agree on which flags exist
        s_cols.append(replace(sc, nullable=nullable))
        t_cols.append(replace(tc, nullable=nullable))
    computed = computed_select(transforms, s_table, lambda n: quote(src_ep.dialect, n))
    for name in list(computed):  # the source's computed columns: its select items against the target's columns
        tc = t_by.pop(name.lower(), None)
        if tc is None:
            report.warnings.append(f"computed column {name}: not in the target; not compared")
            del computed[name]
            continue
        s_cols.append(replace(tc, name=name, nullable=True))
        t_cols.append(replace(tc, nullable=True))
        if tc.family == "decimal":
            trim.add(name.lower())
    for tc in t_by.values():
        report.type_mismatches.append(f"column {tc.name}: in target ({tc.type}) but not in source; not compared")
    if not s_cols:
        raise CompareError(f"{src_name} and {tgt_name} have no column in common", table=src_name)
    key = list(s_shape.primary_key)
    if not key and t_shape.primary_key:
        key = [c for c in t_shape.primary_key]
    if key:
        names = {c.name.lower(): c.name for c in s_cols}
        missing = [k for k in key if k.lower() not in names]
        if missing:
            raise CompareError(f"key column(s) {missing} of {src_name} are not in both tables", table=src_name)
        t_names = {c.name.lower(): c.name for c in t_cols}
        s_key = [names[k.lower()] for k in key]
        t_key = [t_names[k.lower()] for k in key]
        if t_shape.primary_key and [k.lower() for k in t_shape.primary_key] != [k.lower() for k in s_key]:
            report.warnings.append(f"target key {list(t_shape.primary_key)} differs from source key {s_key}; "
                                   f"comparing by {s_key}")
    else:
        report.warnings.append(f"{src_name} has no primary key: compared by full-row fingerprint "
                               "(a changed row shows as one missing plus one extra)")
        s_key, t_key = [], []
    s_cols, t_cols = shape_columns(transforms, src_ep.compare, s_table, lambda n: quote(src_ep.dialect, n), s_cols,
                                   t_cols, s_key, report.warnings)
    s_trim = frozenset(c.name for c in s_cols if c.name.lower() in trim)
    t_trim = frozenset(c.name for c, s in zip(t_cols, s_cols) if s.name.lower() in trim)
    return (Side(src_ep, s_shape, s_cols, s_key, s_trim, where=filter_sql(transforms, s_table, report.warnings),
                 computed="".join(", " + item for item in computed.values())),
            Side(tgt_ep, t_shape, t_cols, t_key, t_trim, where=t_where))


def prefetch(rows: Iterable[tuple], chunk: int = 10_000, depth: int = 4) -> Iterator[tuple]:
    """Read ``rows`` in a background thread, ``depth`` chunks ahead (overlaps both databases)."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def pump() -> None:
        buf: list = []
        try:
            for r in rows:
                buf.append(r)
                if len(buf) >= chunk:
                    q.put(buf)
                    buf = []
                    if stop.is_set():
                        return
            q.put(buf)
            q.put(None)
        except BaseException as exc:  # noqa: BLE001 - hand the producer's error to the consumer
            q.put(exc)

    t = threading.Thread(target=pump, daemon=True, name="compare-prefetch")
    t.start()
    try:
        while True:
            item = q.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield from item
    finally:
        stop.set()
        while t.is_alive():  # drain so the pump can finish its put()
            try:
                q.get(timeout=0.05)
            except queue.Empty:
                pass


class TableCompare:
    """Compare one source table with one target table; ``run()`` returns the report."""

    def __init__(self, src_ep: Endpoint, src_name: str, tgt_ep: Endpoint, tgt_name: str, *,
                 bucket_rows: int = 64, chunk: int = 10_000, use_buckets: bool = True, parallel: int = 2,
                 advance: Callable[[int], None] | None = None, transforms: SourceTransforms | None = None,
                 modes: Any = None) -> None:
        self.transforms, self.modes = transforms, modes
        self.src_ep, self.tgt_ep = src_ep, tgt_ep
        self.src_name, self.tgt_name = src_name, tgt_name
        self.bucket_rows, self.chunk, self.use_buckets = bucket_rows, chunk, use_buckets
        self.parallel = max(1, parallel)  # connections per side for the bucket pass
        self.advance = advance or (lambda n: None)

    def run(self) -> TableReport:
        t0 = time.perf_counter()
        report = TableReport(self.src_name, self.tgt_name, ())
        # one connection per side: the bucket pass has read all its results before the row pass starts
        src_conn = self.src_ep.connect()
        try:
            tgt_conn = self.tgt_ep.connect()
        except BaseException:
            src_conn.close()
            raise
        try:
            self.s, self.t = plan(self.src_ep, src_conn, self.src_name, self.tgt_ep, tgt_conn, self.tgt_name,
                                  report, self.transforms, self.modes)
            self.src_conn, self.tgt_conn = src_conn, tgt_conn
            self._choose_digest()
            self._probe(report)
            report.key_columns = tuple(self.s.key)
            if not self.s.key:
                report.mode = "full-row"
                self._full_row(report)
            elif self.use_buckets and self.s.digest == "md5" and self._bucketable():
                report.mode = "bucket+row"
                self._buckets(report)
            else:
                report.mode = "row"
                self._rows(report, None)
        finally:
            src_conn.close()
            tgt_conn.close()
        report.seconds = time.perf_counter() - t0
        return report

    def _renders(self, side: Side, conn, columns: list[ColumnInfo]) -> str | None:
        """None when ``side``'s database renders ``columns`` (one row tried), else its error."""
        limit = side.sql.one_row()
        try:
            side.endpoint.query(conn, f"SELECT {side.md5(columns)} FROM {side.table_sql()} "
                                      f"{limit}")
            return None
        except Exception as exc:  # noqa: BLE001 - the database's own error class: reported per column
            return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__

    def _choose_digest(self) -> None:
        """SHA-256 on both sides when one side has no MD5 (MySQL 9), else MD5 (module docstring).

        (The SHA-256 spellings belong in the CompareDialects; they are here until cdc/compare/dialects/
        has moved.)"""
        for side, conn in ((self.s, self.src_conn), (self.t, self.tgt_conn)):
            try:
                side.endpoint.query(conn, f"SELECT {side.sql.md5(chr(39) * 2)}")
                continue
            except Exception as exc:  # noqa: BLE001 - the driver's own error class
                if not (exc.args and exc.args[0] in NO_MD5_ERRORS):
                    continue  # not the missing function (a database that needs FROM): _probe says what fails
            if not self.s.sql.sha256_sql or not self.t.sql.sha256_sql:
                raise CompareError(f"{self.src_name}: {side.endpoint.name} has no MD5() and "
                                   f"{self.s.dialect}/{self.t.dialect} have no common SHA-256", table=self.src_name)
            self.s.digest = self.t.digest = "sha256"
            return

    def _probe(self, report: TableReport) -> None:
        """Leave out (and report) the columns a database cannot render, so the rest is still compared.

        One query per side when every column renders (the usual case); else one per column. A key
        column that cannot be rendered is a CompareError: rows could not be paired."""
        for side, conn in ((self.s, self.src_conn), (self.t, self.tgt_conn)):
            if self._renders(side, conn, side.columns) is None:
                continue
            bad = {}
            for i, col in enumerate(side.columns):
                err = self._renders(side, conn, [col])
                if err is not None:
                    bad[i] = err
            for i, err in bad.items():
                name = side.columns[i].name
                if name in side.key:
                    raise CompareError(f"{self.src_name}: key column {name} ({side.columns[i].type}) cannot be "
                                       f"compared on {side.endpoint.name}: {err}", table=self.src_name, column=name)
                report.unsupported.append(f"column {name}: {side.columns[i].type} on {side.endpoint.name} "
                                          f"({side.dialect}) cannot be rendered ({err}); not compared")
            keep = [i for i in range(len(side.columns)) if i not in bad]
            for other in (self.s, self.t):
                other.columns = [other.columns[i] for i in keep]
            if not self.s.columns:
                raise CompareError(f"{self.src_name}: no column can be compared", table=self.src_name)

    def _bucketable(self) -> bool:
        return (len(self.s.key) == 1 and self.s.shape.column(self.s.key[0]).family == "int"
                and self.t.shape.column(self.t.key[0]).family == "int"
                and self.s.sql.buckets and self.t.sql.buckets)

    def _row_sql(self, side: Side, where: str = "") -> str:
        keys = ", ".join(quote(side.dialect, k) for k in side.key)
        return f"SELECT {keys}, {side.md5()} FROM {side.table_sql()}{where} ORDER BY {side.order_by()}"

    def _rows(self, report: TableReport, ranges: list[tuple[int, int]] | None) -> None:
        """Row pass over the whole table, or over the key ranges ``lo <= key < hi`` (sorted, disjoint)."""
        batches: list[list[tuple[int, int]] | None] = [None]
        if ranges is not None:
            batches = [ranges[i:i + RANGES_PER_QUERY] for i in range(0, len(ranges), RANGES_PER_QUERY)]
        for batch in batches:
            sqls = []
            for side in (self.s, self.t):
                where = ""
                if batch is not None:
                    k = quote(side.dialect, side.key[0])
                    where = " WHERE " + " OR ".join(f"({k} >= {int(a)} AND {k} < {int(b)})" for a, b in batch)
                sqls.append(self._row_sql(side, where))
            counts = [0, 0, 0]
            src = prefetch(self.src_ep.stream(self.src_conn, sqls[0], chunk=self.chunk), self.chunk)
            tgt = prefetch(self.tgt_ep.stream(self.tgt_conn, sqls[1], chunk=self.chunk), self.chunk)
            last = 0
            for d in merge(src, tgt, self.src_name, counts):
                report.diffs.append(d)
                if counts[0] - last >= self.chunk:
                    self.advance(counts[0] - last)
                    last = counts[0]
            self.advance(counts[0] - last)
            report.source_rows += counts[0]
            report.target_rows += counts[1]
            report.same += counts[2]

    def _full_row(self, report: TableReport) -> None:
        sqls = [f"SELECT h, COUNT(*) FROM (SELECT {side.md5()} AS h FROM {side.table_sql()}) x GROUP BY h ORDER BY h"
                for side in (self.s, self.t)]
        counts = [0, 0, 0]
        src = prefetch(self.src_ep.stream(self.src_conn, sqls[0], chunk=self.chunk), self.chunk)
        tgt = prefetch(self.tgt_ep.stream(self.tgt_conn, sqls[1], chunk=self.chunk), self.chunk)
        report.diffs.extend(merge_multiset(src, tgt, self.src_name, counts))
        self.advance(counts[0])
        report.source_rows, report.target_rows, report.same = counts

    def _bounds(self) -> tuple[int, int, int]:
        """(lowest key, highest key, estimated rows) over both sides: index ends plus catalog estimates.

        The row count only sizes the buckets, so the catalog's estimate is enough and
        costs nothing, where COUNT(*) would scan both tables once more.
        """
        lo, hi, n = None, None, 0
        for side, conn in ((self.s, self.src_conn), (self.t, self.tgt_conn)):
            k = quote(side.dialect, side.key[0])
            mn, mx = side.endpoint.query(conn, f"SELECT MIN({k}), MAX({k}) FROM {side.table_sql()}")[0]
            if mn is not None:
                lo = int(mn) if lo is None else min(lo, int(mn))
                hi = int(mx) if hi is None else max(hi, int(mx))
            n = max(n, self._estimate(side, conn))
        if lo is not None and n < EXACT_BELOW:  # small or never analysed: count (cheap when truly small)
            n = max(int(side.endpoint.query(conn, f"SELECT COUNT(*) FROM {side.table_sql()}")[0][0])
                    for side, conn in ((self.s, self.src_conn), (self.t, self.tgt_conn)))
        return (lo or 0), (hi if hi is not None else 0), n if lo is not None else 0

    @staticmethod
    def _estimate(side: Side, conn) -> int:
        schema, table = side.shape.schema, side.shape.table
        rows = side.endpoint.query(conn, side.sql.row_estimate_sql(), (schema, table))
        return max(0, int(rows[0][0] or 0)) if rows else 0

    def _bucket_sql(self, side: Side, lo: int, width: int, slab: tuple[int, int]) -> str:
        k = quote(side.dialect, side.key[0])
        bucket = side.sql.bucket_of(k, lo, width)
        other = self.t if side is self.s else self.s
        digest = bucket_digest_sql(side.dialect, side.text(), k, ordered=side.sql.ordered_digest_with(other.sql))
        return (f"SELECT {bucket} AS b, COUNT(*), {digest} FROM {side.table_sql()} "
                f"WHERE {k} >= {slab[0]} AND {k} < {slab[1]} GROUP BY {bucket} ORDER BY 1")

    def _bucket_stream(self, side: Side, conns: list, lo: int, hi: int, width: int) -> Iterator[tuple]:
        """(bucket, (count, digest)) in bucket order, one query per slab of SLAB_BUCKETS buckets.

        Slabs keep each GROUP BY small (MariaDB spills a big one to disk); the
        connections in ``conns`` run consecutive slabs at the same time (the
        database folds rows on as many cores), and the slabs are handed over in
        key order, at most two per connection ahead of the merge.
        """
        step = width * SLAB_BUCKETS
        idle: queue.Queue = queue.Queue()
        for c in conns:
            idle.put(c)

        def slab(start: int) -> list[tuple]:
            conn = idle.get()
            try:
                return side.endpoint.query(conn, self._bucket_sql(side, lo, width, (start, start + step)))
            finally:
                idle.put(conn)

        for rows in ordered_map(slab, range(lo, hi + 1, step), len(conns), ahead=2 * len(conns)):
            for b, c, digest in rows:
                yield int(b), (int(c), digest)

    def _extra_connections(self, lo: int, hi: int, width: int) -> tuple[list, list]:
        """Connections for the parallel bucket pass, beyond the one each side has (closed by the caller)."""
        slabs = -(-(hi - lo + 1) // (width * SLAB_BUCKETS))
        extra = min(self.parallel, max(1, slabs // 4)) - 1  # a connection costs ~30 ms: not for small tables
        s_more, t_more = [], []
        for _ in range(max(0, extra)):
            s_more.append(self.src_ep.connect())
            t_more.append(self.tgt_ep.connect())
        return s_more, t_more

    def _buckets(self, report: TableReport) -> None:
        lo, hi, n = self._bounds()
        if n == 0:
            return
        buckets = max(1, -(-n // self.bucket_rows))
        width = max(1, -(-(hi - lo + 1) // buckets))
        # both databases fold their rows at the same time, each over ``parallel`` connections
        s_more, t_more = self._extra_connections(lo, hi, width)
        try:
            s_rows = self._bucket_stream(self.s, [self.src_conn, *s_more], lo, hi, width)
            t_rows = self._bucket_stream(self.t, [self.tgt_conn, *t_more], lo, hi, width)
            equal_rows, differing = 0, []
            for key, s, t in walk(s_rows, t_rows, self.src_name + " (buckets)"):
                if s is not None and s == t:
                    equal_rows += s[0]
                    self.advance(s[0])
                else:
                    differing.append(key[0])
            s_rows.close()
            t_rows.close()
        finally:
            for c in s_more + t_more:
                c.close()
        report.source_rows += equal_rows
        report.target_rows += equal_rows
        report.same += equal_rows
        if len(differing) * width > max(n // 2, 10 * width):  # mostly different: one pass is cheaper
            report.source_rows = report.target_rows = report.same = 0
            report.rechecked_rows = hi - lo + 1
            self._rows(report, None)
            return
        ranges = [(lo + a * width, lo + (b + 1) * width) for a, b in _ranges(sorted(differing))]
        report.rechecked_rows = sum(b - a for a, b in ranges)
        self._rows(report, ranges)


def ordered_map(fn: Callable[[Any], Any], items: Iterable[Any], workers: int, ahead: int) -> Iterator[Any]:
    """``fn(item)`` for every item on ``workers`` threads, yielded in item order.

    At most ``ahead`` calls run or wait ahead of the consumer, so memory is
    bounded however long ``items`` is. An exception in ``fn`` is raised here, at
    its item's turn. Closing the generator cancels the calls not yet started
    and waits for the running ones (they may hold a connection).
    """
    pending: deque[Future] = deque()
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="compare-slab")
    try:
        it = iter(items)
        for item in it:
            pending.append(pool.submit(fn, item))
            if len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for f in pending:
            f.cancel()
        pool.shutdown(wait=True)


def _ranges(ids: list[int]) -> Iterator[tuple[int, int]]:
    """Coalesce sorted bucket ids into inclusive runs of consecutive ids."""
    start = prev = None
    for i in ids:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            yield start, prev
            start = prev = i
    if start is not None:
        yield start, prev


def compare_tables(src_ep: Endpoint, tgt_ep: Endpoint, pairs: list[tuple[str, str]], **kw: Any) -> list[TableReport]:
    return [TableCompare(src_ep, s, tgt_ep, t, **kw).run() for s, t in pairs]
