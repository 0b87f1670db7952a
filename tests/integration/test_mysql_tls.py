"""MySQL/MariaDB over TLS on a real MariaDB and a real MySQL 9.7 (``tls_source``: ssl-ca/cert/key from
tests/fixtures/tls.py, accounts ``REQUIRE SSL`` and ``REQUIRE X509``; on MySQL made by docs/setup.md's MySQL 8
statements, so with the documented grants only): the reader's snapshot and binlog stream, ``cdc check``, compare
endpoints, `cdc gtid locate` and the MySQL target all connect through the one ``tls`` block; refusals name the
host and the fix."""

from __future__ import annotations

import argparse

import pytest

from cdc.compare.endpoints import from_config
from cdc.config.loader import parse_config
from cdc.config.models import TargetConfig
from cdc.config.tls import MySqlTls
from cdc.stream.events import Change
from readers.mysql.check import check_host
from readers.mysql.connection import binlog_status, open_connection
from readers.mysql.errors import AuthenticationFailed, TlsFailed
from readers.mysql.locate import locate
from readers.mysql.locate import main as locate_main
from readers.mysql.position import GtidSet
from streaming.errors import TargetError
from streaming.targets.mysql.target import MySqlTarget
from tests.fixtures.services import documented_target_grant
from tests.fixtures.tls import SSL_USER, TLS_PASSWORD, X509_USER
from tests.integration.mysql_helpers import collect, is_mysql, make_source, transactions

pytestmark = pytest.mark.mysql


def _cipher(conn) -> str:
    with conn.cursor() as cur:
        cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        return cur.fetchone()[1]


def test_reader_snapshots_and_streams_as_a_require_x509_account(tls_source, tls_certs, tls_source_db):
    # REQUIRE X509: every connection (probe, settings check, snapshot, binlog ctl and stream) must
    # present the client certificate, which only the tls block supplies.
    db, c = tls_source, tls_certs
    db.query(f"CREATE TABLE {tls_source_db}.t (id INT PRIMARY KEY, v VARCHAR(20))")
    db.query(f"INSERT INTO {tls_source_db}.t VALUES (1, 'before'), (2, 'before')")
    tls = MySqlTls(ca=str(c.ca), cert=str(c.client_cert), key=str(c.client_key))
    assert tls.verifies_identity  # the default with a CA: the certificate must name 127.0.0.1
    src = make_source([db.address], [f"{tls_source_db}.*"], user=X509_USER, password=TLS_PASSWORD, tls=tls,
                      snapshot="initial")
    src.start(None)
    try:
        db.query(f"INSERT INTO {tls_source_db}.t VALUES (3, 'streamed')")
        db.query(f"UPDATE {tls_source_db}.t SET v = 'updated' WHERE id = 1")
        end = GtidSet.parse(db.gtid_binlog_pos())
        events = collect(src, lambda evs: src.state.issuperset(end), timeout=30)
    finally:
        src.close()
    changes = [e for e in events if isinstance(e, Change)]
    assert sorted((c.op, c.after["id"]) for c in changes if c.op == "r") == [("r", 1), ("r", 2)]
    streamed = [(c.op, c.after["id"], c.after["v"]) for _, rows in transactions(events) for c in rows if c.op != "r"]
    assert streamed == [("c", 3, "streamed"), ("u", 1, "updated")]


def test_without_a_client_certificate_a_require_x509_account_is_refused_naming_host_and_fix(tls_source, tls_certs):
    with pytest.raises(AuthenticationFailed) as no_block:
        open_connection(tls_source.address, X509_USER, TLS_PASSWORD)
    assert tls_source.address in str(no_block.value) and "REQUIRE SSL / X509" in str(no_block.value)
    assert "set tls: {ca: ..., cert: ..., key: ...}" in str(no_block.value)
    with pytest.raises(AuthenticationFailed) as ca_only:
        open_connection(tls_source.address, X509_USER, TLS_PASSWORD, tls=MySqlTls(ca=str(tls_certs.ca)))
    assert "set tls.cert and tls.key" in str(ca_only.value)
    c = tls_certs
    conn = open_connection(tls_source.address, X509_USER, TLS_PASSWORD,
                           tls=MySqlTls(ca=str(c.ca), cert=str(c.client_cert), key=str(c.client_key)))
    try:
        assert _cipher(conn).startswith("TLS_")
    finally:
        conn.close()


def test_a_require_ssl_account_without_a_tls_block_is_encrypted_but_unverified(tls_source):
    # PyMySQL negotiates TLS whenever the server offers it (mysql client's --ssl-mode=PREFERRED), so the
    # account's REQUIRE SSL is met; only a tls block with a ca authenticates the server (next test).
    conn = open_connection(tls_source.address, SSL_USER, TLS_PASSWORD)
    try:
        assert _cipher(conn).startswith("TLS_")
    finally:
        conn.close()


def test_a_wrong_ca_stops_the_reader_with_a_terminal_error_naming_host_ca_and_fix(tls_source, other_ca_certs,
                                                                                    tls_source_db):
    src = make_source([tls_source.address], [f"{tls_source_db}.*"], user=SSL_USER, password=TLS_PASSWORD,
                      tls=MySqlTls(ca=str(other_ca_certs.ca)))
    with pytest.raises(TlsFailed) as err:
        src.start(None)
    src.close()
    text = str(err.value)
    assert tls_source.address in text and str(other_ca_certs.ca) in text
    assert "certificate verify failed" in str(err.value.__cause__).lower() or "self-signed" in text
    assert "set tls.ca to the CA that signed the server certificate" in text


@pytest.fixture(params=["mariadb", "mysql97"])
def server_without_tls(request):
    """A server of each flavour that offers no TLS, and a user of it."""
    if request.param == "mariadb":
        return request.getfixturevalue("mariadb_primary"), ("cdc", "cdc")
    db = request.getfixturevalue("no_tls_mysql97")
    return db, db.capture_user


def test_a_tls_block_against_a_server_without_tls_is_refused_not_downgraded(server_without_tls, tls_certs):
    server, (user, password) = server_without_tls
    with pytest.raises(TlsFailed) as err:
        open_connection(server.address, user, password, tls=MySqlTls(ca=str(tls_certs.ca)))
    assert server.address in str(err.value) and "does not offer TLS" in str(err.value)


def test_the_check_and_compare_connect_with_the_sources_tls(tls_source, tls_certs, tls_source_db):
    c = tls_certs
    source = {"name": "shop", "kind": "mysql", "hosts": [tls_source.address], "user": X509_USER,
              "password": TLS_PASSWORD, "tables": [f"{tls_source_db}.*"],
              "tls": {"ca": str(c.ca), "cert": str(c.client_cert), "key": str(c.client_key)}}
    config = parse_config({"sources": [source], "kafka": {"bootstrap_servers": "127.0.0.1:9"}}, "cdc.yaml")
    src = config.sources[0]
    assert [p for p in check_host(src.hosts[0], src.user, TLS_PASSWORD, False, 5, src.tls)
            if p.setting == "connection"] == []
    conn = from_config(config, "shop").connect()
    try:
        assert _cipher(conn).startswith("TLS_")
    finally:
        conn.close()
    refused = [p for p in check_host(src.hosts[0], src.user, TLS_PASSWORD, False, 5) if p.setting == "connection"]
    assert refused and tls_source.address in str(refused[0]) and "tls" in str(refused[0])


def test_mysql_target_over_tls_as_a_require_x509_account(tls_source, tls_certs, other_ca_certs, tls_source_db):
    c = tls_certs
    if is_mysql(tls_source):  # the account has the capture grants only: add docs/setup.md's target grant
        documented_target_grant(tls_source, tls_source_db, X509_USER)
    dsn = f"mysql://{X509_USER}:{TLS_PASSWORD}@{tls_source.host}:{tls_source.port}/{tls_source_db}"
    good = TargetConfig(name="my", kind="mysql", dsn=dsn,
                        tls=MySqlTls(ca=str(c.ca), cert=str(c.client_cert), key=str(c.client_key)))
    target = MySqlTarget(good).open()
    try:
        target.execute(f"CREATE TABLE {tls_source_db}.landed (id INT PRIMARY KEY)")
        target.begin()
        target.upsert_rows("landed", ["id"], ["id"], [{"id": 1}, {"id": 2}])
        target.commit()
        assert _cipher(target.conn).startswith("TLS_")
    finally:
        target.close()
    assert tls_source.query(f"SELECT id FROM {tls_source_db}.landed ORDER BY id") == [(1,), (2,)]
    wrong = TargetConfig(name="my", kind="mysql", dsn=dsn,
                         tls=MySqlTls(ca=str(other_ca_certs.ca), cert=str(c.client_cert), key=str(c.client_key)))
    with pytest.raises(TargetError) as err:
        MySqlTarget(wrong).open()
    assert "'my'" in str(err.value) and "set tls.ca to the CA that signed the server certificate" in str(err.value)


def test_gtid_locate_connects_with_the_ssl_flags(tls_source, tls_certs, capsys, tmp_path):
    c = tls_certs
    tls = MySqlTls(ca=str(c.ca), cert=str(c.client_cert), key=str(c.client_key))
    conn = open_connection(tls_source.address, X509_USER, TLS_PASSWORD, tls=tls)
    try:
        with conn.cursor() as cur:
            file, pos = binlog_status(cur)
    finally:
        conn.close()
    found = locate(tls_source.address, file, pos, tls_source.address, X509_USER, TLS_PASSWORD, tls)
    assert GtidSet.parse(found["gtid_set"]) == GtidSet.parse(tls_source.gtid_binlog_pos())
    args = argparse.Namespace(src=tls_source.address, file=file, pos=pos, dst=tls_source.address, user=X509_USER,
                              password_file=None, ssl_ca=str(c.ca), ssl_cert=None, ssl_key=str(c.client_key))
    assert locate_main(args) == 2
    assert "tls.key is set but tls.cert is not" in capsys.readouterr().out


def test_verify_identity_refuses_a_host_name_the_certificate_does_not_hold(tls_source, tls_certs):
    # "127.1" reaches 127.0.0.1 (inet_aton form) but is not a name in the certificate (IP:127.0.0.1, localhost)
    other_name = f"127.1:{tls_source.port}"
    with pytest.raises(TlsFailed) as err:
        open_connection(other_name, SSL_USER, TLS_PASSWORD, tls=MySqlTls(ca=str(tls_certs.ca)))
    assert other_name in str(err.value) and "does not name the host connected to" in str(err.value)
    unchecked = MySqlTls(ca=str(tls_certs.ca), verify_identity=False)
    conn = open_connection(other_name, SSL_USER, TLS_PASSWORD, tls=unchecked)
    try:
        assert _cipher(conn).startswith("TLS_")  # the chain is still verified against the CA
    finally:
        conn.close()
