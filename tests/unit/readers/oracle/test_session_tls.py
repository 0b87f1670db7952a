"""The Oracle source's ``tls:`` wallet settings reach ``oracledb.connect``.

No Oracle server can run where this is built, so this is the one place a driver call is replaced:
``oracledb.connect`` is monkeypatched to record its keywords (what a real TCPS login would receive)."""

from __future__ import annotations

import oracledb

from readers.oracle.config import OracleSourceConfig
from readers.oracle.session import connect


def test_wallet_and_server_dn_settings_reach_the_connect_call(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(oracledb, "connect", lambda **kw: calls.append(kw) or "connection")
    cfg = OracleSourceConfig(name="ora", dsn="miner_tcps", user="cdc", password="pw", tables=["APP.*"],
                             tls={"config_dir": str(tmp_path), "wallet_location": str(tmp_path),
                                  "wallet_password": "w4ll3t", "ssl_server_dn_match": True,
                                  "ssl_server_cert_dn": "CN=miner.example.com"})
    assert connect("tcps://miner:2484/LOGMNR", cfg, "miner") == "connection"
    assert calls == [{"user": "cdc", "password": "pw", "dsn": "tcps://miner:2484/LOGMNR",
                      "config_dir": str(tmp_path), "wallet_location": str(tmp_path), "wallet_password": "w4ll3t",
                      "ssl_server_dn_match": True, "ssl_server_cert_dn": "CN=miner.example.com"}]


def test_without_a_block_the_call_is_unchanged(monkeypatch):
    calls = []
    monkeypatch.setattr(oracledb, "connect", lambda **kw: calls.append(kw) or "connection")
    cfg = OracleSourceConfig(name="ora", dsn="h:1521/LOGMNR", user="cdc", password="pw", tables=["APP.*"])
    connect("h:1521/LOGMNR", cfg, "standby")
    assert calls == [{"user": "cdc", "password": "pw", "dsn": "h:1521/LOGMNR"}]
