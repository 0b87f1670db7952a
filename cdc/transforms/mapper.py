"""The column-mapper hook: one :class:`ColumnMapper` per table shape, built from ``sources[].transforms``.

Readers call :meth:`SourceTransforms.mapper` where they choose a table's column converters (MySQL: per
TABLE_MAP; Oracle: per dictionary shape) and after every DDL; ``cdc compare`` calls it for the source
table it fingerprints. A mapper gives

- ``schema``: the shaped TableSchema (what SCHEMA records, ``Change.schema`` and so the Debezium/Avro
  schemas and the apply's catalog see: an excluded column absent, a hashed or encrypted one a string);
- ``row(values)``: the shaped row image, a new dict (the reader's own dict is left as it was), computed
  columns (``computed:``) added after the moved ones;
- ``change(op, before, after)``: a row change filtered (``filter``/``filter_function``, evaluated on both clear
  images) and shaped, None when it moves nowhere; ``rows(rows)``: the snapshot rows that pass, shaped.

None from ``mapper()`` means the table is not shaped: its rows move as they are, and the fast paths (the
native MySQL rows pass, Oracle's columnar redo pass) may serialize them. A table with a mapper never takes
a fast path that skips ``change()``/``row()``: that is the fast paths' one rule (tests/unit/cdc/transforms). The
native MySQL rows pass shapes the decoded images itself, in C, when the mapper's ``native`` plan says how (only
column selection and the masks hash, truncate, keep_last, replace, null: no filter, no computed column, no
encrypt), byte for byte as ``row()`` (readers/mysql/binlog/native_rows.py ``shaped_rows``); otherwise it applies
``change()`` to the decoded images before it serializes any (readers/mysql/reader.py ``_serialized_shaped``). A
fast path that can do neither declines the shaped table.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from fnmatch import fnmatchcase
from typing import Any

from cdc.schema.logical import LogicalType
from cdc.schema.table_glob import is_literal
from cdc.stream.events import Column, TableId, TableSchema
from cdc.transforms import masks
from cdc.transforms.config import TableTransform, TransformsConfig
from cdc.transforms.errors import TransformError
from cdc.transforms.expressions import Expression

_TEXT_FAMILIES = frozenset({"string", "enum", "set"})
_HASHABLE = _TEXT_FAMILIES | {"integer"}
ALLOWED_FAMILIES = {"hash": _HASHABLE, "encrypt": _HASHABLE, "truncate": _TEXT_FAMILIES,
                    "keep_last": _TEXT_FAMILIES, "replace": None, "null": None}  # None: any family
KEY_MASKS = frozenset({"hash"})  # deterministic and injective enough to stay a key


def mysql_spelling(logical: LogicalType) -> str:
    """The type text a shaped string column gets in a MySQL source's schema."""
    return f"varchar({logical.length})" if logical.length is not None and logical.length <= 16_383 else "longtext"


def oracle_spelling(logical: LogicalType) -> str:
    """The type text a shaped string column gets in an Oracle source's schema."""
    return f"varchar2({logical.length})" if logical.length is not None and logical.length <= 4000 else "clob"


@dataclass(frozen=True)
class ColumnMapper:
    """The shaping of one table shape. See the module docstring."""

    table: TableId
    schema: TableSchema
    plan: tuple[tuple[str, Callable[[Any], Any] | None], ...]  # kept column -> its mask (None: as it is)
    masked: frozenset[str]  # columns whose values the mask changes (never shown in an error or a log)
    dropped: frozenset[str]  # columns that never leave the daemon
    keep: Callable[[dict[str, Any]], bool] | None = None  # the row filter, on the clear image (None: every row)
    computed: tuple[tuple[str, Callable[[dict[str, Any]], Any]], ...] = ()  # added columns, from the clear row
    source: tuple[str, ...] = ()  # the source table's columns in order (a full image in this order: row()'s copy)
    # what row() does per source column, for a fast path that shapes natively: (name, "keep" | "drop" | the mask's
    # name, its argument: hash the key, truncate/keep_last the length, replace the value); None when only row()
    # and change() can shape (a filter, a computed column, an encrypted one). Holds the key: never shown.
    native: tuple[tuple[str, str, Any], ...] | None = field(default=None, repr=False, compare=False)
    fast: dict[str, Any] = field(init=False, repr=False, compare=False)  # a fast path's compiled ``native``
    _masks: tuple[tuple[str, Callable[[Any], Any]], ...] = field(init=False, repr=False, compare=False)
    _source_list: list[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_masks", tuple((n, fn) for n, fn in self.plan if fn is not None))
        object.__setattr__(self, "_source_list", list(self.source))
        object.__setattr__(self, "fast", {})

    def change(self, op: str, before: dict[str, Any] | None,
               after: dict[str, Any] | None) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None] | None:
        """(op, before, after) of one clear change as the stream carries it: filtered on both images, then
        shaped; None when the row moves nowhere. An update leaving the filter is a delete of its before image,
        one entering it an insert of its after image."""
        if self.keep is not None:
            was = before is not None and self.keep(before)
            now = after is not None and self.keep(after)
            if op == "u" and was != now:
                op, before, after = ("d", before, None) if was else ("c", None, after)
            elif not (was or now):
                return None
        return op, self.row(before), self.row(after)

    def rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The shaped images of the snapshot rows that pass the filter."""
        keep = self.keep
        return [self.row(r) for r in rows if keep is None or keep(r)]  # type: ignore[misc]

    def row(self, values: dict[str, Any] | None) -> dict[str, Any] | None:
        """The shaped image of ``values`` (None stays None). TransformError names table and column, never
        the value."""
        if values is None:
            return None
        if self.source and list(values) == self._source_list:  # a full image in table order (every row event's)
            out = dict(values)  # the same keys in the same order as the loop below gives, built in C
            for name in self.dropped:
                del out[name]
            for name, fn in self._masks:
                v = out[name]
                if v is not None:
                    try:
                        out[name] = fn(v)
                    except TypeError:
                        raise TransformError(f"{self.table}.{name}: a {type(v).__name__} value cannot be masked",
                                             table=str(self.table), column=name) from None
            for name, fn in self.computed:
                out[name] = fn(values)
            return out
        out = {}
        for name, fn in self.plan:
            v = values.get(name)
            if fn is not None and v is not None:
                try:
                    v = fn(v)
                except TypeError:
                    raise TransformError(f"{self.table}.{name}: a {type(v).__name__} value cannot be masked",
                                         table=str(self.table), column=name) from None
            out[name] = v
        for name, fn in self.computed:
            out[name] = fn(values)
        return out

    def hides(self, column: str | None) -> bool:
        """Whether an error naming ``column`` must not show its value (a masked or dropped column)."""
        return column is None or column in self.masked or column in self.dropped


class SourceTransforms:
    """The transforms of one source: its rules and keys (read once, at start), and a mapper per shape."""

    def __init__(self, source: str, config: TransformsConfig | None,
                 spelling: Callable[[LogicalType], str] = mysql_spelling, key_window: bool = False,
                 kind: str = "mysql") -> None:
        """``key_window``: the reader matches snapshot rows to binlog rows by their clear key (MySQL incremental
        snapshots): a hashed key column is then refused (not built yet). ``kind``: the source kind whose type
        parser reads a computed column's ``type`` (cdc.registry.type_parser)."""
        self.source = source
        self.kind = kind
        self.key_window = key_window
        self.rules = list(config.tables) if config is not None else []
        self.spelling = spelling
        self._hash_key = masks.read_hash_key(config.hash_key_file) \
            if config is not None and config.hash_key_file else None
        self._aes_key = masks.read_encryption_key(config.encryption_key_file) \
            if config is not None and config.encryption_key_file else None
        self._cache: dict[TableSchema, ColumnMapper | None] = {}

    def __bool__(self) -> bool:
        return bool(self.rules)

    def rule(self, table: TableId) -> TableTransform | None:
        name = str(table)
        return next((r for r in self.rules if fnmatchcase(name, r.match)), None)

    def mapper(self, schema: TableSchema | None) -> ColumnMapper | None:
        """The mapper of one table shape, None when no rule matches it. Cached per shape.

        Raises TransformError when the rule does not fit the shape: a named column it lacks (a literal rule),
        a key column excluded or masked with anything but ``hash``, a mask on a family it cannot shape."""
        if schema is None or not self.rules:
            return None
        if schema in self._cache:
            return self._cache[schema]
        rule = self.rule(schema.table)
        built = None if rule is None else self._build(schema, rule)
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[schema] = built
        return built

    def shape(self, schema: TableSchema | None) -> TableSchema | None:
        """``schema`` as the stream shows it (unchanged when no rule matches)."""
        m = self.mapper(schema)
        return schema if m is None else m.schema

    def _fail(self, schema: TableSchema, rule: TableTransform, message: str, column: str) -> TransformError:
        return TransformError(
            f"source {self.source}: table {schema.table} column {column}: {message} (sources[].transforms rule "
            f"{rule.match!r}). Way back: change the rule in the config (or restore the column in the source), "
            "then restart the daemon: it resumes at its position, nothing of this table was published after it",
            source=self.source, table=str(schema.table), column=column)

    def _build(self, schema: TableSchema, rule: TableTransform) -> ColumnMapper:
        names = {c.name for c in schema.columns}
        named = list(rule.columns) + list(rule.exclude) + list(rule.include or [])
        if is_literal(rule.match):
            for col in named:
                if col not in names:
                    raise self._fail(schema, rule, "the table has no such column (dropped or renamed?)", col)
        keep = [c for c in schema.columns
                if c.name not in rule.exclude and (rule.include is None or c.name in rule.include)]
        kept = {c.name for c in keep}
        for k in schema.primary_key:
            if k not in kept:
                raise self._fail(schema, rule, "a primary key column cannot be left out", k)
        plan, cols, masked, specs = [], [], set(), {}
        for c in keep:
            cfg = rule.columns.get(c.name)
            if cfg is None:
                plan.append((c.name, None))
                cols.append(c)
                continue
            family = c.logical.family if c.logical is not None else "other"
            allowed = ALLOWED_FAMILIES[cfg.mask]
            if allowed is not None and family not in allowed:
                raise self._fail(schema, rule, f"mask {cfg.mask} cannot shape a {family} column "
                                 f"(it shapes {', '.join(sorted(allowed))}; use replace or null)", c.name)
            if c.name in schema.primary_key and cfg.mask not in KEY_MASKS:
                raise self._fail(schema, rule, f"a primary key column can only be hashed (mask {cfg.mask} would "
                                 "break the key: updates and deletes could not find their row)", c.name)
            if c.name in schema.primary_key and self.key_window:
                raise self._fail(schema, rule, "a hashed primary key column is not supported yet on a source with "
                                 "a signal_table (incremental snapshots match rows by their clear key)", c.name)
            fn, column, specs[c.name] = self._mask(cfg, c)
            plan.append((c.name, fn))
            cols.append(replace(column, masked=cfg.mask))  # marked in SCHEMA records and Debezium schemas
            masked.add(c.name)
        computed = []
        for name, cc in rule.computed.items():
            if name in names:
                raise self._fail(schema, rule, "a computed column cannot take the name of a source column", name)
            expr = Expression(cc.expr, f"sources[].transforms rule {rule.match!r} computed {name}")
            for col in sorted(expr.columns - names):
                raise self._fail(schema, rule, f"computed column {name} reads a column the table does not have", col)
            for col in sorted(expr.columns & (masked | (names - kept))):  # fail closed: no clear value leaves
                raise self._fail(schema, rule, f"computed column {name} reads a masked or left-out column (its "
                                 "clear value would leave the daemon)", col)
            from cdc.registry import type_parser

            logical = type_parser(self.kind)(cc.type)
            computed.append((name, _computed(expr, logical, str(schema.table), name)))
            cols.append(Column(name, cc.type, True, None, logical))
        shaped = TableSchema(schema.table, tuple(cols), schema.primary_key)
        keep_fn = self._filter(schema, rule, names)
        native = None
        if keep_fn is None and not computed and all(what != "encrypt" for what, _ in specs.values()):
            native = tuple((c.name, *specs.get(c.name, ("keep", None))) if c.name in kept else (c.name, "drop", None)
                           for c in schema.columns)
        return ColumnMapper(schema.table, shaped, tuple(plan), frozenset(masked), frozenset(names - kept), keep_fn,
                            tuple(computed), tuple(c.name for c in schema.columns), native)

    def _filter(self, schema: TableSchema, rule: TableTransform, names: set[str]) -> Callable[[dict], bool] | None:
        """The rule's row filter (an expression or a function by import path), None when it has none."""
        if rule.filter is not None:
            expr = Expression(rule.filter, f"sources[].transforms rule {rule.match!r} filter")
            for col in sorted(expr.columns - names):  # a glob rule too: a missing column would drop every row
                raise self._fail(schema, rule, "the filter reads a column the table does not have", col)
            return expr.matches
        if rule.filter_function is not None:
            module, _, name = rule.filter_function.partition(":")
            try:
                fn = getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError) as exc:
                raise self._fail(schema, rule, f"filter_function {rule.filter_function!r} cannot be imported "
                                 f"({type(exc).__name__}: {exc})", "-") from None
            table = str(schema.table)

            def keep(row: dict[str, Any]) -> bool:
                try:
                    return fn(dict(row)) is True
                except Exception as exc:  # noqa: BLE001 - the user's code: named, its row not shown
                    raise TransformError(f"{table}: filter_function {rule.filter_function} raised "
                                         f"{type(exc).__name__} (the row is not shown)", table=table) from None
            return keep
        return None

    def _mask(self, cfg: Any, c: Column) -> tuple[Callable[[Any], Any], Column, tuple[str, Any]]:
        """(the mask function, the shaped column, the mask as ColumnMapper.native names it)."""
        family = c.logical.family if c.logical is not None else "other"
        length = c.logical.length if c.logical is not None else None
        if cfg.mask == "hash":
            out = LogicalType("string", length=64)
            return (masks.hash_mask(self._hash_key), Column(c.name, self.spelling(out), c.nullable, None, out),
                    ("hash", self._hash_key))
        if cfg.mask == "encrypt":
            chars = 20 if family == "integer" else length
            out = LogicalType("string", length=None if chars is None else encrypted_length(chars))
            return (masks.encrypt_mask(self._aes_key), Column(c.name, self.spelling(out), c.nullable, None, out),
                    ("encrypt", None))
        if cfg.mask == "truncate":
            out = LogicalType("string", length=cfg.length if length is None else min(length, cfg.length))
            return (masks.truncate_mask(cfg.length), Column(c.name, self.spelling(out), c.nullable, None, out),
                    ("truncate", cfg.length))
        if cfg.mask == "keep_last":
            out = LogicalType("string", length=length)
            return (masks.keep_last_mask(cfg.length), Column(c.name, self.spelling(out), c.nullable, None, out),
                    ("keep_last", cfg.length))
        if cfg.mask == "replace":
            if family == "string" and (length is None or len(cfg.value) <= length):
                column = Column(c.name, c.type, c.nullable, None, c.logical)
            else:
                out = LogicalType("string", length=max(len(cfg.value), 1))
                column = Column(c.name, self.spelling(out), c.nullable, None, out)
            return masks.replace_mask(cfg.value), column, ("replace", cfg.value)
        return masks.null_mask, Column(c.name, c.type, True, None, c.logical), ("null", None)


def _computed(expr: Expression, logical: LogicalType, table: str, name: str) -> Callable[[dict[str, Any]], Any]:
    """The value function of a computed column: the expression's value in the stream form of its type (a
    string; an int; a decimal as its text at the type's scale, rounded half away from zero as MySQL's CAST)."""
    family, length, scale = logical.family, logical.length, logical.scale or 0
    step = Decimal(1).scaleb(-scale)

    def value(row: dict[str, Any]) -> Any:
        v = expr.value(row)
        if v is None:
            return None
        try:
            if family == "string":
                text = str(int(v)) if isinstance(v, bool) else str(v)
                if length is not None and len(text) > length:
                    raise TransformError(f"{table}.{name}: a computed value is longer than its type's {length} "
                                         "characters (the value is not shown); widen the computed column's type",
                                         table=table, column=name)
                return text
            d = Decimal(str(int(v)) if isinstance(v, bool) else str(v))
            if family == "integer":
                return int(d.to_integral_value(ROUND_HALF_UP))
            return format(d.quantize(step, ROUND_HALF_UP), "f")
        except (InvalidOperation, ValueError):
            raise TransformError(f"{table}.{name}: a computed value is not a {family} (the value is not shown)",
                                 table=table, column=name) from None
    return value


def encrypted_length(chars: int) -> int:
    """Most characters an encrypted value of at most ``chars`` characters takes (UTF-8: 4 bytes a character)."""
    raw = 12 + 16 + 4 * chars
    return len(masks.ENCRYPTED_PREFIX) + 4 * ((raw + 2) // 3)
