"""`cdc source skip --resync` checks its prerequisites BEFORE it records the skip (issue #36 section 5): a
missing signal table refuses with nothing written to the stream; and a re-run after the skip was recorded names
the resync that is still to be requested instead of only saying "already holds"."""

from __future__ import annotations

import argparse

import pytest
import yaml

from cdc.errors import ConfigError
from cdc.runtime import source_cmd
from readers.mysql import skip_cmd


class _Publisher:
    topic = "p.s.changes"

    def __init__(self, resume) -> None:
        self.resume, self.published = resume, []

    def recover(self):
        return self.resume

    def recovered(self) -> int:
        return 0

    def publish(self, ev) -> None:
        self.published.append(ev)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def _config(tmp_path, signal_table: str | None):
    src = {"name": "s", "kind": "mysql", "hosts": ["127.0.0.1:9"], "user": "u", "password": "p",
           "tables": ["db.items"]}
    if signal_table:
        src["signal_table"] = signal_table
    path = tmp_path / "cdc.yaml"
    path.write_text(yaml.safe_dump({"sources": [src], "kafka": {"bootstrap_servers": "127.0.0.1:9",
                                                               "topic_prefix": "p"}}))
    return str(path)


def _args(config: str, resync: bool = True) -> argparse.Namespace:
    return argparse.Namespace(config=config, source="s", gtid="0-1-9", xid=None, yes=True, resync=resync, reason="")


def test_a_missing_signal_table_refuses_before_anything_is_recorded(tmp_path, monkeypatch):
    pub = _Publisher({"gtid_set": "0-1-8"})
    monkeypatch.setattr("cdc.publish.opening.open_publisher", lambda *a, **k: (pub, None))
    monkeypatch.setattr(skip_cmd, "next_transaction", lambda src, state: ("0-1-9", ["db.items"]))
    with pytest.raises(ConfigError, match="signal_table") as info:
        source_cmd.main(_args(_config(tmp_path, None)))
    assert "nothing was recorded" in str(info.value)
    assert pub.published == []  # the skip is not recorded: a re-run after the fix does the whole thing


def test_a_rerun_after_the_skip_names_the_resync_still_to_request(tmp_path, monkeypatch):
    skipped = {"gtid": "0-1-9", "tables": ["db.items"], "at_ms": 1, "reason": ""}
    pub = _Publisher({"gtid_set": "0-1-9", "skipped": skipped})
    monkeypatch.setattr("cdc.publish.opening.open_publisher", lambda *a, **k: (pub, None))
    config = _config(tmp_path, "db.cdc_signal")
    with pytest.raises(skip_cmd.SkipRefused, match="already holds") as info:
        source_cmd.main(_args(config))
    assert "cdc snapshot" in str(info.value) and "--table db.items --resync" in str(info.value)
    assert pub.published == []
