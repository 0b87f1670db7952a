"""cdc.registry SOURCE_COMMANDS and STAND_INS: `cdc source skip` / `cdc snapshot` dispatched to the source
kind's own module, a kind without one refused by name; the simulator reached only through its hook."""

from __future__ import annotations

import importlib
import sys
from types import SimpleNamespace

import pytest
import yaml

from cdc.cli import main as cdc_main
from cdc.errors import ConfigError
from cdc.registry import SOURCE_COMMANDS, STAND_INS, load_stand_ins, source_command


def test_every_source_command_entry_names_a_main():
    for kind, commands in SOURCE_COMMANDS.items():
        for command in commands:
            assert callable(source_command(command, SimpleNamespace(name="s", kind=kind))), (kind, command)


def test_a_kind_without_the_command_is_refused_naming_kind_and_command():
    with pytest.raises(ConfigError) as err:
        source_command("snapshot", SimpleNamespace(name="ora", kind="oracle"), file="cdc.yaml")
    assert "source ora is kind oracle" in str(err.value) and "`cdc snapshot`" in str(err.value)
    assert "kinds that do: mysql" in str(err.value) and err.value.file == "cdc.yaml"
    with pytest.raises(ConfigError, match=r"kind shadow, which does not support `cdc source skip` "
                                          r"\(kinds that do: mysql, oracle\)"):
        source_command("source skip", SimpleNamespace(name="sh", kind="shadow"))


def test_cdc_snapshot_of_an_oracle_source_is_one_clear_error(tmp_path, capsys):
    config = tmp_path / "cdc.yaml"
    config.write_text(yaml.safe_dump({
        "sources": [{"name": "ora", "kind": "oracle", "dsn": "simulator", "tables": ["APP.*"]}],
        "kafka": {"bootstrap_servers": "127.0.0.1:1", "topic_prefix": "t"}}))
    assert cdc_main(["snapshot", "--config", str(config), "--source", "ora", "--table", "APP.T"]) == 2
    err = capsys.readouterr().err
    assert "cdc snapshot: error: source ora is kind oracle, which does not support `cdc snapshot`" in err, err
    assert cdc_main(["snapshot", "status", "--config", str(config), "--source", "ora"]) == 2
    assert "does not support `cdc snapshot status`" in capsys.readouterr().err


def test_cdc_source_skip_of_an_oracle_source_asks_for_the_xid(tmp_path, capsys):
    config = tmp_path / "cdc.yaml"
    config.write_text(yaml.safe_dump({
        "sources": [{"name": "ora", "kind": "oracle", "dsn": "simulator", "tables": ["APP.*"]}],
        "kafka": {"bootstrap_servers": "127.0.0.1:1", "topic_prefix": "t"}}))
    assert cdc_main(["source", "skip", "--config", str(config), "--source", "ora", "--gtid", "0-1-2", "--yes"]) == 2
    assert "is an Oracle source: name the transaction with --xid" in capsys.readouterr().err


def test_a_simulator_dsn_loads_the_simulator_through_its_hook_only():
    from readers.oracle import session

    module = STAND_INS["simulator"]
    old_module, old_hook = sys.modules.pop(module, None), session._STAND_INS.pop("simulator", None)
    try:
        assert session.stand_in("simulator:seed=1") is None  # nothing registered: the product does not import it
        load_stand_ins(SimpleNamespace(dsn="db.example:1521/MINER", standby_dsn=None))
        assert module not in sys.modules
        load_stand_ins(SimpleNamespace(dsn="db.example:1521/MINER", standby_dsn="simulator:seed=1"))
        tool, options = session.stand_in("simulator:seed=1")
        assert options == "seed=1" and tool.first_scn(options) == sys.modules[module].instance(options).workload.base_scn
    finally:  # the simulator module (and its shared instances) other tests imported stays the one in use
        if old_module is not None:
            sys.modules[module] = old_module
            session.register_stand_in("simulator", old_hook)
        else:
            importlib.import_module(module)
