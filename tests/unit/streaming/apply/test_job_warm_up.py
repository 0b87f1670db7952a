"""The apply job starts its Python workers (the warm-up job) while its streams start: the streams do not wait
for it, and a warm-up that fails stops the streams already started and is raised."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from cdc.config.models import ApplyConfig
from streaming.apply import job
from streaming.stream import datasource


class _Stream:
    def __init__(self, log: list) -> None:
        self.log = log
        self.failure, self.stop = None, None
        self.query = SimpleNamespace(stop=lambda: log.append("query stopped"), isActive=True)
        self.engine = SimpleNamespace(close=lambda: log.append("engine closed"))


def _config():
    return SimpleNamespace(apply=[ApplyConfig(source="src", target="t")])


def test_the_streams_start_while_the_workers_warm_up(monkeypatch):
    log: list = []
    warming, streaming = threading.Event(), threading.Event()

    def warm_up(*_a, **_k):
        warming.set()
        assert streaming.wait(10), "the stream waited for the warm-up"
        log.append("warm")

    def start_stream(*_a, **_k):
        assert warming.wait(10)
        streaming.set()
        log.append("stream")
        return _Stream(log)

    monkeypatch.setattr(datasource, "warm_up", warm_up)
    monkeypatch.setattr(job, "start_stream", start_stream)
    monkeypatch.setattr(job, "_cores", lambda _s: 2)
    stop = threading.Event()
    stop.set()  # return as soon as the streams are up
    assert job.run(_config(), spark=object(), stop_event=stop) == 0
    assert log[:2] == ["stream", "warm"] and log[-2:] == ["query stopped", "engine closed"]


def test_a_failed_warm_up_stops_the_started_streams_and_is_raised(monkeypatch):
    log: list = []

    def warm_up(*_a, **_k):
        raise RuntimeError("Python worker failed to connect back")

    monkeypatch.setattr(datasource, "warm_up", warm_up)
    monkeypatch.setattr(job, "start_stream", lambda *_a, **_k: _Stream(log))
    monkeypatch.setattr(job, "_cores", lambda _s: 2)
    with pytest.raises(RuntimeError, match="Python worker failed"):
        job.run(_config(), spark=object())
    assert log == ["query stopped", "engine closed"]
