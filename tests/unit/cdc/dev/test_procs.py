"""cdc.dev.procs.spawn: the child gets its own session and the parent-death signal with no Python code run
between fork and exec."""

from __future__ import annotations

import sys

from cdc.dev import procs

# prints the process's parent-death signal (prctl PR_GET_PDEATHSIG) and its process group
_REPORT = ("import ctypes, os; v = ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(v), 0, 0, 0); "
           "print(v.value, os.getpgrp() == os.getpid(), os.getsid(0) == os.getpid())")


def test_a_spawned_server_dies_with_us_in_its_own_session(tmp_path):
    log = tmp_path / "child.log"
    proc = procs.spawn([sys.executable, "-c", _REPORT], log)
    assert proc.wait(30) == 0
    assert log.read_text().split() == ["9", "True", "True"]  # SIGKILL on our death; own group and session
    assert procs.server_argv(proc) == [sys.executable, "-c", _REPORT]


def test_without_die_with_parent_nothing_is_in_front_of_the_server(tmp_path):
    log = tmp_path / "child.log"
    proc = procs.spawn([sys.executable, "-c", _REPORT], log, die_with_parent=False)
    assert proc.wait(30) == 0
    assert log.read_text().split() == ["0", "True", "True"]
    assert proc.args == procs.server_argv(proc) == [sys.executable, "-c", _REPORT]

