"""Offsets of the cdc-stream source: JSON form with the topic's id, sorted keys, round trip."""

from __future__ import annotations

import orjson
import pytest

from cdc.errors import ConfigError
from streaming.stream.offsets import StreamOffset


def test_the_topic_id_travels_with_the_offsets_and_keys_stay_sorted():
    off = StreamOffset.of("cdc.s.changes", {1: 7, 0: 12}, "AaIKQnsJe6KDX23HOCwCog")
    js = off.to_json()
    assert list(js) == sorted(js) and js["next"] == {"0": 12, "1": 7} and js["stream"] == "AaIKQnsJe6KDX23HOCwCog"
    assert StreamOffset.from_json(orjson.loads(orjson.dumps(js))) == off
    assert off.with_partition(0, 20).stream == off.stream


def test_offsets_written_before_the_topic_id_was_recorded_still_read():
    old = StreamOffset.from_json({"next": {"0": 5}, "topic": "t"})
    assert old.stream is None and old.to_json() == {"next": {"0": 5}, "topic": "t"}
    with pytest.raises(ConfigError, match="not a cdc-stream offset"):
        StreamOffset.from_json({"next": 5})
