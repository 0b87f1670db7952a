"""A definition the reader could not vouch for at a DDL's position, checked by the table's next TABLE_MAP.

definitions.definition_at rebuilds a table's definition at a DDL's position by undoing the later statements
on the catalog's definition. Where a later statement cannot be undone (a DROP/MODIFY/CHANGE COLUMN or key
change of a column the DDL names, the table dropped since), the reader builds the best definition it has
(the catalog's, or its own last sight of the table when the catalog has none, with the columns the statement
itself defines read from the statement: readers/mysql/statement_columns.py) and remembers it as :class:`Unverified`.

The product requires ``binlog_row_metadata=FULL`` (readers/mysql/check.py): every TABLE_MAP carries the column
names, types, nullability and primary key of the table as its rows were written. So the table's next rows
verify the definition (:func:`differences`: names, order, count, type family (and an integer's or decimal's
range), key). On a difference the
reader publishes the definition the table map shows (:func:`corrected`) in a SCHEMA record before those
rows; where the table map cannot tell what the target needs (a column that is not in the published definition
and whose default, the value of the rows written before it, no table map carries), the source stops
(:class:`UnverifiableDefinition`) naming table, GTID, position, what differed and the way back.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from cdc.errors import CdcError, Terminal
from cdc.stream.events import Column, TableId, TableSchema
from readers.mysql.definitions import alter_clauses, named_columns
from readers.mysql.statement_columns import at_statement
from readers.mysql.types import logical_type

log = logging.getLogger(__name__)
WAY_BACK = ("the way back: `cdc source skip --config cdc.yaml --source {source} --gtid {gtid} --yes --resync` moves "
            "the source past that transaction and re-reads {table} from the source (docs/faults.md)")


class UnverifiableDefinition(CdcError, Terminal):
    """A table's rows were written with a definition the reader cannot publish truthfully (``table``, ``gtid``,
    ``position``, ``differences``)."""


@dataclass(frozen=True, slots=True)
class Unverified:
    """A definition published at a DDL that the table's next TABLE_MAP must confirm. ``schema``: the
    definition the SCHEMA record carried; ``defined``: the columns the statement itself defined (exact);
    ``added``: the lower-case columns the statement added (their default is what the rows before it hold)."""

    schema: TableSchema
    gtid: str
    where: str
    ddl: str
    blocker: str
    defined: tuple[str, ...] = ()
    added: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"schema": self.schema.to_json(), "gtid": self.gtid, "at": self.where, "ddl": self.ddl[:2000],
                "blocker": self.blocker[:2000], "defined": list(self.defined), "added": list(self.added)}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Unverified:
        return cls(TableSchema.from_json(obj["schema"]), obj["gtid"], obj["at"], obj["ddl"], obj["blocker"],
                   tuple(obj.get("defined") or ()), tuple(obj.get("added") or ()))


def saved(unverified: dict[Any, Unverified]) -> dict[str, Any]:
    """The resume state's ``unverified`` entry: a restart still checks them."""
    return {str(t): u.to_json() for t, u in unverified.items()}


def restored(resume: dict[str, Any] | None) -> dict[TableId, Unverified]:
    """The unverified definitions of a resume state, less the tables a `cdc source skip` named in it (their
    resync is the way back the operator took)."""
    skipped = {t.lower() for t in ((resume or {}).get("skipped") or {}).get("tables") or ()}
    return {TableId.parse(name): Unverified.from_json(obj)
            for name, obj in ((resume or {}).get("unverified") or {}).items() if name.lower() not in skipped}


# ---------------------------------------------------------------- the check and the correction
def _kind(col: Column) -> tuple:
    """What the check compares of a column's type: its family, and the range of an integer or a decimal
    (a table map spells those exactly; string lengths it derives from the character set, so not those)."""
    lt = col.logical or logical_type(col.type)
    if lt.family == "integer":
        return lt.family, lt.int_range()
    if lt.family == "decimal":
        return lt.family, lt.precision, lt.scale
    return (lt.family,)


def _same(a: Column, b: Column) -> bool:
    """Whether the check takes two columns' types for one: the same :func:`_kind`, or one the reader knows only
    by its name (family ``other``: the catalog's spelling of a type the table map spells otherwise)."""
    ka, kb = _kind(a), _kind(b)
    return ka == kb or "other" in (ka[0], kb[0])


def differences(said: TableSchema, seen: TableSchema) -> list[str]:
    """What the table map ``seen`` shows otherwise than the definition ``said``: column names, order and
    count, type families, primary key (empty: the definition is confirmed)."""
    out = []
    a, b = [c.name.lower() for c in said.columns], [c.name.lower() for c in seen.columns]
    if a != b:
        out.append(f"columns ({', '.join(c.name for c in said.columns)}) where the table map has "
                   f"({', '.join(c.name for c in seen.columns)})")
    by_name = {c.name.lower(): c for c in said.columns}
    for c in seen.columns:
        o = by_name.get(c.name.lower())
        if o is not None and not _same(o, c):
            out.append(f"{c.name} {o.type} where the table map has {c.type}")
    if [k.lower() for k in said.primary_key] != [k.lower() for k in seen.primary_key]:
        out.append(f"primary key ({', '.join(said.primary_key)}) where the table map has "
                   f"({', '.join(seen.primary_key)})")
    return out


def named_agree(u: Unverified, seen: TableSchema) -> bool:
    """Whether the table map agrees with the published definition on every column the statement names and on
    the key: the apply takes only those changes from the statement's record
    (cdc.schema.evolution.statement_changes), so a difference elsewhere left its definition as it was."""
    names = named_columns(u.ddl, u.schema.table.db)
    if names is None:
        return False
    said = {c.name.lower(): c for c in u.schema.columns}
    now = {c.name.lower(): c for c in seen.columns}
    for name in names:
        a, b = said.get(name), now.get(name)
        if (a is None) != (b is None) or (a is not None and not _same(a, b)):
            return False
    return [k.lower() for k in u.schema.primary_key] == [k.lower() for k in seen.primary_key]


def corrected(u: Unverified, seen: TableSchema) -> TableSchema | str:
    """The definition to publish before rows written with the table map ``seen``: its names, order, types,
    nullability and key, with the published column's details (its default, its type text) where name AND type
    match (as the check compares them: a string's length the table map derives from its character set). A string (why) when a column the target must fill for rows written before it (one not in the
    published definition, or one the statement added without a definition read from it) has a default no table
    map carries."""
    said = {c.name.lower(): c for c in u.schema.columns}
    cols = []
    for c in seen.columns:
        o = said.get(c.name.lower())
        if o is not None and _same(o, c):  # the published type text is the catalog's or the statement's: kept
            cols.append(replace(o, name=c.name, nullable=c.nullable))
            continue
        if o is None or c.name.lower() in u.added:
            return (f"column {c.name} ({c.type}) is not in the definition published at the statement, and its "
                    "default (the value the rows written before it hold) is in no table map")
        cols.append(c)
    return TableSchema(u.schema.table, tuple(cols), seen.primary_key)


def correction_statement(said: TableSchema, new: TableSchema, where: str) -> str:
    """An ALTER TABLE naming every column that differs between the published definition and the corrected one
    (the apply follows the changes a statement names: cdc.schema.evolution.statement_changes), marked as the
    reader's: a drop and an add where a name differs (a table map cannot tell a rename)."""
    def q(name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    old = {c.name.lower(): c for c in said.columns}
    now = {c.name.lower() for c in new.columns}
    clauses = [f"DROP COLUMN {q(c.name)}" for c in said.columns if c.name.lower() not in now]
    prev = None
    for c in new.columns:
        o = old.get(c.name.lower())
        spec = c.type + ("" if c.nullable else " NOT NULL") + (f" DEFAULT {c.default}" if c.default else "")
        place = f" AFTER {q(prev)}" if prev else " FIRST"
        if o is None:
            clauses.append(f"ADD COLUMN {q(c.name)} {spec}{place}")
        elif logical_type(o.type) != logical_type(c.type) or o.nullable != c.nullable or o.name != c.name:
            clauses.append(f"MODIFY COLUMN {q(c.name)} {spec}")
        prev = c.name
    if [k.lower() for k in said.primary_key] != [k.lower() for k in new.primary_key]:
        if said.primary_key:
            clauses.append("DROP PRIMARY KEY")
        if new.primary_key:
            clauses.append(f"ADD PRIMARY KEY ({', '.join(q(k) for k in new.primary_key)})")
    table = f"{q(new.table.db)}.{q(new.table.table)}"
    return (f"/* cdc: {new.table} as its table map at {where} shows it */ ALTER TABLE {table} "
            + ", ".join(clauses)).rstrip()


# ---------------------------------------------------------------- the reader's side
class DefinitionChecks:
    """One reader's checks: each table's last definition as the reader saw it (a TABLE_MAP or a DDL, before
    the transforms), and the unverified definitions, which are part of its resume state."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.unverified: dict[TableId, Unverified] = {}
        self.last_seen: dict[TableId, TableSchema] = {}

    def restore(self, resume: dict[str, Any] | None) -> None:
        self.unverified = restored(resume)

    def unvouched(self, table: TableId, now: TableSchema | None, query: str, db: str, gtid: str, where: str,
                  blocker: str, altered: bool, was: TableId) -> TableSchema | None:
        """The definition of ``table`` after a DDL that definitions.definition_at could not rebuild at its
        position: the catalog's (``now``) with the columns the statement (an ALTER of the table: ``altered``)
        defines read from the statement, or, when the catalog no longer has the table, the reader's last sight of
        it (under ``was``, its name before the statement) with the statement applied. Remembered as Unverified:
        the table's next TABLE_MAP confirms or corrects it. None (with a WARNING) when there is neither: the
        SCHEMA record carries no definition, which the apply does not take for one (it stops on an ALTER)."""
        defined: tuple[str, ...] = ()
        added: tuple[str, ...] = ()
        shape = now
        clauses = alter_clauses(query, db) if altered else None
        renames_only = bool(clauses) and all(c.kind in ("rename", "none") for c in clauses) \
            and any(c.kind == "rename" for c in clauses)
        if renames_only and self.last_seen.get(was) is not None:
            # renames only (a swap): the reader's last sight of the table with the names moved is the definition
            # (the catalog's, later, may have the same names on other columns)
            base = self.last_seen[was]
            shape, defined, added = at_statement(TableSchema(table, base.columns, base.primary_key), query, db,
                                                 forward=True)
        elif now is not None and altered:
            shape, defined, added = at_statement(now, query, db, forward=False)
        elif now is None:
            base = self.last_seen.get(was)
            if base is not None:
                base = TableSchema(table, base.columns, base.primary_key)
            shape, defined, added = at_statement(base, query, db, forward=True) if altered else (base, (), ())
        if shape is None:
            log.warning("source %s: the definition of %s after %r at %s gtid %s cannot be known: a later statement "
                        "(%r) changed or removed the table and the reader has not seen it since it started",
                        self.source, table, query[:200], where, gtid, blocker[:200])
            return None
        log.info("source %s: the definition of %s after %r at %s gtid %s is rebuilt from the %s (a later statement, "
                 "%r, cannot be undone on it); the table's next rows confirm or correct it", self.source, table,
                 query[:200], where, gtid, "catalog and the statement" if now is not None else "statement",
                 blocker[:200])
        self.unverified[table] = Unverified(shape, gtid, where, query, blocker, defined, added)
        return shape

    def after_ddl(self, named: TableId | None, raw: TableSchema | None, tables: list[dict[str, Any]] | None,
                  gtid: str) -> None:
        """After the DDL ``gtid``: the tables it dropped or renamed are forgotten, ``named``'s definition is
        ``raw``. An unverified definition of an earlier DDL of those tables is dropped (the resume state does not
        keep it for a table never written again): this DDL's record carries the definition from here on, rebuilt
        at its position (else :meth:`unvouched` made it this DDL's own unverified entry)."""
        for a in tables or []:
            for key in ("table", "from"):
                if a.get(key) and a.get("op") != "create":
                    t = TableId.parse(a[key])
                    self.last_seen.pop(t, None)
                    if t in self.unverified and self.unverified[t].gtid != gtid:
                        del self.unverified[t]
        if named is None:
            return
        if raw is None:
            self.last_seen.pop(named, None)
            self.unverified.pop(named, None)
            return
        self.last_seen[named] = raw
        u = self.unverified.get(named)
        if u is not None and u.gtid != gtid:  # superseded: this DDL's definition was rebuilt at its position
            del self.unverified[named]

    def check(self, table: TableId, seen: TableSchema, gtid: str, where: str, began: bool) -> tuple[
            TableSchema, str] | None:
        """At the first rows of ``table`` (unverified), written with the table map ``seen`` in transaction
        ``gtid`` at ``where``: None when it confirms the definition, else (the corrected definition, its
        statement) to publish before the rows. ``began``: the transaction already wrote rows of another table.
        Raises UnverifiableDefinition when the correction cannot be built, or cannot come before the rows (a
        difference in a column the statement names, inside a transaction that began)."""
        u = self.unverified[table]
        found = differences(u.schema, seen)
        if not found:
            del self.unverified[table]
            return None
        fixed = corrected(u, seen)
        if began and not isinstance(fixed, str) and named_agree(u, seen):
            log.warning("source %s: the rows of %s at %s gtid %s show another definition than the one published at "
                        "%s gtid %s (%s), in columns its statement does not name: the apply took none of those",
                        self.source, table, where, gtid, u.where, u.gtid, "; ".join(found))
            del self.unverified[table]
            self.last_seen[table] = fixed
            return None
        if isinstance(fixed, str) or began:
            why = fixed if isinstance(fixed, str) else ("the transaction wrote rows of another table first, so the "
                                                        "corrected definition cannot come before its rows")
            raise UnverifiableDefinition(
                f"source {self.source}: the rows of {table} in transaction {gtid} at {where} were written with a "
                f"definition other than the one published at {u.ddl[:200]!r} ({u.where} gtid {u.gtid}, rebuilt "
                f"because a later statement, {u.blocker[:200]!r}, could not be undone): {'; '.join(found)}; {why}; "
                + WAY_BACK.format(source=self.source, gtid=gtid, table=table),
                table=str(table), gtid=gtid, position=where, differences=found)
        log.warning("source %s: the rows of %s at %s gtid %s were written with another definition than the one "
                    "published at %s gtid %s (%s): the definition their table map shows is published first",
                    self.source, table, where, gtid, u.where, u.gtid, "; ".join(found))
        del self.unverified[table]  # before the record's resume state: the record settles it
        self.last_seen[table] = fixed
        return fixed, correction_statement(u.schema, fixed, where)
