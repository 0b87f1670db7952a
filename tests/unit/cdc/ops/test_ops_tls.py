"""TLS client certificates on the operations API (``api.tls``), with certificates made here
(tests/fixtures/tls.py): a mapped CN acts with its role, an unmapped CN gets 403, a client without a
certificate or with one another CA signed is refused in the TLS handshake; every refusal is logged
without a secret."""

from __future__ import annotations

import http.client
import json
import logging
import ssl
import time

import pytest

from cdc.errors import ConfigError
from cdc.ops.config import ApiConfig
from cdc.ops.server import OpsServer
from tests.fixtures.tls import _signed, make_certs
from tests.unit.cdc.ops.test_ops_server import _Daemon

CLIENT_EXT = "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("api-tls")
    ours, other = make_certs(d), make_certs(d, ca_name="other-ca")
    reader = _signed(d, "grafana", "/CN=grafana", CLIENT_EXT, ours.ca, ours.ca_key)
    stranger = _signed(d, "mallory", "/CN=mallory", CLIENT_EXT, ours.ca, ours.ca_key)
    return ours, other, reader, stranger


@pytest.fixture
def api(certs):
    ours, _, _, _ = certs
    cfg = ApiConfig(enabled=True, port=0, tls={"cert_file": str(ours.server_cert), "key_file": str(ours.server_key),
                                               "client_ca_file": str(ours.ca),
                                               "client_roles": {"cdc": "operator", "grafana": "read"}})
    daemon = _Daemon()
    server = OpsServer(daemon, cfg).start()
    try:
        yield server, daemon
    finally:
        server.stop()


def call(server, method: str, path: str, ca, cert=None):
    ctx = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=ctx, timeout=10)
    try:
        conn.request(method, path, body=b"" if method == "POST" else None)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_a_mapped_certificate_acts_with_its_role_and_is_the_actor(api, certs):
    server, daemon = api
    ours, _, reader, _ = certs
    status, body = call(server, "GET", "/api/v1/sources", ours.ca, (ours.client_cert, ours.client_key))
    assert status == 200 and body["sources"][0]["name"] == "s1"
    status, body = call(server, "POST", "/api/v1/sources/s1/pause", ours.ca, (reader[0], reader[1]))
    assert status == 403 and "'grafana' has role read" in body["error"]
    status, body = call(server, "POST", "/api/v1/sources/s1/pause", ours.ca, (ours.client_cert, ours.client_key))
    assert status == 200 and body["operation"]["actor"] == "cdc"
    assert daemon.written[0][1][0]["actor"] == "cdc"


def test_an_unmapped_cn_is_403_and_logged(api, certs, caplog):
    server, daemon = api
    ours, _, _, stranger = certs
    with caplog.at_level(logging.WARNING, logger="cdc.ops.server"):
        status, body = call(server, "GET", "/api/v1/sources", ours.ca, stranger)
    assert status == 403 and "CN 'mallory' has no role" in body["error"] and "api.tls.client_roles" in body["error"]
    assert daemon.written == []
    assert any("refused GET /api/v1/sources" in r.getMessage() and "mallory" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("who", ["no certificate", "another CA's certificate"])
def test_a_client_without_a_certificate_our_ca_signed_is_refused_in_the_handshake(api, certs, caplog, who):
    server, daemon = api
    ours, other, _, _ = certs
    cert = None if who == "no certificate" else (other.client_cert, other.client_key)
    with caplog.at_level(logging.WARNING, logger="cdc.ops.server"), \
            pytest.raises((ssl.SSLError, ConnectionError)):
        call(server, "POST", "/api/v1/sources/s1/pause", ours.ca, cert)
    assert daemon.workers[0].control.paused is False and daemon.written == []

    def refused() -> list[str]:
        return [r.getMessage() for r in caplog.records if "refused a TLS connection" in r.getMessage()]

    for _ in range(50):  # the server's thread logs once its side of the handshake failed
        if refused():
            break
        time.sleep(0.05)
    (line,) = refused()
    assert ("CERTIFICATE" in line) and "BEGIN" not in line and str(other.client_key) not in line, line


def test_plain_http_to_a_tls_listener_is_refused(api, caplog):
    server, _ = api
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        with pytest.raises((ConnectionError, http.client.HTTPException)):
            conn.request("GET", "/api/v1/sources")
            conn.getresponse()
    finally:
        conn.close()


def test_config_checks_and_unreadable_files_name_the_key(tmp_path, certs):
    ours, _, _, _ = certs
    with pytest.raises(ValueError, match="client_roles needs api.tls.client_ca_file"):
        ApiConfig(tls={"cert_file": "c", "key_file": "k", "client_roles": {"cdc": "read"}})
    with pytest.raises(ValueError, match="maps no certificate CN"):
        ApiConfig(tls={"cert_file": "c", "key_file": "k", "client_ca_file": "ca"})
    with pytest.raises(ValueError, match="not loopback"):
        ApiConfig(enabled=True, host="0.0.0.0", tls={"cert_file": "c", "key_file": "k"})
    ApiConfig(enabled=True, host="0.0.0.0", tls={"cert_file": "c", "key_file": "k", "client_ca_file": "ca",
                                                 "client_roles": {"cdc": "operator"}})  # certificates: allowed
    bad = ApiConfig(enabled=True, port=0, tls={"cert_file": str(tmp_path / "missing.pem"),
                                               "key_file": str(ours.server_key)})
    with pytest.raises(ConfigError, match="missing.pem") as err:
        OpsServer(_Daemon(), bad)
    assert err.value.fields["key"] == "api.tls.cert_file"
    bad = ApiConfig(enabled=True, port=0, tls={"cert_file": str(ours.server_cert), "key_file": str(ours.server_key),
                                               "client_ca_file": str(tmp_path / "no-ca.pem"),
                                               "client_roles": {"cdc": "read"}})
    with pytest.raises(ConfigError, match="no-ca.pem") as err:
        OpsServer(_Daemon(), bad)
    assert err.value.fields["key"] == "api.tls.client_ca_file"
