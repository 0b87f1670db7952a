"""The one rule for table patterns, wherever a table is named by pattern.

Used by the sources' ``tables:`` (MySQL binlog filter and snapshots, Oracle's
LogMiner row filter and snapshots), the apply side's ``apply[].tables`` /
``exclude``, ``cdc tail --table`` and ``cdc compare --tables``, so a pattern
means the same thing on both sides of the stream.

A pattern is matched against the qualified name ``db.table`` (Oracle:
``SCHEMA.TABLE``) with shell-glob rules (``fnmatch.fnmatchcase``), case
sensitive: ``*`` is any run of characters, ``?`` one character, ``[abc]`` /
``[!abc]`` one of / none of. So ``shop.order_*`` takes ``shop.order_items``
but not ``shop.orders`` nor ``shop.orders_archive``; ``shop.order*`` takes all
three; ``shop.*`` every table of ``shop``. A ``_`` or ``%`` is an ordinary
character (it is never handed to SQL ``LIKE``). Oracle patterns are upper-cased
first, as Oracle stores unquoted names.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

GLOB_CHARS = frozenset("*?[")


def is_literal(text: str) -> bool:
    """True when ``text`` has no glob character (it names exactly one thing)."""
    return not GLOB_CHARS.intersection(text)


def matches(name: str, patterns: Iterable[str]) -> bool:
    """Whether the qualified ``name`` (``db.table``) matches any of ``patterns``."""
    return any(fnmatchcase(name, p) for p in patterns)


def db_matches(db: str, patterns: Iterable[str]) -> bool:
    """Whether some table of database ``db`` may match (the pattern's part before the first dot matches ``db``)."""
    return any(fnmatchcase(db, p.partition(".")[0]) for p in patterns)


def check_pattern(pattern: str) -> str:
    """``pattern`` if it has the form ``db.table`` (either part may be a glob); else ValueError saying so."""
    db, sep, table = pattern.partition(".")
    if not sep or not db or not table:
        raise ValueError(f"table {pattern!r} is not of the form db.table (globs allowed: db.*, db.order_*)")
    return pattern


def select(names: Iterable[str], patterns: Iterable[str]) -> list[str]:
    """The ``names`` (qualified) any pattern matches, sorted."""
    pats = list(patterns)
    return sorted(n for n in names if matches(n, pats))
