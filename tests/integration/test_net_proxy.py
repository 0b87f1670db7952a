"""The network-fault proxy itself (tests/fixtures/net_proxy.py), in front of a loopback echo server: bytes flow,
a pause holds them (nothing arrives) and a resume delivers them, a cut resets the client's connection."""

from __future__ import annotations

import socket
import threading

import pytest

from cdc.dev.ports import HOST
from tests.fixtures.net_proxy import TcpProxy


@pytest.fixture
def echo():
    server = socket.create_server((HOST, 0))
    done = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                while chunk := conn.recv(4096):
                    conn.sendall(chunk)
            except ConnectionResetError:  # the proxy's cut() resets this side too
                pass

    def accept() -> None:
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1]
    done.set()
    server.close()


def test_pause_holds_resume_delivers_cut_resets(echo):
    proxy = TcpProxy(echo)
    try:
        client = socket.create_connection((HOST, proxy.port), timeout=10)
        client.sendall(b"one")
        assert client.recv(16) == b"one"

        proxy.pause()
        client.sendall(b"two")
        client.settimeout(0.5)
        with pytest.raises(TimeoutError):  # the path is dark: nothing comes back
            client.recv(16)
        proxy.resume()
        client.settimeout(10)
        assert client.recv(16) == b"two"  # held, not dropped

        assert proxy.cut() == 1
        with pytest.raises(ConnectionResetError):
            client.sendall(b"three")
            client.recv(16)
        client.close()

        again = socket.create_connection((HOST, proxy.port), timeout=10)  # new connections go through
        proxy.slow(0.05)
        again.sendall(b"four")
        assert again.recv(16) == b"four"
        again.close()
        assert proxy.connections == 2 and proxy.resets == 1
    finally:
        proxy.close()
