"""Instructions per transaction: a bench stage counted by valgrind (cachegrind) instead of timed.

CPU time on a shared virtual machine moves with its neighbours by tens of percent from run to run, and a
same-run ratio only partly cancels that. The number of instructions a stage executes does not move: the
stage runs twice under ``valgrind --tool=cachegrind --cache-sim=no``, over the first ``few`` and over all
``many`` transactions of the same binlog, and the difference divided by ``many - few`` is what one more
transaction costs (start-up, imports and connections cancel out). Every thread of the process counts (the
Kafka client's too); the servers' do not. Instructions are not time (a cache miss costs more than an add),
so the figure compares one build of a stage with another, not one stage with another's seconds.

The child valgrind runs is ``python -m cdc.bench.mysql --stage STAGE ADDRESS START END [BOOTSTRAP]`` (the stage of
cdc.bench.mysql: ``reader``, MySqlSource alone; ``pipeline``, with the Publisher to BOOTSTRAP; from GTID state
START until END).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

from cdc.errors import CdcError

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def valgrind() -> str:
    """The valgrind command, or a CdcError saying how to get it."""
    path = shutil.which("valgrind")
    if path is None:
        raise CdcError("--instructions counts instructions with valgrind, which is not installed: "
                       "apt-get install valgrind (make setup installs it)")
    return path


def count(stage: str, address: str, start: str, end: str, bootstrap: str | None, timeout: float = 1800) -> int:
    """Instructions the child executes for ``stage`` from ``start`` to ``end`` (its whole process)."""
    argv = [valgrind(), "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
            sys.executable, "-m", "cdc.bench.mysql", "--stage", stage, address, start, end] + \
        ([bootstrap] if bootstrap else [])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    m = _REFS.search(done.stderr)
    if done.returncode != 0 or m is None:
        raise CdcError(f"valgrind run of the {stage} stage failed (exit {done.returncode}): "
                       f"{done.stderr.strip()[-1500:]}")
    return int(m.group(1).replace(",", ""))


def per_transaction(stage: str, address: str, start: str, end: str, bootstrap: str | None) -> float:
    """Instructions one more transaction costs in ``stage`` (MariaDB GTIDs of one domain and server, as the
    bench's own server writes them): the run over all transactions less the run over the first third."""
    d, s, first = _one_gtid(start)
    d2, s2, last = _one_gtid(end)
    if (d, s) != (d2, s2) or last - first < 3:
        raise CdcError(f"--instructions needs one MariaDB domain and server and 3 transactions or more: {start}..{end}")
    few = first + (last - first) // 3
    a = count(stage, address, start, f"{d}-{s}-{few}", bootstrap)
    b = count(stage, address, start, end, bootstrap)
    return (b - a) / (last - few)


def _one_gtid(text: str) -> tuple[int, int, int]:
    parts = text.split("-")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise CdcError(f"--instructions needs a MariaDB GTID state of one domain, not {text!r}")
    return int(parts[0]), int(parts[1]), int(parts[2])
