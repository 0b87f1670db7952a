"""`cdc lake snapshot` and `cdc lake compact` on real Delta / Iceberg tables (local files, SQLite catalog)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest
import yaml

from cdc.config.credentials import reveal
from cdc.errors import ConfigError
from streaming.targets import lake_cmd, make_target
from streaming.testing import StreamBuilder
from tests.unit.streaming.targets.test_lake import ACCT, _acct, config, engine, read, rows


@pytest.fixture(params=["delta", "iceberg"])
def applied(request, tmp_path):
    """A lake target after 6 small batches (many small files), and its config file."""
    cfg = config(request.param, tmp_path)
    path = tmp_path / "cdc.yaml"
    path.write_text(yaml.safe_dump({"kafka": {"bootstrap_servers": "127.0.0.1:9"},
                                    # the config as written: catalog_uri (a SecretDsn) unwrapped
                                    "targets": [reveal(cfg.model_dump(by_alias=True, exclude_none=True))]}))
    rng = random.Random(5)
    b = StreamBuilder().schema("shop.acct", ACCT, ["id"])
    target = make_target(cfg)
    e = engine(target)
    done = 0
    for batch in range(6):
        b.tx(*[("c", "shop.acct", None, _acct(batch * 10 + i, rng)) for i in range(10)])
        recs = b.as_records()
        e.apply_records(recs[done:], batch)
        done = len(recs)
    e.close()
    return cfg, path, b.seq - 1


def _cdc(*args: str, timeout: float) -> subprocess.CompletedProcess:
    """`cdc ...` as a child process, without CDC_* overrides from the environment (they would change the config)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CDC_")}
    return subprocess.run([sys.executable, "-m", "cdc.cli", *args], capture_output=True, text=True, timeout=timeout,
                          env=env, check=False)


def test_snapshot_prints_the_latest_consistent_point(applied):
    cfg, path, last = applied
    out = _cdc("lake", "snapshot", "--config", str(path), "--target", cfg.name, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    point = json.loads(out.stdout)
    assert point["last_sequence"] == last and point["batch_id"] == 5 and set(point["tables"]) == {"acct"}
    assert point == lake_cmd.latest_point(str(path), cfg.name)
    with pytest.raises(ConfigError, match="no target named 'nope'"):
        lake_cmd.latest_point(str(path), "nope")


def test_compact_keeps_rows_sequence_and_the_point_readable(applied):
    cfg, path, last = applied
    target = make_target(cfg).open()
    before = rows(read(target, "acct"), ["id", "balance"])
    point = target.latest_point()
    out = _cdc("lake", "compact", "--config", str(path), "--target", cfg.name, "--retention-hours", "0", timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    figures = {d["table"]: d for d in map(json.loads, out.stdout.splitlines())}
    assert "acct" in figures and "_cdc_progress" in figures
    if cfg.kind == "delta":
        assert figures["acct"]["files_removed"] == 6 and figures["acct"]["files_added"] == 1
    else:
        assert figures["acct"]["files_before"] == 6 and figures["acct"]["files_after"] == 1
    fresh = make_target(cfg).open()
    assert rows(read(fresh, "acct"), ["id", "balance"]) == before
    assert fresh._recorded("acct", "src") == last  # replays are still recognised after compaction
    assert rows(read(fresh, "acct", point["tables"]["acct"]), ["id", "balance"]) == before  # the point still reads
