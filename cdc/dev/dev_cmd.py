"""`cdc dev up|down|status|demo`: the embedded services for development and the demo.

``up``      start MariaDB primary + replica, the broker and PostgreSQL under
            ``--dir`` (default .cdc-dev), print their addresses, write
            ``<dir>/cdc.yaml`` and ``<dir>/state.json``; stay in the foreground
            until Ctrl-C (then stop them), or ``--detach`` to leave them running.
``down``    stop the services a detached ``up`` left running (pids from state.json,
            checked against their executable so a recycled pid is never signalled).
``status``  show each service, its pid and whether its port answers.
``demo``    the narrated end-to-end demo (cdc.dev.demo); ``--oracle`` for the
            Oracle path (LogMiner simulator).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import tempfile
import time
from pathlib import Path

from cdc.dev.ports import port_open
from cdc.dev.stack import CONFIG_FILE, SERVICES, STATE_FILE, DevStack, pid_alive, read_state


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", type=Path, default=Path(".cdc-dev"), help="state directory (default .cdc-dev)")
    sub = parser.add_subparsers(dest="dev_command", metavar="up|down|status|demo", required=True)
    up = sub.add_parser("up", help="start the embedded services")
    up.add_argument("--detach", action="store_true", help="leave them running and return")
    up.add_argument("--no-replica", action="store_true", help="no MariaDB replica")
    up.add_argument("--only", action="append", choices=SERVICES, metavar="SERVICE",
                    help=f"start only this service (one of {', '.join(SERVICES)}; repeat for several); "
                         "no cdc.yaml is written then")
    sub.add_parser("down", help="stop services left running by `up --detach`")
    sub.add_parser("status", help="show the services and whether they answer")
    demo = sub.add_parser("demo", help="run the end-to-end demo")
    demo.add_argument("--oracle", action="store_true", help="the Oracle path (LogMiner simulator)")
    demo.add_argument("--seconds", type=float, default=8.0, help="how long the write workload runs")


def main(args: argparse.Namespace) -> int:
    return {"up": _up, "down": _down, "status": _status, "demo": _demo}[args.dev_command](args)


def _up(args: argparse.Namespace) -> int:
    state = read_state(args.dir)
    if state and _any_alive(state):
        print(f"services from {args.dir / STATE_FILE} are still running; `cdc dev down` first")
        return 1
    if not args.detach:  # Ctrl-C / SIGTERM stop the services, even during startup
        signal.signal(signal.SIGINT, _interrupt)
        signal.signal(signal.SIGTERM, _interrupt)
    print(f"starting embedded services in {args.dir.resolve()}")
    stack = DevStack(args.dir, detached=args.detach, with_replica=not args.no_replica, only=args.only)
    (args.dir / CONFIG_FILE).unlink(missing_ok=True)  # a cdc.yaml of an earlier full stack names dead ports
    stack.start()
    cfg = args.dir / CONFIG_FILE
    if stack.full:
        print(f"\nconfig: {cfg.resolve()}\n" + "-" * 60 + "\n" + cfg.read_text() + "-" * 60)
        print(f"try:  cdc run --config {cfg}")
    if args.detach:
        stack.detach()
        print("detached: `cdc dev status` to check, `cdc dev down` to stop")
        return 0
    print("running in the foreground; Ctrl-C stops everything")
    try:
        while all(svc.running for svc in stack.services.values()):
            time.sleep(1)
        dead = [name for name, svc in stack.services.items() if not svc.running]
        print(f"service(s) exited: {', '.join(dead)}; stopping the rest")
        return 1
    except KeyboardInterrupt:
        print("\nstopping")
        return 0
    finally:
        stack.stop()
        (args.dir / STATE_FILE).unlink(missing_ok=True)


def _interrupt(signum, frame):  # also when started in the background, where SIGINT is ignored
    raise KeyboardInterrupt


def _down(args: argparse.Namespace) -> int:
    state = read_state(args.dir)
    if not state:
        print(f"nothing to stop: no {args.dir / STATE_FILE}")
        return 0
    for name, svc in reversed(list(state["services"].items())):
        pid, argv0 = svc.get("pid"), svc.get("argv0")
        if not pid_alive(pid, argv0):
            print(f"  {name:16} not running")
            continue
        sig = signal.SIGINT if svc.get("stop_signal") == "SIGINT" else signal.SIGTERM
        import os

        os.kill(pid, sig)
        deadline = time.monotonic() + 30
        while pid_alive(pid, argv0) and time.monotonic() < deadline:
            time.sleep(0.2)
        if pid_alive(pid, argv0):
            os.kill(pid, signal.SIGKILL)
            print(f"  {name:16} killed (did not stop in 30s)")
        else:
            print(f"  {name:16} stopped")
    pg_dir = state["services"].get("postgres", {}).get("dir", "")
    if pg_dir.startswith(tempfile.gettempdir() + "/cdc-pg-"):  # postgres could not use the state dir
        shutil.rmtree(pg_dir, ignore_errors=True)
    (args.dir / STATE_FILE).unlink(missing_ok=True)
    return 0


def _status(args: argparse.Namespace) -> int:
    state = read_state(args.dir)
    if not state:
        print(f"no services: no {args.dir / STATE_FILE} (`cdc dev up`)")
        return 1
    healthy = True
    for name, svc in state["services"].items():
        alive = pid_alive(svc.get("pid"), svc.get("argv0"))
        port = int(svc["address"].rpartition(":")[2])
        answers = alive and port_open(port)
        healthy &= answers
        print(f"  {name:16} {svc['address']:22} pid {svc.get('pid')!s:8} "
              f"{'up' if answers else ('running, port closed' if alive else 'DOWN')}")
    if (args.dir / CONFIG_FILE).exists():
        print(f"  config: {args.dir / CONFIG_FILE}")
    return 0 if healthy else 1


def _demo(args: argparse.Namespace) -> int:
    if args.oracle:
        from cdc.dev.demo import available

        if not available("readers.oracle.sim.demo"):
            print("the Oracle demo (readers.oracle.sim.demo) is not installed yet")
            return 1
        from readers.oracle.sim import demo as oracle_demo  # owned by the Oracle reader

        return int(oracle_demo.run_demo(args.dir) or 0)
    from cdc.dev.demo import run_demo

    return run_demo(args.dir, seconds=args.seconds)


def _any_alive(state: dict) -> bool:
    return any(pid_alive(s.get("pid"), s.get("argv0")) for s in state["services"].values())
