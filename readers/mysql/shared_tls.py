"""One TLS context per process for MySQL connections made without TLS settings.

PyMySQL builds a new ``SSLContext`` for every connection, loading the system's CA store (~20 ms of CPU). A
source without TLS settings connects with ``ssl={}`` (TLS when the server offers it, not verified), always
the same settings: every such connection of the process shares one context. Connections with TLS settings
get their own, as PyMySQL makes it.
"""

from __future__ import annotations

import threading
from typing import Any

import pymysql

_PREFERRED: Any = None
_LOCK = threading.Lock()


class SharedTlsConnection(pymysql.connections.Connection):
    """``pymysql.connect`` whose context for ``ssl={}`` is the process's one."""

    def _create_ssl_ctx(self, sslp: Any) -> Any:
        global _PREFERRED
        if type(sslp) is not dict or sslp:
            return super()._create_ssl_ctx(sslp)
        with _LOCK:
            if _PREFERRED is None:
                _PREFERRED = super()._create_ssl_ctx({})
            return _PREFERRED
