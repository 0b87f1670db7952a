"""cdc/config/tls.py: the tls blocks as written in cdc.yaml, what they become for the drivers, and the diagnosis
of TLS failures (the real handshakes are in tests/integration/test_mysql_tls.py and test_postgres_tls.py)."""

from __future__ import annotations

import ssl

import pymysql
import pytest

from cdc.config.dsn import parse_mysql_dsn
from cdc.config.loader import parse_config
from cdc.config.tls import MySqlTls, OracleTls, mysql_tls_problem, postgres_tls_problem
from cdc.errors import ConfigError


@pytest.fixture
def pem(tmp_path):
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("-----BEGIN CERTIFICATE-----\n")
    return tmp_path


def config(tmp_path, source_tls=None, target=None):
    raw = {"kafka": {"bootstrap_servers": "127.0.0.1:9"},
           "sources": [{"name": "shop", "kind": "mysql", "hosts": ["db1:3306"], "user": "cdc", "password": "x",
                        "tables": ["shop.*"], **({"tls": source_tls} if source_tls is not None else {})}],
           "targets": [target] if target else []}
    return parse_config(raw, str(tmp_path / "cdc.yaml"))


def test_the_issue_example_loads_and_verifies_identity(pem):
    cfg = config(pem, {"ca": str(pem / "ca.pem"), "cert": None, "key": None, "verify_identity": True})
    tls = cfg.sources[0].tls
    assert tls.pymysql_ssl() == {"ca": str(pem / "ca.pem"), "verify_mode": True, "check_hostname": True}


def test_verify_identity_defaults_to_true_with_a_ca_and_a_block_without_ca_still_requires_tls(pem):
    assert MySqlTls(ca=str(pem / "ca.pem")).verifies_identity
    assert not MySqlTls(ca=str(pem / "ca.pem"), verify_identity=False).pymysql_ssl()["check_hostname"]
    bare = MySqlTls().pymysql_ssl()
    assert bare == {"verify_mode": False, "check_hostname": False}  # non-empty: PyMySQL then REQUIRES TLS


@pytest.mark.parametrize("tls, key, words", [
    ({"ca": "/nowhere/ca.pem"}, "sources[0].tls.ca", ["tls.ca file", "/nowhere/ca.pem", "does not exist"]),
    ({"key": "KEY"}, "sources[0].tls", ["tls.key is set but tls.cert is not"]),
    ({"verify_identity": True}, "sources[0].tls", ["tls.verify_identity is true but tls.ca is not set"]),
    ({"cafile": "x"}, "sources[0].tls.cafile", ["unknown key; valid keys here: ca, cert, key, verify_identity"]),
])
def test_a_bad_block_names_the_key_the_file_and_the_path(pem, tls, key, words):
    tls = {k: (str(pem / "key.pem") if v == "KEY" else v) for k, v in tls.items()}
    with pytest.raises(ConfigError) as err:
        config(pem, tls)
    text = str(err.value)
    assert f"key '{key}' in {pem / 'cdc.yaml'}" in text
    assert all(w in text for w in words), text


def test_targets_take_the_block_of_their_kind(pem):
    my = config(pem, target={"name": "my", "kind": "mysql", "dsn": "mysql://cdc:x@h/db",
                             "tls": {"ca": str(pem / "ca.pem"), "cert": str(pem / "cert.pem"),
                                     "key": str(pem / "key.pem")}}).targets[0]
    assert isinstance(my.tls, MySqlTls) and my.tls.key == str(pem / "key.pem")
    assert parse_mysql_dsn(my.dsn).connect_args(my.tls)["ssl"]["cert"] == str(pem / "cert.pem")
    ora = config(pem, target={"name": "ora", "kind": "oracle", "dsn": "u/p@shop_tcps",
                              "tls": {"wallet_location": str(pem), "wallet_password": "w"}}).targets[0]
    assert isinstance(ora.tls, OracleTls)
    with pytest.raises(ConfigError) as pg:
        config(pem, target={"name": "pg", "kind": "postgres", "dsn": "postgresql://cdc:x@h/cdc",
                            "tls": {"ca": str(pem / "ca.pem")}})
    assert "key 'targets[0]'" in str(pg.value) and "sslmode=verify-full&sslrootcert=" in str(pg.value)
    with pytest.raises(ConfigError) as mixed:
        config(pem, target={"name": "my", "kind": "mysql", "dsn": "mysql://cdc:x@h/db",
                            "tls": {"wallet_location": str(pem)}})
    assert "a mysql target takes tls: {ca, cert, key, verify_identity}" in str(mixed.value)
    with pytest.raises(ConfigError) as missing:  # the union's tag is not part of the key named
        config(pem, target={"name": "my", "kind": "mysql", "dsn": "mysql://cdc:x@h/db", "tls": {"ca": "/no/ca.pem"}})
    assert "key 'targets[0].tls.ca'" in str(missing.value) and "'/no/ca.pem' does not exist" in str(missing.value)


def test_oracle_settings_become_connect_keywords_with_the_wallet_password_unwrapped(pem):
    tls = OracleTls(config_dir=str(pem), wallet_location=str(pem), wallet_password="w4ll3t",
                    ssl_server_dn_match=True, ssl_server_cert_dn="CN=db.example.com")
    assert "w4ll3t" not in repr(tls)
    assert tls.connect_kwargs() == {"config_dir": str(pem), "wallet_location": str(pem), "wallet_password": "w4ll3t",
                                    "ssl_server_dn_match": True, "ssl_server_cert_dn": "CN=db.example.com"}
    assert OracleTls().connect_kwargs() == {}
    with pytest.raises(ValueError, match="tls.wallet_location directory '/no/wallet' does not exist"):
        OracleTls(wallet_location="/no/wallet")


def _failed_connect(cause: Exception) -> pymysql.err.OperationalError:
    """The shape PyMySQL gives a failed handshake: 2003, raised while handling the ssl error."""
    exc = pymysql.err.OperationalError(2003, f"Can't connect to MySQL server on 'h' ({cause})")
    exc.__context__ = cause
    return exc


def test_mysql_tls_failures_get_their_fix(pem):
    tls = MySqlTls(ca=str(pem / "ca.pem"))
    untrusted = ssl.SSLCertVerificationError(1, "certificate verify failed")
    untrusted.verify_message = "self-signed certificate in certificate chain"
    assert "set tls.ca to the CA that signed" in mysql_tls_problem(_failed_connect(untrusted), tls)
    wrong_name = ssl.SSLCertVerificationError(1, "certificate verify failed")
    wrong_name.verify_message = "Hostname mismatch, certificate is not valid for 'db2'."
    assert "tls.verify_identity: false" in mysql_tls_problem(_failed_connect(wrong_name), tls)
    assert "remove the tls block" in mysql_tls_problem(
        pymysql.err.OperationalError(2026, "SSL is required but the server doesn't support it"), tls)
    denied = pymysql.err.OperationalError(1045, "Access denied for user 'cdc'")
    assert "set tls: {ca" in mysql_tls_problem(denied, None)
    assert mysql_tls_problem(denied, MySqlTls(ca=str(pem / "ca.pem"), cert=str(pem / "cert.pem"))) is None
    assert mysql_tls_problem(_failed_connect(ConnectionRefusedError(111, "refused")), tls) is None


def test_postgres_tls_failures_get_their_fix():
    assert "sslmode=verify-full" in postgres_tls_problem('no pg_hba.conf entry for host "h", no encryption')
    assert "sslrootcert" in postgres_tls_problem("SSL error: certificate verify failed")
    assert "verify-ca" in postgres_tls_problem('server certificate for "x" does not match host name "h"')
    assert postgres_tls_problem("password authentication failed") is None
