"""Structured logs (cdc.runtime.logs): JSON lines carry source, position and txid."""

import io
import json
import logging
import threading

from cdc.runtime.logs import THREAD_PREFIX, bind_source_state, setup_logging, unbind_source_state


def _lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_lines_take_position_and_txid_from_the_bound_source_state():
    out = io.StringIO()
    setup_logging("INFO", json_lines=True, stream=out)
    state = {"position": {"gtid_set": "0-1-7"}, "txid": "0-1-8"}
    bind_source_state("shop", lambda: (state["position"], state["txid"]))
    try:
        def worker():
            logging.getLogger("readers.mysql.reader").warning("connection lost")
        t = threading.Thread(target=worker, name=THREAD_PREFIX + "shop")
        t.start()
        t.join()
        logging.getLogger("x").info("explicit", extra={"source": "shop", "position": {"scn": 5}, "txid": None})
        logging.getLogger("x").info("not about a source")
    finally:
        unbind_source_state("shop")
    first, explicit, other = _lines(out)
    assert first["source"] == "shop" and first["position"] == {"gtid_set": "0-1-7"} and first["txid"] == "0-1-8"
    assert first["level"] == "WARNING" and first["msg"] == "connection lost"
    assert explicit["position"] == {"scn": 5} and explicit["txid"] is None  # explicit fields win
    assert other["source"] is None and other["position"] is None and other["txid"] is None


def test_a_failing_provider_never_breaks_a_log_line():
    out = io.StringIO()
    setup_logging("INFO", json_lines=True, stream=out)
    bind_source_state("bad", lambda: 1 / 0)
    try:
        logging.getLogger("x").error("boom", extra={"source": "bad"})
    finally:
        unbind_source_state("bad")
    (line,) = _lines(out)
    assert line["source"] == "bad" and line["position"] is None
