"""Static checks of deploy/: dashboards and alert rules use only catalogue metrics,
every catalogue metric is on a dashboard, compose and Kubernetes manifests hold
what operations need. (Docker cannot run where we build; these checks are static.
The PromQL itself is evaluated against a real Prometheus in
tests/integration/test_prometheus.py.)"""

import json
import re

import pytest
import yaml

from cdc.config.loader import load_config
from cdc.metrics import ApplyMetrics, SourceMetrics, process_registry
from tests.fixtures.deploy import compose_secret_files, k8s_secret_files, rewrite
from tests.fixtures.prometheus import (
    ALERTS_YML,
    DASHBOARDS,
    DEPLOY,
    alert_queries,
    dashboard_queries,
    dashboard_variables,
    missing_data,
    substitute,
)

PROMQL_WORDS = {"sum", "max", "min", "avg", "by", "rate", "increase", "deriv", "time", "histogram_quantile",
                "on", "or", "and", "unless", "vector", "label_values", "group_right", "group_left", "bool",
                "count", "ignoring", "le", "source", "target", "table", "op", "class", "job", "instance",
                "app_kubernetes_io_name"}


def catalogue_names() -> set[str]:
    reg = process_registry()
    SourceMetrics("s", reg).transaction_published(0)
    ApplyMetrics("s", "t", reg).batch_applied(0.1, 1, 1, 0)
    names = {"up"}
    for fam in reg.collect():
        names.add(fam.name)
        names.update(s.name for s in fam.samples)
        if fam.type == "counter":
            names.add(fam.name + "_total")
    return names


def metric_names(expr: str) -> set[str]:
    expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\"[^\"]*\"", " ", expr)
    return {w for w in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr) if w not in PROMQL_WORDS} - {"e"}


ALL_QUERIES = [q for d in DASHBOARDS for q in dashboard_queries(d)] + alert_queries()


def test_three_dashboards_with_panels():
    assert {d.stem for d in DASHBOARDS} == {"overview", "source", "apply"}
    for d in DASHBOARDS:
        assert len(dashboard_queries(d)) >= 8, d.name


@pytest.mark.parametrize("query", ALL_QUERIES, ids=lambda q: q.where)
def test_queries_use_catalogue_metrics(query):
    unknown = metric_names(query.expr) - catalogue_names()
    assert not unknown, f"{query.where}: unknown metrics {unknown} in {query.expr}"


def test_every_catalogue_metric_is_on_a_dashboard():
    used = set()
    for d in DASHBOARDS:
        for q in dashboard_queries(d):
            used |= metric_names(q.expr)
    reg = process_registry()
    SourceMetrics("s", reg)
    ApplyMetrics("s", "t", reg)
    wanted = {f.name + ("_total" if f.type == "counter" else "") for f in reg.collect() if f.name.startswith("cdc_")}
    missing = {n for n in wanted if not any(u == n or u.startswith(n + "_") for u in used)}
    assert not missing, f"catalogue metrics on no dashboard: {sorted(missing)}"


def _datasource_refs(node, where="") -> list[tuple[str, dict]]:
    """Every ``datasource`` object in a dashboard document, with where it sits."""
    out = []
    if isinstance(node, dict):
        if isinstance(node.get("datasource"), dict):
            out.append((where + "/" + str(node.get("title") or node.get("name") or node.get("refId")), node["datasource"]))
        for k, v in node.items():
            out += _datasource_refs(v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _datasource_refs(v, f"{where}[{i}]")
    return out


def test_dashboards_choose_their_datasource_by_variable():
    # No hard-coded datasource uid: every panel, query and query variable uses ${datasource}, a
    # datasource variable of type prometheus, so the dashboards import into any Grafana.
    ds = yaml.safe_load((DEPLOY / "grafana/provisioning/datasources/prometheus.yml").read_text())
    assert ds["datasources"][0]["type"] == "prometheus"
    for d in DASHBOARDS:
        doc = json.loads(d.read_text())
        assert doc["uid"].startswith("cdc-")
        variables = doc["templating"]["list"]
        assert variables[0]["name"] == "datasource" and variables[0]["type"] == "datasource"
        assert variables[0]["query"] == "prometheus"
        refs = [r for r in _datasource_refs(doc) if not r[0].startswith("/templating/list[0]")]
        assert len(refs) >= len(doc["panels"]), d.name
        for where, ref in refs:
            assert ref == {"type": "prometheus", "uid": "${datasource}"}, (d.name, where, ref)
        ids = [p["id"] for p in doc["panels"]]
        assert len(ids) == len(set(ids))
    prov = yaml.safe_load((DEPLOY / "grafana/provisioning/dashboards/cdc.yml").read_text())
    assert prov["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"


def test_dashboard_variables_substitute():
    for d in DASHBOARDS:
        names = [n for n, _ in dashboard_variables(d)]
        values = {n: "x" for n in names}
        for q in dashboard_queries(d):
            assert "$" not in re.sub(r"\{\{.*?\}\}", "", substitute(q.expr, values))
    with pytest.raises(ValueError):
        substitute('x{source="$nope"}', {})


def test_alerts_cover_the_required_conditions():
    names = {q.where.split(": ")[1] for q in alert_queries()}
    for required in ("CdcSourceLagHigh", "CdcStreamStalled", "CdcDivergence", "CdcSourceErrors", "CdcSpillGrowing",
                     "CdcApplyStale", "CdcDaemonDown", "CdcApplyDown"):
        assert required in names
    doc = yaml.safe_load(ALERTS_YML.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in ("warning", "critical")
            assert rule["annotations"]["summary"]


def test_every_alert_has_a_promtool_unit_test():
    tests = yaml.safe_load((DEPLOY / "prometheus/alerts_test.yml").read_text())
    tested = {case["alertname"] for t in tests["tests"] for case in t["alert_rule_test"] if case["exp_alerts"]}
    names = {q.where.split(": ")[1] for q in alert_queries()}
    assert names - tested == set(), f"alerts never shown firing in alerts_test.yml: {names - tested}"


def test_missing_data_follows_promql_precedence():
    fed = {"a", "c", "vector(0)"}.__contains__
    assert missing_data("a > 60", fed) == []
    assert missing_data("b > 60", fed) == ["b"]
    assert missing_data("a > 1 and b > 2", fed) == ["b"]
    assert missing_data("a unless b", fed) == []
    assert missing_data("b or on() vector(0)", fed) == []
    assert missing_data("b or d", fed) == ["b", "d"]
    assert missing_data('x{l=~"a|b>c"} > 3', lambda e: e == 'x{l=~"a|b>c"}') == []
    assert missing_data("time() - c > bool 5", lambda e: e == "time() - c") == []


def test_prometheus_config_scrapes_daemon_and_apply():
    cfg = yaml.safe_load((DEPLOY / "prometheus/prometheus.yml").read_text())
    assert {j["job_name"] for j in cfg["scrape_configs"]} == {"cdc-daemon", "cdc-apply"}
    assert cfg["rule_files"] == ["alerts.yml"]


def test_compose_has_the_services_and_valid_cdc_config(tmp_path):
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    for name in ("kafka", "mariadb-primary", "mariadb-replica", "postgres", "prometheus", "grafana",
                 "cdc-daemon", "cdc-apply"):
        assert name in services, name
    assert services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert services["mariadb-replica"]["environment"]["MARIADB_MASTER_HOST"] == "mariadb-primary"
    assert services["cdc-daemon"]["command"][0] == "run"
    assert services["cdc-apply"]["command"][0] == "apply"
    cnf = (DEPLOY / "mariadb/cdc-source.cnf").read_text()
    for setting in ("binlog_format = ROW", "binlog_row_image = FULL", "binlog_row_metadata = FULL",
                    "log_slave_updates = ON"):
        assert setting in cnf
    text = (DEPLOY / "cdc.yaml").read_text()
    for service in ("cdc-daemon", "cdc-apply"):  # the config as each container reads it: secrets mounted
        (tmp_path / f"{service}.yaml").write_text(rewrite(text, compose_secret_files(compose, service)))
    config = load_config(tmp_path / "cdc-daemon.yaml", env=services["cdc-daemon"]["environment"])
    assert config.sources[0].password.get_secret_value() == "cdc-password"
    applied = load_config(tmp_path / "cdc-apply.yaml", env=services["cdc-apply"].get("environment", {}))
    assert applied.targets[0].login_kwargs()["password"] == "pg-password"
    assert config.metrics.host == "0.0.0.0"
    grace = int(services["cdc-daemon"]["stop_grace_period"].rstrip("s"))
    assert grace >= config.drain_timeout_s + 10
    prom_ports = {j["job_name"]: j["static_configs"][0]["targets"][0]
                  for j in yaml.safe_load((DEPLOY / "prometheus/prometheus.yml").read_text())["scrape_configs"]}
    assert prom_ports["cdc-daemon"].endswith(":" + services["cdc-daemon"]["environment"]["CDC_METRICS__PORT"])
    apply_cmd = services["cdc-apply"]["command"]
    assert prom_ports["cdc-apply"].endswith(":" + apply_cmd[apply_cmd.index("--metrics-port") + 1])


def test_dockerfile_is_multistage_nonroot_with_java_and_cdc_entrypoint():
    text = (DEPLOY / "Dockerfile").read_text()
    assert len(re.findall(r"^FROM .* AS \w+", text, re.MULTILINE)) >= 2
    assert "openjdk-17" in text
    assert re.search(r"^USER 10001", text, re.MULTILINE)
    assert re.search(r'^ENTRYPOINT \["tini", "--", "cdc"\]', text, re.MULTILINE)


def test_kubernetes_manifests(tmp_path):
    k8s = DEPLOY / "kubernetes"
    docs = {}
    kust = yaml.safe_load((k8s / "kustomization.yaml").read_text())
    all_docs = []
    for name in kust["resources"]:
        for doc in yaml.safe_load_all((k8s / name).read_text()):
            all_docs.append(doc)
            docs.setdefault(doc["kind"], doc)  # the daemon's (listed first); the apply job's: test_apply_deploy.py
    assert {"Deployment", "ConfigMap", "Secret", "Service", "Namespace"} <= set(docs)
    dep = docs["Deployment"]["spec"]
    assert dep["replicas"] == 1 and dep["strategy"]["type"] == "Recreate"
    pod = dep["template"]["spec"]
    container = pod["containers"][0]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert pod["securityContext"]["runAsNonRoot"] is True
    env = {e["name"]: e["value"] for e in container["env"]}  # the config as the pod reads it: env, mounted secrets
    files = k8s_secret_files(list(all_docs), pod, container, tmp_path / "mounted")
    (tmp_path / "cdc.yaml").write_text(rewrite(docs["ConfigMap"]["data"]["cdc.yaml"], files))
    config = load_config(tmp_path / "cdc.yaml", env=env)
    assert config.sources[0].password.get_secret_value() == "change-me"  # read from the mounted Secret
    assert pod["terminationGracePeriodSeconds"] >= config.drain_timeout_s + 10
    assert docs["Service"]["spec"]["ports"][0]["port"] == container["ports"][0]["containerPort"]
    assert "CDC_SOURCES__0__PASSWORD" not in {e["name"] for e in container["env"]}
    assert "password:" not in docs["ConfigMap"]["data"]["cdc.yaml"]
