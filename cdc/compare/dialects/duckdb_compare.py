"""DuckDB for cdc compare (the duckdb module; a connection is its own cursor)."""

from __future__ import annotations

from typing import Any

from cdc.compare.columns import ColumnInfo
from cdc.compare.dialects.dialect_interface import CompareDialect, DsnEndpoint

_TRIM = "rtrim(rtrim(CAST({x} AS VARCHAR), '0'), '.')"
# a run of whole JSON strings and other characters up to the next ',' or ':' outside a string: spaced after it
_JSON_SEPARATOR = r'''((?:"(?:[^"\\]|\\.)*"|[^",:])*)([,:])'''



class DuckDbCompare(CompareDialect):
    own_types = ((("varchar",), "string", None), (("varbinary",), "binary", None), (("json",), "json", None))
    """Values CAST to VARCHAR; concat_ws skips NULLs like MySQL's; timestamptz rendered in UTC."""
    sha256_sql = "left(sha256({}), 32)"

    # ---- fingerprints --------------------------------------------------------------------------
    def int_text(self, c: str, col: ColumnInfo) -> str:
        return f"CAST({c} AS VARCHAR)"

    def bool_text(self, c: str, col: ColumnInfo) -> str:
        return f"(CASE WHEN {c} THEN '1' ELSE '0' END)"

    def decimal_text(self, c: str, col: ColumnInfo, trim: bool) -> str:
        if trim and (col.scale or 0) > 0:
            return _TRIM.format(x=c)
        return f"CAST({c} AS VARCHAR)"

    def float_text(self, c: str, col: ColumnInfo) -> str:
        return self.float_digits(f"CAST({c} AS DOUBLE)", col.scale or 15)

    def string_text(self, c: str, col: ColumnInfo) -> str:
        return c

    def binary_text(self, c: str, col: ColumnInfo) -> str:
        return f"lower(hex({c}))"

    def date_text(self, c: str, col: ColumnInfo) -> str:
        return f"CAST({c} AS VARCHAR)"

    def datetime_text(self, c: str, col: ColumnInfo) -> str:
        return f"strftime({c}, '%Y-%m-%d %H:%M:%S.%f')"

    def timestamptz_text(self, c: str, col: ColumnInfo) -> str:
        return f"strftime(timezone('UTC', {c}), '%Y-%m-%d %H:%M:%S.%f')"

    def time_text(self, c: str, col: ColumnInfo) -> str:  # time or interval
        return f"CAST(CAST(round(epoch({c}) * 1000000) AS BIGINT) AS VARCHAR)"

    def other_text(self, c: str, col: ColumnInfo) -> str:
        return f"CAST({c} AS VARCHAR)"

    def json_text(self, c: str, col: ColumnInfo) -> str:
        # json() parses and minifies (keys in their order: the stream's, MySQL's); then ', ' and ': ' as MySQL's.
        # A ',' appended ends every run with a separator, so no match starts inside a string; its ', ' is cut.
        spaced = f"regexp_replace(CAST(json({c}) AS VARCHAR) || ',', '{_JSON_SEPARATOR}', '\\1\\2 ', 'g')"
        return f"substr({spaced}, 1, length({spaced}) - 2)"

    def float_digits(self, x: str, digits: int) -> str:
        e, k = self._float_exponents(x, digits)
        half = f"trunc({k} / 2)"
        scaled = f"({x} * pow(10::DOUBLE, {half}) * pow(10::DOUBLE, {k} - {half}))"
        m = f"CAST(CAST(sign({scaled}) * floor(abs({scaled}) + 0.5) AS BIGINT) AS VARCHAR)"
        return (f"(CASE WHEN {x} = 0 THEN '0' WHEN isnan({x}) THEN 'nan' WHEN {x} = 'inf'::DOUBLE THEN 'inf' "
                f"WHEN {x} = '-inf'::DOUBLE THEN '-inf' ELSE {m} || 'e' || CAST(CAST({e} AS BIGINT) AS VARCHAR) END)")

    def flag_text(self, flag: str) -> str:
        return f"CAST({flag} AS VARCHAR)"

    # ---- bucket pass and row pass --------------------------------------------------------------
    def bucket_digest(self, text: str, order_by: str, ordered: bool) -> str:
        return f"md5(string_agg({text}, chr(10) ORDER BY {order_by}))"

    def integer_division(self) -> str:
        return "//"

    def row_estimate_sql(self) -> str:
        ph = self.sql.param
        return f"SELECT estimated_size FROM duckdb_tables() WHERE schema_name = {ph} AND table_name = {ph}"

    def one_row(self) -> str:
        return "LIMIT 1"

    # ---- endpoints -----------------------------------------------------------------------------
    def connect(self, endpoint: str, params: dict[str, Any]) -> Any:
        import duckdb
        conn = duckdb.connect(params["path"])
        conn.execute("SET TimeZone = 'UTC'")
        return conn

    def dsn_params(self, endpoint: str, dsn: str, tls: Any, login: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        path = dsn[len("duckdb://"):] or ":memory:" if dsn.startswith("duckdb://") else dsn
        return {"path": path}, "main"

    def target_params(self, tgt: Any, from_dsn: DsnEndpoint) -> tuple[str, dict[str, Any], str | None] | None:
        return self.name, {"path": tgt.path or tgt.dsn}, tgt.schema_ or "main"
