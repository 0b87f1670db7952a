"""The operations API's HTTP surface without services: the OpenAPI document (valid, and the same list of
routes as the handlers), authentication and roles, request limits, refusals logged without the secret,
and an action's idempotent answer on a stand-in daemon."""

from __future__ import annotations

import http.client
import json
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from openapi_spec_validator import validate
from prometheus_client import CollectorRegistry

from cdc.config.models import Config
from cdc.errors import ConfigError
from cdc.ops import openapi
from cdc.ops.config import ApiConfig
from cdc.ops.control import SourceControl
from cdc.ops.handlers import Handlers, way_back
from cdc.ops.server import OpsServer

READ_TOKEN = "r" * 20 + "-read"
OP_TOKEN = "o" * 20 + "-operator"


@dataclass
class _Spec:
    name: str
    connector: str = "mysql"


@dataclass
class _Worker:
    spec: _Spec
    control: SourceControl = field(default_factory=SourceControl)
    publisher: Any = None
    thread: Any = None
    error: BaseException | None = None
    done: bool = True
    waiting: str | None = None
    holding: bool = False
    lease: Any = None
    acknowledged: int = 7
    last_resume: Any = None


class _Daemon:
    """What the API reads of cdc.runtime.daemon.Daemon; write_now records instead of publishing."""

    def __init__(self) -> None:
        self.workers = [_Worker(_Spec("s1"), last_resume={"gtid_set": "0-1-5"})]
        self.registry = CollectorRegistry()
        self.stop = threading.Event()
        self.written: list[tuple[str, list[dict]]] = []

    def write_now(self, w, ops, keep_paused=False):
        self.written.append((w.spec.name, ops))


@pytest.fixture
def api(tmp_path):
    (tmp_path / "read.token").write_text(READ_TOKEN + "\n")
    (tmp_path / "op.token").write_text(OP_TOKEN)
    cfg = ApiConfig(enabled=True, port=0, max_body_bytes=1024, tokens=[
        {"name": "grafana", "file": str(tmp_path / "read.token"), "role": "read"},
        {"name": "alice", "file": str(tmp_path / "op.token"), "role": "operator"}])
    daemon = _Daemon()
    server = OpsServer(daemon, cfg, config_path=str(tmp_path / "cdc.yaml")).start()
    try:
        yield server, daemon
    finally:
        server.stop()


def call(server, method: str, path: str, token: str | None = None, body: bytes | None = None,
         headers: dict | None = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    try:
        h = dict(headers or {})
        if token is not None:
            h["Authorization"] = f"Bearer {token}"
        conn.request(method, path, body=body, headers=h)
        resp = conn.getresponse()
        data = resp.read()
        ctype = resp.getheader("Content-Type", "")
        return resp.status, json.loads(data) if ctype.startswith("application/json") else data.decode()
    finally:
        conn.close()


def test_the_document_is_valid_openapi_3():
    validate(openapi.DOCUMENT)


def test_every_documented_operation_has_a_handler_and_every_handler_is_documented():
    documented = {op["operationId"] for _, _, op in openapi.routes()}
    handlers = {n for n in vars(Handlers) if not n.startswith("_")}
    assert documented == handlers
    assert all(op.get("x-cdc-role") in ("read", "operator") for _, _, op in openapi.routes())
    assert all(p.startswith(openapi.PREFIX + "/") or p == "/status" for p in openapi.DOCUMENT["paths"])


def test_the_served_document_is_the_document(api):
    server, _ = api
    status, doc = call(server, "GET", "/api/v1/openapi.json", READ_TOKEN)
    assert status == 200 and doc == json.loads(json.dumps(openapi.DOCUMENT))


def test_read_routes_answer_the_read_role(api):
    server, _ = api
    status, body = call(server, "GET", "/api/v1/sources", READ_TOKEN)
    assert status == 200
    (s,) = body["sources"]
    assert (s["name"], s["state"], s["position"], s["tail"]["sequence"]) == ("s1", "stopped", {"gtid_set": "0-1-5"}, 7)
    assert s["way_back"] == [f"POST /api/v1/sources/s1/restart (or restart `cdc run --config {server.handlers.config_path}`)"]
    status, page = call(server, "GET", "/status", READ_TOKEN)
    assert status == 200 and "<td>s1</td>" in page and "/api/v1/sources/s1/restart" in page


@pytest.mark.parametrize("token,status", [(None, 401), ("x" * 30, 401), (OP_TOKEN[:-1], 401),
                                          (OP_TOKEN + "x", 401)])
def test_missing_or_wrong_tokens_are_refused_and_logged_without_the_secret(api, caplog, token, status):
    server, daemon = api
    with caplog.at_level(logging.WARNING, logger="cdc.ops.server"):
        got, body = call(server, "POST", "/api/v1/sources/s1/pause", token)
    assert got == status and "token" in body["error"]
    assert daemon.workers[0].control.paused is False
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "refused POST /api/v1/sources/s1/pause" in logged
    assert OP_TOKEN[:20] not in logged and (token is None or token not in logged)


def test_a_read_token_may_not_act(api):
    server, daemon = api
    status, body = call(server, "POST", "/api/v1/sources/s1/pause", READ_TOKEN)
    assert status == 403 and "grafana" in body["error"] and "operator" in body["error"]
    assert daemon.written == [] and daemon.workers[0].control.paused is False


def test_an_oversized_body_is_413_unread(api):
    server, _ = api
    status, body = call(server, "POST", "/api/v1/sources/s1/pause", OP_TOKEN, b"{" + b" " * 2000 + b"}")
    assert status == 413 and "api.max_body_bytes" in body["error"]


@pytest.mark.parametrize("raw,what", [(b"{not json", "not JSON"), (b"[1]", "JSON list"),
                                      (b'{"reasn": "x"}', "unknown field"), (b'{"reason": 3}', "must be a JSON string")])
def test_malformed_bodies_are_400_naming_what(api, raw, what):
    server, daemon = api
    status, body = call(server, "POST", "/api/v1/sources/s1/pause", OP_TOKEN, raw,
                        {"Content-Type": "application/json"})
    assert status == 400 and what in body["error"]
    assert daemon.written == []


def test_unknown_routes_and_sources_are_404_and_wrong_methods_405(api):
    server, _ = api
    assert call(server, "GET", "/api/v1/nope", READ_TOKEN)[0] == 404
    assert call(server, "GET", "/api/v2/sources", READ_TOKEN)[0] == 404
    status, body = call(server, "GET", "/api/v1/sources/zz", READ_TOKEN)
    assert status == 404 and "s1" in body["error"]
    assert call(server, "GET", "/api/v1/sources/s1/pause", OP_TOKEN)[0] == 405


def test_pause_is_idempotent_and_names_its_actor(api):
    server, daemon = api
    status, first = call(server, "POST", "/api/v1/sources/s1/pause", OP_TOKEN, b'{"reason": "maintenance"}')
    assert status == 200 and first["operation"]["actor"] == "alice" and first["operation"]["action"] == "pause"
    assert first["operation"]["detail"] == {"reason": "maintenance"}
    status, again = call(server, "POST", "/api/v1/sources/s1/pause", OP_TOKEN)
    assert status == 200 and again["did"].startswith("nothing: already paused") and again["operation"] is None
    assert [ops[0]["action"] for _, ops in daemon.written] == ["pause"]  # one record, not two
    s = call(server, "GET", "/api/v1/sources/s1", READ_TOKEN)[1]
    assert s["state"] == "paused" and s["paused"]["actor"] == "alice"
    assert call(server, "POST", "/api/v1/sources/s1/restart", OP_TOKEN)[0] == 409  # resume first


def test_skip_without_a_transaction_name_is_400(api):
    server, _ = api
    status, body = call(server, "POST", "/api/v1/sources/s1/skip", OP_TOKEN, b'{"resync": true}')
    assert status == 400 and "gtid" in body["error"]


def test_way_back_of_a_failed_source_names_the_cli_and_the_api_call():
    from cdc.errors import CdcError

    err = CdcError("refused", gtid="0-1-9")
    lines = way_back("s1", "failed", err, "/etc/cdc.yaml")
    assert lines[0] == "cdc source skip --config /etc/cdc.yaml --source s1 --gtid 0-1-9 --yes --resync"
    assert lines[1] == 'POST /api/v1/sources/s1/skip {"gtid": "0-1-9", "resync": true}'


def test_config_off_by_default_on_loopback_and_tokens_required_elsewhere(tmp_path):
    cfg = Config(kafka={"bootstrap_servers": "x:1"})
    assert (cfg.api.enabled, cfg.api.host) == (False, "127.0.0.1")
    with pytest.raises(ValueError, match="api.tokens"):
        ApiConfig(enabled=True, host="0.0.0.0")
    short = tmp_path / "short"
    short.write_text("abc")
    with pytest.raises(ConfigError, match=r"at least 16") as exc:
        OpsServer(_Daemon(), ApiConfig(enabled=True, port=0, tokens=[{"name": "a", "file": str(short)}]))
    assert exc.value.fields["key"] == "api.tokens[0].file"
    with pytest.raises(ConfigError, match="cannot read the token"):
        OpsServer(_Daemon(), ApiConfig(enabled=True, port=0, tokens=[{"name": "a", "file": str(tmp_path / "no")}]))


def test_resync_and_skip_run_the_cli_commands_and_answer_their_refusal(api, tmp_path):
    """The API's skip and resync are `cdc source skip` / `cdc snapshot`: their own checks answer (409)."""
    server, daemon = api
    (tmp_path / "cdc.yaml").write_text(yaml.safe_dump({
        "kafka": {"bootstrap_servers": "127.0.0.1:1"},
        "sources": [{"name": "s1", "kind": "shadow", "dsn": "duckdb:///nowhere.db", "passwordless": True,
                     "tables": ["a.b"]}]}))
    status, body = call(server, "POST", "/api/v1/sources/s1/resync", OP_TOKEN, b'{"tables": ["a.b"]}')
    assert status == 409 and "does not support `cdc snapshot`" in body["error"], body
    status, body = call(server, "POST", "/api/v1/sources/s1/skip", OP_TOKEN, b'{"gtid": "0-1-9"}')
    assert status == 409 and "does not support `cdc source skip`" in body["error"], body
    assert daemon.written == []  # refused: nothing recorded
    assert call(server, "POST", "/api/v1/sources/s1/resync", OP_TOKEN, b'{"tables": []}')[0] == 400
