"""A bad network between the daemon and its source, on a real MariaDB and MySQL 9.7 (``mysql_source``)
through a TCP proxy (tests/fixtures/net_proxy.py; the source's ``hosts`` names the proxy).

While a bank-transfer workload commits, the binlog connection is (a) reset mid-stream, (b) blackholed for
longer than the reader's read timeout, (c) slowed. The reader notices each loss within a bounded time,
reconnects by itself (counted in cdc_source_reconnects_total), /readyz says why while it waits, and the
stream ends exact: every committed transfer once, in commit order, gapless sequences, balances equal.
"""

from __future__ import annotations

import time

import pytest

from cdc.config.models import KafkaConfig
from readers.mysql.connection import split_host
from tests.e2e.test_two_daemons import Transfers
from tests.fixtures.net_proxy import TcpProxy
from tests.fixtures.services import capture_login
from tests.integration.net_faults import Run, check_exact, make_bank

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.slow]

READ_TIMEOUT_S = 10  # the binlog connection's read bound with heartbeats every 0.5 s (readers/mysql/reader.py)


def test_reset_blackhole_and_slow_binlog_connection_end_with_an_exact_stream(mysql_source, tmp_source_db, broker,
                                                                             topic_prefix):
    db, my = tmp_source_db, mysql_source
    make_bank(my, db)
    proxy = TcpProxy(split_host(my.address)[1])
    user, password = capture_login(my)
    run = Run(f"127.0.0.1:{proxy.port}", db, KafkaConfig(bootstrap_servers=broker.bootstrap,
                                                          topic_prefix=topic_prefix), user=user, password=password)
    try:
        run.wait_for("/readyz 200", lambda: run.readyz()[0] == 200)
        with Transfers(my, db) as work:
            run.publishing()
            # (a) a reset mid-stream: reconnect from the GTID state, nothing lost or doubled
            before = run.reconnects()
            assert proxy.cut() >= 1
            run.wait_for("a reconnect after the reset", lambda: run.reconnects() > before, timeout=10)
            run.publishing()

            # (b) a blackhole longer than the read timeout: noticed within a bounded time, /readyz says why
            before = run.reconnects()
            proxy.pause()
            t0 = time.monotonic()
            reason = run.wait_for("/readyz 503 naming the source", run.not_ready_reason, timeout=10)
            # a host too busy to ask within the read timeout sees the reader's reconnect instead: honest, and no earlier
            late = time.monotonic() - t0 >= READ_TIMEOUT_S - 0.5 and reason == "not connected to the source"
            assert late or reason.startswith(("no heartbeat or transaction acknowledged",
                                              "source bank not answering")), (reason, time.monotonic() - t0)
            run.wait_for("a reconnect after the blackhole", lambda: run.reconnects() > before,
                         timeout=READ_TIMEOUT_S + 10)
            noticed = time.monotonic() - t0
            later = run.not_ready_reason()
            time.sleep(max(0.0, READ_TIMEOUT_S + 3 - (time.monotonic() - t0)))
            proxy.resume()
            run.wait_for("/readyz 200 after the blackhole", lambda: run.readyz()[0] == 200, timeout=30)
            run.publishing()

            # (c) a slow path: every chunk held 50 ms; the stream goes on, without a reconnect
            before = run.reconnects()
            proxy.slow(0.05)
            run.publishing(more=10)
            proxy.slow(0)
            assert run.reconnects() == before
            run.publishing()
        run.finish(work, my)
    finally:
        if run.thread.is_alive():
            run.stop()
        proxy.close()
    stream = check_exact(broker.bootstrap, run.topic, my, db, work.count)
    print(f"binlog network faults: {len(stream.transactions)} transfers exact, {run.reconnects():.0f} reconnects, "
          f"blackhole noticed in {noticed:.1f}s, /readyz said {reason!r} then {later!r}; "
          f"{stream.duplicates} duplicate records dropped")
    assert noticed < READ_TIMEOUT_S + 8
