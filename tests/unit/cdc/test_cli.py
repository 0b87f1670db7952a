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


def _config_actions(parser):
    """Every ``--config`` option of ``parser`` and of its sub-commands, as (prog, action)."""
    import argparse

    for action in parser._actions:
        if "--config" in action.option_strings:
            yield parser.prog, action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _config_actions(sub)


def test_every_command_describes_config_one_way_with_a_default(monkeypatch):
    from cdc.cli import build_parser
    from cdc.config.options import CONFIG_HELP
    from cdc.registry import COMMANDS

    monkeypatch.delenv("CDC_CONFIG", raising=False)
    found = {}
    for name in COMMANDS:
        parser = build_parser([name])
        sub = next(a for a in parser._actions if a.dest == "command").choices[name]
        found.update({prog: action for prog, action in _config_actions(sub)})
    assert {"cdc run", "cdc apply", "cdc check", "cdc tail", "cdc compare"} <= set(found), sorted(found)
    for prog, action in found.items():
        assert (action.help, action.required, action.default) == (CONFIG_HELP, False, "cdc.yaml"), prog


def test_config_defaults_to_cdc_config_then_cdc_yaml(tmp_path, monkeypatch, capsys):
    from cdc.config.options import default_config

    assert default_config({}) == "cdc.yaml" and default_config({"CDC_CONFIG": ""}) == "cdc.yaml"
    assert default_config({"CDC_CONFIG": "/etc/cdc/prod.yaml"}) == "/etc/cdc/prod.yaml"
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CDC_CONFIG", raising=False)
    assert main(["check"]) == 2  # no ./cdc.yaml: one error naming both ways to give the file
    err = capsys.readouterr().err
    assert "cdc.yaml does not exist" in err and "--config FILE" in err and "CDC_CONFIG" in err
    (tmp_path / "cdc.yaml").write_text("bogus_key: 1\n")
    assert main(["check"]) == 2  # ./cdc.yaml is read: its error names it
    assert "key 'bogus_key' in cdc.yaml" in capsys.readouterr().err
    other = tmp_path / "other.yaml"
    other.write_text("other_key: 1\n")
    monkeypatch.setenv("CDC_CONFIG", str(other))
    assert main(["check"]) == 2  # $CDC_CONFIG wins over ./cdc.yaml
    assert f"key 'other_key' in {other}" in capsys.readouterr().err
