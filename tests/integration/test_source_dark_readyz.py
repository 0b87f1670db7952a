"""/readyz names the real cause of a stall (MariaDB and MySQL 9.7): a dark network path to the server blocks the
source thread, which is also the thread that takes in the broker's acknowledgements; the records then only look
unacknowledged, and the probe must name the source (how long it has been silent), never the broker, which is
fine.

Daemon in-process, the binlog connection through the net-fault proxy (tests/fixtures/net_proxy.py), a bank-
transfer workload: the path is paused for longer than the reader's read timeout, /readyz is sampled all along,
the path resumes, and the stream ends exact (every committed transfer once, balances equal).
"""

from __future__ import annotations

import time

import pytest

from cdc.config.models import KafkaConfig
from readers.mysql.connection import split_host
from tests.e2e.test_two_daemons import Transfers
from tests.fixtures.net_proxy import TcpProxy
from tests.fixtures.services import capture_login
from tests.integration.net_faults import SOURCE, Run, check_exact, make_bank

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.slow]

DARK_S = 14  # longer than the binlog connection's read timeout (10 s with 0.5 s heartbeats) and the 5 s after
# which records not acknowledged make the broker look unreachable


def test_a_dark_path_to_the_source_server_is_named_as_the_source_not_the_broker(mysql_source, tmp_source_db, broker,
                                                                                topic_prefix):
    db, my = tmp_source_db, mysql_source
    make_bank(my, db)
    proxy = TcpProxy(split_host(my.address)[1])
    user, password = capture_login(my)
    run = Run(f"127.0.0.1:{proxy.port}", db, KafkaConfig(bootstrap_servers=broker.bootstrap,
                                                          topic_prefix=topic_prefix), user=user, password=password)
    reasons: list[tuple[float, str | None]] = []
    try:
        run.wait_for("/readyz 200", lambda: run.readyz()[0] == 200)
        with Transfers(my, db) as work:
            run.publishing()
            proxy.pause()
            t0 = time.monotonic()
            while time.monotonic() - t0 < DARK_S:  # bounded: the probe sampled through the whole blackhole
                reasons.append((time.monotonic() - t0, run.not_ready_reason()))
                time.sleep(0.2)
            proxy.resume()
            run.wait_for("/readyz 200 after the blackhole", lambda: run.readyz()[0] == 200, timeout=40)
            run.publishing()
        run.finish(work, my)
    finally:
        if run.thread.is_alive():
            run.stop()
        proxy.close()
    said = [r for _, r in reasons if r]
    assert not [r for r in said if "broker" in r], said  # the broker was never the problem
    named = [(t, r) for t, r in reasons if r and r.startswith(f"source {SOURCE} not answering")]
    assert named and named[0][0] < 6, reasons  # named within a few seconds ...
    # ... and the source it stays (while the reader reconnects through the dark path: not connected)
    assert all(r and (r.startswith(f"source {SOURCE} not answering") or r == "not connected to the source")
               for t, r in reasons if t >= named[0][0]), reasons
    assert "waiting for the source for" in named[-1][1] and "Stream position {" in named[-1][1]
    stream = check_exact(broker.bootstrap, run.topic, my, db, work.count)
    print(f"dark MariaDB path for {DARK_S}s: /readyz first said {said[0]!r} at {reasons[0][0]:.1f}s, "
          f"then {named[-1][1]!r}; {len(stream.transactions)} transfers exact")
