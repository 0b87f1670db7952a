"""The workloads of `cdc bench oltp` and `cdc bench mysql --mix`: the firenibble shares, every operation one row
of a live key, and the process-tree CPU reading."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from cdc.bench import mysql, oltp


def test_firenibble_is_20_60_20_over_every_table_and_only_live_keys():
    ops = list(oltp.firenibble(20_000, 10, 50, random.Random(1)))
    kinds = Counter(sql.split()[0] for _, sql, _ in ops)
    assert len(ops) == 20_000 and {t for t, _, _ in ops} == set(range(10))
    assert abs(kinds["INSERT"] / 20_000 - 0.2) < 0.02 and abs(kinds["UPDATE"] / 20_000 - 0.6) < 0.02
    assert abs(kinds["DELETE"] / 20_000 - 0.2) < 0.02
    live = {t: set(range(1, 51)) for t in range(10)}
    for t, sql, args in ops:  # replayed: an insert is a new key, an update or delete a live one
        key = args[0] if sql.startswith("INSERT") else args[-1]
        if sql.startswith("INSERT"):
            assert key not in live[t]
            live[t].add(key)
        else:
            assert key in live[t], (t, sql, key)
            if sql.startswith("DELETE"):
                live[t].remove(key)


def test_a_loader_connection_writes_only_its_own_tables():
    ops = list(oltp.firenibble(2_000, 10, 50, random.Random(2), only=[1, 5, 9]))
    assert {t for t, _, _ in ops} == {1, 5, 9} and all(f"bench.t{t} " in sql for t, sql, _ in ops)


def test_mix_statements_change_rows_rows_in_transactions_of_batch():
    seed, stmts = mysql.mix_statements(1003, 5, tables=4, seed_blocks=3)
    assert len(seed) == 4 and sum(n for _, n in stmts) == 1003 and stmts[-1][1] == 3
    kinds = Counter(q.split()[0] for q, _ in stmts)
    assert kinds["UPDATE"] == 3 * kinds["DELETE"] and abs(kinds["INSERT"] - kinds["DELETE"]) <= 4


def test_tree_cpu_counts_this_process():
    before = oltp.tree_cpu_s(os.getpid())
    sum(i * i for i in range(3_000_000))
    assert oltp.tree_cpu_s(os.getpid()) > before


def test_apply_parts_split_the_tree_by_command_line():
    # a driver of its own (the test worker may hold a Spark JVM of an earlier test) and its executor worker
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\ntime.sleep(60)"
    driver = ("import os, subprocess, sys, time\nt = time.process_time()\nwhile time.process_time() - t < 0.1: pass\n"
              "subprocess.Popen([sys.executable, '-c', os.environ['BURN'], os.environ['PART']]).wait()")
    env = {**os.environ, "BURN": burn, "PART": "pyspark.daemon"}  # not in the driver's own command line
    apply = subprocess.Popen([sys.executable, "-c", driver], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while (parts := oltp.apply_cpu_parts(apply.pid))["executors"] < 0.3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert parts["executors"] >= 0.3, parts
        assert parts["driver"] > 0 and parts["jvm"] == 0 and parts["boundary_scan"] == 0, parts
        procs = oltp._processes()  # one reading: the parts add up to the whole tree
        assert sum(oltp.apply_cpu_parts(apply.pid, procs).values()) == pytest.approx(oltp.tree_cpu_s(apply.pid, procs))
    finally:
        os.killpg(apply.pid, signal.SIGKILL)
        apply.wait(10)
