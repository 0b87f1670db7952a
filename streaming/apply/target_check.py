"""`cdc check` of one target (cdc/checks.py): it answers, and our user may write where the apply writes.

A database target is checked by doing what the apply does first: create a table
in the target schema, insert a row, drop the table (``_cdc_check_<random>``;
on PostgreSQL and DuckDB inside a transaction that is then committed, on
MySQL/MariaDB and Oracle DDL commits by itself). Nothing else is touched: the
connection is opened without creating the progress tables. A refusal is a
FAIL with the GRANT that fixes it, naming the user the database says we are.
Lakehouse and Parquet targets are opened as the apply opens them (their
directory or catalog must be writable).
"""

from __future__ import annotations

import uuid
from typing import Any

from cdc.checks import Check
from streaming.targets import make_target


def _grant(target: Any, user: str, schema: str, error: str) -> str:
    """The statement that lets ``user`` write in ``schema`` (the target's ``grant_hint``; it creates the
    schema first when the error says it is missing)."""
    missing = "does not exist" in error or "Unknown database" in error
    return target.grant_hint(user, schema, missing)


def checks(config: Any, key: str) -> list[Check]:
    """One or two Checks for target ``config`` (``key``: its name): connection, then write permission."""
    name = f"target {key}"
    target = make_target(config)
    if target.sql is None:  # lake / Parquet: opening creates what the apply needs
        try:
            target.open()
        except Exception as exc:  # noqa: BLE001 - whatever the library raises is the finding
            return [Check(name, False, f"cannot open: {exc}", "check its path/catalog settings and permissions")]
        target.close()
        return [Check(name, True, f"{config.kind} target opened")]
    try:
        target.conn = target._connect()  # without ensure_meta(): the check writes nothing that stays
    except Exception as exc:  # noqa: BLE001 - any driver's connection error is the finding
        return [Check(name, False, f"cannot connect: {exc}", f"check targets[{key}] dsn/host, user and password")]
    out = [Check(name, True, f"{config.kind} reachable")]
    try:
        user, schema = target.execute(target.who_sql).fetchone()
        schema = target.schema or schema
        scratch = f"_cdc_check_{uuid.uuid4().hex[:8]}"
        table = target.qualified(scratch)
        try:
            target.begin()
            target.execute(f"CREATE TABLE {table} (id {target.bigint} PRIMARY KEY)")
            target.execute(f"INSERT INTO {table} VALUES (1)")
            target.execute(f"DROP TABLE {table}")
            target.commit()
            out.append(Check(f"{name}: write", True, f"{user} may create, fill and drop tables in {schema}"))
        except Exception as exc:  # noqa: BLE001 - the refusal is the finding
            try:
                target.rollback()
            except Exception:  # noqa: BLE001, S110 - the connection may be gone: the refusal is reported
                pass
            error = str(exc).strip().splitlines()[0]
            out.append(Check(f"{name}: write", False, f"{user} cannot create a table in {schema}: {error}",
                             _grant(target, user, schema, error)))
    finally:
        target.close()
    return out
