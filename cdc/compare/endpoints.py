"""Where a compared table lives: a database connection factory plus streaming reads.

An Endpoint is built from the service config (a source or a target by
name) or from a DSN:

    mysql://user:password@host:port[/db]      MariaDB / MySQL (PyMySQL; parsed by cdc.dsn)
    postgresql://user@host:port/db            PostgreSQL (psycopg 3); libpq
                                               'host=... port=...' strings too
    duckdb:///path/to/file.duckdb or a path   DuckDB

Every connection is prepared for fingerprints: UTC session time zone (so
MySQL TIMESTAMP and PostgreSQL timestamptz render as UTC instants) and
ISO date style. ``stream(sql)`` reads through a server-side cursor in
chunks of ``chunk`` rows, so a table of any size costs bounded memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from cdc.compare.errors import CompareError
from cdc.dsn import database_kind, mask, mysql_connect_args, parse_mysql_dsn
from cdc.sql_dialects import SqlDialect, sql_dialect
from cdc.tls import MySqlTls


@dataclass
class Endpoint:
    name: str
    dialect: str  # mysql | postgres | duckdb | oracle
    params: dict[str, Any] = field(repr=False)  # connect() keywords: may hold a password
    default_schema: str | None = None

    def connect(self):
        """A new DB-API connection, prepared for fingerprints (see module docstring)."""
        if self.dialect == "mysql":
            import pymysql
            conn = pymysql.connect(**self.params, autocommit=True, charset="utf8mb4")
            with conn.cursor() as cur:
                cur.execute("SET SESSION time_zone = '+00:00'")
                cur.execute("SET SESSION group_concat_max_len = 4294967295")  # bucket digests: never truncate
            return conn
        if self.dialect == "postgres":
            import psycopg
            login = {k: v for k, v in self.params.items() if k != "dsn"}  # user, password: conninfo keywords
            conn = psycopg.connect(self.params["dsn"], autocommit=True, **login)
            conn.execute("SET TIME ZONE 'UTC'")
            conn.execute("SET DateStyle = 'ISO, YMD'")
            return conn
        if self.dialect == "duckdb":
            import duckdb
            conn = duckdb.connect(self.params["path"])
            conn.execute("SET TimeZone = 'UTC'")
            return conn
        raise CompareError(f"endpoint {self.name}: dialect {self.dialect!r} cannot be connected here",
                           endpoint=self.name)

    def stream(self, conn, sql: str, params: tuple = (), chunk: int = 10_000) -> Iterator[tuple]:
        """Rows of ``sql`` read with a server-side cursor, ``chunk`` rows per fetch."""
        if self.dialect == "mysql":
            import pymysql.cursors
            cur = conn.cursor(pymysql.cursors.SSCursor)
            try:
                cur.execute(sql, params or None)
                while rows := cur.fetchmany(chunk):
                    yield from rows
            finally:
                cur.close()
        elif self.dialect == "postgres":
            with conn.transaction():  # named cursors live inside a transaction
                with conn.cursor(name="cdc_compare", withhold=False) as cur:
                    cur.itersize = chunk
                    cur.execute(sql, params or None)
                    while rows := cur.fetchmany(chunk):
                        yield from rows
        else:
            cur = self.cursor(conn)
            cur.execute(sql, params or None)
            while rows := cur.fetchmany(chunk):
                yield from rows

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


def from_dsn(name: str, dsn: str, tls: MySqlTls | None = None, **login: Any) -> Endpoint:
    """An Endpoint for a DSN (see module docstring); ``tls``: a MySQL target's; ``login``: ``user``/
    ``password`` over the DSN's (a config's ``login_kwargs()``). Raises CompareError if unknown."""
    kind = database_kind(dsn)
    if kind == "mysql":
        parsed = parse_mysql_dsn(dsn, f"endpoint {name}")
        return Endpoint(name, "mysql", {**parsed.connect_args(tls), **login}, parsed.database)
    if kind == "postgres":
        return Endpoint(name, "postgres", {"dsn": dsn, **login}, "public")
    if kind == "duckdb":
        path = dsn[len("duckdb://"):] or ":memory:" if dsn.startswith("duckdb://") else dsn
        return Endpoint(name, "duckdb", {"path": path}, "main")
    raise CompareError(f"endpoint {name}: cannot tell the database kind of DSN {mask(dsn)!r} "
                       "(use mysql://, postgresql:// or duckdb:///path)", endpoint=name)


def from_config(config, name: str) -> Endpoint:
    """The Endpoint of the source or target called ``name`` in the service config."""
    for src in config.sources:
        if src.name == name:
            if src.kind == "mysql":
                host, _, port = src.hosts[0].rpartition(":")
                return Endpoint(name, "mysql", {**mysql_connect_args(host, int(port), src.user,
                                                                     src.password.get_secret_value(), tls=src.tls),
                                                "connect_timeout": int(src.connect_timeout_s)})
            if src.kind == "shadow":
                return from_dsn(name, src.dsn, src.tls, **src.login_kwargs())
            raise CompareError(f"source {name}: compare against a {src.kind} source is not supported here "
                               "(Oracle cannot run where this is built)", source=name)
    for tgt in config.targets:
        if tgt.name == name:
            if tgt.kind == "duckdb":
                return Endpoint(name, "duckdb", {"path": tgt.path or tgt.dsn}, tgt.schema_ or "main")
            if tgt.kind == "postgres":
                return Endpoint(name, "postgres", {"dsn": tgt.dsn, **tgt.login_kwargs()}, tgt.schema_ or "public")
            if tgt.kind == "mysql":
                ep = from_dsn(name, tgt.dsn or "", tgt.tls, **tgt.login_kwargs())
                ep.default_schema = tgt.schema_ or ep.default_schema
                return ep
            raise CompareError(f"target {name}: compare with a {tgt.kind} target is not supported",
                               target=name)
    raise CompareError(f"no source or target named {name!r} in the config", name=name,
                       known=[s.name for s in config.sources] + [t.name for t in config.targets])
