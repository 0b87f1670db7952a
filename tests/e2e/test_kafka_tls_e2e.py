"""The whole pipeline over a TLS broker that requires a client certificate: MariaDB or MySQL 9.7 -> `cdc run` ->
tls_broker -> `cdc apply` (a child process: its own Spark, the data source's consumers in Spark's Python workers) ->
PostgreSQL and DuckDB, equal to the source; the client key's password comes from a file and shows up in no
output, log, process argument, Spark checkpoint or target file. Runs on both flavours (``mysql_source``; on MySQL
9.7 read as the documented capture user)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cdc.dev.workload import TABLES, run_workload
from tests.e2e.apply_pipeline import Pipeline
from tests.fixtures.ops import CDC
from tests.integration.test_kafka_security import secured_client

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]


def _files_holding(root: Path, text: bytes, skip: Path) -> list[str]:
    hits = []
    for p in root.rglob("*"):
        if p.is_file() and skip not in p.parents and text in p.read_bytes():
            hits.append(str(p))
    return hits


def test_daemon_and_cdc_apply_over_mutual_tls(tmp_path, mysql_source, tls_broker, tls_certs, postgres,
                                             topic_prefix, tmp_source_db):
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    client, password = secured_client(secrets, tls_certs)
    p = Pipeline(tmp_path, mysql_source, tls_broker, postgres, topic_prefix, tmp_source_db, targets=("pg", "duck"),
                 kafka={"client": client}).start()
    try:
        daemon_argv = Path(f"/proc/{p.daemon.proc.pid}/cmdline").read_bytes()
        summary = run_workload(lambda: mysql_source.connect(tmp_source_db), tmp_source_db, transactions=120,
                               threads=2, seed=11)
        assert summary.committed > 80
        sid = p.sentinel()
        apply_log = tmp_path / "apply.log"
        with open(apply_log, "wb") as out:
            rc = subprocess.run([CDC, "apply", "--config", str(p.config_path), "--master", "local[2]",
                                 "--until-idle", "6"], stdout=out, stderr=subprocess.STDOUT, timeout=420,
                                env=dict(os.environ, CDC_PROGRESS="off"), cwd=tmp_path, check=False).returncode
        assert rc == 0, apply_log.read_text(errors="replace")[-3000:]
        assert all(p.has_sentinel(t, sid) for t in p.targets), apply_log.read_text(errors="replace")[-3000:]
        counts = p.assert_equal(list(TABLES))
        assert counts["orders"] > 0
    finally:
        p.stop()
    secret = password.encode()
    assert secret not in daemon_argv
    assert secret not in p.daemon.log.read_bytes()
    assert secret not in apply_log.read_bytes()
    # the Spark checkpoints, the DuckDB target, the logs: only the password files hold it
    assert _files_holding(tmp_path, secret, skip=secrets) == []
