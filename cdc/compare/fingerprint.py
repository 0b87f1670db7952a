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
    json           the document as MySQL and PostgreSQL jsonb print it: ', '
                   and ': ' between tokens, keys as stored (both sort them by
                   length, then bytes; DuckDB holds the stream's text, whose
                   keys come in MySQL's order); a text column paired with a
                   JSON one is parsed and printed so too (cdc.compare.table_diff).
                   Not normalised: numbers ('1e20' on MySQL, '1e+20' in the
                   stream) and escapes of control characters
    other          the database's text cast

Zero dates (MySQL '0000-00-00', '2024-00-10', a zero DATETIME/TIMESTAMP) are
NULL in the stream and in every target, so compare renders them as NULL on
the MySQL side too (rule: a zero date equals a NULL).

and the row text is ``CONCAT_WS('|', flags, v1, ..., vn)``. NULL values are
skipped by CONCAT_WS, so ``flags`` makes the text injective: for every
column, in order, '1'/'0' for NULL/not NULL (only for columns nullable on
either side: the compare plan makes both sides agree), and for every string
or binary (or JSON) column its character length, joined by ','. Numbers, dates and hex never
contain '|', and each string's length is known, so two rows give the same
text only if all values are equal: NULL differs from '', 'a ' from 'a'.

The fingerprint is ``md5(row text)`` as 32 lower-case hex characters. For
the bucket pass (see cdc.compare.table_diff) the row texts of a bucket, with
string lengths counted in UTF-8 bytes, are joined and hashed once by
:func:`bucket_digest_sql`.

Each database spells these in its class in cdc.compare.dialects; the functions
here take the dialect's name. Oracle (STANDARD_HASH(..., 'MD5')) is generated
but cannot run where this project is built and tested; treat it as untested.
"""

from __future__ import annotations

from typing import Literal

from cdc.compare.columns import ColumnInfo, Family
from cdc.compare.dialects import SEP, compare_dialect
from cdc.schema.sql_dialects import sql_dialect

__all__ = ["SEP", "ColumnInfo", "Dialect", "Family", "bucket_digest_sql", "md5_sql", "python_row_text", "quote",
           "row_text_sql"]

Dialect = Literal["mysql", "postgres", "duckdb", "oracle"]


def quote(dialect: Dialect, name: str) -> str:
    return sql_dialect(dialect).quote(name)


def row_text_sql(dialect: Dialect, columns: list[ColumnInfo], trim_decimal: frozenset[str] = frozenset(),
                 lengths: str = "chars") -> str:
    """SQL for the canonical row text (see module docstring).

    ``lengths="bytes"`` flags each string by its UTF-8 byte length instead of its
    character length: just as injective, and cheaper (MySQL's CHAR_LENGTH walks the
    string, LENGTH does not). The bucket pass uses it; row fingerprints keep
    character lengths, so they stay what :func:`python_row_text` defines.
    """
    d = compare_dialect(dialect)
    flags: list[str] = []
    values: list[str] = []
    for col in columns:
        rendered = d.render(col, col.name in trim_decimal)
        if col.nullable:
            flags.append(d.null_flag(col, rendered))
        if col.family in ("string", "binary", "json"):
            # bytes: UTF-8 bytes (MySQL renders other charsets through CONVERT(... USING utf8mb4))
            flags.append(d.length_flag(col, rendered, lengths))
        values.append(rendered)
    if not flags:
        flags = ["''"]
    return d.row_text(flags, values)


def md5_sql(dialect: Dialect, columns: list[ColumnInfo], trim_decimal: frozenset[str] = frozenset()) -> str:
    """SQL for the row fingerprint: 32 lower-case hex characters."""
    return compare_dialect(dialect).md5(row_text_sql(dialect, columns, trim_decimal))


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
    Oracle: NotImplementedError (the row pass is used).
    """
    return compare_dialect(dialect).bucket_digest(text, order_by, ordered)


def python_row_text(values: list, columns: list[ColumnInfo], lengths: str = "chars") -> str:
    """The canonical text built in Python from already-canonical column texts.

    Used by tests to state the encoding independently of any database:
    ``values`` are the canonical texts (or None) in column order.
    """
    flags: list[str] = []
    for col, v in zip(columns, values):
        if col.nullable:
            flags.append("1" if v is None else "0")
        if col.family in ("string", "binary", "json") and v is not None:
            flags.append(str(len(v.encode()) if lengths == "bytes" else len(v)))
    return SEP.join([",".join(flags)] + [v for v in values if v is not None])
