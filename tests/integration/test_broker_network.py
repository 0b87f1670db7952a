"""A bad network between the daemon and the broker, on the real tansu reached through a TCP proxy
(tests/integration/kafka_proxy.py ProxiedBroker: the broker advertises the proxy, so every connection
of the producer and of the tail read goes through it), with a bank-transfer workload on the real MariaDB.

- a blackhole longer than ``kafka.delivery_timeout_s``: /readyz says "broker unreachable", the daemon
  restarts the source (counted in cdc_source_reconnects_total) and, once the path is back, the source
  starts again from the stream tail. The proxy holds what was sent during the blackhole and delivers it on
  resume, as a network path that comes back does: the requests of the timed-out producer may land late.
- a reset of every broker connection mid-stream: the producer reconnects.

Both end with the stream exact (tests/integration/net_faults.py check_exact). Unlike
test_broker_outage.py, the broker process runs throughout: only the network path fails.
"""

from __future__ import annotations

import time

import pytest

from cdc.config.models import KafkaConfig
from tests.e2e.test_two_daemons import Transfers
from tests.integration.kafka_proxy import ProxiedBroker
from tests.integration.net_faults import Run, check_exact, make_bank

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.slow]

DELIVERY_TIMEOUT_S = 3.0


@pytest.fixture
def proxied_broker(tmp_path):
    b = ProxiedBroker(log_dir=tmp_path / "broker")
    try:
        yield b.start()
    finally:
        b.stop()


def test_broker_path_blackholed_past_the_delivery_timeout_then_reset_ends_exact(mariadb_primary, tmp_mysql_db,
                                                                                proxied_broker, topic_prefix):
    db, my, proxy = tmp_mysql_db, mariadb_primary, proxied_broker.proxy
    make_bank(my, db)
    kafka = KafkaConfig(bootstrap_servers=proxied_broker.bootstrap, topic_prefix=topic_prefix,
                        delivery_timeout_s=DELIVERY_TIMEOUT_S)
    run = Run(my.address, db, kafka)
    try:
        run.wait_for("/readyz 200", lambda: run.readyz()[0] == 200)
        with Transfers(my, db) as work:
            run.publishing()
            # a blackhole longer than the delivery timeout
            proxy.pause()
            t0 = time.monotonic()

            def unreachable() -> str | None:
                reason = run.not_ready_reason()
                return reason if reason and "broker unreachable" in reason else None
            reason = run.wait_for("/readyz 503 saying 'broker unreachable'", unreachable, timeout=15)
            run.wait_for("a restart of the source counted", lambda: run.reconnects() >= 1,
                         timeout=DELIVERY_TIMEOUT_S + 15)
            time.sleep(max(0.0, DELIVERY_TIMEOUT_S + 3 - (time.monotonic() - t0)))
            proxy.resume()
            run.wait_for("/readyz 200 after the blackhole", lambda: run.readyz()[0] == 200, timeout=30)
            run.publishing()

            # every broker connection reset mid-stream
            cut = proxy.cut()
            assert cut >= 1
            run.publishing()
        run.finish(work, my)
    finally:
        if run.thread.is_alive():
            run.stop()
    stream = check_exact(proxied_broker.bootstrap, run.topic, my, db, work.count)
    print(f"broker network faults: {len(stream.transactions)} transfers exact, {run.reconnects():.0f} source "
          f"restarts, {cut} connections reset, {len(stream.aborted)} cut-off transactions closed with ABORTED, "
          f"{stream.duplicates} duplicate records dropped; /readyz said {reason!r}")
    assert run.reconnects() >= 1
