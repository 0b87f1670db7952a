"""Static checks of the image and compose files of deploy/ that break a deployment quietly: the health
check of each role, the build context, the Kafka data directory, and the pointers to documentation."""

from __future__ import annotations

import http.server
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from cdc.dev.ports import free_port
from tests.fixtures.deploy import K8S, docker_excludes, dockerignore_patterns
from tests.fixtures.prometheus import DEPLOY

ROOT = DEPLOY.parent
HEALTHCHECK = DEPLOY / "healthcheck.py"


class _Health(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status if self.path == "/healthz" else 404)
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, *args) -> None:
        pass


def _serve(status: int) -> http.server.HTTPServer:
    handler = type("Health", (_Health,), {"status": status})
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _check(env: dict[str, str], proc: Path | None = None) -> subprocess.CompletedProcess:
    """The health check as the image runs it; ``proc``: the process table it looks in (default: an empty one,
    so that a ``cdc`` process on this machine does not count)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CDC_METRICS__")}
    if proc is None:
        proc = HEALTHCHECK.parent / "no-such-process-table"
    env = {**env, "CDC_HEALTHCHECK_PROC": str(proc)}
    return subprocess.run([sys.executable, str(HEALTHCHECK)], env={**clean, **env}, capture_output=True, check=False,
                          text=True, timeout=30)


def test_the_image_runs_the_role_aware_health_check():
    text = (DEPLOY / "Dockerfile").read_text()
    assert "COPY deploy/healthcheck.py /opt/cdc/healthcheck.py" in text
    assert re.search(r'HEALTHCHECK .*\\\n\s+CMD \["python", "/opt/cdc/healthcheck.py"\]', text), text


def test_health_check_passes_for_the_apply_job_and_for_the_daemon_and_fails_otherwise():
    ok, failing = _serve(200), _serve(503)
    closed = free_port()
    try:
        ok_port, failing_port = ok.server_address[1], failing.server_address[1]
        # the apply job: its port is the daemon's + 1 unless given (metrics.apply_port)
        r = _check({"CDC_METRICS__PORT": str(ok_port - 1)})
        assert r.returncode == 0, r.stderr
        r = _check({"CDC_METRICS__PORT": str(closed), "CDC_METRICS__APPLY_PORT": str(ok_port)})
        assert r.returncode == 0, r.stderr
        # the daemon
        r = _check({"CDC_METRICS__PORT": str(ok_port), "CDC_METRICS__APPLY_PORT": str(closed)})
        assert r.returncode == 0, r.stderr
        # nothing answers, or the process says it is unhealthy
        r = _check({"CDC_METRICS__PORT": str(closed), "CDC_METRICS__APPLY_PORT": str(failing_port)})
        assert r.returncode == 1 and "HTTP 503" in r.stderr and f":{closed}/healthz" in r.stderr, r.stderr
    finally:
        ok.shutdown()
        failing.shutdown()


def _procs(tmp_path: Path, *argvs: list[str]) -> Path:
    for pid, argv in enumerate(argvs, start=1):
        (tmp_path / str(pid)).mkdir(parents=True)
        (tmp_path / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (tmp_path / "self").mkdir()
    return tmp_path


def test_health_check_probes_only_the_port_of_the_role_that_runs_in_the_container(tmp_path):
    """With the host's network a neighbour's port answers too: the daemon's container is not healthy because the
    apply job next to it is, nor the other way round."""
    ok, failing = _serve(200), _serve(503)
    try:
        ok_port, failing_port = ok.server_address[1], failing.server_address[1]
        tini = ["tini", "--"]
        daemon = _procs(tmp_path / "d", tini + ["cdc"], ["/opt/cdc/bin/python", "/opt/cdc/bin/cdc", "run", "--config",
                                                        "/etc/cdc/cdc.yaml"])
        apply = _procs(tmp_path / "a", ["/opt/cdc/bin/python", "/opt/cdc/bin/cdc", "apply", "--config", "c.yaml"])
        both = {"CDC_METRICS__PORT": str(failing_port), "CDC_METRICS__APPLY_PORT": str(ok_port)}
        r = _check(both, daemon)
        assert r.returncode == 1 and f":{failing_port}/healthz: HTTP 503" in r.stderr and f":{ok_port}/" not in r.stderr
        assert _check(both, apply).returncode == 0
        flipped = {"CDC_METRICS__PORT": str(ok_port), "CDC_METRICS__APPLY_PORT": str(failing_port)}
        assert _check(flipped, daemon).returncode == 0
        assert _check(flipped, apply).returncode == 1
        # the apply job's --metrics-port wins over the environment, as in `cdc apply`
        flag = _procs(tmp_path / "f", ["cdc", "apply", "--config", "c.yaml", "--metrics-port", str(ok_port)])
        assert _check(flipped, flag).returncode == 0
    finally:
        ok.shutdown()
        failing.shutdown()


@pytest.mark.parametrize("ignore", [ROOT / ".dockerignore", DEPLOY / "Dockerfile.dockerignore"],
                         ids=["classic builder", "BuildKit"])
def test_the_build_context_holds_the_sources_and_nothing_of_a_working_checkout(ignore):
    patterns = dockerignore_patterns(ignore)
    for path in ("pyproject.toml", "README.md", "cdc/__init__.py", "readers/mysql/reader.py",
                 "streaming/apply/job.py", "deploy/healthcheck.py"):
        assert not docker_excludes(patterns, path), f"{ignore.name} leaves out {path}, which the image needs"
    for path in (".venv/bin/python", ".venv/lib/python3.11/site-packages/pyspark/jars/spark-core.jar",
                 ".git/HEAD", "tests/unit/__init__.py", "cdc/__pycache__/config.cpython-311.pyc",
                 "deploy/secrets/target-pg-password", "bench-results/run.json"):
        assert docker_excludes(patterns, path), f"{ignore.name} sends {path} to the Docker daemon"


def test_both_dockerignore_files_say_the_same():
    assert dockerignore_patterns(ROOT / ".dockerignore") == dockerignore_patterns(DEPLOY / "Dockerfile.dockerignore")


def test_what_the_dockerfile_copies_is_in_the_build_context():
    patterns = dockerignore_patterns(ROOT / ".dockerignore")
    copied = re.findall(r"^COPY (?!--from)(.+) \S+$", (DEPLOY / "Dockerfile").read_text(), re.MULTILINE)
    sources = [s for line in copied for s in line.split()]
    assert "deploy/healthcheck.py" in sources
    for src in sources:
        if "*" in src:  # optional (the wheelhouse of a build without the package index): in the context when there
            src = src.replace("*", "") + "/pkg-1.0-py3-none-any.whl"
        else:
            assert (ROOT / src).exists(), src
        assert not docker_excludes(patterns, src), f"COPY {src}: left out of the build context"


def test_compose_kafka_keeps_its_log_on_the_volume():
    kafka = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]["kafka"]
    log_dirs = kafka["environment"].get("KAFKA_LOG_DIRS")
    assert log_dirs, "KAFKA_LOG_DIRS unset: the apache/kafka image writes to /tmp/kraft-combined-logs, off the volume"
    mounts = {v.split(":")[1] for v in kafka["volumes"] if not v.split(":")[0].startswith(".")}
    for d in str(log_dirs).split(","):
        assert any(d == m or d.startswith(m.rstrip("/") + "/") for m in mounts), (d, mounts)


def _readme_headings() -> set[str]:
    return {m.strip().strip("#").strip() for m in re.findall(r"^#+ .+$", (ROOT / "README.md").read_text(), re.MULTILINE)}


DEPLOY_TEXTS = sorted(p for p in DEPLOY.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml", ".py", "")
                      and "secrets" not in p.parts)


@pytest.mark.parametrize("path", DEPLOY_TEXTS, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_pointers_to_the_documentation_lead_somewhere(path: Path):
    text = path.read_text()
    for section in re.findall(r'README "([^"]+)"', text):
        assert section in _readme_headings(), f"{path.name} points to README section {section!r}, which is not there"
    for doc in re.findall(r"\bdocs/[\w./-]+\.md\b", text):
        assert (ROOT / doc).exists(), f"{path.name} points to {doc}, which does not exist"


def test_the_apply_deployment_points_to_the_cluster_recipe():
    assert "docs/spark-cluster.md" in (K8S / "apply-deployment.yaml").read_text()


def test_the_container_test_runs_apart_from_make_test_and_in_ci():
    """`make test` leaves the deploy marker out (it builds an image: longer than the suite's CI budget allows);
    `make test-deploy` selects it and .ci/run runs both."""
    import shlex

    import tomllib

    addopts = shlex.split(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
                          ["addopts"])
    assert addopts[addopts.index("-m") + 1] == "not deploy", addopts
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test-deploy:.*\n\t\$\(PY\) -m pytest -m deploy tests/deploy", makefile, re.MULTILINE)
    assert "pytest.mark.deploy" in (ROOT / "tests" / "deploy" / "test_container.py").read_text()
    steps = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("make ")]
    assert steps == ["make test", "make test-deploy"], steps
