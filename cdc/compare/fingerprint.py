"""Row fingerprints computed INSIDE each database: one canonical text, one MD5.

The same row must hash the same on MariaDB/MySQL, PostgreSQL, DuckDB and
Oracle, so every column is first rendered to a canonical text:

    int / bool     decimal digits ('1'/'0' for booleans); MySQL ZEROFILL, YEAR
                   and BIT as their number ('1', not '001'; YEAR 0000 is '0')
    decimal        the declared-scale text when both sides share the scale
                   ('12.50'), else trailing zeros trimmed ('12.5', '3')
    float          ``scale`` significant digits as '<digits>e<exponent of the
                   first digit>' (FLOAT/real: 6, DOUBLE: 15, the smaller of the
                   two sides), rounded half away from zero, computed in double
                   precision: '424200e1' for a FLOAT 42.42 on every database
                   (MariaDB's own text of it is 42.419998, PostgreSQL's 42.42),
                   '179769313486232e308' for DOUBLE max; '0', 'nan', 'inf', '-inf'
    string         the characters as stored: trailing spaces significant
                   (CHAR(n) columns: each database strips the padding)
    binary         lower-case hex (MySQL spatial types: their internal bytes,
                   SRID then WKB, which the stream carries)
    date           'YYYY-MM-DD'
    datetime       'YYYY-MM-DD HH:MM:SS.ffffff' (wall clock, as stored)
    timestamptz    the same text of the instant in UTC
    time           the signed number of microseconds (MySQL TIME of any sign
                   and up to 838 h; PostgreSQL/DuckDB ``time`` or ``interval``)
    other          the database's text cast (JSON: not normalised)

Zero dates (MySQL '0000-00-00', '2024-00-10', a zero DATETIME/TIMESTAMP) are
NULL in the stream and in every target, so compare renders them as NULL on
the MySQL side too (rule: a zero date equals a NULL).

and the row text is ``CONCAT_WS('|', flags, v1, ..., vn)``. NULL values are
skipped by CONCAT_WS, so ``flags`` makes the text injective: for every
column, in order, '1'/'0' for NULL/not NULL (only for columns nullable on
either side: the compare plan makes both sides agree), and for every string
or binary column its character length, joined by ','. Numbers, dates and hex never
contain '|', and each string's length is known, so two rows give the same
text only if all values are equal: NULL differs from '', 'a ' from 'a'.

The fingerprint is ``md5(row text)`` as 32 lower-case hex characters. For
the bucket pass (see cdc.compare.table_diff) the row texts of a bucket, with
string lengths counted in UTF-8 bytes, are joined and hashed once by
:func:`bucket_digest_sql`.

Oracle (STANDARD_HASH(..., 'MD5')) is generated here but cannot run where
this project is built and tested; treat it as untested.
"""

from __future__ import annotations

from typing import Literal

from cdc.compare.columns import ColumnInfo, Family
from cdc.sql_dialects import sql_dialect

__all__ = ["SEP", "ColumnInfo", "Dialect", "Family", "bucket_digest_sql", "md5_sql", "python_row_text", "quote",
           "row_text_sql"]

Dialect = Literal["mysql", "postgres", "duckdb", "oracle"]
SEP = "|"


def quote(dialect: Dialect, name: str) -> str:
    return sql_dialect(dialect).quote(name)


def _render(dialect: Dialect, col: ColumnInfo, trim_decimal: bool) -> str:
    """SQL for the canonical text of one column (NULL stays NULL)."""
    c = quote(dialect, col.name)
    f = col.family
    if dialect == "mysql":
        # CONCAT_WS converts numbers and temporals to their text itself: no CAST (it costs per row)
        t = col.type.lower()
        if f in ("int", "bool"):
            # ZEROFILL ('001'), YEAR ('0000') and BIT (bytes) have a text of their own: take the number
            return f"({c} + 0)" if "zerofill" in t or t.startswith(("year", "bit")) else c
        if f == "decimal":
            if "zerofill" in t:
                c = f"({c} + 0)"
            if trim_decimal and (col.scale or 0) > 0:
                return f"TRIM(TRAILING '.' FROM TRIM(TRAILING '0' FROM CAST({c} AS CHAR)))"
            return c
        if f == "float":
            return _float_text(dialect, f"({c} + 0e0)", col.scale or 15)  # FLOAT widened exactly
        if f == "string":
            if col.charset and col.charset.lower() not in ("utf8mb4", "utf8", "utf8mb3"):
                return f"CONVERT({c} USING utf8mb4)"
            return c
        if f == "binary":
            return f"LOWER(HEX({c}))"
        if f == "date":
            return f"IF(MONTH({c}) = 0 OR DAYOFMONTH({c}) = 0, NULL, {c})"  # zero dates are NULL
        if f in ("datetime", "timestamptz"):  # session time_zone is '+00:00' (see endpoints)
            text = c if col.scale == 6 else f"DATE_FORMAT({c}, '%Y-%m-%d %H:%i:%s.%f')"
            return f"IF(MONTH({c}) = 0 OR DAYOFMONTH({c}) = 0, NULL, {text})"  # zero dates are NULL
        if f == "time":
            return (f"(IF({c} < 0, -1, 1) * (((HOUR({c}) * 60 + MINUTE({c})) * 60 + SECOND({c})) * 1000000"
                    f" + MICROSECOND({c})))")
        return f"CAST({c} AS CHAR)"
    if dialect == "postgres":
        if f == "int":
            return f"{c}::text"
        if f == "bool":
            return f"(CASE WHEN {c} THEN '1' ELSE '0' END)"
        if f == "decimal":
            return f"trim_scale({c})::text" if trim_decimal else f"{c}::text"
        if f == "float":
            return _float_text(dialect, f"{c}::float8", col.scale or 15)
        if f == "string":
            return f"{c}::text"
        if f == "binary":
            return f"encode({c}, 'hex')"
        if f == "date":
            return f"to_char({c}, 'YYYY-MM-DD')"
        if f == "datetime":
            return f"to_char({c}, 'YYYY-MM-DD HH24:MI:SS.US')"
        if f == "timestamptz":
            return f"to_char({c} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')"
        if f == "time":  # time or interval
            return f"round(extract(epoch from {c}) * 1000000)::bigint::text"
        return f"{c}::text"
    if dialect == "duckdb":
        trim = "rtrim(rtrim(CAST({x} AS VARCHAR), '0'), '.')"
        if f == "int":
            return f"CAST({c} AS VARCHAR)"
        if f == "bool":
            return f"(CASE WHEN {c} THEN '1' ELSE '0' END)"
        if f == "decimal":
            if trim_decimal and (col.scale or 0) > 0:
                return trim.format(x=c)
            return f"CAST({c} AS VARCHAR)"
        if f == "float":
            return _float_text(dialect, f"CAST({c} AS DOUBLE)", col.scale or 15)
        if f == "string":
            return c
        if f == "binary":
            return f"lower(hex({c}))"
        if f == "date":
            return f"CAST({c} AS VARCHAR)"
        if f == "datetime":
            return f"strftime({c}, '%Y-%m-%d %H:%M:%S.%f')"
        if f == "timestamptz":
            return f"strftime(timezone('UTC', {c}), '%Y-%m-%d %H:%M:%S.%f')"
        if f == "time":  # time or interval
            return f"CAST(CAST(round(epoch({c}) * 1000000) AS BIGINT) AS VARCHAR)"
        return f"CAST({c} AS VARCHAR)"
    if dialect == "oracle":  # untested: no Oracle server where we build
        if f in ("int", "decimal", "float"):
            return f"RTRIM(RTRIM(TO_CHAR({c}, 'TM9'), '0'), '.')" if f != "int" else f"TO_CHAR({c})"
        if f == "string":
            return c
        if f == "binary":
            return f"LOWER(RAWTOHEX({c}))"
        if f == "date":  # Oracle DATE carries a time of day
            return f"TO_CHAR({c}, 'YYYY-MM-DD HH24:MI:SS') || '.000000'"
        if f == "datetime":
            return f"TO_CHAR({c}, 'YYYY-MM-DD HH24:MI:SS.FF6')"
        if f == "timestamptz":
            return f"TO_CHAR(SYS_EXTRACT_UTC({c}), 'YYYY-MM-DD HH24:MI:SS.FF6')"
        return f"TO_CHAR({c})"
    raise ValueError(f"unknown dialect {dialect!r}")


def _float_text(dialect: Dialect, x: str, digits: int) -> str:
    """``x`` (a double) to ``digits`` significant digits: '<mantissa>e<exponent>' (module docstring).

    The power of ten is applied in two halves so that neither overflows at the ends of the
    double range (1.7976931348623157E308, 2.2250738585072014E-308)."""
    e = f"FLOOR(LOG10(ABS({x})))"
    k = f"({digits - 1} - {e})"
    if dialect == "mysql":
        half = f"({k} DIV 2)"
        scaled = f"({x} * POW(10, {half}) * POW(10, {k} - {half}))"
        m = f"CAST(SIGN({scaled}) * FLOOR(ABS({scaled}) + 0.5) AS SIGNED)"
        return f"IF({x} = 0, '0', CONCAT({m}, 'e', CAST({e} AS SIGNED)))"
    if dialect == "postgres":
        half = f"trunc({k} / 2)"
        scaled = f"({x} * power(10::float8, {half}) * power(10::float8, {k} - {half}))"
        m = f"(sign({scaled}) * floor(abs({scaled}) + 0.5))::bigint::text"
        return (f"(CASE WHEN {x} = 0 THEN '0' WHEN {x} = 'NaN'::float8 THEN 'nan' WHEN {x} = 'Infinity'::float8 "
                f"THEN 'inf' WHEN {x} = '-Infinity'::float8 THEN '-inf' ELSE {m} || 'e' || ({e})::bigint::text END)")
    if dialect == "duckdb":
        half = f"trunc({k} / 2)"
        scaled = f"({x} * pow(10::DOUBLE, {half}) * pow(10::DOUBLE, {k} - {half}))"
        m = f"CAST(CAST(sign({scaled}) * floor(abs({scaled}) + 0.5) AS BIGINT) AS VARCHAR)"
        return (f"(CASE WHEN {x} = 0 THEN '0' WHEN isnan({x}) THEN 'nan' WHEN {x} = 'inf'::DOUBLE THEN 'inf' "
                f"WHEN {x} = '-inf'::DOUBLE THEN '-inf' ELSE {m} || 'e' || CAST(CAST({e} AS BIGINT) AS VARCHAR) END)")
    raise ValueError(f"no float rendering for {dialect!r}")


def _length(dialect: Dialect, col: ColumnInfo, rendered: str, lengths: str = "chars") -> str:
    d = sql_dialect(dialect)
    # bytes: UTF-8 bytes (MySQL renders other charsets through CONVERT(... USING utf8mb4))
    sql = d.byte_length(rendered) if lengths == "bytes" else d.char_length(rendered)
    return f"NVL({sql}, 0)" if dialect == "oracle" else sql  # Oracle: '' is NULL, the null flag already says it


def _null_flag(dialect: Dialect, col: ColumnInfo, rendered: str) -> str:
    c = quote(dialect, col.name)
    if dialect == "mysql":
        # a zero date renders as NULL: its flag says NULL too
        return f"ISNULL({rendered if col.family in ('date', 'datetime', 'timestamptz') else c})"
    return f"(CASE WHEN {c} IS NULL THEN '1' ELSE '0' END)"


def row_text_sql(dialect: Dialect, columns: list[ColumnInfo], trim_decimal: frozenset[str] = frozenset(),
                 lengths: str = "chars") -> str:
    """SQL for the canonical row text (see module docstring).

    ``lengths="bytes"`` flags each string by its UTF-8 byte length instead of its
    character length: just as injective, and cheaper (MySQL's CHAR_LENGTH walks the
    string, LENGTH does not). The bucket pass uses it; row fingerprints keep
    character lengths, so they stay what :func:`python_row_text` defines.
    """
    flags: list[str] = []
    values: list[str] = []
    for col in columns:
        rendered = _render(dialect, col, col.name in trim_decimal)
        if col.nullable:
            flags.append(_null_flag(dialect, col, rendered))
        if col.family in ("string", "binary"):
            flags.append(_length(dialect, col, rendered, lengths))
        values.append(rendered)
    if not flags:
        flags = ["''"]
    if dialect == "oracle":
        sep = " || ',' || "
        flag_sql = sep.join(f"TO_CHAR({f})" for f in flags)
        return f"{flag_sql} || '|' || " + " || '|' || ".join(values)
    if dialect == "duckdb":
        # concat_ws in DuckDB skips NULLs like MySQL; cast flags to text for it
        flag_sql = "concat_ws(','" + "".join(f", CAST({f} AS VARCHAR)" for f in flags) + ")"
        return f"concat_ws('{SEP}', {flag_sql}, " + ", ".join(values) + ")"
    flag_sql = "concat_ws(','" + "".join(f", {f}" for f in flags) + ")"
    if dialect == "postgres":
        flag_sql = "concat_ws(','" + "".join(f", ({f})::text" for f in flags) + ")"
    return f"concat_ws('{SEP}', {flag_sql}, " + ", ".join(values) + ")"


def md5_sql(dialect: Dialect, columns: list[ColumnInfo], trim_decimal: frozenset[str] = frozenset()) -> str:
    """SQL for the row fingerprint: 32 lower-case hex characters."""
    return sql_dialect(dialect).md5(row_text_sql(dialect, columns, trim_decimal))


def bucket_digest_sql(dialect: Dialect, text: str, order_by: str, ordered: bool = True) -> str:
    """SQL aggregate: md5 of the bucket's row texts joined by a newline, in key order.

    A row text is self-delimiting when read from its start (flags give every
    string's length; numbers, dates and hex hold no newline), so the joined
    text is injective too: equal digests mean equal rows, barring an MD5
    collision. MySQL needs ``group_concat_max_len`` raised (cdc.compare.endpoints).

    ``ordered=False`` (MySQL only; for two MySQL sides) joins the rows in the
    order MariaDB's GROUP BY sort hands them over, without the per-bucket sort
    that ``ORDER BY`` inside GROUP_CONCAT costs (about a fifth of the bucket
    pass). From 1,000 rows per query that sort is a stable radix sort, so the
    order is the key order of the range scan; below, a quicksort shuffles ties,
    but the same way on both sides unless their key sequences differ. The order
    only ever costs speed, never correctness: equal buckets joined in different
    orders digest differently, and the row pass over them finds them equal.
    """
    if dialect == "mysql":
        order = f" ORDER BY {order_by}" if ordered else ""
        return f"MD5(GROUP_CONCAT({text}{order} SEPARATOR '\\n'))"
    if dialect in ("postgres", "duckdb"):
        return f"md5(string_agg({text}, chr(10) ORDER BY {order_by}))"
    raise NotImplementedError("bucket pass is not implemented for Oracle (LISTAGG is limited); the row pass is used")


def python_row_text(values: list, columns: list[ColumnInfo], lengths: str = "chars") -> str:
    """The canonical text built in Python from already-canonical column texts.

    Used by tests to state the encoding independently of any database:
    ``values`` are the canonical texts (or None) in column order.
    """
    flags: list[str] = []
    for col, v in zip(columns, values):
        if col.nullable:
            flags.append("1" if v is None else "0")
        if col.family in ("string", "binary") and v is not None:
            flags.append(str(len(v.encode()) if lengths == "bytes" else len(v)))
    return SEP.join([",".join(flags)] + [v for v in values if v is not None])
