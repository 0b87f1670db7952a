"""Exactly-once through kill -9 and clean drains: the daemon process around a scripted source."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cdc.stream.envelope import changes_topic
from tests.integration.scripted_source import ScriptedSource
from tests.integration.stream_check import read_stream

pytestmark = pytest.mark.kafka

SCRIPT = Path(__file__).with_name("scripted_source.py")
STEPS = 500


def _spawn(broker, prefix: str, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, str(SCRIPT), "--bootstrap", broker.bootstrap, "--prefix", prefix,
           "--steps", str(STEPS), "--pace-ms", "2", "--big-every", "20", "--big-rows", "5000", *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[2])


def _wait_for_line(proc: subprocess.Popen, prefix: str, timeout: float = 30, stream: str = "stdout",
                   contains: str = "") -> str:
    deadline = time.monotonic() + timeout
    pipe = getattr(proc, stream)
    while time.monotonic() < deadline:
        line = pipe.readline()
        if line.startswith(prefix) and contains in line:
            return line
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"no {prefix!r} line from the daemon; stderr: {proc.stderr.read()[-2000:]}")


def _expected(steps: int = STEPS) -> tuple[list[str], dict[str, int]]:
    script = ScriptedSource(steps, big_every=20, big_rows=5000)
    txs = [f"tx-{k}" for k in range(1, steps + 1) if not script.is_ddl(k)]
    return txs, {f"tx-{k}": script.rows_of(k) for k in range(1, steps + 1)}


def _check_exactly_once(stream, upto: int = STEPS) -> None:
    txs, rows = _expected(upto)
    assert [t for t, _, _ in stream.transactions] == txs
    for txid, records, end in stream.transactions:
        k = int(txid.split("-")[1])
        assert [r["after"]["id"] for r in records] == [k * 100000 + j for j in range(rows[txid])]
        assert end["resume"] == {"step": k}
    ddl_steps = [s["resume"]["step"] for s in stream.schemas if s["ddl"] is not None]
    assert ddl_steps == sorted(set(ddl_steps)), "a DDL was published twice"


def test_kill_9_at_random_moments_then_restart(broker, topic_prefix):
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    # Run 1: killed while stalled inside transaction 7 (after its first rows): must end with ABORTED.
    proc = _spawn(broker, topic_prefix, "--stall-step", "7", "--stall-s", "30")
    _wait_for_line(proc, "STALL")
    time.sleep(0.3)  # let the first rows of tx-7 reach the broker
    proc.kill()
    proc.wait(10)
    kills = 1
    # Runs 2..7: killed at random moments: one during startup/recovery, the others while streaming
    # (inside big transactions or between transactions, wherever the dice fall).
    while kills < 7:
        proc = _spawn(broker, topic_prefix)
        if kills > 1:
            _wait_for_line(proc, "", stream="stderr", contains="recovered")
        try:
            proc.wait(rng.uniform(0.05, 0.8) if kills > 1 else rng.uniform(0.2, 1.2))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        assert proc.returncode in (0, -signal.SIGKILL), proc.stderr.read()[-2000:]
        kills += 1
    # Last run: to completion.
    proc = _spawn(broker, topic_prefix)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-3000:]

    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "scripted"))
    assert "tx-7" in stream.aborted
    print(f"kill test: {len(stream.aborted)} cut-off transactions closed with ABORTED {stream.aborted}, "
          f"{len(stream.transactions)} committed, {stream.records} records")
    _check_exactly_once(stream)


def test_sigterm_drains_to_a_transaction_boundary(broker, topic_prefix):
    proc = _spawn(broker, topic_prefix, "--stall-step", "5", "--stall-s", "1.5")
    _wait_for_line(proc, "STALL")
    proc.send_signal(signal.SIGTERM)  # arrives inside tx-5: it must be finished, then stop
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-3000:]
    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "scripted"))
    assert stream.aborted == []
    assert stream.transactions[-1][0] == "tx-5"
    _check_exactly_once(stream, upto=5)


def test_second_signal_exits_at_once(broker, topic_prefix):
    proc = _spawn(broker, topic_prefix, "--stall-step", "3", "--stall-s", "60")
    _wait_for_line(proc, "STALL")
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.01)  # before the main thread could run a Python handler: the two must not merge
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=10)
    assert proc.returncode == 128 + signal.SIGTERM
    assert time.monotonic() - t0 < 5
    # The next start closes the cut-off transaction and carries on exactly once.
    proc = _spawn(broker, topic_prefix)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-3000:]
    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "scripted"))
    assert stream.aborted == ["tx-3"]
    _check_exactly_once(stream)
