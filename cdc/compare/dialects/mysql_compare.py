"""MariaDB / MySQL for cdc compare (PyMySQL)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cdc.compare.columns import ColumnInfo, Family
from cdc.compare.dialects.dialect_interface import CompareDialect, DsnEndpoint, _query
from cdc.config.dsn import mysql_connect_args, parse_mysql_dsn

_SPATIAL = ("geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
            "geometrycollection", "geomcollection")
_UTF8 = ("utf8mb4", "utf8", "utf8mb3")


class MySqlCompare(CompareDialect):
    """CONCAT_WS converts numbers and temporals to their text itself: no CAST (it costs per row).
    Zero dates render as NULL; the session time zone is UTC (``connect``)."""
    sha256_sql = "LEFT(SHA2({}, 256), 32)"

    plain_timestamp: Family = "timestamptz"  # MySQL TIMESTAMP is an instant (stored in UTC)

    # ---- fingerprints --------------------------------------------------------------------------
    def int_text(self, c: str, col: ColumnInfo) -> str:
        # ZEROFILL ('001'), YEAR ('0000') and BIT (bytes) have a text of their own: take the number
        t = col.type.lower()
        return f"({c} + 0)" if "zerofill" in t or t.startswith(("year", "bit")) else c

    bool_text = int_text

    def decimal_text(self, c: str, col: ColumnInfo, trim: bool) -> str:
        if "zerofill" in col.type.lower():
            c = f"({c} + 0)"
        if trim and (col.scale or 0) > 0:
            return f"TRIM(TRAILING '.' FROM TRIM(TRAILING '0' FROM CAST({c} AS CHAR)))"
        return c

    def float_text(self, c: str, col: ColumnInfo) -> str:
        return self.float_digits(f"({c} + 0e0)", col.scale or 15)  # FLOAT widened exactly

    def string_text(self, c: str, col: ColumnInfo) -> str:
        if col.charset and col.charset.lower() not in _UTF8:
            return f"CONVERT({c} USING utf8mb4)"
        return c

    def binary_text(self, c: str, col: ColumnInfo) -> str:
        return f"LOWER(HEX({c}))"

    def date_text(self, c: str, col: ColumnInfo) -> str:
        return f"IF(MONTH({c}) = 0 OR DAYOFMONTH({c}) = 0, NULL, {c})"  # zero dates are NULL

    def datetime_text(self, c: str, col: ColumnInfo) -> str:  # session time_zone is '+00:00' (connect)
        text = c if col.scale == 6 else f"DATE_FORMAT({c}, '%Y-%m-%d %H:%i:%s.%f')"
        return f"IF(MONTH({c}) = 0 OR DAYOFMONTH({c}) = 0, NULL, {text})"  # zero dates are NULL

    timestamptz_text = datetime_text

    def time_text(self, c: str, col: ColumnInfo) -> str:
        return (f"(IF({c} < 0, -1, 1) * (((HOUR({c}) * 60 + MINUTE({c})) * 60 + SECOND({c})) * 1000000"
                f" + MICROSECOND({c})))")

    def other_text(self, c: str, col: ColumnInfo) -> str:
        return f"CAST({c} AS CHAR)"

    def json_text(self, c: str, col: ColumnInfo) -> str:
        # MySQL prints JSON spaced, keys sorted by length then bytes; a text column is parsed first (MySQL 5.7+:
        # MariaDB has no CAST AS JSON and fails the query: never a false EQUAL)
        return f"CAST({c} AS CHAR)" if col.type.lower() == "json" else f"CAST(CAST({c} AS JSON) AS CHAR)"

    def float_digits(self, x: str, digits: int) -> str:
        e, k = self._float_exponents(x, digits)
        half = f"({k} DIV 2)"
        scaled = f"({x} * POW(10, {half}) * POW(10, {k} - {half}))"
        m = f"CAST(SIGN({scaled}) * FLOOR(ABS({scaled}) + 0.5) AS SIGNED)"
        return f"IF({x} = 0, '0', CONCAT({m}, 'e', CAST({e} AS SIGNED)))"

    def null_flag(self, col: ColumnInfo, rendered: str) -> str:
        # a zero date renders as NULL: its flag says NULL too
        shown = col.expr is not None or col.family in ('date', 'datetime', 'timestamptz')
        return f"ISNULL({rendered if shown else self.quote(col.name)})"

    # ---- bucket pass and row pass --------------------------------------------------------------
    def bucket_digest(self, text: str, order_by: str, ordered: bool) -> str:
        # group_concat_max_len is raised by connect()
        order = f" ORDER BY {order_by}" if ordered else ""
        return f"MD5(GROUP_CONCAT({text}{order} SEPARATOR '\\n'))"

    def integer_division(self) -> str:
        return "DIV"

    def ordered_digest_with(self, other: CompareDialect) -> bool:
        # two MariaDB sides hand their rows over in the same order (cdc.compare.fingerprint.bucket_digest_sql)
        return not isinstance(other, MySqlCompare)

    def row_estimate_sql(self) -> str:
        ph = self.sql.param
        return f"SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = {ph} AND TABLE_NAME = {ph}"

    def order_key(self, c: str, family: Family) -> str:
        return f"CAST(CONVERT({c} USING utf8mb4) AS BINARY)" if family == "string" else c

    def one_row(self) -> str:
        return "LIMIT 1"

    # ---- catalog -------------------------------------------------------------------------------
    own_types = ((("varchar", "tinytext", "mediumtext", "longtext"), "string", None),
                 (("varbinary", "tinyblob", "mediumblob", "longblob"), "binary", None))

    def own_family(self, t: str) -> tuple[Family, int | None] | None:
        if t.startswith(("bit", "year")):
            return "int", None  # rendered as their number (fingerprint)
        if t.startswith(_SPATIAL):
            return "binary", None  # the internal value (SRID + WKB), which the stream carries
        if t == "json":
            return "json", None  # MySQL's JSON (MariaDB's is LONGTEXT: a string)
        if t.startswith("vector"):
            return "binary", None  # MySQL 9: the stored float32 bytes, which the stream carries
        return self.spelled_family(t)

    def value_kind(self, type_text: str, family: Family) -> str:
        """MySQL's FLOAT (float32: selected widened, cdc.schema.values.select_expr), BIT, JSON and VECTOR, whose values
        the binlog library and PyMySQL hand differently; ``type_text``: the catalog's COLUMN_TYPE."""
        t = type_text.lower().lstrip()
        if family == "float" and t.startswith("float"):
            return "float32"
        if t.startswith("bit"):
            return "bit"
        if family == "json" and t == "json":
            return "json"
        if t.startswith("vector"):
            return "vector"
        return family

    def describe_columns(self, conn: Any, schema: str, table: str) -> tuple[list[ColumnInfo], list[tuple]]:
        rows = _query(conn, "SELECT COLUMN_NAME, COLUMN_TYPE, NUMERIC_SCALE, DATETIME_PRECISION, IS_NULLABLE, "
                            "CHARACTER_SET_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=%s AND "
                            "TABLE_NAME=%s ORDER BY ORDINAL_POSITION", (schema, table))
        pk = _query(conn, "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA=%s "
                          "AND TABLE_NAME=%s AND CONSTRAINT_NAME='PRIMARY' ORDER BY ORDINAL_POSITION",
                    (schema, table))
        cols = []
        for name, ctype, nscale, dprec, nullable, charset in rows:
            family, sc = self.classify(ctype, nscale if nscale is not None else dprec)
            cols.append(ColumnInfo(name, ctype, family, sc, nullable == "YES", charset))
        return cols, pk

    # ---- endpoints -----------------------------------------------------------------------------
    def connect(self, endpoint: str, params: dict[str, Any]) -> Any:
        import pymysql
        conn = pymysql.connect(**params, autocommit=True, charset="utf8mb4")
        with conn.cursor() as cur:
            cur.execute("SET SESSION time_zone = '+00:00'")
            cur.execute("SET SESSION group_concat_max_len = 4294967295")  # bucket digests: never truncate
        return conn

    def stream(self, conn: Any, sql: str, params: tuple, chunk: int) -> Iterator[tuple]:
        import pymysql.cursors
        cur = conn.cursor(pymysql.cursors.SSCursor)  # server-side: unbuffered
        try:
            cur.execute(sql, params or None)
            while rows := cur.fetchmany(chunk):
                yield from rows
        finally:
            cur.close()

    def dsn_params(self, endpoint: str, dsn: str, tls: Any, login: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        parsed = parse_mysql_dsn(dsn, f"endpoint {endpoint}")
        return {**parsed.connect_args(tls), **login}, parsed.database

    def source_params(self, src: Any) -> dict[str, Any] | None:
        host, _, port = src.hosts[0].rpartition(":")
        return {**mysql_connect_args(host, int(port), src.user, src.password.get_secret_value(), tls=src.tls),
                "connect_timeout": int(src.connect_timeout_s)}

    def target_params(self, tgt: Any, from_dsn: DsnEndpoint) -> tuple[str, dict[str, Any], str | None] | None:
        ep = from_dsn(tgt.name, tgt.dsn or "", tgt.tls, **tgt.login_kwargs())  # the DSN says which database
        return ep.dialect, ep.params, tgt.schema_ or ep.default_schema
