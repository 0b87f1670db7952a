"""The Oracle target's ``tls:`` wallet settings reach ``oracledb.connect``.

No Oracle server can run where this is built, so ``oracledb.connect`` is monkeypatched to record its
keywords; nothing else about the target runs here."""

from __future__ import annotations

from types import SimpleNamespace

import oracledb

from cdc.config.models import TargetConfig
from streaming.targets.oracle.target import OracleTarget


def test_wallet_settings_reach_the_connect_call(monkeypatch, tmp_path):
    calls, connection = [], SimpleNamespace(call_timeout=0)
    monkeypatch.setattr(oracledb, "connect", lambda **kw: calls.append(kw) or connection)
    cfg = TargetConfig(name="ora", kind="oracle", dsn="app/pw@dwh_tcps",
                       tls={"config_dir": str(tmp_path), "wallet_location": str(tmp_path),
                            "wallet_password": "w4ll3t", "ssl_server_dn_match": True})
    assert OracleTarget(cfg)._connect() is connection
    assert len(calls) == 1 and calls[0]["dsn"] == "dwh_tcps"
    assert {k: v for k, v in calls[0].items() if k not in ("user", "password", "dsn")} == {
        "config_dir": str(tmp_path), "wallet_location": str(tmp_path), "wallet_password": "w4ll3t",
        "ssl_server_dn_match": True, "tcp_connect_timeout": 10.0, "expire_time": 1}  # + targets[].timeouts
    assert connection.call_timeout == 330_000  # ms: timeouts.reply_s (statement_s + 30)
