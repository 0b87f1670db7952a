"""What the apply job knows about each source table, and how SCHEMA records change it.

Learnt from SCHEMA records (the publisher emits one before a table's first
data record in each publisher process, and after every DDL) and persisted in
the target's ``cdc_schema`` table in the batch transaction, so a restarted
job knows its tables without re-reading the stream.

DDL rule (DDL is a batch barrier; the engine applies what came before it
first, so the target is at the DDL's point): the change from the schema in
memory to the record's is worked out column by column (cdc.schema.evolution.diff:
rename, drop, type widen/narrow/change, NULL, default, add) and followed
according to the table's behaviour (``apply[].schema_changes``: evolve,
exception, lenient, ignore; docs/schema-evolution.md) with the target's own
DDL (its dialect, cdc/schema/sql_dialects.py), in the batch transaction where the
target's DDL is transactional. A new column's existing rows take the source's
value: its constant default (or MariaDB's implicit one for NOT NULL), written
by the target's ADD COLUMN ... DEFAULT. What cannot be followed (an expression
default on a table with rows, a narrowing a target value does not fit, a
change the target cannot express, any change under ``exception``) raises
UnsupportedDdl naming table, statement, sequence and the way back
(``cdc schema accept|skip|evolve``, whose decision the target keeps and this
module reads at the barrier). A transient target error during the DDL (a
lock or statement timeout, a lost connection: Target.classify) is no stop: it
goes through unchanged, the batch is rolled back whole and retried like any
batch (streaming/apply/retry.py). A first sight of a table creates the target
table when missing.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from cdc.errors import CdcError
from cdc.registry import logical_of
from cdc.schema.evolution import (
    DROP_PART,
    ColumnChange,
    SchemaChangeConfig,
    default_value,
    partial_shape,
    rename_cycle,
    statement_changes,
    type_change,
)
from cdc.schema.table_map import TableMap
from cdc.stream.events import Column, TableSchema
from streaming.apply import table_ddl
from streaming.apply.table_info import TableInfo
from streaming.errors import ApplyError, UnsupportedDdl
from streaming.targets.base import ErrorKind, Target

DECISIONS = ("accept", "skip", "evolve")


class Catalog:
    def __init__(self, source: str, target: Target, table_map: TableMap,
                 policy: SchemaChangeConfig | None = None) -> None:
        self.source = source
        self.target = target
        self.table_map = table_map
        self.policy = policy or SchemaChangeConfig()
        self.tables: dict[str, TableInfo] = {}
        self._skipped: set[str] = set()  # tables with a `cdc schema skip` decision: they keep their shape
        self._forced = False  # the DDL at hand has an `evolve` decision
        self._dry, self._t, self._was = False, target, {}  # the pass over a DDL's changes (see _evolve)
        # the source kind of ``source`` in the config (cdc.yaml ``sources:``): it reads a column written without its
        # logical type (a SCHEMA record from before SCHEMA records carried the kind); without either, the type maps
        # read each type text as every earlier version did (cdc.registry.guess_logical); ``require_kind``: stop instead
        self.source_kind: str | None = None
        self.require_kind = False

    def load(self) -> None:
        schemas = self.target.load_schemas(self.source)
        self._skipped = self.target.skipped_tables(self.source) if schemas else set()
        for src, (dst, schema) in schemas.items():
            self.tables[src] = self._info(src, dst, self.typed(schema, None, "the target's schema memory"))

    def _info(self, src: str, dst: str, schema: TableSchema) -> TableInfo:
        written = None
        if (self.policy.for_table(src) == "ignore" or src in self._skipped) \
                and "changelog" not in self.target.schema_kinds:
            written = self.target.table_columns(dst)
        return TableInfo.build(src, dst, schema, self.target.dialect, written)

    def get(self, source_table: str) -> TableInfo | None:
        return self.tables.get(source_table)

    def on_schema(self, meta: dict[str, Any], sequence: int) -> str | None:
        """Apply one SCHEMA record to the target (inside the batch transaction).

        Returns the target table touched, or None when the record does not
        concern an applied table. Raises UnsupportedDdl for a change it does not follow.
        """
        if table_ddl.is_table_level(meta):  # CREATE/DROP/RENAME TABLE (streaming/apply/table_ddl.py)
            return table_ddl.apply_tables(self, meta, sequence)
        table, ddl, raw = meta.get("table"), meta.get("ddl"), meta.get("schema")
        if raw is None:
            if ddl is None or table is None or not self.table_map.wanted(table):
                return None  # e.g. CREATE DATABASE: nothing in the target to change
            if self.target.schema_decision(self.source, sequence) in (("skip", table), ("accept", table)):
                return None  # the operator's decision: the target table stays as it is
            raise self._stop(table, sequence, ddl, "the statement leaves no table definition (DROP TABLE?), which "
                             "the apply does not follow", ways=("skip",))
        schema = self.typed(TableSchema.from_json(raw), raw.get("kind"), sequence)
        table = str(schema.table)
        if not self.table_map.wanted(table):
            return None
        old = self.tables.get(table)
        dst = old.target_table if old else self.table_map.target_name(table)
        if old is not None:  # primary key added, dropped, changed (a table map's shape may tell it first)
            old = table_ddl.follow_key(self, old, schema, sequence, ddl)
        existing = self.target.table_columns(dst)
        if existing is None:
            self.target.create_table(dst, schema)
        elif old is None:  # a target table this job has no memory of: add what it lacks
            for col in schema.columns:
                if col.name not in existing:
                    self.target.evolve_add(dst, col, None)
        else:
            schema = self._evolve(old, schema, dst, existing, sequence, ddl, whole=bool(meta.get("whole_shape")))
        self.tables[table] = self._info(table, dst, schema)
        self.target.save_schema(self.source, table, dst, schema, sequence)
        return dst

    def typed(self, schema: TableSchema, kind: str | None, where: int | str) -> TableSchema:
        """``schema`` with every column's logical type (cdc.schema.logical): the column's own, else the one the
        source kind's parser reads (``kind``: the SCHEMA record's, else the configured source's). Raises
        ApplyError naming the source, the record and the fix when a column needs a kind and none is known."""
        if all(c.logical is not None for c in schema.columns):
            return schema
        kind = kind or self.source_kind
        if kind is None:
            if self.require_kind:
                raise ApplyError(
                    f"the schema of {schema.table} ({'SCHEMA record sequence ' if isinstance(where, int) else ''}"
                    f"{where}) of source {self.source!r} was written before SCHEMA records carried the source kind "
                    f"(no kind, no logical column types), and the config has no source named {self.source!r} to tell "
                    f"it: add it to cdc.yaml's sources: (name: {self.source}, kind: mysql|oracle|shadow, as it was "
                    f"written) so the apply reads its column types",
                    source=self.source, sequence=where, table=str(schema.table))
            return schema  # streaming.targets.typemap reads each type text as it can (cdc.registry.guess_logical)
        return TableSchema(schema.table, tuple(c if c.logical is not None else replace(c, logical=logical_of(c, kind))
                                               for c in schema.columns), schema.primary_key)

    # ---- one DDL ------------------------------------------------------------------------
    def _evolve(self, old: TableInfo, new: TableSchema, dst: str, existing: list[str], sequence: int,
                ddl: str | None, whole: bool = False) -> TableSchema:
        """Follow the change from ``old`` to ``new``; returns the definition to remember (``new``, or ``old``
        with only the changes the statement names: cdc.schema.evolution.statement_changes). ``whole``: every
        change counts whatever the statement names (a table replaced by an online schema change's shadow,
        whose own ALTERs were never in the stream)."""
        table = old.source_table
        changes, new = statement_changes(old.schema, new, None if whole else ddl)
        if ddl is None and not whole:  # a first-sight definition (a restarted publisher, from the binlog's table map): only
            # new columns and wider types count; the rest is how the table map spells what the catalog said
            changes = [c for c in changes if c.kind == "add" or (c.kind == "type" and c.how == "widen")]
            new = partial_shape(old.schema, new, changes)
        if not changes:
            return new  # a DDL that changes no column (an index, a comment, ENGINE, a partition)
        decided = self.target.schema_decision(self.source, sequence)
        decision = decided[0] if decided else None
        if decided and decided[1] != table:
            raise self._stop(table, sequence, ddl, f"the decision recorded for sequence {sequence} ({decision}) names "
                             f"table {decided[1]}, not {table}: record it again with --table {table}")
        if decision == "accept":
            return new  # the operator made the target match (docs/schema-evolution.md): memory takes the new shape
        if decision == "skip":
            self._skipped.add(table)
        self._forced = decision == "evolve"
        behavior = {"skip": "ignore", "evolve": "evolve"}.get(decision or "", self.policy.for_table(table))
        if behavior == "exception":
            raise self._stop(table, sequence, ddl, "schema changes of this table stop the apply "
                             "(schema_changes behaviour 'exception'): " + "; ".join(c.describe() for c in changes))
        if behavior == "ignore":
            return new  # the target keeps its shape; _info writes only its columns
        # first a dry pass that only checks (a stop leaves the target as it was), then the DDL
        self._was = {c.column: c.old for c in changes if c.kind == "rename"}
        cycle = rename_cycle(changes)
        for dry in (True, False):
            self._dry, self._t = dry, (_DryRun(self.target) if dry else self.target)
            have = set(existing)
            steps = ([cycle] if cycle else []) + [c for c in changes if c not in cycle]
            for step in steps:
                ch = step[0] if isinstance(step, list) else step
                try:
                    if isinstance(step, list):  # a swap or rotation of names: all at once
                        self._move(step, dst, have, table, sequence, ddl or "")
                    else:
                        self._follow(ch, old, new, dst, have, sequence, ddl or "", lenient=behavior == "lenient")
                except CdcError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the target's own error class: name the DDL
                    if self.target.classify(exc) is ErrorKind.TRANSIENT:
                        raise  # a lock or statement timeout, a lost connection: the batch is retried whole
                    raise ApplyError(
                        f"target {self.target.name!r} refused the DDL for {ch.describe()} of {table} at sequence "
                        f"{sequence} (statement: {ddl}): {str(exc).strip().splitlines()[0]}; the batch is rolled "
                        f"back. Restart `cdc apply` if the cause was passing; else record a way back: "
                        f"{self._ways(table, sequence, ('accept', 'skip'))}",
                        table=table, sequence=sequence, ddl=ddl, column=ch.column) from None
        return new

    def _follow(self, ch: ColumnChange, old: TableInfo, new: TableSchema, dst: str, have: set[str], sequence: int,
                ddl: str, lenient: bool) -> None:
        t, kinds, table = self._t, self.target.schema_kinds, old.source_table
        col = next((c for c in new.columns if c.name == ch.column), None)
        before = {c.name: c for c in old.schema.columns}

        def need(kind: str, what: str) -> None:
            if kind not in kinds:
                raise self._stop(table, sequence, ddl, f"{what}: target {t.name!r} ({t.dialect}) cannot express it")

        if ch.kind == "key":
            raise self._stop(table, sequence, ddl, f"{ch.describe()}: a key change is not followed by column DDL")
        if ch.kind == "rename":
            if ch.column in have:  # replayed after the target's DDL committed (MySQL, Oracle)
                return
            if lenient:  # keep the old column, add the new one filled from it
                need("backfill", ch.describe())
                t.evolve_add(dst, Column(col.name, col.type, True), None)
                t.evolve_copy(dst, ch.old, ch.column)
                self._relax(dst, before[ch.old])
                have.add(ch.column)
                return
            need("rename", ch.describe())
            t.evolve_rename(dst, ch.old, ch.column)
            have.discard(ch.old)
            have.add(ch.column)
        elif ch.kind == "drop":
            if ch.column not in have:
                return
            taker = next((was for now, was in self._was.items() if now == ch.column), None)
            if taker is not None:  # DROP COLUMN b, RENAME COLUMN a TO b: b makes room for a
                if taker not in have:
                    return  # run again after the rename committed (MySQL, Oracle, a lake): b is a's now
                if lenient:
                    raise self._stop(table, sequence, ddl, f"the statement drops {ch.column} and renames "
                                     f"{taker} to its name: the lenient behaviour keeps a dropped column's values, "
                                     f"and one column cannot hold both",
                                     hint=f"evolve drops {ch.column} and renames {taker} as the source did")
                need("drop", ch.describe())
                t.evolve_drop(dst, ch.column)
                have.discard(ch.column)
                return
            if lenient and ddl.startswith(DROP_PART):
                raise self._stop(table, sequence, ddl, f"the statement that follows drops {ch.column} and adds a new "
                                 f"column of that name, whose values are not the old ones: the lenient behaviour "
                                 f"keeps a dropped column's values, and one column cannot hold both",
                                 hint=f"evolve drops {ch.column} here and the statement that follows adds the new "
                                      f"column with the source's values")
            if lenient:
                self._relax(dst, before[ch.column])
                return
            need("drop", ch.describe())
            t.evolve_drop(dst, ch.column)
            have.discard(ch.column)
        elif ch.kind == "add":
            if ch.column in have and ch.column not in before and not self.target.ddl_commits \
                    and self.policy.for_table(table) == "lenient":
                # not a replay (this target's DDL commits with the batch): a column the source dropped earlier,
                # kept by the lenient behaviour, whose stored values are not the new column's
                if not self._forced:
                    raise self._stop(table, sequence, ddl, f"new column {ch.column} has the name of a column the "
                                     f"source dropped earlier, which the target kept (lenient behaviour) with the "
                                     f"old values: the new column's values are not those",
                                     hint=f"evolve replaces the target's {ch.column} with the new column")
                t.evolve_drop(dst, ch.column)
                have.discard(ch.column)
            if ch.column in have:
                return
            # a position names a column the target has (else the column is appended)
            self._add(col, ch.after if ch.after is None or ch.after in have else False, dst, table, sequence, ddl)
            have.add(ch.column)
        elif ch.kind == "type":
            self._retype(ch, col, dst, old, sequence, ddl, lenient)
        elif ch.kind == "null":
            if (lenient and not col.nullable) or "null" not in kinds:
                return  # the target stays nullable (lake tables hold every column nullable)
            if not col.nullable:
                self._check_values(dst, ch, old, "{c} IS NULL", sequence, ddl)
            t.evolve_alter(dst, col, _const(col), {"null"})
        elif ch.kind == "default" and "default" in kinds:
            # an expression default stays with the source (the apply writes every value it produces)
            t.evolve_alter(dst, col, _const(col), {"default"})

    def _move(self, cycle: list[ColumnChange], dst: str, have: set[str], table: str, sequence: int,
              ddl: str) -> None:
        """One statement's renames that take names others of them free (a swap ``a -> b, b -> a``, a rotation):
        each column to a temporary name, then each to its new name. Under every behaviour that changes the table
        (lenient too: no column is dropped), in the batch's transaction: a target whose renames commit on their own
        stops instead (a finished exchange and none look the same to a batch run again)."""
        what = ", ".join(c.describe() for c in cycle)
        if "rename" not in self.target.schema_kinds:
            raise self._stop(table, sequence, ddl, f"{what}: target {self._t.name!r} ({self._t.dialect}) cannot "
                             f"rename columns")
        if self.target.ddl_commits or self.target.batch_commit == "per_table":
            # its renames commit before the batch's schema memory, and names exchanged once more look the same
            raise self._stop(table, sequence, ddl, f"{what} (names exchanged in one statement): target "
                             f"{self._t.name!r} ({self._t.dialect}) commits a rename on its own, and a batch run "
                             f"again after a crash would exchange them back", ways=("accept", "skip"),
                             hint="rename the columns of the target table as the statement does, then accept")
        temp = {c.old: f"cdc_mv{i}_{sequence}" for i, c in enumerate(cycle)}
        for c in cycle:
            if c.old in have and temp[c.old] not in have:
                self._t.evolve_rename(dst, c.old, temp[c.old])
                have.discard(c.old)
                have.add(temp[c.old])
        for c in cycle:
            if temp[c.old] in have:
                self._t.evolve_rename(dst, temp[c.old], c.column)
                have.discard(temp[c.old])
                have.add(c.column)

    def _add(self, col: Column, after: str | None | bool, dst: str, table: str, sequence: int, ddl: str) -> None:
        t = self._t
        kind, value = default_value(col)
        if kind == "none" and _statement_default(ddl, col.name):
            raise self._stop(table, sequence, ddl, f"the statement gives new column {col.name} a default, but the "
                             f"SCHEMA record carries none (a reader that does not read column defaults): existing "
                             f"rows would be NULL in the target", ways=("evolve", "skip"),
                             hint=f"after evolve (NULL in existing rows), `cdc compare ... --tables {table} --repair` "
                                  f"with the daemon stopped publishes the source's values")
        if kind == "expr" and not self._forced and t.has_rows(dst):
            raise self._stop(table, sequence, ddl, f"new column {col.name} has the default {value!r}, whose value "
                             f"in each existing source row the stream does not carry", ways=("evolve", "skip"),
                             hint=f"after evolve (the column is added, NULL in existing rows) and with the daemon of "
                                  f"{self.source} stopped, `cdc compare --config <file> --source {self.source} "
                                  f"--target {t.name} --tables {table} --repair` publishes the source's values of "
                                  f"those rows, which the apply then writes")
        if kind == "const" and "backfill" not in t.schema_kinds and not self._forced and t.has_rows(dst):
            raise self._stop(table, sequence, ddl, f"new column {col.name} takes {value!r} in existing rows, "
                             f"which target {t.name!r} ({t.dialect}) cannot write into its stored rows",
                             ways=("evolve", "skip"), hint="evolve adds the column with NULL in the stored rows")
        if "add" not in t.schema_kinds:
            raise self._stop(table, sequence, ddl, f"add {col.name}: target {t.name!r} cannot add columns")
        fill = value if kind == "const" and ("backfill" in t.schema_kinds or not self._forced) else None
        if kind == "expr":  # no row to fill (or the repair fills them): the target keeps no expression default
            col = Column(col.name, col.type, col.nullable or self._forced, None)
        t.evolve_add(dst, col, fill, after if t.sql is not None else False)

    def _retype(self, ch: ColumnChange, col: Column, dst: str, old: TableInfo, sequence: int, ddl: str,
                lenient: bool) -> None:
        t = self._t
        if lenient and ch.how == "narrow":
            return  # the target stays wider
        if t.column_type(ch.old) == t.column_type(ch.new):
            # the target's type holds both (every text size is TEXT in PostgreSQL, a string in a lake table);
            # a narrowing still needs the stored values to fit (a source that truncated them in place)
            if ch.how == "narrow" and (check := type_change(ch.old, ch.new).check):
                self._check_values(dst, ch, old, t.misfit_sql(check), sequence, ddl)
            return
        if "type" not in t.schema_kinds or (ch.column in old.key and t.sql is not None
                                             and not t.sql.key_column_type_change):
            raise self._stop(old.source_table, sequence, ddl,
                             f"{ch.describe()}: target {t.name!r} ({t.dialect}) cannot change the type of "
                             f"{'a key column' if ch.column in old.key else 'a column'}")
        if why := t.retype_refusal(ch.old, ch.new):
            raise self._stop(old.source_table, sequence, ddl, f"{ch.describe()}: target {t.name!r} ({t.dialect}) "
                             f"cannot change the type: {why}", ways=("accept", "skip"))
        if ch.how != "widen":
            check = type_change(ch.old, ch.new).check
            self._check_values(dst, ch, old, t.misfit_sql(check) if check else "{c} IS NOT NULL", sequence, ddl)
        t.evolve_alter(dst, col, _const(col), {"type"})

    def _check_values(self, dst: str, ch: ColumnChange, old: TableInfo, where: str, sequence: int, ddl: str) -> None:
        """Stop naming the first target row whose value the change does not take (in the dry pass, where the
        target's column still has its name from before the statement)."""
        if not self._dry:
            return
        name = self._was.get(ch.column, ch.column)
        row = self.target.first_value(dst, name, old.key, where)
        if row is not None:
            key = dict(zip(old.key, row[:-1], strict=True)) if old.key else None
            raise self._stop(old.source_table, sequence, ddl,
                             f"{ch.describe()}: target row {key if key else '(keyless)'} of {dst} holds "
                             f"{name} = {row[-1]!r}, which the new definition does not take",
                             ways=("skip", "accept"), column=name, value=row[-1], key=key)

    def _relax(self, dst: str, col: Column) -> None:
        """A column the source no longer writes (lenient) must take NULL in new rows."""
        if not col.nullable and "null" in self.target.schema_kinds:
            self._t.evolve_alter(dst, Column(col.name, col.type, True, col.default), None, {"null"})

    def _ways(self, table: str, sequence: int, ways: tuple[str, ...]) -> str:
        cmd = f"cdc schema {{}} --config <file> --source {self.source} --target {self.target.name} " \
              f"--table {table} --sequence {sequence}"
        return "; ".join(f"`{cmd.format(w)}` ({_WAYS[w]})" for w in ways)

    def _stop(self, table: str, sequence: int, ddl: str | None, what: str,
              ways: tuple[str, ...] = ("evolve", "accept", "skip"), hint: str | None = None,
              **fields: Any) -> UnsupportedDdl:
        how = self._ways(table, sequence, ways)
        text = (f"schema change on {table} at sequence {sequence} is not followed: {what}; the job stops before it "
                f"(statement: {ddl}). Way back: {how}" + (f"; {hint}" if hint else ""))
        return UnsupportedDdl(text, table=table, sequence=sequence, ddl=ddl, **fields)


class _DryRun:
    """The target for the checking pass: every evolve_* call does nothing; reads go to the target."""

    def __init__(self, target: Target) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        if name.startswith("evolve_"):
            return lambda *args, **kwargs: None
        return getattr(self._target, name)


_WAYS = {"evolve": "follow it anyway", "accept": "you made the target match the new definition: take it as is",
         "skip": "keep the target's shape, write only the columns it has"}


def _statement_default(ddl: str, column: str) -> bool:
    """``ddl`` adds ``column`` with a DEFAULT other than NULL (a safety net for readers without defaults)."""
    name = re.escape(column)
    return re.search(rf"\bADD\s+(?:COLUMN\s+)?(?:\(\s*)?[`\"]?{name}[`\"]?\s[^,]*?\bDEFAULT\s+(?!NULL\b)", ddl,
                     re.IGNORECASE) is not None


def _const(col: Column) -> str | None:
    kind, value = default_value(col)
    return value if kind == "const" and col.default is not None else None
