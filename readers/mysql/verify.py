"""A definition the reader could not vouch for at a DDL's position, checked by the table's next TABLE_MAP.

definitions.definition_at rebuilds a table's definition at a DDL's position by undoing the later statements
on the catalog's definition. Where a later statement cannot be undone (a DROP/MODIFY/CHANGE COLUMN or key
change of a column the DDL names, the table dropped since), the reader builds the best definition it has
(:func:`at_statement`: the catalog's, or its own last sight of the table when the catalog has none, with
the columns the statement itself defines, ``ADD/MODIFY/CHANGE COLUMN c <type> [NOT NULL] [DEFAULT ...]``, read
from the statement) and remembers it as :class:`Unverified`.

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

import re
from dataclasses import dataclass, replace
from typing import Any

from cdc.errors import CdcError, Terminal
from cdc.stream.events import Column, TableId, TableSchema
from readers.mysql.definitions import alter_clauses, clause_tokens, named_columns
from readers.mysql.tables import _name
from readers.mysql.types import logical_type

WAY_BACK = ("the way back: `cdc source skip --config cdc.yaml --source {source} --gtid {gtid} --yes --resync` moves "
            "the source past that transaction and re-reads {table} from the source (docs/faults.md)")

_ENDS = frozenset({"NOT", "NULL", "DEFAULT", "AUTO_INCREMENT", "COMMENT", "PRIMARY", "UNIQUE", "KEY", "FIRST",
                   "AFTER", "COLLATE", "CHARACTER", "CHARSET", "GENERATED", "AS", "INVISIBLE", "VISIBLE", "ON",
                   "CHECK", "REFERENCES", "STORAGE", "COLUMN_FORMAT", "CONSTRAINT", "SERIAL", "COMPRESSED",
                   "PERSISTENT", "VIRTUAL", "STORED", "WITH", "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE"})
_ALIASES = {"integer": "int", "bool": "tinyint", "boolean": "tinyint", "dec": "decimal", "numeric": "decimal",
            "fixed": "decimal", "real": "double", "double precision": "double", "int1": "tinyint",
            "int2": "smallint", "int3": "mediumint", "int4": "int", "int8": "bigint", "middleint": "mediumint"}
_DISPLAY_WIDTH = re.compile(r"^(tinyint|smallint|mediumint|int|bigint)\(\d+\)")


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


# ---------------------------------------------------------------- the statement's own column definitions
def column_definition(toks: list[str]) -> tuple[Column, str | None] | None:
    """The column a clause's ``<name> <type> [attributes]`` tokens define, and where it goes (``FIRST``, the
    column it comes AFTER, or None: last); None when a part is not one this reader reads for sure (an
    expression default, a generated column, a type it does not know): never guessed."""
    if not toks or _name(toks[0]) is None:
        return None
    name, i, words = _name(toks[0]), 1, []
    while i < len(toks) and (toks[i].startswith(("(", ")", ",", "'")) or toks[i][0].isdigit()
                             or toks[i].upper() not in _ENDS):
        tok = toks[i]
        words.append(tok if tok.startswith("'") else tok.lower())
        i += 1
    text = _type_text(words)
    if text is None:
        return None
    nullable, default, where = True, None, None
    while i < len(toks):
        word = toks[i].upper() if not toks[i].startswith(("'", "`")) else ""
        if word == "NOT" and i + 1 < len(toks) and toks[i + 1].upper() == "NULL":
            nullable, i = False, i + 2
        elif word == "NULL":
            i += 1
        elif word == "DEFAULT" and i + 1 < len(toks):
            default, i = _literal(toks, i + 1)
            if default is False:
                return None
        elif word in ("PRIMARY", "SERIAL"):
            nullable, i = False, i + 1
        elif word in ("COMMENT", "COLLATE", "CHARSET"):
            i += 2
        elif word == "CHARACTER":
            i += 3
        elif word in ("UNIQUE", "KEY", "INVISIBLE", "VISIBLE"):
            i += 1
        elif word == "FIRST":
            where, i = "FIRST", i + 1
        elif word == "AFTER" and i + 1 < len(toks):
            where, i = _name(toks[i + 1]), i + 2
        else:
            return None  # AUTO_INCREMENT, GENERATED, ON UPDATE, CHECK, REFERENCES ...: not read here
    return Column(name, text, nullable, default, logical_type(text)), where


def _type_text(words: list[str]) -> str | None:
    if not words:
        return None
    head, rest = words[0], words[1:]
    if head == "double" and rest[:1] == ["precision"]:
        rest = rest[1:]
    head = _ALIASES.get(head, head)
    args = ""
    if rest[:1] == ["("]:
        close = rest.index(")") if ")" in rest else -1
        if close < 0:
            return None
        args, rest = "(" + "".join(rest[1:close]) + ")", rest[close + 1:]
    flags = [w for w in rest if w in ("unsigned", "signed", "zerofill")]
    if len(flags) != len(rest):
        return None  # BINARY, ARRAY, a charset after the type ...
    if head == "decimal" and not args:
        args = "(10,0)"
    if head in ("char", "binary") and not args:
        args = "(1)"
    text = _DISPLAY_WIDTH.sub(r"\1", head + args) + (" unsigned" if "unsigned" in flags else "")
    if logical_type(text).family == "other":
        return None
    return text


def _literal(toks: list[str], i: int) -> tuple[str | None | bool, int]:
    """(the default as cdc.stream.events.Column.default spells it, next index); False when it is not a constant."""
    tok = toks[i]
    if tok.upper() == "NULL":
        return None, i + 1
    sign = ""
    if tok in ("-", "+") and i + 1 < len(toks):
        sign, i, tok = ("-" if tok == "-" else ""), i + 1, toks[i + 1]
    if re.fullmatch(r"\d+(\.\d*)?([eE][-+]?\d+)?", tok):
        if i + 2 < len(toks) and toks[i + 1] == "." and toks[i + 2].isdigit():  # 1.5 comes as 1 . 5
            return sign + tok + "." + toks[i + 2], i + 3
        return sign + tok, i + 1
    if tok.startswith("'") and not sign:
        if "\\" in tok:
            return False, i + 1  # an escape sequence: left to the catalog
        return tok, i + 1
    return False, i + 1


def at_statement(shape: TableSchema | None, query: str, db: str, forward: bool) -> tuple[TableSchema | None,
                                                                                       tuple[str, ...],
                                                                                       tuple[str, ...]]:
    """``shape`` with the columns the ALTER ``query`` defines taken from the statement, and (the columns taken,
    the lower-case columns it adds). ``forward``: ``shape`` is the table BEFORE the statement (the reader's last
    sight of it): every clause is applied (None when one is not read); else ``shape`` is a later one (the
    catalog's) and only the statement's column definitions replace its own."""
    clauses, parts = alter_clauses(query, db), clause_tokens(query, db)
    if clauses is not None and all(c.kind == "none" for c in clauses):
        return shape, (), ()  # CREATE INDEX, an option: no column changes
    if shape is None or clauses is None or parts is None or len(clauses) != len(parts):
        return (None if forward else shape), (), ()
    cols, pk = list(shape.columns), list(shape.primary_key)
    defined: list[str] = []
    added = tuple(c.columns[0].lower() for c in clauses if c.kind == "add")

    def at(name: str) -> int | None:
        return next((k for k, c in enumerate(cols) if c.name.lower() == name.lower()), None)

    for clause, toks in zip(clauses, parts, strict=True):
        head = 1 + (len(toks) > 1 and toks[1].upper() == "COLUMN")
        if clause.kind == "add":
            k = head + (3 if [t.upper() for t in toks[head:head + 3]] == ["IF", "NOT", "EXISTS"] else 0)
            got = column_definition(toks[k:])
        elif clause.kind in ("modify", "change") and toks[0].upper() != "ALTER":
            k = head + (2 if [t.upper() for t in toks[head:head + 2]] == ["IF", "EXISTS"] else 0)
            got = column_definition(toks[k + (clause.kind == "change"):])
        elif clause.kind == "drop" and forward:
            k = at(clause.columns[0])
            if k is not None:
                del cols[k]
            continue
        elif clause.kind == "rename" and forward:
            k = at(clause.columns[0])
            if k is None:
                return None, (), ()
            pk = [clause.columns[1] if p.lower() == cols[k].name.lower() else p for p in pk]
            cols[k] = replace(cols[k], name=clause.columns[1])
            continue
        elif clause.kind == "none" or not forward:
            continue
        else:
            return None, (), ()  # a key change, ALTER COLUMN ... SET DEFAULT: not followed on a shape it only saw
        if got is None:
            if forward:
                return None, (), ()
            continue
        col, where = got
        old = at(clause.columns[0])
        if old is None and clause.kind == "change" and not forward:
            old = at(clause.columns[1])  # the catalog: under its new name
        if old is not None and (forward or clause.kind != "add" or where is None):
            if clause.kind == "change":
                pk = [col.name if p.lower() == cols[old].name.lower() else p for p in pk]
            if where is None:
                cols[old] = col
                defined.append(col.name)
                continue
            del cols[old]
        elif old is None and not forward and clause.kind != "add":
            continue  # the catalog no longer has it: its place is not known here
        if where == "FIRST":
            cols.insert(0, col)
        elif where is not None:
            k = at(where)
            if k is None:
                if forward:
                    return None, (), ()
                continue
            cols.insert(k + 1, col)
        else:
            cols.append(col)
        defined.append(col.name)
    return TableSchema(shape.table, tuple(cols), tuple(pk)), tuple(defined), added


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
