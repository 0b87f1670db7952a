"""PostgreSQL over TLS on a real server (``tls_postgres``: ssl=on, pg_hba.conf with ``hostssl`` lines only):
libpq's sslmode/sslrootcert in the DSN pass unchanged through the target, compare endpoints and maintained
views; a connection without TLS or with a wrong CA fails naming the target and the fix."""

from __future__ import annotations

import uuid

import pytest

from cdc.compare.endpoints import from_config
from cdc.config.loader import parse_config
from cdc.config.models import TargetConfig
from streaming.errors import TargetError
from streaming.targets.postgres.target import PostgresTarget
from streaming.views.connect import open_target
from tests.fixtures.tls import verify_full_dsn

pytestmark = pytest.mark.postgres

ENCRYPTED = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"


def test_the_target_writes_with_verify_full(tls_postgres, tls_certs):
    schema = "tls_" + uuid.uuid4().hex[:8]
    cfg = TargetConfig(name="pg", kind="postgres", dsn=verify_full_dsn(tls_postgres, tls_certs.ca), schema=schema)
    target = PostgresTarget(cfg)
    target.conn = target._connect()  # open() would also create the meta tables: this test is about the link
    try:
        target.execute(f"CREATE SCHEMA {schema}")
        target.execute(f"CREATE TABLE {schema}.landed (id int PRIMARY KEY)")
        target.upsert_rows("landed", ["id"], ["id"], [{"id": 1}, {"id": 2}])
        target.commit()
        assert target.execute(ENCRYPTED).fetchone() == (True,)
    finally:
        target.close()
    with tls_postgres.connect() as c:
        assert c.execute(f"SELECT id FROM {schema}.landed ORDER BY id").fetchall() == [(1,), (2,)]


def test_a_connection_without_tls_is_refused_naming_the_target_and_the_fix(tls_postgres):
    cfg = TargetConfig(name="pg", kind="postgres", dsn=f"{tls_postgres.dsn}?sslmode=disable")
    with pytest.raises(TargetError) as err:
        PostgresTarget(cfg).open()
    text = str(err.value)
    assert "'pg'" in text and "no encryption" in text and "sslmode=verify-full&sslrootcert=" in text


def test_a_wrong_ca_is_refused_naming_the_fix(tls_postgres, other_ca_certs):
    cfg = TargetConfig(name="pg", kind="postgres", dsn=verify_full_dsn(tls_postgres, other_ca_certs.ca))
    with pytest.raises(TargetError) as err:
        PostgresTarget(cfg).open()
    assert "certificate verify failed" in str(err.value) and "sslrootcert" in str(err.value)


def test_compare_and_views_pass_the_dsn_settings_unchanged(tls_postgres, tls_certs):
    dsn = verify_full_dsn(tls_postgres, tls_certs.ca)
    config = parse_config({"kafka": {"bootstrap_servers": "127.0.0.1:9"},
                           "targets": [{"name": "pg", "kind": "postgres", "dsn": dsn}]}, "cdc.yaml")
    conn = from_config(config, "pg").connect()
    try:
        assert conn.execute(ENCRYPTED).fetchone() == (True,)
        assert "sslmode=verify-full" in conn.info.dsn  # libpq got it as written
    finally:
        conn.close()
    view_target = open_target(config.targets[0])
    try:
        assert view_target.conn.execute(ENCRYPTED).fetchone() == (True,)
        assert "sslmode=verify-full" in view_target.conn.info.dsn
    finally:
        view_target.close()
