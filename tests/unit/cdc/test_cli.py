"""The `cdc` console script: version, unknown commands, errors as exit status 2."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

from cdc.cli import main


def test_version_names_the_installed_distribution():
    out = subprocess.run([sys.executable, "-m", "cdc.cli", "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert out.stdout.strip() == f"cdc {metadata.version('cdc-service')}"


def test_a_config_error_is_exit_status_2_naming_the_file(tmp_path, capsys):
    missing = tmp_path / "nope.yaml"
    assert main(["compare", "--config", str(missing), "--source", "s", "--target", "t"]) == 2
    assert str(missing) in capsys.readouterr().err
