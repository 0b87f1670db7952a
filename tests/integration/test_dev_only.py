"""`cdc dev up --only broker` starts the broker alone: status lists it answering, down stops it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from cdc.dev.stack import pid_alive


def _cdc(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cdc.cli", *argv], capture_output=True, text=True,
                          timeout=timeout, env=os.environ.copy(), check=False)


def test_dev_up_only_broker(tmp_path):
    state, services = tmp_path / "dev", {}
    try:
        up = _cdc("dev", "--dir", str(state), "up", "--only", "broker", "--detach")
        assert up.returncode == 0, up.stdout + up.stderr
        assert "broker (tansu)" in up.stdout and "MariaDB" not in up.stdout and "PostgreSQL" not in up.stdout
        services = json.loads((state / "state.json").read_text())["services"]
        assert list(services) == ["broker"]
        assert not (state / "cdc.yaml").exists()
        status = _cdc("dev", "--dir", str(state), "status", timeout=60)
        assert status.returncode == 0 and "broker" in status.stdout and " up" in status.stdout, status.stdout
    finally:
        down = _cdc("dev", "--dir", str(state), "down", timeout=90)
    assert down.returncode == 0 and "broker" in down.stdout and "stopped" in down.stdout, down.stdout
    assert services and not pid_alive(services["broker"]["pid"], services["broker"]["argv0"])
