"""The source side of a shaped table (sources[].transforms, cdc/transforms): the same shaping, in SQL.

``cdc compare`` fingerprints the source row as the stream shaped it, so a masked target compares EQUAL:

- a column the rule leaves out is not compared (it is not in the target);
- a masked column is rendered by the mask's SQL below instead of the column itself, and compared as the
  target's column (a string);
- an encrypted column cannot be (AES-GCM is not deterministic): it is left out, with a warning;
- a table whose key column is masked is refused (the two sides' keys would not pair);
- a row filter (``filter:``) becomes a WHERE on the source (the expression rendered back as MySQL SQL by
  sqlglot); a ``filter_function`` has no SQL: such a table is refused;
- a computed column (``computed:``) is selected on the source as its expression, CAST to its type, and
  compared with the target's column of that name;
- a target-side mode of the apply (apply[].tables[].mode, streaming/apply/target_modes.py): rows of a
  ``soft_delete`` table with ``_cdc_deleted`` set count as absent (a WHERE on the target), the columns a mode
  or ``metadata_columns`` adds are not compared, a ``history`` table (every change a row) is refused.

The SQL exists for a MySQL/MariaDB source (the only reader with transforms). ``hash`` computes HMAC-SHA256
from SHA2 (RFC 2104: ``SHA256((K ^ opad) || SHA256((K ^ ipad) || m))``): the padded key reaches the source
database inside the query text, which a general or slow query log there would keep: compare a hashed table
with those logs off (docs/transforms.md).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from cdc.compare.columns import ColumnInfo
from cdc.compare.dialects import CompareDialect
from cdc.compare.dialects.mysql_compare import MySqlCompare
from cdc.compare.errors import CompareError
from cdc.stream.events import TableId
from cdc.transforms.expressions import Expression
from cdc.transforms.mapper import SourceTransforms


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def hmac_pads(key: bytes) -> tuple[str, str]:
    """(ipad, opad) of RFC 2104 for SHA-256 as hex."""
    if len(key) > 64:
        key = hashlib.sha256(key).digest()
    key = key.ljust(64, b"\0")
    return bytes(b ^ 0x36 for b in key).hex(), bytes(b ^ 0x5C for b in key).hex()


def mask_sql(mask, quoted: str, col: ColumnInfo, hash_key: bytes | None) -> str:
    """MySQL SQL giving what ``mask`` (a cdc.transforms.config mask) makes of column ``quoted``."""
    text = f"CAST({quoted} AS CHAR)" if col.family in ("int", "bool") else f"CONVERT({quoted} USING utf8mb4)"
    if mask.mask == "hash":
        ipad, opad = hmac_pads(hash_key or b"")
        inner = f"UNHEX(SHA2(CONCAT(UNHEX('{ipad}'), CAST({text} AS BINARY)), 256))"
        return f"SHA2(CONCAT(UNHEX('{opad}'), {inner}), 256)"
    if mask.mask == "truncate":
        return f"LEFT({text}, {int(mask.length)})"
    if mask.mask == "keep_last":
        n = int(mask.length)
        return f"CONCAT(REPEAT('*', GREATEST(CHAR_LENGTH({text}) - {n}, 0)), RIGHT({text}, {n}))"
    if mask.mask == "replace":
        return f"(CASE WHEN {quoted} IS NULL THEN NULL ELSE CONVERT({_literal(mask.value)} USING utf8mb4) END)"
    if mask.mask == "null":
        return "CAST(NULL AS CHAR)"
    raise ValueError(f"mask {mask.mask} has no SQL")


def shape_columns(transforms: SourceTransforms | None, dialect: CompareDialect, table: TableId, quote,
                  s_cols: list[ColumnInfo], t_cols: list[ColumnInfo], key: list[str],
                  warnings: list[str]) -> tuple[list[ColumnInfo], list[ColumnInfo]]:
    """The paired columns of a shaped table, the source side rendered as the stream shaped it."""
    rule = transforms.rule(table) if transforms else None
    if rule is None:
        return s_cols, t_cols
    if not isinstance(dialect, MySqlCompare):  # the masks' SQL below is MySQL's
        raise CompareError(f"{table}: transforms can be compared on a MySQL/MariaDB source only", table=str(table))
    out_s, out_t = [], []
    for sc, tc in zip(s_cols, t_cols):
        mask = rule.columns.get(sc.name)
        if mask is None:
            out_s.append(sc)
            out_t.append(tc)
            continue
        if sc.name in key:
            raise CompareError(f"{table}: key column {sc.name} is masked ({mask.mask}); compare pairs rows by their "
                               "clear key and cannot compare this table yet", table=str(table), column=sc.name)
        if mask.mask == "encrypt":
            warnings.append(f"column {sc.name}: encrypted (AES-GCM is not deterministic): not compared")
            continue
        expr = mask_sql(mask, quote(sc.name), sc, transforms._hash_key)
        nullable = sc.nullable or tc.nullable or mask.mask == "null"
        out_s.append(replace(sc, family=tc.family, nullable=nullable, expr=expr))
        out_t.append(replace(tc, nullable=nullable))
    return out_s, out_t


def left_out(transforms: SourceTransforms | None, table: TableId, names: list[str]) -> set[str]:
    """The columns of ``names`` the table's rule never moves (lower case)."""
    rule = transforms.rule(table) if transforms else None
    if rule is None:
        return set()
    return {n.lower() for n in names if n in rule.exclude or (rule.include is not None and n not in rule.include)}


def filter_sql(transforms: SourceTransforms | None, table: TableId, warnings: list[str]) -> str:
    """The WHERE condition of the table's row filter on the source ("" when it has none). CompareError for a
    ``filter_function`` (Python code has no SQL)."""
    rule = transforms.rule(table) if transforms else None
    if rule is None:
        return ""
    if rule.filter_function is not None:
        raise CompareError(f"{table}: its rows are filtered by filter_function {rule.filter_function} (Python), "
                           "which cannot be rendered as SQL on the source; write the filter as `filter:` (an "
                           "expression, docs/transforms.md) to compare this table", table=str(table))
    if rule.filter is None:
        return ""
    warnings.append(f"rows filtered at the source: only rows where {rule.filter} are compared")
    return f"({Expression(rule.filter, f'rule {rule.match!r} filter').sql()}) IS TRUE"


def computed_select(transforms: SourceTransforms | None, table: TableId, quote) -> dict[str, str]:
    """{computed column name: its select item on the source (``CAST((expr) AS type) AS name``)}."""
    rule = transforms.rule(table) if transforms else None
    if rule is None:
        return {}
    from cdc.registry import type_parser

    out = {}
    for name, cc in rule.computed.items():
        logical = type_parser("mysql")(cc.type)  # the sources with transforms: MySQL/MariaDB
        cast = {"string": "CHAR", "integer": "SIGNED"}.get(
            logical.family, f"DECIMAL({logical.precision or 10},{logical.scale or 0})")
        sql = Expression(cc.expr, f"rule {rule.match!r} computed {name}").sql()
        out[name] = f"CAST(({sql}) AS {cast}) AS {quote(name)}"
    return out


def target_mode(modes, table: TableId, t_by: dict, quote, warnings: list[str]) -> str:
    """The target side of an apply's target mode: the WHERE keeping soft-deleted rows out ("" for none); the
    mode's columns are taken out of ``t_by`` (the target's columns by lower-case name), so they are not
    compared. CompareError for a history table."""
    mode = modes.of(str(table)) if modes else None
    if mode is None:
        return ""
    from cdc.registry import apply_hook

    DELETED = apply_hook("deleted_column")

    if mode.mode == "history":
        raise CompareError(f"{table}: its target is an append-only history (apply mode history: every change a "
                           "row), which has no state to compare with the source", table=str(table))
    for name in mode.extra():
        if t_by.pop(name.lower(), None) is not None:
            warnings.append(f"column {name}: added by the apply's target mode; not compared")
    if mode.mode != "soft_delete":
        return ""
    warnings.append(f"soft-delete target: rows with {DELETED} set count as absent")
    return f"({quote(DELETED)} IS NULL OR {quote(DELETED)} = FALSE)"
