"""deploy/: every password reaches the containers as a mounted file, never as an environment variable.

Kubernetes: a ``secret`` volume, read-only at /run/secrets/cdc, files 0400 readable by the pod's user
(through fsGroup); compose: ``secrets:`` from files. Every ``password_file`` a config names is a file
one of those mounts provides, and no environment variable carries a password or a DSN holding one.
"""

from __future__ import annotations

import yaml

from tests.fixtures.deploy import (
    DSN_WITH_PASSWORD,
    K8S,
    SECRET_ENV_NAME,
    compose_secret_files,
    k8s_docs,
    k8s_secret_files,
    named,
    password_files,
)
from tests.fixtures.prometheus import DEPLOY

PODS = {"cdc-daemon": "cdc-config", "cdc-apply": "cdc-apply-config"}  # Deployment -> its ConfigMap


def _env_leaks(env: dict) -> list[str]:
    return [f"{k}={v}" for k, v in env.items() if SECRET_ENV_NAME.search(k) or DSN_WITH_PASSWORD.search(str(v))]


def test_the_leak_checks_can_fail():
    assert _env_leaks({"CDC_SOURCES__0__PASSWORD": "x"}) and _env_leaks({"CDC_TARGETS__0__DSN": "postgresql://a@h/d"})
    assert _env_leaks({"X": "postgresql://cdc:pw@h:5432/d"}) and _env_leaks({"POSTGRES_PASSWORD": "x"})
    assert not _env_leaks({"POSTGRES_PASSWORD_FILE": "/run/secrets/p", "GF_SECURITY_ADMIN_PASSWORD__FILE": "/f",
                           "CDC_METRICS__HOST": "0.0.0.0"})
    assert password_files("a: {password_file: /x, client: {sasl.password_file: /y}}\nb: [{c_file: /z}]") == \
        ["/x", "/y", "/z"]


def test_kubernetes_pods_read_their_passwords_from_a_mounted_secret(tmp_path):
    docs = k8s_docs()
    for deployment, configmap in PODS.items():
        pod = named(docs, "Deployment", deployment)["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert not [e for e in container.get("env", []) if "valueFrom" in e], deployment  # no secretKeyRef at all
        assert not _env_leaks({e["name"]: e.get("value", "") for e in container.get("env", [])}), deployment
        assert not container.get("envFrom"), deployment
        assert not [a for a in container["args"] if DSN_WITH_PASSWORD.search(a) or "password" in a.lower()]
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = [m for m in container["volumeMounts"] if "secret" in volumes[m["name"]]]
        assert [m["mountPath"] for m in mounts] == ["/run/secrets/cdc"], deployment
        assert mounts[0]["readOnly"] is True
        secret = volumes[mounts[0]["name"]]["secret"]
        assert secret["defaultMode"] == 0o400, deployment  # YAML 0400 is octal
        # 0400 files are root's; the kubelet gives them the pod's fsGroup and group read: the user reads them
        ctx = pod["securityContext"]
        assert ctx["runAsUser"] != 0 and ctx["fsGroup"] == ctx["runAsGroup"], deployment
        text = named(docs, "ConfigMap", configmap)["data"]["cdc.yaml"]
        named_files = password_files(text)
        mounted = k8s_secret_files(docs, pod, container, tmp_path / deployment)
        assert named_files and set(named_files) <= set(mounted), (deployment, named_files, sorted(mounted))
        assert all(p.startswith("/run/secrets/cdc/") for p in named_files)
        assert "password:" not in text and not DSN_WITH_PASSWORD.search(text)
    secret_doc = named(docs, "Secret", "cdc-secrets")["stringData"]
    assert not [v for v in secret_doc.values() if DSN_WITH_PASSWORD.search(v)]  # passwords, not DSNs


def test_compose_mounts_every_password_as_a_secret_file():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    for name, service in compose["services"].items():
        env = service.get("environment", {})
        assert not _env_leaks(env), (name, _env_leaks(env))
        for key, value in env.items():  # a *_FILE variable of an image names a secret compose mounts
            if key.endswith("_FILE"):
                assert value in compose_secret_files(compose, name), (name, key, value)
        command = " ".join(service.get("command", []) if isinstance(service.get("command"), list) else [])
        assert not DSN_WITH_PASSWORD.search(command), name
    for secret in compose["secrets"].values():
        assert set(secret) == {"file"} and (DEPLOY / secret["file"]).read_text().strip(), secret
    text = (DEPLOY / "cdc.yaml").read_text()
    assert "password:" not in text and not DSN_WITH_PASSWORD.search(text)
    named_files = password_files(text)
    assert named_files and all(p.startswith("/run/secrets/cdc/") for p in named_files)
    for service in ("cdc-daemon", "cdc-apply"):  # both load all of cdc.yaml
        assert set(named_files) <= set(compose_secret_files(compose, service)), service


def test_the_manifests_name_no_password_outside_the_secret():
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "secret.yaml":
            continue
        assert "change-me" not in path.read_text() and not DSN_WITH_PASSWORD.search(path.read_text()), path
