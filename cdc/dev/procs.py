"""Child processes of the embedded services: spawn, die with us, stop in bounded time.

Every server this package starts is registered here and stopped by one
``atexit`` hook, so a test run or `cdc dev up` in the foreground leaks
nothing when it ends normally. When the Python process is killed outright,
``die_with_parent=True`` (Linux ``PR_SET_PDEATHSIG``) makes the kernel send
SIGKILL to the server too. Caveat of that mechanism: the signal fires when
the *thread* that spawned the child exits, so we only arm it when spawning
from the main thread.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Callable, Sequence

_PR_SET_PDEATHSIG = 1
_live: set[object] = set()  # strong refs: a forgotten service is still stopped at exit


def _child_setup(uid: int | None, gid: int | None, pdeathsig: bool) -> Callable[[], None]:
    def setup() -> None:
        os.setpgrp()  # own process group: a Ctrl-C in the terminal reaches us, not the servers
        if gid is not None:
            os.setgroups([gid])
            os.setgid(gid)
        if uid is not None:
            os.setuid(uid)
        if pdeathsig:  # after setuid: a credential change clears the death signal
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    return setup


def spawn(
    argv: Sequence[str],
    log_path: Path,
    *,
    die_with_parent: bool = True,
    run_as: str | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen:
    """Start ``argv`` with stdout+stderr appended to ``log_path``.

    ``run_as`` names an OS user to switch to (PostgreSQL refuses to run as root).
    """
    uid = gid = None
    if run_as is not None:
        import pwd

        entry = pwd.getpwnam(run_as)
        uid, gid = entry.pw_uid, entry.pw_gid
    pdeathsig = die_with_parent and threading.current_thread() is threading.main_thread()
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            list(argv), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            preexec_fn=_child_setup(uid, gid, pdeathsig), env=env, cwd=cwd, close_fds=True,
        )


def terminate(proc: subprocess.Popen | None, timeout: float = 30.0, sig: int = signal.SIGTERM) -> None:
    """Send ``sig``, wait up to ``timeout`` seconds, then SIGKILL. Safe to call twice."""
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.send_signal(sig)
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass


def register(service: object) -> None:
    """Remember a started service; the atexit hook calls its ``stop()``."""
    _live.add(service)


def unregister(service: object) -> None:
    _live.discard(service)


def exit_reason(proc: subprocess.Popen | None, name: str) -> str | None:
    """Why a server process is gone ("NAME exited with code N"), or None while it runs."""
    if proc is not None and proc.poll() is not None:
        return f"{name} exited with code {proc.returncode}"
    return None


def read_from(path: Path, offset: int) -> str:
    """A log file's text from byte ``offset`` on ("" if it cannot be read)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def tail(path: Path, lines: int = 30) -> str:
    """Last ``lines`` lines of a log file, or a note that there is none."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


@atexit.register
def _stop_all() -> None:
    for service in list(_live):
        try:
            service.stop()  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass
