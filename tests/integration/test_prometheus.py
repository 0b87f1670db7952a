"""A real Prometheus scrapes the real daemon and the real Spark apply job; every PromQL
expression of every dashboard panel and alert rule is evaluated through
/api/v1/query and must return data without error; promtool accepts the
config and the rules.

Dashboard variables are resolved the way Grafana does (``label_values`` through
Prometheus' label API, first value) and substituted; Grafana's ``$__rate_interval``
becomes 30s. A quiet alert (``x > 60`` while all is well) returns nothing, so
"has data" is checked on the operands of its comparisons (tests.fixtures.prometheus.missing_data).
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest
import yaml

from cdc.dev.ports import HOST, free_port, wait_until
from cdc.dev.procs import spawn, terminate
from tests.fixtures.ops import CDC, DaemonProcess, total, wait_for
from tests.fixtures.prometheus import (
    ALERTS_YML,
    DASHBOARDS,
    PROMETHEUS_YML,
    PrometheusServer,
    alert_queries,
    dashboard_queries,
    missing_data,
    resolve_variables,
    substitute,
)

pytestmark = [pytest.mark.prometheus, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark]

SOURCE, TARGET = "shop", "duck"


def promtool(*args: str) -> None:
    proc = subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, f"promtool {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"


def test_promtool_accepts_config_and_rules_and_the_alerts_fire_as_tested():
    promtool("check", "config", str(PROMETHEUS_YML))
    promtool("check", "rules", str(ALERTS_YML))
    promtool("test", "rules", str(ALERTS_YML.with_name("alerts_test.yml")))


def has_data(prom: PrometheusServer, expr: str) -> bool:
    answer = prom.query(expr)
    assert answer.get("status") == "success", f"{expr}: {answer.get('error')}"
    data = answer["data"]
    return data["resultType"] in ("scalar", "string") or bool(data["result"])


def test_every_dashboard_and_alert_query_returns_data(mariadb_primary, broker, topic_prefix, tmp_mysql_db,
                                                      tmp_path, prometheus_server):
    db = tmp_mysql_db
    (tmp_path / "daemon").mkdir()
    daemon = DaemonProcess(tmp_path / "daemon", source=SOURCE, mariadb_hosts=[mariadb_primary.address],
                           tables=[f"{db}.*"], bootstrap=broker.bootstrap, topic_prefix=topic_prefix)
    apply_port = free_port()
    apply_job = None
    try:
        daemon.start()
        # created while the daemon runs: its SCHEMA record comes from the DDL, outside any transaction
        mariadb_primary.query(f"CREATE TABLE {db}.orders (id INT PRIMARY KEY, amount INT)")
        # the apply side: the real Spark job (`cdc apply`, local[2]) into DuckDB, serving /metrics
        apply_cfg = tmp_path / "apply.yaml"
        apply_cfg.write_text(yaml.safe_dump({
            "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": topic_prefix},
            "logging": {"json": True},
            "targets": [{"name": TARGET, "kind": "duckdb", "path": str(tmp_path / "target.duckdb")}],
            "apply": [{"source": SOURCE, "target": TARGET, "checkpoint_dir": str(tmp_path / "checkpoint"),
                       "trigger_interval_s": 0.5}]}))
        apply_job = spawn([CDC, "apply", "--config", str(apply_cfg), "--master", "local[2]",
                           "--metrics-port", str(apply_port)], tmp_path / "apply.log",
                          env=dict(os.environ, CDC_PROGRESS="off"))
        prom = prometheus_server({"cdc-daemon": daemon.address, "cdc-apply": f"{HOST}:{apply_port}"})
        promtool("check", "config", str(prom.config_path))

        def workload(first: int, n: int) -> None:
            conn = mariadb_primary.connect(db, autocommit=True)
            with conn.cursor() as cur:
                for i in range(first, first + n):
                    cur.execute(f"INSERT INTO {db}.orders VALUES (%s, %s)", (i, i))
                    if i % 3 == 0:
                        cur.execute(f"UPDATE {db}.orders SET amount = amount + 1 WHERE id = %s", (i,))
                    if i % 5 == 0:
                        cur.execute(f"DELETE FROM {db}.orders WHERE id = %s", (i,))
            conn.close()

        workload(0, 30)
        wait_for(lambda: total(daemon.scrape(), "cdc_source_transactions_published_total") >= 30, 90,
                 "workload published", daemon)
        wait_for(lambda: all(prom.targets_up().get(j) for j in ("cdc-daemon", "cdc-apply")), 30,
                 f"prometheus scraping both targets ({prom.log})")
        time.sleep(2)
        workload(30, 30)  # changes inside the rate windows
        wait_until(lambda: has_data(prom, "cdc_apply_rows_total") and
                 has_data(prom, "count_over_time(cdc_apply_target_freshness_seconds[1m]) >= 3")
                   # the lag gauge is set from the query's progress every few seconds: on a busy host after the rows
                   and has_data(prom, "cdc_apply_lag_records"), 120,
                 "apply job applied the workload", interval=0.5, alive=lambda: _exited(apply_job, tmp_path / "apply.log"))

        # the apply side's figures are sane: fresh, behind or level with the stream, all transactions
        def scalar(expr: str) -> float:
            result = prom.query(expr)["data"]["result"]
            assert len(result) == 1, f"{expr}: {result}"
            return float(result[0]["value"][1])

        assert 0 <= scalar("max(cdc_apply_target_freshness_seconds)") < 300
        # The two jobs are scraped at different moments, so the daemon's figure may trail by a scrape:
        # what the apply job applied must show up as published on the daemon's side within a few scrapes.
        applied = scalar("max(cdc_apply_last_sequence)")
        wait_until(lambda: scalar("max(cdc_source_last_published_sequence)") >= applied, 20,
                   f"daemon reports sequence {applied} (applied by the apply job) as published", interval=0.5)
        assert scalar("sum(cdc_apply_transactions_total)") >= 30
        assert 0 <= scalar("max(cdc_source_lag_seconds)") < 60

        problems: list[str] = []
        checked = 0
        for dashboard in DASHBOARDS:
            values = resolve_variables(prom, dashboard)
            for q in dashboard_queries(dashboard):
                problems += _check(prom, q.where, substitute(q.expr, values))
                checked += 1
        for q in alert_queries():
            problems += _check(prom, q.where, q.expr)
            checked += 1
        assert not problems, f"{len(problems)} of {checked} expressions failed:\n" + "\n".join(problems)
        assert checked >= 60
        # the harness does catch what it should: a typo'd metric, a quiet rule on a missing series, bad syntax
        assert _check(prom, "typo", 'rate(cdc_source_event_read_total[30s])')
        assert _check(prom, "quiet rule", "cdc_source_lag_secondz > 60")
        assert "error" in _check(prom, "syntax", "sum(cdc_source_up")[0]

        # the rule evaluator itself ran every rule without error
        wait_for(lambda: _rules_health(prom) is not None, 10, "rules evaluated")
        bad = {name: err for name, (health, err) in _rules_health(prom).items() if health != "ok"}
        assert not bad, f"rules with evaluation errors: {bad}"
    finally:
        terminate(apply_job, timeout=30)
        daemon.stop()


def _exited(proc, log) -> str | None:
    if proc.poll() is None:
        return None
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if "Error" in ln or "error" in ln]
    return f"apply job exited with {proc.returncode}: " + "\n".join(lines[-15:])


def _check(prom: PrometheusServer, where: str, expr: str) -> list[str]:
    answer = prom.query(expr)
    if answer.get("status") != "success":
        return [f"{where}: error {answer.get('errorType')}: {answer.get('error')} in {expr}"]
    missing = missing_data(expr, lambda e: has_data(prom, e))
    return [f"{where}: no data for {m!r} (in {expr})" for m in missing]


def _rules_health(prom: PrometheusServer) -> dict[str, tuple[str, str]] | None:
    groups = prom.api("rules")["data"]["groups"]
    rules = {r["name"]: (r.get("health"), r.get("lastError", "")) for g in groups for r in g["rules"]}
    if not rules or any(h == "unknown" for h, _ in rules.values()):
        return None
    return rules
