"""PostgreSQL for cdc compare (psycopg 3)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cdc.compare.columns import ColumnInfo, Family
from cdc.compare.dialects.dialect_interface import CompareDialect, DsnEndpoint


class PostgresCompare(CompareDialect):
    own_types = ((("varchar",), "string", None), (("jsonb", "json"), "json", None))
    """Values cast to text; timestamptz rendered in UTC; strings ordered by their bytes (COLLATE "C")."""
    sha256_sql = "left(encode(sha256(convert_to({}, 'UTF8')), 'hex'), 32)"

    # ---- fingerprints --------------------------------------------------------------------------
    def int_text(self, c: str, col: ColumnInfo) -> str:
        return f"{c}::text"

    def bool_text(self, c: str, col: ColumnInfo) -> str:
        return f"(CASE WHEN {c} THEN '1' ELSE '0' END)"

    def decimal_text(self, c: str, col: ColumnInfo, trim: bool) -> str:
        return f"trim_scale({c})::text" if trim else f"{c}::text"

    def float_text(self, c: str, col: ColumnInfo) -> str:
        return self.float_digits(f"{c}::float8", col.scale or 15)

    def string_text(self, c: str, col: ColumnInfo) -> str:
        return f"{c}::text"

    def binary_text(self, c: str, col: ColumnInfo) -> str:
        return f"encode({c}, 'hex')"

    def date_text(self, c: str, col: ColumnInfo) -> str:
        return f"to_char({c}, 'YYYY-MM-DD')"

    def datetime_text(self, c: str, col: ColumnInfo) -> str:
        return f"to_char({c}, 'YYYY-MM-DD HH24:MI:SS.US')"

    def timestamptz_text(self, c: str, col: ColumnInfo) -> str:
        return f"to_char({c} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')"

    def time_text(self, c: str, col: ColumnInfo) -> str:  # time or interval
        return f"round(extract(epoch from {c}) * 1000000)::bigint::text"

    def other_text(self, c: str, col: ColumnInfo) -> str:
        return f"{c}::text"

    def json_text(self, c: str, col: ColumnInfo) -> str:
        return f"{c}::jsonb::text"  # jsonb prints MySQL's spacing, keys sorted by length then bytes as MySQL's

    def float_digits(self, x: str, digits: int) -> str:
        e, k = self._float_exponents(x, digits)
        half = f"trunc({k} / 2)"
        scaled = f"({x} * power(10::float8, {half}) * power(10::float8, {k} - {half}))"
        m = f"(sign({scaled}) * floor(abs({scaled}) + 0.5))::bigint::text"
        return (f"(CASE WHEN {x} = 0 THEN '0' WHEN {x} = 'NaN'::float8 THEN 'nan' WHEN {x} = 'Infinity'::float8 "
                f"THEN 'inf' WHEN {x} = '-Infinity'::float8 THEN '-inf' ELSE {m} || 'e' || ({e})::bigint::text END)")

    def flag_text(self, flag: str) -> str:
        return f"({flag})::text"

    # ---- bucket pass and row pass --------------------------------------------------------------
    def bucket_digest(self, text: str, order_by: str, ordered: bool) -> str:
        return f"md5(string_agg({text}, chr(10) ORDER BY {order_by}))"

    def integer_division(self) -> str:
        return "/"

    def row_estimate_sql(self) -> str:
        ph = self.sql.param
        return ("SELECT c.reltuples::bigint FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                f"WHERE n.nspname = {ph} AND c.relname = {ph}")

    def order_key(self, c: str, family: Family) -> str:
        return f'{c} COLLATE "C"' if family == "string" else c

    def one_row(self) -> str:
        return "LIMIT 1"

    # ---- endpoints -----------------------------------------------------------------------------
    def connect(self, endpoint: str, params: dict[str, Any]) -> Any:
        import psycopg
        login = {k: v for k, v in params.items() if k != "dsn"}  # user, password: conninfo keywords
        conn = psycopg.connect(params["dsn"], autocommit=True, **login)
        conn.execute("SET TIME ZONE 'UTC'")
        conn.execute("SET DateStyle = 'ISO, YMD'")
        return conn

    @contextmanager
    def transaction(self, conn: Any) -> Iterator[None]:
        with conn.transaction():
            yield

    def stream(self, conn: Any, sql: str, params: tuple, chunk: int) -> Iterator[tuple]:
        # named (server-side) cursors live inside a transaction
        with conn.transaction(), conn.cursor(name="cdc_compare", withhold=False) as cur:
            cur.itersize = chunk
            cur.execute(sql, params or None)
            while rows := cur.fetchmany(chunk):
                yield from rows

    def dsn_params(self, endpoint: str, dsn: str, tls: Any, login: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        return {"dsn": dsn, **login}, "public"

    def target_params(self, tgt: Any, from_dsn: DsnEndpoint) -> tuple[str, dict[str, Any], str | None] | None:
        return self.name, {"dsn": tgt.dsn, **tgt.login_kwargs()}, tgt.schema_ or "public"
