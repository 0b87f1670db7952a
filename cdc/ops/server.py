"""The operations API's HTTP listener (``api:`` config, cdc/ops/config.py).

A stdlib ``ThreadingHTTPServer`` of its own, on ``api.host:api.port`` (loopback by default), routed by
the OpenAPI document (cdc/ops/openapi.py): a route exists exactly when it is documented.

- Authentication: ``Authorization: Bearer <token>``, compared in constant time with every token read
  from ``api.tokens[].file`` at start (a missing, unreadable or short file stops the start, naming it).
  With ``api.tls.client_ca_file``, a client certificate instead: the TLS handshake (in the request's own
  thread, HANDSHAKE_S at most) refuses a client without a certificate that CA signed; the certificate's
  subject CN is the actor and ``api.tls.client_roles`` its role (not there: 403). No token and no client
  CA configured: every caller on loopback is an operator named ``loopback``.
- Refusals: a TLS handshake refused (logged with its reason: no certificate, unknown CA, expired),
  401 (no or unknown token), 403 (a ``read`` role on an action, an unmapped CN), 404 (no such route or
  source), 405, 400 (malformed JSON, unknown or wrong fields), 411/413 (body without length / over
  ``api.max_body_bytes``), 409 (not possible in the source's state, or refused by the CLI command).
  Each is logged with method, path, client and reason, never with the token.
- Answers are JSON; an action answers ``{"source", "did", "operation", "output"}`` and is recorded in
  the stream as an operations record when it did something (cdc/ops/control.py).
"""

from __future__ import annotations

import hmac
import logging
import re
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson

from cdc.errors import CdcError, ConfigError
from cdc.ops import openapi
from cdc.ops.config import ApiConfig
from cdc.ops.errors import Refusal
from cdc.runtime.health import QuietHandler

log = logging.getLogger(__name__)

MIN_TOKEN_CHARS = 16
HANDSHAKE_S = 10.0  # a TLS client has this long to finish its handshake
ROLES = {"read": 0, "operator": 1}


def load_tokens(api: ApiConfig) -> list[tuple[bytes, str, str]]:
    """(token bytes, name, role) of every ``api.tokens`` entry; ConfigError naming the entry when its file is
    missing, unreadable or holds a token shorter than MIN_TOKEN_CHARS."""
    out = []
    for i, t in enumerate(api.tokens):
        key = f"api.tokens[{i}].file"
        try:
            text = Path(t.file).read_text().strip()
        except OSError as exc:
            raise ConfigError(f"cannot read the token of {t.name!r} from {t.file}: {exc.strerror}", key=key) from None
        if len(text) < MIN_TOKEN_CHARS:
            raise ConfigError(f"the token of {t.name!r} in {t.file} has {len(text)} characters; use at least "
                              f"{MIN_TOKEN_CHARS} (e.g. `openssl rand -hex 32 > {t.file}`)", key=key)
        out.append((text.encode(), t.name, t.role))
    return out


def tls_context(api: ApiConfig) -> ssl.SSLContext | None:
    """The server's TLS context of ``api.tls`` (None: plain HTTP); ConfigError naming the key whose file cannot
    be loaded."""
    tls = api.tls
    if tls is None:
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(tls.cert_file, tls.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load the API's certificate {tls.cert_file} with key {tls.key_file}: "
                          f"{getattr(exc, 'strerror', None) or exc}", key="api.tls.cert_file") from None
    if tls.client_ca_file is not None:
        try:
            ctx.load_verify_locations(cafile=tls.client_ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"cannot load the client CA {tls.client_ca_file}: {getattr(exc, 'strerror', None) or exc}",
                              key="api.tls.client_ca_file") from None
        ctx.verify_mode = ssl.CERT_REQUIRED  # no certificate that CA signed: the handshake fails
    return ctx


def subject_cn(cert: dict[str, Any] | None) -> str | None:
    """The subject CN of a peer certificate as ssl.SSLSocket.getpeercert() gives it (None: none)."""
    for rdn in (cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return value
    return None


def _compile(path: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(path)) + "$")


class OpsServer:
    """Serves the operations API of ``daemon`` (cdc.runtime.daemon.Daemon); ``config_path``: the config file
    the CLI commands it runs read (the daemon's own)."""

    def __init__(self, daemon: Any, api: ApiConfig, *, config_path: str | None = None) -> None:
        from cdc.ops.handlers import Handlers

        self.api, self.tokens = api, load_tokens(api)
        self.handlers = Handlers(daemon, config_path)
        self.routes = [(m, _compile(p), op) for m, p, op in openapi.routes()]
        missing = [op["operationId"] for _, _, op in self.routes if not hasattr(self.handlers, op["operationId"])]
        if missing:  # the document and the handlers are one list (tests hold them so)
            raise RuntimeError(f"operations without a handler: {missing}")
        self.tls = tls_context(api)
        try:
            self._server = ThreadingHTTPServer((api.host, api.port), _make_handler(self))
        except OSError as exc:
            raise ConfigError(f"cannot serve the operations API on {api.host}:{api.port}: {exc.strerror}",
                              key="api.port") from None
        if self.tls is not None:  # the handshake runs in the request's thread (Handler.handle), not the listener's
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True,
                                                       do_handshake_on_connect=False)
        self._server.daemon_threads = True
        self.host, self.port = self._server.server_address[0], self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="ops-http", daemon=True)
        self._stopping = threading.Event()
        self._sampler = threading.Thread(target=self._sample, name="ops-lag", daemon=True)

    def start(self) -> OpsServer:
        self._thread.start()
        self._sampler.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._sampler.join(5)

    def _sample(self) -> None:
        """Every SAMPLE_S seconds, each source's lag into the status page's history (cdc/ops/status_page.py)."""
        from cdc.ops.status_page import SAMPLE_S

        while not self._stopping.wait(SAMPLE_S):
            try:
                self.handlers._sample_lag()
            except Exception:
                log.debug("lag sample failed", exc_info=True)

    # -- one request ---------------------------------------------------------------------------------
    def who(self, authorization: str | None, cn: str | None = None) -> tuple[str, str]:
        """(actor name, role) of the request: its client certificate's CN (``cn``, None: no certificate) when
        it has one (Refusal 403 when api.tls.client_roles does not name it), else its bearer token (Refusal
        401 without an accepted one)."""
        if cn is not None:
            role = self.api.tls.client_roles.get(cn) if self.api.tls is not None else None
            if role is None:
                raise Refusal(403, f"the client certificate's CN {cn!r} has no role: add it to api.tls.client_roles")
            return cn, role
        if not self.tokens:
            if self.api.client_certs:
                raise Refusal(401, "no client certificate (api.tls.client_ca_file)")
            return "loopback", "operator"
        if not authorization or not authorization.startswith("Bearer "):
            raise Refusal(401, "no bearer token: send `Authorization: Bearer <token>` (api.tokens)")
        given = authorization[len("Bearer "):].strip().encode()
        found = None
        for token, name, role in self.tokens:  # every token compared, in constant time: no early exit
            if hmac.compare_digest(token, given) and found is None:
                found = (name, role)
        if found is None:
            raise Refusal(401, "the bearer token is not one of api.tokens")
        return found

    def route(self, method: str, path: str) -> tuple[dict[str, Any], dict[str, str]]:
        allowed = []
        for m, pattern, op in self.routes:
            match = pattern.match(path)
            if match:
                if m == method:
                    return op, match.groupdict()
                allowed.append(m)
        if allowed:
            raise Refusal(405, f"{method} is not served on {path}; use {', '.join(allowed)}")
        raise Refusal(404, f"no route {path}; the routes are in {openapi.PREFIX}/openapi.json")


def _make_handler(server: OpsServer) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        server_version = "cdc-ops"

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_PUT(self) -> None:
            self._serve("PUT")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

        peer_cn: str | None = None  # the client certificate's subject CN (api.tls.client_ca_file)

        def handle(self) -> None:
            if server.tls is not None:
                conn = self.connection
                try:
                    conn.settimeout(HANDSHAKE_S)
                    conn.do_handshake()
                    conn.settimeout(None)
                except (ssl.SSLError, OSError) as exc:  # no certificate, one the CA did not sign, not TLS at all
                    why = getattr(exc, "reason", None) or type(exc).__name__
                    log.warning("operations API refused a TLS connection from %s: %s", self.client_address[0], why,
                                extra={"status": 0})
                    self.close_connection = True
                    return
                self.peer_cn = subject_cn(conn.getpeercert()) if server.api.client_certs else None
            super().handle()

        def _serve(self, method: str) -> None:
            path = self.path.split("?", 1)[0]
            try:
                actor, role = server.who(self.headers.get("Authorization"), self.peer_cn)
                op, params = server.route(method, path)
                if ROLES[role] < ROLES[op["x-cdc-role"]]:
                    raise Refusal(403, f"{actor!r} has role {role}; {op['operationId']} needs role "
                                  f"{op['x-cdc-role']}")
                body = self._body(method)
                status, answer, ctype = getattr(server.handlers, op["operationId"])(actor=actor, body=body,
                                                                                      **params)
            except Refusal as exc:
                log.warning("operations API refused %s %s from %s: %d %s", method, path, self.client_address[0],
                            exc.status, exc, extra={"status": exc.status})
                self._send(exc.status, orjson.dumps({"error": str(exc), "fields": exc.fields}),
                           "application/json")
                return
            except Exception as exc:  # an answer, never a dropped connection
                log.exception("operations API: %s %s failed", method, path)
                fields = {k: str(v) for k, v in exc.fields.items()} if isinstance(exc, CdcError) else {}
                self._send(500, orjson.dumps({"error": f"{type(exc).__name__}: {exc}", "fields": fields}),
                           "application/json")
                return
            if ctype == "application/json":
                answer = orjson.dumps(answer, default=str)
            self._send(status, answer, ctype)

        def _body(self, method: str) -> dict[str, Any]:
            if method == "GET":
                return {}
            if self.headers.get("Transfer-Encoding"):
                self.close_connection = True
                raise Refusal(411, "send the body with a Content-Length (no chunked transfer)")
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                self.close_connection = True
                raise Refusal(400, "Content-Length is not a number") from None
            if length > server.api.max_body_bytes:
                self.close_connection = True  # the body is not read
                raise Refusal(413, f"the body has {length} bytes; at most {server.api.max_body_bytes} "
                              "(api.max_body_bytes)")
            raw = self.rfile.read(length) if length else b""
            if not raw.strip():
                return {}
            try:
                body = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise Refusal(400, f"the body is not JSON: {exc}") from None
            if not isinstance(body, dict):
                raise Refusal(400, f"the body is a JSON {type(body).__name__}; send a JSON object")
            return body

    return Handler
