"""The image's HEALTHCHECK: healthy when the process in this container answers ``/healthz``.

One image runs either the capture daemon (``cdc run``: /healthz on ``metrics.port``, 9108)
or the apply job (``cdc apply``: on ``metrics.apply_port``, default port + 1 = 9109). The check
finds which one runs in this container (its command line, in the container's process table) and
probes that role's port only: with the host's network (``--network host``, Kubernetes
``hostNetwork``) the other role's port may belong to a neighbour, which says nothing about this
container. The ports follow the environment the processes read (CDC_METRICS__PORT,
CDC_METRICS__APPLY_PORT) and the apply job's ``--metrics-port``. With neither process found
(the check run outside a container) it probes both ports and passes when one answers 200.
Exit 0 healthy, 1 not (with the reason on stderr, which Docker keeps in the health log).
"""

import os
import sys
import urllib.error
import urllib.request


def role(proc: str = "/proc") -> tuple[str, list[str]] | None:
    """("run" | "apply", the arguments after it) of the ``cdc`` process in this process table, if any."""
    try:
        entries = os.listdir(proc)
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc, entry, "cmdline"), "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        for i, arg in enumerate(argv[:-1]):
            if os.path.basename(arg) == "cdc" and argv[i + 1] in ("run", "apply"):
                return argv[i + 1], argv[i + 2:]
    return None


def ports(env: dict[str, str], found: tuple[str, list[str]] | None = None) -> list[int]:
    daemon = int(env.get("CDC_METRICS__PORT") or 9108)
    apply = int(env.get("CDC_METRICS__APPLY_PORT") or daemon + 1)
    if found is None:
        return [p for p in (daemon, apply) if p > 0]
    name, args = found
    if name == "run":
        return [daemon] if daemon > 0 else []
    for i, arg in enumerate(args):
        if arg == "--metrics-port" and i + 1 < len(args):
            apply = int(args[i + 1])
        elif arg.startswith("--metrics-port="):
            apply = int(arg.split("=", 1)[1])
    return [apply] if apply > 0 else []


def main() -> int:
    problems = []
    # CDC_HEALTHCHECK_PROC: another process table to look in (the tests give a made-up one)
    for port in ports(dict(os.environ), role(os.environ.get("CDC_HEALTHCHECK_PROC") or "/proc")):
        url = f"http://127.0.0.1:{port}/healthz"
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return 0
                problems.append(f"{url}: HTTP {resp.status}")
        except urllib.error.HTTPError as exc:
            problems.append(f"{url}: HTTP {exc.code}")
        except OSError as exc:
            problems.append(f"{url}: {exc}")
    print("unhealthy: " + "; ".join(problems), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
