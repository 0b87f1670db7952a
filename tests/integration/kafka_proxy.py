"""A tansu broker reached through a TCP proxy that can swallow Fetch responses.

The fault it injects: the broker answers metadata and offset requests (the
partition's watermarks say records exist) but no record is delivered, as
with a broker whose storage lost the log or a network path that drops the
large responses. The proxy reads Kafka request frames (size, api key,
version, correlation id) and, while ``block_fetch`` is set, drops the
responses to Fetch requests (api key 1); everything else passes. The broker
advertises the proxy's address, so every client connection goes through it,
and the proxy's network faults (pause, slow, cut: tests/fixtures/net_proxy.py)
reach every client of the broker. Loopback only.
"""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Iterator

from cdc.dev import procs
from cdc.dev.broker import Broker, tansu_bin
from cdc.dev.ports import HOST, wait_until
from tests.fixtures.net_proxy import TcpProxy, frames

FETCH = 1


class FetchBlackhole(TcpProxy):
    """A TcpProxy (tests/fixtures/net_proxy.py: pause, slow, cut) that also reads Kafka frames and, while
    ``block_fetch`` is set, drops the responses to Fetch requests."""

    def __init__(self, upstream_port: int) -> None:
        self.block_fetch = threading.Event()
        self.dropped = 0
        super().__init__(upstream_port)

    def forward(self, chunks: Iterator[bytes], direction: str, state: dict) -> Iterator[bytes]:
        fetches: set[int] = state.setdefault("fetches", set())
        for frame in frames(chunks):
            if direction == "request":
                api_key, _version, corr = struct.unpack(">hhi", frame[4:12])
                if api_key == FETCH and self.block_fetch.is_set():
                    fetches.add(corr)
            else:
                corr = struct.unpack(">i", frame[4:8])[0]
                if corr in fetches:
                    fetches.discard(corr)
                    self.dropped += 1
                    continue
            yield frame


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
