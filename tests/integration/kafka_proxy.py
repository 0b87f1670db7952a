"""A tansu broker reached through a TCP proxy that can swallow Fetch responses.

The fault it injects: the broker answers metadata and offset requests (the
partition's watermarks say records exist) but no record is delivered, as
with a broker whose storage lost the log or a network path that drops the
large responses. The proxy reads Kafka request frames (size, api key,
version, correlation id) and, while ``block_fetch`` is set, drops the
responses to Fetch requests (api key 1); everything else passes. The broker
advertises the proxy's address, so every client connection goes through it.
Loopback only.
"""

from __future__ import annotations

import os
import socket
import struct
import threading

from cdc.dev import procs
from cdc.dev.broker import Broker, tansu_bin
from cdc.dev.ports import HOST, wait_until

FETCH = 1


class FetchBlackhole:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.block_fetch = threading.Event()
        self.dropped = 0
        self._listener = socket.create_server((HOST, 0))
        self.port = self._listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, name="kafka-proxy", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection((HOST, self.upstream_port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            fetches: set[int] = set()
            threading.Thread(target=self._requests, args=(client, upstream, fetches), daemon=True).start()
            threading.Thread(target=self._responses, args=(upstream, client, fetches), daemon=True).start()

    @staticmethod
    def _frames(sock: socket.socket):
        buf = b""
        while True:
            while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
                chunk = sock.recv(65536)
                if not chunk:
                    return
                buf += chunk
            size = struct.unpack(">i", buf[:4])[0]
            yield buf[:4 + size]
            buf = buf[4 + size:]

    def _requests(self, client: socket.socket, upstream: socket.socket, fetches: set[int]) -> None:
        try:
            for frame in self._frames(client):
                api_key, _version, corr = struct.unpack(">hhi", frame[4:12])
                if api_key == FETCH and self.block_fetch.is_set():
                    fetches.add(corr)
                upstream.sendall(frame)
        except OSError:
            pass
        finally:
            _close(client, upstream)

    def _responses(self, upstream: socket.socket, client: socket.socket, fetches: set[int]) -> None:
        try:
            for frame in self._frames(upstream):
                corr = struct.unpack(">i", frame[4:8])[0]
                if corr in fetches:
                    fetches.discard(corr)
                    self.dropped += 1
                    continue
                client.sendall(frame)
        except OSError:
            pass
        finally:
            _close(client, upstream)

    def close(self) -> None:
        self._closed = True
        self._listener.close()


def _close(*socks: socket.socket) -> None:
    for s in socks:
        try:
            s.close()
        except OSError:
            pass


class ProxiedBroker(Broker):
    """A memory-storage tansu whose advertised address is a FetchBlackhole in front of it."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.proxy = FetchBlackhole(self.port)

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.proxy.port}"

    def start(self, timeout: float = 30) -> ProxiedBroker:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        argv = [tansu_bin(), "broker", "--listener-url", f"tcp://{HOST}:{self.port}",
                "--advertised-listener-url", f"tcp://{HOST}:{self.proxy.port}", "--storage-engine", self.storage]
        self.proc = procs.spawn(argv, self.log_path, env=dict(os.environ, RUST_LOG="warn", **self.env))
        procs.register(self)
        wait_until(self._metadata_ok, timeout, f"tansu behind the proxy {self.bootstrap}", interval=0.2,
                   alive=self._exit_reason)
        return self

    def stop(self, timeout: float = 10) -> None:
        super().stop(timeout)
        self.proxy.close()
