"""TLS end to end: MariaDB serving TLS -> `cdc run` (a REQUIRE X509 account, CA-verified) -> broker ->
Spark apply -> PostgreSQL accepting only TLS (sslmode=verify-full) and a MySQL target over TLS (a REQUIRE
X509 account again, so the client certificate must reach the Spark executors' connections)."""

from __future__ import annotations

import pytest

from cdc.dev.workload import TABLES, run_workload
from tests.e2e.apply_pipeline import Pipeline
from tests.fixtures.tls import TLS_PASSWORD, X509_USER, verify_full_dsn

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]


def test_tls_source_to_tls_targets_row_for_row(tmp_path, tls_mariadb, tls_mysql_db, tls_postgres, tls_certs,
                                                broker, topic_prefix, spark):
    c = tls_certs
    client_tls = {"ca": str(c.ca), "cert": str(c.client_cert), "key": str(c.client_key), "verify_identity": True}
    p = Pipeline(tmp_path, tls_mariadb, broker, tls_postgres, topic_prefix, tls_mysql_db, targets=("pg", "my"),
                 source_options={"user": X509_USER, "password": TLS_PASSWORD, "tls": client_tls,
                                 "snapshot": "initial"},
                 target_options={"pg": {"dsn": verify_full_dsn(tls_postgres, c.ca)}, "my": {"tls": client_tls}},
                 mysql_login=f"{X509_USER}:{TLS_PASSWORD}")
    conn = lambda: tls_mariadb.connect(tls_mysql_db)
    before = run_workload(conn, tls_mysql_db, transactions=40, threads=2, seed=3)  # snapshotted at start
    p.start()
    try:
        after = run_workload(conn, tls_mysql_db, transactions=120, threads=2, seed=11, create=False)  # streamed
        sid = p.sentinel()
        p.apply_until(spark, sid)
        counts = p.assert_equal(list(TABLES))
    finally:
        p.stop()
    assert before.committed > 20 and after.committed > 80 and counts["orders"] > 0
    plain = p.target_query("pg", "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) "
                                 "WHERE backend_type = 'client backend' AND NOT ssl")
    assert plain == [(0,)]  # hostssl-only: no client session without TLS
