"""What a DDL changed in a table's shape, and what the apply should do about it.

``diff(old, new, ddl)`` compares two definitions of one table (cdc.stream.events.TableSchema)
and names each change of its columns, in the order the apply follows them:

    rename  a column got a new name (only when the statement says so: ``RENAME COLUMN a TO b``
            or ``CHANGE [COLUMN] a b <type>``; a column that disappears while another appears
            is otherwise a drop and an add, which would lose the data: the statement decides).
            One statement's renames are simultaneous: ``RENAME COLUMN a TO b, RENAME COLUMN b TO a``
            is a swap (:func:`rename_cycle`: the apply moves them through temporary names)
    drop    a column is gone
    type    a column's type changed: ``how`` is ``widen`` (every old value fits the new type),
            ``narrow`` (same family, fewer values: followed when the target's values fit) or
            ``change`` (another family)
    null    NULL <-> NOT NULL
    default the column default changed (cdc.stream.events.Column.default)
    add     a new column (``after``: the column before it, None: first)
    key     the primary key changed (the table-level rules decide)

The publisher writes the list into the SCHEMA record (``schema.changes``) and the apply
computes the same list from its own schema memory, so both agree on what happened.

Behaviour of the apply per stream and per table (``apply[].schema_changes``, in the spirit of
Flink CDC's ``schema.change.behavior``):

    evolve     (default) follow every change the target can express; stop at the others
    exception  stop at any change of shape
    lenient    keep what the target holds: add columns and widen, but never drop, rename or
               narrow (a dropped column stays, nullable; a renamed one is added under the new
               name and filled from the old one)
    ignore     never change the target's shape: columns it does not have are not written
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cdc.schema import table_glob
from cdc.schema.logical import LogicalType
from cdc.stream.events import Column, TableSchema

Behavior = Literal["evolve", "exception", "lenient", "ignore"]


class SchemaChangeConfig(BaseModel):
    """``apply[].schema_changes``: ``{behavior: evolve, tables: {"shop.audit_*": ignore}}``."""

    model_config = ConfigDict(extra="forbid")
    behavior: Behavior = Field(default="evolve", description="at a source DDL: evolve: follow every change the "
                               "target can express, stop at the others; exception: stop at every change of a "
                               "column or key; lenient: add columns and widen types, never drop or narrow (a "
                               "dropped column stays, nullable); ignore: never "
                               "change the target table (docs/schema-evolution.md)")
    tables: dict[str, Behavior] = Field(default_factory=dict, description="db.table glob pattern -> behavior "
                                  "for the tables it matches (the first matching pattern wins; others: behavior)")

    def for_table(self, table: str) -> Behavior:
        for pattern, behavior in self.tables.items():
            if table_glob.matches(table, (pattern,)):
                return behavior
        return self.behavior

    def describe(self) -> str:
        extra = ", ".join(f"{p}: {b}" for p, b in self.tables.items())
        return self.behavior + (f" ({extra})" if extra else "")


# ---------------------------------------------------------------- types
# a column's type is read as its logical type (cdc.schema.logical): the Column's own, its kind's reading, or for
# bare type text (a ColumnChange's old/new) the first reader that knows the spelling (cdc.registry.guess_logical)
TypeSource = Column | LogicalType | str
_WIDEST = 4_294_967_295  # a string/binary without a length (CLOB, an unsized VARCHAR2 or RAW): the widest
_FLOAT_RANK = {"float": 1, "double": 2}
_NUMBERS = ("integer", "decimal", "float", "double", "bit")
_WITH_CLOCK = ("timestamp", "timestamp_tz", "time")


def logical(source: TypeSource) -> LogicalType:
    """The logical type of a column, a logical type or a bare type text (see above)."""
    from cdc import registry  # the registry reaches the readers' parsers (cdc.registry imports the configs)

    if isinstance(source, LogicalType):
        return source
    if isinstance(source, str):
        return registry.guess_logical(source)
    return registry.logical_of(source)


def _decimal(lt: LogicalType) -> tuple[int, int] | None:
    """(digits before the point, scale) of a DECIMAL/NUMBER with precision."""
    if lt.family != "decimal" or lt.precision is None:
        return None
    return lt.precision - (lt.scale or 0), lt.scale or 0


def _capacity(lt: LogicalType, family: str) -> int | None:
    if lt.family != family:
        return None
    return lt.length if lt.length is not None else _WIDEST


@dataclass(frozen=True, slots=True)
class TypeChange:
    """``how``: same | widen | narrow | change. ``check``: what a narrowing needs of the target's values:
    ``("range", lo, hi)`` integers, ``("digits", int_digits, scale)`` decimals, ``("chars", n)`` strings,
    ``("bytes", n)`` binaries; None for widen/change (a change needs the column to hold no value)."""

    how: str
    check: tuple | None = None


def type_change(old: TypeSource, new: TypeSource) -> TypeChange:
    """How the values of a column of type ``old`` relate to type ``new`` (columns or their type texts), by
    their logical types."""
    t1, t2 = logical(old), logical(new)
    if t1 == t2:
        return TypeChange("same")
    r1, r2 = t1.int_range(), t2.int_range()
    d1, d2 = _decimal(t1), _decimal(t2)
    if r1 and r2:
        return TypeChange("widen") if r2[0] <= r1[0] and r1[1] <= r2[1] else TypeChange("narrow", ("range",) + r2)
    if r1 and d2:  # an integer into a DECIMAL with enough digits
        if len(str(max(abs(r1[0]), r1[1]))) <= d2[0]:
            return TypeChange("widen")
        return TypeChange("narrow", ("digits",) + d2)
    if d1 and d2:
        if d2[0] >= d1[0] and d2[1] >= d1[1]:
            return TypeChange("widen")
        return TypeChange("narrow", ("digits",) + d2)
    any1, any2 = (t.family == "decimal" and t.precision is None for t in (t1, t2))
    if any1 and d2:  # Oracle NUMBER (any digits) -> NUMBER(p,s)
        return TypeChange("narrow", ("digits",) + d2)
    if d1 and any2:
        return TypeChange("widen")
    for family, unit in (("string", "chars"), ("binary", "bytes")):
        c1, c2 = _capacity(t1, family), _capacity(t2, family)
        if c1 is not None and c2 is not None:
            return TypeChange("widen") if c2 >= c1 else TypeChange("narrow", (unit, c2))
    if t1.family in _FLOAT_RANK and t2.family in _FLOAT_RANK:
        return TypeChange("widen") if _FLOAT_RANK[t2.family] >= _FLOAT_RANK[t1.family] else TypeChange("change")
    if t1.family == "date" and t2.family in ("timestamp", "timestamp_tz"):
        return TypeChange("widen")
    if t1.family == t2.family and t1.family in _WITH_CLOCK and t1.time_zone == t2.time_zone:
        return TypeChange("widen") if (t2.precision or 0) >= (t1.precision or 0) else TypeChange("change")
    if t1.family == t2.family and t1.family in ("enum", "set") and t2.values[:len(t1.values)] == t1.values:
        return TypeChange("widen")  # members appended at the end: every old value keeps its meaning
    return TypeChange("change")


# ---------------------------------------------------------------- defaults
def default_value(col: Column) -> tuple[str, Any]:
    """The value a column's default gives every existing row: ``("none", None)`` (NULL),
    ``("const", value)`` (the same value for every row, as SQL-literal text without quotes for strings,
    dates ``YYYY-MM-DD[ HH:MM:SS[.f]]``, a number as text) or ``("expr", text)`` (per-row or time-dependent:
    ``uuid()``, ``current_timestamp()``, a generated column, a TIMESTAMP constant in the session's zone,
    a binary constant).

    A NOT NULL column without a default gets MariaDB's implicit default in existing rows: 0 for numbers,
    '' for strings; other types count as ``expr`` (the apply cannot know them)."""
    family = logical(col).family
    text = col.default
    if text is None:
        if col.nullable:
            return "none", None
        if family in _NUMBERS:
            return "const", "0"
        if family == "string":
            return "const", ""
        return "expr", "(implicit default)"
    if text.upper() == "NULL":
        return "none", None
    if family in ("timestamp_tz", "binary"):
        return "expr", text  # a TIMESTAMP constant is read in the session's time zone; binaries: not as text
    if text.startswith("'") and text.endswith("'") and len(text) >= 2:
        value = text[1:-1].replace("''", "'")
        if "\\" in value:
            return "expr", text  # escape sequences: leave them to the operator
        if family in ("integer", "decimal", "float", "double"):
            return ("const", value) if re.fullmatch(r"-?\d+(\.\d*)?([eE][-+]?\d+)?", value) else ("expr", text)
        return "const", value
    if re.fullmatch(r"-?\d+(\.\d*)?([eE][-+]?\d+)?", text):
        return "const", text
    if family == "bit" and re.fullmatch(r"b'[01]+'", text):
        return "const", str(int(text[2:-1], 2))
    return "expr", text


# ---------------------------------------------------------------- the diff
@dataclass(frozen=True, slots=True)
class ColumnChange:
    kind: str  # rename | drop | type | null | default | add | key
    column: str
    old: Any = None  # rename: the old name; type: the old type; null/default: the old value
    new: Any = None
    how: str | None = None  # type: widen | narrow | change
    after: str | None = None  # add: the column before it (None: first)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def describe(self) -> str:
        if self.kind == "rename":
            return f"rename {self.old} -> {self.column}"
        if self.kind in ("type", "null", "default"):
            return f"{self.kind} of {self.column}: {self.old} -> {self.new}" + (f" ({self.how})" if self.how else "")
        if self.kind == "key":
            return f"primary key {self.old} -> {self.new}"
        return f"{self.kind} {self.column}"


_IDENT = r"(`(?:[^`]|``)+`|\"(?:[^\"]|\"\")+\"|[\w$]+)"
_RENAME = re.compile(r"\bRENAME\s+COLUMN\s+" + _IDENT + r"\s+TO\s+" + _IDENT, re.IGNORECASE)
_CHANGE = re.compile(r"\bCHANGE\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?" + _IDENT + r"\s+" + _IDENT, re.IGNORECASE)


def _unquote(name: str) -> str:
    if name[:1] in "`\"" and name[-1:] == name[:1]:
        q = name[0]
        return name[1:-1].replace(q + q, q)
    return name


def renames_in(ddl: str | None) -> dict[str, str]:
    """{old name: new name} for each column the statement renames (MySQL/MariaDB ``RENAME COLUMN a TO b``
    and ``CHANGE a b type``, Oracle ``RENAME COLUMN a TO b``). Names compare case-insensitively in
    MySQL, so a rename is keyed by the lower-case old name."""
    if not ddl:
        return {}
    text = re.sub(r"'(?:[^']|'')*'", "''", ddl)  # string literals (comments, defaults) cannot rename
    out = {}
    for rx in (_RENAME, _CHANGE):
        for m in rx.finditer(text):
            old, new = _unquote(m.group(1)), _unquote(m.group(2))
            if old.lower() != new.lower():
                out[old.lower()] = new
    return out


_DROP = re.compile(r"\bDROP\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?" + _IDENT, re.IGNORECASE)
_NOT_COLUMNS = frozenset({"primary", "index", "key", "foreign", "constraint", "check", "partition", "unique",
                          "fulltext", "spatial", "system", "period", "default", "table", "column", "if"})


def dropped_in(ddl: str | None) -> set[str]:
    """The lower-case columns the statement drops (``DROP [COLUMN] [IF EXISTS] c``)."""
    if not ddl:
        return set()
    text = re.sub(r"'(?:[^']|'')*'", "''", ddl)
    return {_unquote(m.group(1)).lower() for m in _DROP.finditer(text)} - _NOT_COLUMNS


def diff(old: TableSchema, new: TableSchema, ddl: str | None) -> list[ColumnChange]:
    """The changes from ``old`` to ``new`` (see the module docstring), renames first, adds last."""
    old_cols = {c.name: c for c in old.columns}
    new_cols = {c.name: c for c in new.columns}
    renamed: dict[str, str] = {}  # new name -> old name
    renames = renames_in(ddl)
    away, back = set(renames), {n.lower() for n in renames.values()}
    freed = away | dropped_in(ddl)
    for was, now in renames.items():
        # a name the statement both renames away (or drops) and gives to another column (a swap, a rotation, DROP
        # COLUMN b, RENAME COLUMN a TO b: the clauses of one ALTER all name the columns as they were before it)
        # is a rename, not a column that stayed
        src = next((n for n in old_cols if n.lower() == was and (n not in new_cols or was in back)), None)
        dst = next((n for n in new_cols if n.lower() == now.lower() and (n not in old_cols or n.lower() in freed)),
                   None)
        if src is not None and dst is not None:
            renamed[dst] = src
    # a column dropped for its name to be taken by a rename goes first
    out = [ColumnChange("drop", n) for n in renamed if n in old_cols and n not in renamed.values()]
    out += [ColumnChange("rename", n, o) for n, o in renamed.items()]
    gone = set(renamed.values())
    out += [ColumnChange("drop", n) for n in old_cols if n not in new_cols and n not in gone]
    for c in new.columns:
        was_name = renamed.get(c.name, c.name)
        o = old_cols.get(was_name)
        if o is None:
            continue
        tc = type_change(o, c)
        if tc.how != "same":
            out.append(ColumnChange("type", c.name, o.type, c.type, tc.how))
        if o.nullable != c.nullable:
            out.append(ColumnChange("null", c.name, o.nullable, c.nullable))
        if o.default != c.default and (o.default is not None or c.default is not None) \
                and old_has_defaults(old, new):
            out.append(ColumnChange("default", c.name, o.default, c.default))
    prev = None
    for c in new.columns:
        if c.name not in old_cols and c.name not in renamed:
            out.append(ColumnChange("add", c.name, None, c.type, after=prev))
        prev = c.name
    if tuple(old.primary_key) != tuple(new.primary_key):
        out.append(ColumnChange("key", ",".join(new.primary_key), list(old.primary_key), list(new.primary_key)))
    return out


def rename_cycle(changes: list[ColumnChange]) -> list[ColumnChange]:
    """The renames of ``changes`` (one statement's) that give a column a name another of them frees (a swap, a
    rotation): renamed one after the other, a name would be taken; the apply moves them all through temporary
    names. Empty when no rename takes a name in use."""
    renames = [c for c in changes if c.kind == "rename"]
    freed = {c.old for c in renames}
    return renames if any(c.column in freed for c in renames) else []


# the statement of the record the MySQL reader writes before an ALTER that drops a column and adds one of the same
# name (readers/mysql/reader.py): the apply then replaces the column instead of keeping the old values
DROP_PART = "/* cdc: the DROP part of the statement that follows */"


def old_has_defaults(old: TableSchema, new: TableSchema) -> bool:
    """Defaults are compared only when both definitions come from the catalog (a table map's shape has
    none: a first sight followed by a DDL must not read as 'every default changed')."""
    return any(c.default is not None for c in old.columns) or not any(c.default is not None for c in new.columns)


def changes_json(changes: list[ColumnChange]) -> list[dict[str, Any]]:
    return [c.to_json() for c in changes]


_TOKEN = re.compile(r"`((?:[^`]|``)+)`|\"((?:[^\"]|\"\")+)\"|([\w$]+)")


def _names_in(ddl: str) -> set[str]:
    text = re.sub(r"'(?:[^']|'')*'", "''", ddl)
    return {(a or b or c).lower() for a, b, c in _TOKEN.findall(text)}


def statement_changes(old: TableSchema, new: TableSchema, ddl: str | None) -> tuple[list[ColumnChange], TableSchema]:
    """The changes of ``diff`` that the statement names, and the shape they lead to.

    A reader that reads the table's definition from the catalog after the DDL (MySQL/MariaDB's
    information_schema) may see the shape after LATER statements too when it lags behind the
    source: a column the statement does not name changed in a later DDL, whose own SCHEMA record
    (or the first rows written with it) brings that change. So only the named changes count here,
    and the shape returned is ``old`` with just those applied. ``ddl`` None: every change, ``new``."""
    changes = diff(old, new, ddl)
    if ddl is None:
        return changes, new
    names = _names_in(ddl)

    def named(c: ColumnChange) -> bool:
        if c.kind == "key":
            return True  # the table-level rules judge key changes
        return c.column.lower() in names and (c.kind != "rename" or str(c.old).lower() in names)

    kept = [c for c in changes if named(c)]
    if len(kept) == len(changes):
        return changes, new
    return kept, partial_shape(old, new, kept)


def partial_shape(old: TableSchema, new: TableSchema, kept: list[ColumnChange]) -> TableSchema:
    """``old`` with only the changes ``kept`` (of ``diff(old, new)``) applied, in the old column order."""
    new_cols = {c.name: c for c in new.columns}
    touched = {c.column for c in kept}
    renamed = {c.old: c.column for c in kept if c.kind == "rename"}
    dropped = {c.column for c in kept if c.kind == "drop"}
    cols = []
    for o in old.columns:  # the old order, with the named renames and changes
        if o.name in dropped:
            continue
        now = renamed.get(o.name, o.name)
        cols.append(new_cols[now] if now in touched and now in new_cols else o)
    for c in kept:  # the named adds, after the column the new shape has before them
        if c.kind == "add":
            at = next((i + 1 for i, x in enumerate(cols) if x.name == c.after), 0 if c.after is None else len(cols))
            cols.insert(at, new_cols[c.column])
    return TableSchema(new.table, tuple(cols), new.primary_key)
