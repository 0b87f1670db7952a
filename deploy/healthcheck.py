"""The image's HEALTHCHECK: healthy when the process in this container answers ``/healthz``.

One image runs either the capture daemon (``cdc run``: /healthz on ``metrics.port``, 9108)
or the apply job (``cdc apply``: on ``metrics.apply_port``, default port + 1 = 9109), so the
check probes both ports and passes when one of them answers 200. Only one of the two
processes runs in a container, so the other port is simply closed. The ports follow the
environment the processes read (CDC_METRICS__PORT, CDC_METRICS__APPLY_PORT); ``--metrics-port``
on the command line is not visible here: give the same port in CDC_METRICS__APPLY_PORT.
Exit 0 healthy, 1 not (with the reason on stderr, which Docker keeps in the health log).
"""

import os
import sys
import urllib.error
import urllib.request


def ports(env: dict[str, str]) -> list[int]:
    daemon = int(env.get("CDC_METRICS__PORT") or 9108)
    apply = int(env.get("CDC_METRICS__APPLY_PORT") or daemon + 1)
    return [p for p in (daemon, apply) if p > 0]


def main() -> int:
    problems = []
    for port in ports(dict(os.environ)):
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
