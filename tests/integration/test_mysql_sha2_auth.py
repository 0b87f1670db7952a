"""``caching_sha2_password`` (MySQL 8+'s default plugin) without TLS, on a real MySQL 9.7 server that offers no
TLS (``no_tls_mysql97``: ``tls_version=''``) and its capture user made by docs/setup.md's MySQL 8 statements
without their ``REQUIRE SSL`` (the account that page describes for such a server).

With the server's RSA key pair (MySQL generates one by default) the password travels RSA-encrypted: PyMySQL asks
for the server's public key itself (the mysql client's ``--get-server-public-key``), and the reader snapshots and
streams. Restarted without an RSA key pair, the server can receive no password at all and answers "Access denied"
as for a wrong one: the connection, `cdc check` and `cdc run` name the host, the user and the two fixes (TLS, or
an RSA key pair), once. MariaDB has no caching_sha2_password plugin: this file runs on MySQL only.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from cdc.stream.events import Change
from readers.mysql.check import check_host
from readers.mysql.connection import open_connection
from readers.mysql.errors import AuthenticationFailed
from readers.mysql.position import GtidSet
from tests.integration.mysql_helpers import collect, make_source, transactions

pytestmark = [pytest.mark.mysql, pytest.mark.kafka]

CDC = str(Path(sys.executable).with_name("cdc"))
NO_RSA = ("caching_sha2_password_auto_generate_rsa_keys", "caching_sha2_password_private_key_path",
          "caching_sha2_password_public_key_path")
FIXES = ("fix: enable TLS on the server", "or give the server an RSA key pair for caching_sha2_password")


def _status(conn, name: str) -> str:
    with conn.cursor() as cur:
        cur.execute(f"SHOW SESSION STATUS LIKE '{name}'")
        return cur.fetchone()[1]


def test_without_tls_the_password_goes_rsa_encrypted_and_the_reader_streams(no_tls_mysql97):
    db = no_tls_mysql97
    user, password = db.capture_user
    assert db.query("SELECT @@GLOBAL.tls_version") == [("",)]
    assert db.query("SHOW GLOBAL STATUS LIKE 'Caching_sha2_password_rsa_public_key'")[0][1].startswith("-----BEGIN")
    db.query("FLUSH PRIVILEGES")  # an empty authentication cache: the first login is a full one, RSA-encrypted
    conn = open_connection(db.address, user, password)
    try:
        assert _status(conn, "Ssl_cipher") == ""
    finally:
        conn.close()
    assert check_host(db.address, user, password, False) == []

    name = "sha2_" + uuid.uuid4().hex[:6]
    db.query(f"CREATE DATABASE {name}")
    db.query(f"CREATE TABLE {name}.t (id INT PRIMARY KEY, v VARCHAR(20))")
    db.query(f"INSERT INTO {name}.t VALUES (1, 'snapshot')")
    db.query("FLUSH PRIVILEGES")  # the reader's own first login is a full one too
    src = make_source([db.address], [f"{name}.*"], user=user, password=password, snapshot="initial")
    src.start(None)
    try:
        db.query(f"INSERT INTO {name}.t VALUES (2, 'streamed')")
        end = GtidSet.parse(db.gtid_binlog_pos())
        events = collect(src, lambda evs: src.state.issuperset(end), timeout=30)
    finally:
        src.close()
        db.query(f"DROP DATABASE IF EXISTS {name}")
    assert [(c.op, c.after["id"]) for c in events if isinstance(c, Change) and c.op == "r"] == [("r", 1)]
    assert [(c.op, c.after["v"]) for _, rows in transactions(events) for c in rows if c.op != "r"] == [("c", "streamed")]


def test_without_tls_and_without_an_rsa_key_one_error_names_host_user_and_both_fixes(no_tls_mysql97, broker,
                                                                                      topic_prefix, tmp_path):
    db = no_tls_mysql97
    user, password = db.capture_user
    db.stop()
    db.extra.update(dict(zip(NO_RSA, ("OFF", str(db.dir / "no-private.pem"), str(db.dir / "no-public.pem")))))
    db.start()
    try:
        assert db.query("SHOW GLOBAL STATUS LIKE 'Caching_sha2_password_rsa_public_key'")[0][1] == ""
        with pytest.raises(AuthenticationFailed) as err:
            open_connection(db.address, user, password)
        text = str(err.value)
        assert f"{db.address} rejected user '{user}'" in text and "offers neither (no TLS, no RSA key pair)" in text
        assert all(fix in text for fix in FIXES), text

        config = tmp_path / "cdc.yaml"
        config.write_text(yaml.safe_dump({
            "sources": [{"name": "shop", "kind": "mysql", "hosts": [db.address], "user": user, "password": password,
                         "tables": ["test.*"], "server_id": 800_000 + uuid.uuid4().int % 100_000}],
            "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": topic_prefix},
            "metrics": {"port": 0}, "drain_timeout_s": 20}))
        check = subprocess.run([CDC, "check", "--config", str(config), "--json"], capture_output=True, text=True,
                               timeout=120, check=False)
        assert check.returncode == 1, check.stdout + check.stderr
        failed = [c for c in json.loads(check.stdout) if not c["ok"]]
        assert failed[0]["check"] == f"source shop: host {db.address}", failed
        assert f"user '{user}'" in failed[0]["detail"] and "no TLS, no RSA key pair" in failed[0]["detail"], failed
        run = subprocess.run([CDC, "run", "--config", str(config)], capture_output=True, text=True, timeout=120,
                             check=False)
        assert run.returncode == 2, run.stderr
        assert "shop" in run.stderr and f"user '{user}'" in run.stderr, run.stderr
        assert run.stderr.count("no TLS, no RSA key pair") == 1 and all(f in run.stderr for f in FIXES), run.stderr
    finally:  # the server as the module made it, with its RSA key pair again
        db.stop()
        for key in NO_RSA:
            db.extra.pop(key)
        db.start()
