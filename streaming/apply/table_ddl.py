"""Table-level DDL in the apply: CREATE, DROP and RENAME of source tables, at a SCHEMA record's barrier.

A SCHEMA record of a CREATE/DROP/RENAME TABLE carries ``tables``: what the
statement did to the captured tables, netted over the statement (the reader's
readers/mysql/tables.py ``table_actions``: create, drop, rename,
rename_out, replace, rename_in). ``apply_tables`` performs them on the target
inside the barrier's target transaction, with the schema memory
(``cdc_schema``) and the catalog, so a reader of the target sees the tables
before the DDL or after it, never in between (PostgreSQL and DuckDB run DDL in
the transaction; on MySQL/MariaDB each statement commits, and a replay of the
barrier finds its work done: every step here is idempotent).

The apply's own table patterns decide again what is captured for this target
(``apply[].tables`` / ``exclude``): a rename from an applied table to one this
apply does not take is a rename out of its patterns, and so on.

- create: the target table is created (replaced when the apply already had a
  table of that name: ``CREATE OR REPLACE``; ``CREATE TABLE IF NOT EXISTS`` of a
  table the apply has is nothing: MySQL logs it though the table existed). A target table that exists,
  that the apply does not write and that holds rows (kept after a DROP) is a
  stop: the new source table starts empty.
- drop / rename_out: ``apply[].drop_table``: ``keep`` (default) leaves the
  target table and its rows and stops applying to it; ``drop`` drops it.
- rename: the target table is renamed (a permutation, e.g. a swap, goes
  through temporary names), then its shape follows the new definition.
- replace: the online schema change cut-over (gh-ost, pt-online-schema-change):
  by the tool's contract the renamed shadow holds the table's rows, which the
  target table already holds (the writes made while the tool copied are in
  the stream, applied to it). The target table stays, with its rows and name,
  and its shape follows the shadow's (the column changes of catalog.on_schema).
- rename_in: a table whose rows were never in the stream now has a captured
  name. ``apply[].rename_in``: ``stop`` (default, UnsupportedDdl naming the
  table, statement and sequence) or ``create`` (create it empty and go on;
  the rows come with an incremental snapshot of the table).

The lake targets (Delta, Iceberg) follow all of it as their own table commits
(streaming/targets/lake.py): drop per ``drop_table``, rename with the rows, and
a key change as a new merge key (a lake table holds no key to rebuild). The
Parquet changelog follows only CREATE; any other table-level DDL on an applied
table is a stop there.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, Protocol

from cdc.stream.events import TableId, TableSchema
from streaming.apply.table_info import TableInfo
from streaming.errors import UnsupportedDdl

if TYPE_CHECKING:
    from cdc.schema.table_map import TableMap
    from streaming.targets.base import Target


class Catalog(Protocol):
    """What this module uses of the apply's catalog (streaming/apply/catalog.py Catalog, which calls this module
    and so is not imported by it)."""

    source: str
    target: Target
    table_map: TableMap
    tables: dict[str, TableInfo]

    def on_schema(self, meta: dict[str, Any], sequence: int) -> str | None: ...

    def _ways(self, table: str, sequence: int, ways: tuple[str, ...]) -> str: ...

log = logging.getLogger(__name__)
_FOLLOWED = "table_level_followed"  # on a SCHEMA record handed on to catalog.on_schema after its table-level part

# a table-level DDL whose record does not say what it did (``tables`` missing: an Avro-encoded stream, whose
# record schema has no such field; a stream written before readers reported it):
# refused, never guessed from the statement
_TABLE_LEVEL = re.compile(r"^\s*(?:/\*.*?\*/\s*)*(?:RENAME\s+TABLES?\b|DROP\s+TABLES?\b|"
                          r"CREATE\s+OR\s+REPLACE\s+TABLE\b|"
                          r"ALTER\s+(?:(?:ONLINE|OFFLINE|IGNORE)\s+)*TABLE\b.*?\bRENAME\s+(?!COLUMN\b|INDEX\b|KEY\b|CONSTRAINT\b|(?:SUB)?PARTITION\b))",
                          re.IGNORECASE | re.DOTALL)


def is_table_level(meta: dict[str, Any]) -> bool:
    """Whether a SCHEMA record is table-level DDL: it carries ``tables``, or its statement renames or drops
    a table (then it must carry ``tables``: apply_tables refuses it otherwise)."""
    if meta.get(_FOLLOWED):
        return False
    return meta.get("tables") is not None or bool(_TABLE_LEVEL.match(meta.get("ddl") or ""))


def apply_tables(catalog: Catalog, meta: dict[str, Any], sequence: int) -> str | None:
    """Perform one table-level SCHEMA record on the target (inside the barrier's transaction).

    Returns the last target table touched (None: nothing of this apply's). Raises UnsupportedDdl for what
    this target or configuration does not follow, before changing anything of that table, naming the way
    back: an operator's ``cdc schema accept|skip`` decision for this sequence (recorded in the target) lets
    the record pass without a change to the target."""
    decided = catalog.target.schema_decision(catalog.source, sequence)
    if decided is not None and decided[0] in ("accept", "skip"):
        log.warning("apply %s: %r at sequence %d passes by the recorded decision %s", catalog.source,
                    meta.get("ddl"), sequence, decided[0])
        return None
    try:
        return _apply_tables(catalog, meta, sequence)
    except UnsupportedDdl as exc:
        table = exc.fields.get("table") or meta.get("table") or "?"
        how = catalog._ways(str(table), sequence, ("accept", "skip"))
        raise UnsupportedDdl(f"{exc.message}. Way back: {how}", **exc.fields) from None


def _apply_tables(catalog: Catalog, meta: dict[str, Any], sequence: int) -> str | None:
    ddl, actions = meta.get("ddl"), meta.get("tables")
    wanted = catalog.table_map.wanted
    if actions is None:
        table = meta.get("table")
        if table is None or not wanted(table):
            return None
        raise UnsupportedDdl(f"{ddl!r} renames, drops or replaces a table, and this stream's SCHEMA record does not "
                             "say which tables (an Avro-encoded stream, whose record schema has no 'tables' field, or "
                             "a stream written before its reader reported them); the job stops before it. Make "
                             "the change in the target by hand as the statement did, then resume past it",
                             table=table, sequence=sequence, ddl=ddl)
    plan = _plan(actions, wanted)
    if not plan:
        return None
    target = catalog.target
    if target.table_ddl == "create" and any(a["op"] != "create" for a in plan):
        a = next(a for a in plan if a["op"] != "create")
        raise UnsupportedDdl(f"{a['op'].replace('_', ' ')} of {a['table']} is not followed by target {target.name!r} "
                             "(a file/lake target follows only CREATE TABLE); the job stops before it",
                             table=a["table"], sequence=sequence, ddl=ddl)
    touched = None
    moves = [a for a in plan if a["op"] == "rename"]
    if moves:
        touched = _move(catalog, moves, sequence, ddl)
    for a in plan:
        op, table = a["op"], a["table"]
        if op == "rename":
            continue
        if op == "create" and a.get("if_not_exists") and table in catalog.tables:
            continue  # CREATE TABLE IF NOT EXISTS of a table the source has (the apply has it): nothing happened
        if op == "create" and a.get("if_not_exists") and _holds_columns(catalog, table, a.get("schema")):
            # a replay of the barrier (a restarted job on a target without schema memory): the target table
            # is the one this stream created; it is taken as it is, like a first sight of its definition
            touched = _follow(catalog, table, None, a.get("schema"), sequence)
            continue
        if op == "create":
            touched = _create(catalog, table, a.get("schema"), sequence, ddl)
        elif op in ("drop", "rename_out"):
            touched = _detach(catalog, table, sequence, ddl, op)
        elif op == "replace":
            touched = _replace(catalog, table, a.get("schema"), sequence, ddl)
        elif op == "rename_in":
            touched = _rename_in(catalog, table, a.get("from"), a.get("schema"), sequence, ddl)
        else:
            raise UnsupportedDdl(f"unknown table-level DDL action {op!r} for {table}; the job stops before it "
                                 "(a newer reader than this apply?)", table=table, sequence=sequence, ddl=ddl)
    return touched


def _holds_columns(catalog: Catalog, table: str, raw: dict[str, Any] | None) -> bool:
    """The target table of ``table`` exists and has every column of the definition ``raw``."""
    if raw is None:
        return False
    have = catalog.target.table_columns(catalog.table_map.target_name(table))
    if have is None:
        return False
    return {c.name for c in TableSchema.from_json(raw).columns} <= set(have)


def _plan(actions: list[dict[str, Any]], wanted: Any) -> list[dict[str, Any]]:
    """The reader's actions as this apply sees them (its own table patterns), in the reader's order."""
    out = []
    for a in actions:
        op, table, src = a.get("op"), a.get("table"), a.get("from")
        if op == "rename":
            if wanted(src) and wanted(table):
                out.append(a)
            elif wanted(src):
                out.append({"op": "rename_out", "table": src, "to": table})
            elif wanted(table):
                out.append({**a, "op": "rename_in"})
        elif op == "rename_in" and src is not None and wanted(src) and wanted(table):
            out.append({**a, "op": "rename"})  # not captured by the source, so never applied: cannot happen
        elif wanted(table):
            out.append(a)
    return out


def _forget(catalog: Catalog, table: str) -> None:
    catalog.tables.pop(table, None)
    catalog.target.forget_schema(catalog.source, table)


def _has_rows(catalog: Catalog, dst: str) -> bool:
    if catalog.target.table_ddl == "create":
        return True  # a changelog of files: never replaced here
    return catalog.target.has_rows(dst)


def _follow(catalog: Catalog, table: str, ddl: str | None, raw: dict[str, Any] | None, sequence: int,
            whole: bool = False) -> str | None:
    """The table's new definition through the catalog's column rules (create, add, widen ...); ``whole``: every
    change of the shape counts, not only those the statement names (a replace by a shadow table)."""
    return catalog.on_schema({"table": table, "ddl": ddl, "schema": raw, _FOLLOWED: True, "whole_shape": whole},
                             sequence)


def _create(catalog: Catalog, table: str, raw: dict[str, Any] | None, sequence: int, ddl: str | None) -> str:
    target, old = catalog.target, catalog.tables.get(table)
    dst = old.target_table if old else catalog.table_map.target_name(table)
    if target.table_columns(dst) is not None:
        if (old is None or target.table_ddl == "create") and _has_rows(catalog, dst):
            raise UnsupportedDdl(f"{table} was created in the source, and target table {dst!r} already exists "
                                 "with rows this apply does not write (kept after a DROP or RENAME of the source "
                                 "table: apply[].drop_table: keep); the new source table starts empty. Drop or "
                                 f"rename {dst!r} in the target, then restart the apply", table=table,
                                 sequence=sequence, ddl=ddl)
        target.drop_table(dst)  # CREATE OR REPLACE, or an empty table of that name: the new one replaces it
        log.warning("apply %s: %s re-created at sequence %d: target table %s replaced", catalog.source, table,
                    sequence, dst)
    if raw is None:  # gone again when the reader read it: created by the first-sight record of its first row
        _forget(catalog, table)
        return dst
    catalog.tables.pop(table, None)
    return _follow(catalog, table, None, raw, sequence) or dst


def _detach(catalog: Catalog, table: str, sequence: int, ddl: str | None, op: str) -> str | None:
    info = catalog.tables.get(table)
    dst = info.target_table if info else catalog.table_map.target_name(table)
    policy = catalog.table_map.drop_table
    if policy == "drop" and catalog.target.table_columns(dst) is not None:
        catalog.target.drop_table(dst)
    log.warning("apply %s: %s %s at sequence %d: target table %s %s, no longer applied", catalog.source, table,
                "dropped" if op == "drop" else "renamed out of the applied tables", sequence, dst,
                "dropped" if policy == "drop" else "kept")
    _forget(catalog, table)
    return dst


def _move(catalog: Catalog, moves: list[dict[str, Any]], sequence: int, ddl: str | None) -> str | None:
    """Rename target tables as the source did (several at once: a swap goes through temporary names)."""
    target = catalog.target
    steps = []  # (source from, source to, target from, target to, old info)
    for a in moves:
        info = catalog.tables.get(a["from"])
        steps.append((a["from"], a["table"], info.target_table if info else catalog.table_map.target_name(a["from"]),
                      catalog.table_map.target_name(a["table"]), info))
    leaving = {s[2] for s in steps}
    for _, to, old_dst, new_dst, _ in steps:
        if (new_dst not in leaving and target.table_columns(new_dst) is not None
                and target.table_columns(old_dst) is not None):
            raise UnsupportedDdl(f"rename to {to}: target table {new_dst!r} already exists (kept after a DROP or "
                                 "RENAME of the source table?); drop or rename it in the target, then restart the "
                                 "apply", table=to, sequence=sequence, ddl=ddl)
    parked = []
    for i, (_, _, old_dst, new_dst, _) in enumerate(steps):
        if target.table_columns(old_dst) is None:
            parked.append(None)  # never created (no row yet), or moved before a replay of this barrier
            continue
        tmp = f"cdc_rename_{sequence % 1_000_000}_{i}"
        target.rename_table(old_dst, tmp)
        parked.append(tmp)
    touched = None
    for tmp, (src, _, _, new_dst, _) in zip(parked, steps):
        if tmp is not None:
            target.rename_table(tmp, new_dst)
        _forget(catalog, src)  # every old name first: in a swap an old name is also a new one
    for src, to, _, new_dst, info in steps:
        raw = next(a.get("schema") for a in moves if a["table"] == to)
        if raw is None and info is not None:  # gone again when the reader read it: the shape it had
            raw = TableSchema(TableId.parse(to), info.schema.columns, info.schema.primary_key).to_json()
        if raw is None:
            continue  # never applied and gone: nothing to hold
        if info is not None:  # the known shape under the new name, then the new definition's changes
            catalog.tables[to] = type(info).build(to, new_dst, info.schema, target.dialect)
        touched = _follow(catalog, to, ddl if info is not None else None, raw, sequence) or new_dst
    return touched


def _replace(catalog: Catalog, table: str, raw: dict[str, Any] | None, sequence: int, ddl: str | None) -> str:
    info = catalog.tables.get(table)
    dst = info.target_table if info else catalog.table_map.target_name(table)
    if catalog.target.table_columns(dst) is None:
        raise UnsupportedDdl(f"{table} was replaced by its online schema change shadow, and target table {dst!r} "
                             "that should hold its rows does not exist (dropped by apply[].drop_table: drop after a "
                             "two-step cut-over?); the shadow's rows were never in the stream. Way back: set "
                             "apply[].rename_in: create, restart the apply, then run an incremental snapshot of the "
                             "table", table=table, sequence=sequence, ddl=ddl)
    if raw is None:  # gone again when the reader read it: the rows and shape stay as they are
        return dst
    log.info("apply %s: %s replaced by its online schema change shadow at sequence %d: target table %s keeps its "
             "rows, its shape follows", catalog.source, table, sequence, dst)
    return _follow(catalog, table, ddl, raw, sequence, whole=True) or dst


def _rename_in(catalog: Catalog, table: str, src: str | None, raw: dict[str, Any] | None, sequence: int,
               ddl: str | None) -> str:
    if catalog.table_map.rename_in != "create":
        raise UnsupportedDdl(f"{src} was renamed to {table}, which this apply takes, but the rows of {src} were "
                             "never in the stream; the job stops before it. Way back: set apply[].rename_in: create "
                             "and restart the apply (the target table is created empty), then run an incremental "
                             f"snapshot of {table} (the source's signal_table) to bring its rows",
                             table=table, sequence=sequence, ddl=ddl)
    log.warning("apply %s: %s renamed into the applied tables at sequence %d: created empty "
                "(apply[].rename_in: create); run an incremental snapshot of it for its rows", catalog.source, table,
                sequence)
    return _create(catalog, table, raw, sequence, ddl)


# ---- primary key added, dropped or changed -----------------------------------------------------------------
def follow_key(catalog: Catalog, info: TableInfo, schema: TableSchema, sequence: int, ddl: str | None) -> TableInfo:
    """Called by catalog.on_schema before its column rules: when ``schema`` (the new definition) has another
    primary key than the one applied so far, the target table takes the new key and the returned TableInfo
    carries it (so the net effect of the rows after the DDL is per new key; a table without key is applied
    with counting semantics). Else ``info`` unchanged.

    The target table is rebuilt under the new key in the barrier's transaction (create a copy with the
    key, copy the rows, drop, rename): the rows are the source's, which were unique under the new key when
    the source accepted it. A key column the target does not hold yet (``ADD COLUMN id ... , ADD PRIMARY
    KEY (id)``: values made by the source) is a stop, as on the Parquet changelog. A lake target takes the
    new key as its merge key (Target.rekey), with no rebuild."""
    if tuple(info.schema.primary_key) == tuple(schema.primary_key):
        return info
    target, table = catalog.target, info.source_table
    known = {c.name for c in info.schema.columns}
    missing = [k for k in schema.primary_key if k not in known]
    what = f"primary key of {table} {list(info.schema.primary_key)} -> {list(schema.primary_key)}"
    if target.table_ddl == "create" or missing:
        why = (f"its new key columns {missing} are not in the target table yet" if missing else
               f"target {target.name!r} (a file target) does not change a table's key")
        raise UnsupportedDdl(f"{what} is not followed: {why}; the job stops before it", table=table,
                             sequence=sequence, ddl=ddl)
    rekeyed = TableSchema(info.schema.table, info.schema.columns, tuple(schema.primary_key))
    if target.sql is None:  # a lake table (streaming/targets/lake.py): no key of its own, only the merge key
        target.rekey(info.target_table, rekeyed.primary_key)
        log.warning("apply %s: %s at sequence %d: target table %s merged by the new key", catalog.source, what,
                    sequence, info.target_table)
    else:
        _rebuild(target, info.target_table, rekeyed, sequence)
        log.warning("apply %s: %s at sequence %d: target table %s rebuilt with the new key", catalog.source, what,
                    sequence, info.target_table)
    new = type(info).build(table, info.target_table, rekeyed, target.dialect)
    catalog.tables[table] = new
    return new


def _rebuild(target: Any, dst: str, schema: TableSchema, sequence: int) -> None:
    """Re-create target table ``dst`` as ``schema`` says (its key), keeping its rows. Idempotent for a replay
    of the barrier on a target whose DDL commits (a copy left by a crash is finished or thrown away)."""
    tmp = f"cdc_rekey_{sequence % 1_000_000}"
    if target.table_columns(tmp) is not None:
        if target.table_columns(dst) is None:  # crashed between the drop and the rename
            target.rename_table(tmp, dst)
            return
        target.drop_table(tmp)
    target.create_table(tmp, schema)
    cols = ", ".join(target.quote(c.name) for c in schema.columns)
    target.execute(f"INSERT INTO {target.qualified(tmp)} ({cols}) SELECT {cols} FROM {target.qualified(dst)}")
    target.drop_table(dst)
    target.rename_table(tmp, dst)
