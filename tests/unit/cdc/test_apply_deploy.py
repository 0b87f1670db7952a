"""The apply job's deployment definitions (deploy/kubernetes/apply-*.yaml, deploy/compose.yaml) probe
what `cdc apply` serves: the paths the health server answers, on the port the config gives it."""

from __future__ import annotations

import re
import urllib.error
import urllib.request

import yaml
from prometheus_client import CollectorRegistry

from cdc.config.loader import load_config
from cdc.runtime.health import HealthServer
from tests.fixtures.deploy import k8s_secret_files, rewrite
from tests.fixtures.prometheus import DEPLOY

K8S = DEPLOY / "kubernetes"


def _k8s_docs() -> list[dict]:
    kust = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return [doc for name in kust["resources"] for doc in yaml.safe_load_all((K8S / name).read_text())]


def _named(docs: list[dict], kind: str, name: str) -> dict:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {name}: {len(found)} in the kustomization"
    return found[0]


def _served_paths() -> dict[str, int]:
    """Status of each probe path on a real HealthServer wired as `cdc apply` wires it (ready, alive)."""
    server = HealthServer(CollectorRegistry(), dict, "127.0.0.1", 0, alive=dict).start()
    try:
        out = {}
        for path in ("/metrics", "/healthz", "/readyz", "/nothing"):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=5) as r:
                    out[path] = r.status
            except urllib.error.HTTPError as e:
                out[path] = e.code
        return out
    finally:
        server.stop()


def test_the_apply_pod_probes_the_paths_and_port_cdc_apply_serves(tmp_path):
    docs = _k8s_docs()
    dep = _named(docs, "Deployment", "cdc-apply")
    pod = dep["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["args"][:3] == ["apply", "--config", "/etc/cdc/cdc.yaml"]
    assert dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"]["type"] == "Recreate"
    # the config the pod reads: the ConfigMap behind /etc/cdc, with the pod's environment applied
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == "/etc/cdc")
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    cm = _named(docs, "ConfigMap", volume["configMap"]["name"])
    env = {e["name"]: e["value"] for e in container["env"]}  # no secretKeyRef: secrets are files
    text = cm["data"]["cdc.yaml"]
    assert "password:" not in text and "change-me" not in text
    files = k8s_secret_files(docs, pod, container, tmp_path / "mounted")
    (tmp_path / "cdc.yaml").write_text(rewrite(text, files))
    config = load_config(tmp_path / "cdc.yaml", env=env)
    assert config.apply and not config.sources  # an apply-only config
    assert config.targets[0].login_kwargs()["password"] == "change-me"  # read from the mounted Secret
    args = container["args"]
    port = int(args[args.index("--metrics-port") + 1]) if "--metrics-port" in args else \
        config.metrics.apply_port if config.metrics.apply_port is not None else config.metrics.port + 1
    assert config.metrics.host == "0.0.0.0"  # the kubelet and Prometheus reach it from outside the pod
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    served = _served_paths()
    assert served["/nothing"] == 404  # the check below can fail
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"), ("startupProbe", "/healthz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path and served[get["path"]] == 200, (probe, get)
        assert ports[get["port"]] == port, (probe, get, port)
    annotations = dep["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true" and int(annotations["prometheus.io/port"]) == port
    assert served[annotations["prometheus.io/path"]] == 200
    svc = _named(docs, "Service", "cdc-apply-metrics")
    assert svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]
    assert svc["spec"]["ports"][0]["targetPort"] == "metrics" and svc["spec"]["ports"][0]["port"] == port
    # the stop budget covers a micro-batch in flight
    assert pod["terminationGracePeriodSeconds"] >= 30


def test_the_compose_apply_service_is_checked_on_its_healthz_and_scraped():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]["cdc-apply"]
    cmd = compose["command"]
    port = cmd[cmd.index("--metrics-port") + 1]
    check = " ".join(compose["healthcheck"]["test"])
    url = re.search(r"http://127\.0\.0\.1:(\d+)(/\w+)", check)
    assert url and url.group(1) == port and _served_paths()[url.group(2)] == 200, check
    prom = yaml.safe_load((DEPLOY / "prometheus/prometheus.yml").read_text())
    job = next(j for j in prom["scrape_configs"] if j["job_name"] == "cdc-apply")
    assert job["static_configs"][0]["targets"][0].endswith(":" + port) and job["metrics_path"] == "/metrics"
