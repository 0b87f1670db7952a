"""Free loopback ports and bounded waits for the embedded services.

``free_port()`` asks the kernel for an unused 127.0.0.1 port. Between closing
the probe socket and the server binding it another process may take the port
(several engineers and test runs share one machine), so callers that chose the
port themselves retry ``start()`` on a fresh port when the bind fails; the
services in this package do that.

To make collisions between concurrent processes unlikely we also remember
the ports handed out in this process and never hand one out twice.
"""

from __future__ import annotations

import socket
import time
from typing import Callable, TypeVar

HOST = "127.0.0.1"

_handed_out: set[int] = set()

T = TypeVar("T")


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on right now."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise RuntimeError("could not find a free loopback port in 50 attempts")


def port_open(port: int, host: str = HOST, timeout: float = 0.5) -> bool:
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_until(
    probe: Callable[[], T],
    timeout: float,
    what: str,
    interval: float = 0.1,
    alive: Callable[[], str | None] | None = None,
) -> T:
    """Call ``probe`` until it returns a truthy value or ``timeout`` seconds pass.

    Exceptions from ``probe`` count as "not yet". ``alive`` (optional) returns
    a reason string when the thing we wait for has died, which ends the wait
    early. Raises ``TimeoutError`` naming ``what`` and the last exception.
    """
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            result = probe()
            if result:
                return result
        except Exception as exc:  # noqa: BLE001 - "not ready yet" comes in many types
            last = exc
        if alive is not None:
            reason = alive()
            if reason:
                raise RuntimeError(f"{what}: {reason}")
        if time.monotonic() >= deadline:
            detail = f" (last error: {last!r})" if last else ""
            raise TimeoutError(f"{what}: not ready after {timeout:.0f}s{detail}")
        time.sleep(interval)
