"""TLS end to end: MariaDB or MySQL 9.7 serving TLS -> `cdc run` (a REQUIRE X509 account, CA-verified) -> broker
-> Spark apply -> PostgreSQL accepting only TLS (sslmode=verify-full) and a MySQL target over TLS (a REQUIRE
X509 account again, so the client certificate must reach the Spark executors' connections).

Runs on both flavours (``tls_source``). On MySQL 9.7 the account is the one docs/setup.md documents: its MySQL 8
statements verbatim, then ``REQUIRE X509`` (tests/fixtures/tls.py), so it captures with the documented grants only;
the MySQL target (on that server) adds docs/setup.md's target grant to it, nothing more."""

from __future__ import annotations

import pytest

from cdc.dev.workload import TABLES, run_workload
from tests.e2e.apply_pipeline import Pipeline
from tests.fixtures.services import documented_target_grant
from tests.fixtures.tls import TLS_PASSWORD, X509_USER, verify_full_dsn
from tests.integration.mysql_helpers import is_mysql

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]


def test_tls_source_to_tls_targets_row_for_row(tmp_path, tls_source, tls_source_db, tls_postgres, tls_certs,
                                                broker, topic_prefix, spark):
    c, db = tls_certs, tls_source_db
    client_tls = {"ca": str(c.ca), "cert": str(c.client_cert), "key": str(c.client_key), "verify_identity": True}
    p = Pipeline(tmp_path, tls_source, broker, tls_postgres, topic_prefix, db, targets=("pg", "my"),
                 source_options={"user": X509_USER, "password": TLS_PASSWORD, "tls": client_tls,
                                 "snapshot": "initial"},
                 target_options={"pg": {"dsn": verify_full_dsn(tls_postgres, c.ca)}, "my": {"tls": client_tls}},
                 mysql_login=f"{X509_USER}:{TLS_PASSWORD}")
    if is_mysql(tls_source):  # the account has the capture grants only: add docs/setup.md's target grant
        documented_target_grant(tls_source, p.tag, X509_USER)
    conn = lambda: tls_source.connect(db)
    before = run_workload(conn, db, transactions=40, threads=2, seed=3)  # snapshotted at start
    p.start()
    try:
        after = run_workload(conn, db, transactions=120, threads=2, seed=11, create=False)  # streamed
        sid = p.sentinel()
        p.apply_until(spark, sid)
        counts = p.assert_equal(list(TABLES))
    finally:
        p.stop()
    assert before.committed > 20 and after.committed > 80 and counts["orders"] > 0
    plain = p.target_query("pg", "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) "
                                 "WHERE backend_type = 'client backend' AND NOT ssl")
    assert plain == [(0,)]  # hostssl-only: no client session without TLS
