"""Where a compared table lives: a database connection factory plus streaming reads.

An Endpoint is built from the service config (a source or a target by
name) or from a DSN:

    mysql://user:password@host:port[/db]      MariaDB / MySQL (PyMySQL; parsed by cdc.config.dsn)
    postgresql://user@host:port/db            PostgreSQL (psycopg 3); libpq
                                               'host=... port=...' strings too
    duckdb:///path/to/file.duckdb or a path   DuckDB

Every connection is prepared for fingerprints: UTC session time zone (so
MySQL TIMESTAMP and PostgreSQL timestamptz render as UTC instants) and
ISO date style (each database's session settings and driver calls are its
CompareDialect's, cdc.compare.dialects). ``stream(sql)`` reads through a server-side cursor in
chunks of ``chunk`` rows, so a table of any size costs bounded memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from cdc.compare.dialects import COMPARE_DIALECTS, CompareDialect, compare_dialect
from cdc.compare.errors import CompareError
from cdc.config.dsn import database_kind, mask
from cdc.config.tls import MySqlTls
from cdc.schema.sql_dialects import SqlDialect, sql_dialect


@dataclass
class Endpoint:
    name: str
    dialect: str  # mysql | postgres | duckdb | oracle
    params: dict[str, Any] = field(repr=False)  # connect() keywords: may hold a password
    default_schema: str | None = None

    def connect(self):
        """A new DB-API connection, prepared for fingerprints (see module docstring)."""
        d = COMPARE_DIALECTS.get(self.dialect)
        if d is None:
            raise CompareError(f"endpoint {self.name}: dialect {self.dialect!r} cannot be connected here",
                               endpoint=self.name)
        return d.connect(self.name, self.params)

    def stream(self, conn, sql: str, params: tuple = (), chunk: int = 10_000) -> Iterator[tuple]:
        """Rows of ``sql`` read with a server-side cursor, ``chunk`` rows per fetch."""
        return self.compare.stream(conn, sql, params, chunk)

    def query(self, conn, sql: str, params: tuple = ()) -> list[tuple]:
        cur = self.cursor(conn)
        try:
            cur.execute(sql, params or None)
            return [tuple(r) for r in cur.fetchall()]
        finally:
            if cur is not conn:
                cur.close()

    def cursor(self, conn):
        """A cursor sharing ``conn``'s transaction (a DuckDB cursor() would be a new connection)."""
        return self.sql.cursor(conn)

    @property
    def placeholder(self) -> str:
        return self.sql.param

    @property
    def sql(self) -> SqlDialect:
        return sql_dialect(self.dialect)

    @property
    def compare(self) -> CompareDialect:
        """What compare spells differently on this endpoint's database."""
        return compare_dialect(self.dialect)


def from_dsn(name: str, dsn: str, tls: MySqlTls | None = None, **login: Any) -> Endpoint:
    """An Endpoint for a DSN (see module docstring); ``tls``: a MySQL target's; ``login``: ``user``/
    ``password`` over the DSN's (a config's ``login_kwargs()``). Raises CompareError if unknown."""
    kind = database_kind(dsn)
    d = COMPARE_DIALECTS.get(kind) if kind is not None else None
    if d is None:
        raise CompareError(f"endpoint {name}: cannot tell the database kind of DSN {mask(dsn)!r} "
                           "(use mysql://, postgresql:// or duckdb:///path)", endpoint=name)
    params, schema = d.dsn_params(name, dsn, tls, login)
    return Endpoint(name, d.name, params, schema)


def _at_current_host(src):
    """``src`` with ``hosts`` narrowed to the one the daemon would read now (after a failover: the promoted
    replica, not the first listed host), found by the source kind's locator (cdc.registry)."""
    from cdc import registry

    hosts = getattr(src, "hosts", None)
    if not hosts or len(hosts) == 1:
        return src
    try:
        chosen = registry.current_host(src)
    except Exception as exc:  # noqa: BLE001 - the reader's own error classes (NoPrimaryFound, ...)
        raise CompareError(f"source {src.name}: cannot find its current primary among {hosts}: {exc}",
                           source=src.name) from None
    return src if chosen is None else src.model_copy(update={"hosts": [chosen]})


def from_config(config, name: str) -> Endpoint:
    """The Endpoint of the source or target called ``name`` in the service config."""
    for src in config.sources:
        if src.name == name:
            if src.kind == "shadow":
                return from_dsn(name, src.dsn, src.tls, **src.login_kwargs())
            d = COMPARE_DIALECTS.get(src.kind)
            params = d.source_params(_at_current_host(src)) if d is not None else None
            if d is None or params is None:
                raise CompareError(f"source {name}: compare against a {src.kind} source is not supported here "
                                   "(Oracle cannot run where this is built)", source=name)
            return Endpoint(name, d.name, params)
    for tgt in config.targets:
        if tgt.name == name:
            d = COMPARE_DIALECTS.get(tgt.kind)
            got = d.target_params(tgt, from_dsn) if d is not None else None
            if got is None:
                raise CompareError(f"target {name}: compare with a {tgt.kind} target is not supported",
                                   target=name)
            dialect, params, schema = got
            return Endpoint(name, dialect, params, schema)
    raise CompareError(f"no source or target named {name!r} in the config", name=name,
                       known=[s.name for s in config.sources] + [t.name for t in config.targets])
