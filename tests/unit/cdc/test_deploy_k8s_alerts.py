"""The alert rules and the "up" panels fire for the pods of deploy/kubernetes too, evaluated with promtool on
series labelled as deploy/kubernetes/prometheus-scrape.yaml labels the pods the manifests define."""

from __future__ import annotations

import json
import shutil
import subprocess

import yaml

from tests.fixtures.deploy import K8S, k8s_docs, named, pod_meta_labels, relabel
from tests.fixtures.prometheus import ALERTS_YML, DEPLOY

ROLES = {"cdc-daemon": "CdcDaemonDown", "cdc-apply": "CdcApplyDown"}


def _pod_labels() -> dict[str, dict[str, str]]:
    docs = k8s_docs()
    namespace = yaml.safe_load((K8S / "kustomization.yaml").read_text())["namespace"]
    job = yaml.safe_load((K8S / "prometheus-scrape.yaml").read_text())["scrape_configs"][0]
    out = {}
    for role in ROLES:
        labels = relabel(pod_meta_labels(job["job_name"], namespace, named(docs, "Deployment", role)),
                         job["relabel_configs"])
        assert labels is not None, f"{role}: the scrape job drops the pod (prometheus.io/scrape annotation)"
        out[role] = labels
    return out


def _series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def _panel_expr(title: str) -> str:
    doc = json.loads((DEPLOY / "grafana" / "dashboards" / "overview.json").read_text())
    return next(p["targets"][0]["expr"] for p in doc["panels"] if p.get("title") == title)


def test_pods_are_labelled_apart_from_the_compose_jobs():
    pods = _pod_labels()
    assert {p["job"] for p in pods.values()} == {"kubernetes-pods"}  # the rules cannot rely on `job` here
    assert pods["cdc-daemon"]["instance"].endswith(":9108") and pods["cdc-apply"]["instance"].endswith(":9109")


def test_down_alerts_and_up_panels_fire_on_kubernetes(tmp_path):
    pods = _pod_labels()
    series = [{"series": _series("up", labels), "values": "1 0x9"} for labels in pods.values()]
    series += [{"series": _series("process_resident_memory_bytes", labels), "values": "1000x9"}
               for labels in pods.values()]
    alerts = []
    for role, alert in ROLES.items():
        labels = pods[role]
        what = "CDC daemon" if role == "cdc-daemon" else "Apply job"
        annotations = {"summary": f"{what} {labels['instance']} is not answering /metrics"}
        if role == "cdc-daemon":
            annotations["description"] = ("Prometheus could not scrape the daemon for 1 minute: no change is "
                                          "being captured.")
        alerts.append({"eval_time": "5m", "alertname": alert,
                       "exp_alerts": [{"exp_labels": {"severity": "critical", **labels},
                                       "exp_annotations": annotations}]})
    exprs = [{"expr": _panel_expr(title), "eval_time": "5m",
              "exp_samples": [{"labels": _series("up", pods[role]), "value": 0}]}
             for title, role in (("Daemon up", "cdc-daemon"), ("Apply job up", "cdc-apply"))]
    memory = _panel_expr("Process resident memory")
    exprs.append({"expr": memory, "eval_time": "5m",
                  "exp_samples": [{"labels": _series("process_resident_memory_bytes", labels), "value": 1000}
                                  for labels in pods.values()]})
    shutil.copy(ALERTS_YML, tmp_path / ALERTS_YML.name)
    test = {"rule_files": [ALERTS_YML.name], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": alerts,
                       "promql_expr_test": exprs}]}
    (tmp_path / "k8s_test.yml").write_text(yaml.safe_dump(test, sort_keys=False))
    r = subprocess.run(["promtool", "test", "rules", "k8s_test.yml"], cwd=tmp_path, capture_output=True, text=True, check=False,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
