"""Logging setup for the daemon: plain text or one JSON object per line.

Records may carry ``source``, ``position`` and ``txid`` (pass them with
``extra={...}``). A record logged from a source's worker thread (named
``source:<name>``) gets ``source`` filled in automatically, so reader code
need not repeat it. ``position`` and ``txid``, when not passed, come from the
source's state provider (:func:`bind_source_state`: the daemon binds each
source's publisher, giving the last acknowledged resume position and the
transaction being published), so every line that concerns a source says
where that source stands. The provider is asked only when a line is logged.

JSON lines look like::

    {"ts": "2026-01-01T00:00:00.123Z", "level": "INFO", "logger": "cdc.publish.publisher",
     "msg": "recovered ...", "source": "shop", "position": {...}, "txid": null}
"""

from __future__ import annotations

import logging
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import IO, Any

import orjson

FIELDS = ("source", "position", "txid")
THREAD_PREFIX = "source:"


StateProvider = Callable[[], "tuple[Any, str | None]"]
_providers: dict[str, StateProvider] = {}


def bind_source_state(source: str, provider: StateProvider) -> None:
    """``provider() -> (position, txid)`` fills those fields on lines about ``source`` that lack them."""
    _providers[source] = provider


def unbind_source_state(source: str) -> None:
    _providers.pop(source, None)


class _SourceFields(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "source", None) is None:
            name = record.threadName or ""
            record.source = name[len(THREAD_PREFIX):] if name.startswith(THREAD_PREFIX) else None
        provider = _providers.get(record.source) if record.source is not None else None
        if provider is not None and (getattr(record, "position", None) is None or not hasattr(record, "txid")):
            try:
                position, txid = provider()
            except Exception:  # noqa: BLE001 - a log line must never fail for its context
                position, txid = None, None
            if getattr(record, "position", None) is None:
                record.position = position
            if not hasattr(record, "txid"):
                record.txid = txid
        for f in FIELDS[1:]:
            if not hasattr(record, f):
                setattr(record, f, None)
        return True


class _ErrorOnce(logging.Filter):
    """Each error's text is printed once. An ERROR line that quotes an exception passed as an argument of
    an earlier ERROR line (the failing source's line, then `cdc run`'s closing summary) names it by its
    class instead of repeating the text. Only the last few errors are remembered."""

    MIN_TEXT = 20  # shorter texts ("timeout") may be quoted for other reasons

    def __init__(self) -> None:
        super().__init__()
        self.seen: deque[tuple[str, str]] = deque(maxlen=16)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            return True
        args = record.args if isinstance(record.args, tuple) else ()
        errors = [(str(a), type(a).__name__) for a in args if isinstance(a, BaseException) and len(str(a)) >= self.MIN_TEXT]
        if self.seen and not errors:
            msg = record.getMessage()
            quoted = [(text, name) for text, name in self.seen if text in msg]
            for text, name in quoted:
                msg = msg.replace(f"{name}: {text}", text).replace(text, f"{name} (the error logged above)")
            if quoted:
                record.msg, record.args = msg, ()
        self.seen.extend(errors)
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"
        doc: dict[str, Any] = {"ts": ts, "level": record.levelname, "logger": record.name,
                               "msg": record.getMessage()}
        for f in FIELDS:
            doc[f] = getattr(record, f, None)
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(doc, default=str).decode()


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s%(where)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        parts = [str(record.source)] if getattr(record, "source", None) else []
        if getattr(record, "txid", None):
            parts.append(f"tx {record.txid}")
        record.where = f" [{' '.join(parts)}]" if parts else ""
        return super().format(record)


def setup_logging(level: str = "INFO", json_lines: bool = False, stream: IO[str] | None = None) -> None:
    """Configure the root logger once (replaces handlers a previous call installed)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    handler.addFilter(_SourceFields())
    handler.addFilter(_ErrorOnce())
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_cdc", False):
            root.removeHandler(h)
    handler._cdc = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("kafka").setLevel(logging.WARNING)
