"""`cdc schema accept|skip|evolve|list` on a DuckDB target file: a decision is recorded for a sequence the
target has not reached, refused for one it has passed, and listed."""

from __future__ import annotations

import pytest
import yaml

from cdc.cli import main as cdc_main
from cdc.config.models import TargetConfig
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.targets.progress_row import Progress


def test_decisions_are_recorded_refused_when_passed_and_listed(tmp_path, capsys):
    db = str(tmp_path / "t.duckdb")
    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(yaml.safe_dump({"kafka": {"bootstrap_servers": "127.0.0.1:1"},
                                   "targets": [{"name": "duck", "kind": "duckdb", "path": db}],
                                   "apply": [{"source": "src", "target": "duck"}]}))
    t = DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=db)).open()
    t.write_progress(Progress("src", 41, 3, {}, None))
    t.commit()
    t.close()
    args = ["schema", "skip", "--config", str(cfg), "--source", "src", "--target", "duck", "--table", "shop.t"]
    assert cdc_main([*args, "--sequence", "42"]) == 0
    assert "recorded: skip the schema change of shop.t at sequence 42" in capsys.readouterr().out
    assert cdc_main([*args, "--sequence", "41"]) == 2  # already applied: the decision would never be read
    assert "already at sequence 41, past 41" in capsys.readouterr().err
    assert cdc_main(["schema", "list", "--config", str(cfg), "--source", "src", "--target", "duck"]) == 0
    assert capsys.readouterr().out.startswith("sequence 42  shop.t  skip")
    with pytest.raises(SystemExit):
        cdc_main(["schema", "drop", "--config", str(cfg), "--source", "src", "--target", "duck"])
