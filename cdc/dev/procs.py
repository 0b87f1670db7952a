"""Child processes of the embedded services: spawn, die with us, stop in bounded time.

Every server this package starts is registered here and stopped by one
``atexit`` hook, so a test run or `cdc dev up` in the foreground leaks
nothing when it ends normally. When the Python process is killed outright,
``die_with_parent=True`` (Linux ``PR_SET_PDEATHSIG``, set by util-linux's
``setpriv --pdeathsig KILL``, which then executes the server in its place)
makes the kernel send SIGKILL to the server too; without ``setpriv`` on the
PATH only the ``atexit`` hook stops it. Caveat of that mechanism: the signal
fires when the *thread* that spawned the child exits, so we only arm it when
spawning from the main thread.

No Python code runs between fork and exec (no ``preexec_fn``): the parent has
threads (Kafka clients, Spark's gateway), and a child forked while one of them
held a lock (malloc's, the dynamic loader's) hung in that lock before exec,
and the parent with it, waiting for the exec. The new session, user and groups
are set by ``subprocess`` itself.
"""

from __future__ import annotations

import atexit
import shutil
import signal
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

_live: set[object] = set()  # strong refs: a forgotten service is still stopped at exit


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
    argv = list(argv)
    setpriv = shutil.which("setpriv")
    if die_with_parent and threading.current_thread() is threading.main_thread() and setpriv:
        argv = [setpriv, "--pdeathsig", "KILL", "--", *argv]  # after the user switch, which would clear it
    with open(log_path, "ab") as log:
        # start_new_session: its own process group, so a Ctrl-C in the terminal reaches us, not the servers
        return subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            user=uid, group=gid, extra_groups=None if gid is None else [gid], env=env, cwd=cwd, close_fds=True,
        )


def server_argv(proc: subprocess.Popen) -> list[str]:
    """The server's own argv of a child ``spawn`` started (without the ``setpriv`` in front of it)."""
    args = list(proc.args)
    if len(args) > 3 and args[1:4] == ["--pdeathsig", "KILL", "--"]:
        return args[4:]
    return args


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
