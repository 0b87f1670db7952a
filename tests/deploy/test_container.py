"""The product's image built and run as an operator runs it: deploy/Dockerfile on a local Debian base
(debootstrap, no image registry needed) with Debian's Docker daemon started here on its own socket.

The daemon container (`cdc run`) and the apply container (`cdc apply`) run on the host's network against
this test's services on loopback (MariaDB, the broker, PostgreSQL), with a read-only root file system, as
uid 10001, the config and the secrets mounted as files, and a writable state directory. The test checks each
container's /healthz and /readyz and the image's HEALTHCHECK (per role), that the change stream holds
records, and that the target is EQUAL to the source (`cdc compare`).

Slow (a cold run builds the base and the image from Debian's packages): `make test-deploy` runs it, apart
from `make test`. The recipe is the one of docs/deploy.md ("Building the image without a registry").
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from cdc.dev.ports import HOST, free_port, wait_until
from cdc.stream.envelope import changes_topic
from tests.fixtures.docker_daemon import DockerDaemon, base_image, build_context, install_container_deps, wheelhouse

pytestmark = [pytest.mark.deploy, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.postgres, pytest.mark.timeout(7200)]

CDC = str(Path(sys.executable).with_name("cdc"))
IMAGE = "cdc-service:test"
UID = "10001"


@pytest.fixture(scope="module")
def docker():
    install_container_deps()
    daemon = DockerDaemon().start()
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture(scope="module")
def image(docker, tmp_path_factory):
    release = (os.popen(". /etc/os-release && echo $VERSION_CODENAME").read().strip() or "bookworm")
    base = base_image(docker, f"cdc-base:{release}")
    context = build_context(tmp_path_factory.mktemp("image") / "context", wheelhouse())
    # the README's command, from the context directory
    docker.check("build", "--network", "host", "-f", "deploy/Dockerfile", "--build-arg", f"BASE_IMAGE={base}",
                 "--build-arg", "WHEELHOUSE=1", "-t", IMAGE, str(context), timeout=3600)
    print("image:", docker.check("image", "ls", "--format", "{{.Repository}}:{{.Tag}} {{.Size}}").strip())
    return IMAGE


def _http(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port}{path}", timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _secret(path: Path, value: str) -> None:
    path.write_text(value)
    os.chown(path, int(UID), int(UID))
    path.chmod(0o400)


def _state_dir(path: Path) -> Path:
    path.mkdir()
    os.chown(path, int(UID), int(UID))
    return path


def test_daemon_and_apply_containers_stream_a_database_to_an_equal_target(
        docker, image, tmp_path, mariadb_primary, broker, postgres, topic_prefix, tmp_mysql_db):
    db, my = tmp_mysql_db, mariadb_primary
    schema = "t" + topic_prefix.replace("-", "_")[-12:].lower()
    with postgres.connect() as c:
        c.execute(f"CREATE SCHEMA {schema}")
        c.commit()
    broker.create_topic(changes_topic(topic_prefix, "src"))
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    _secret(secrets / "source-password", "cdc")
    _secret(secrets / "target-password", "cdc")
    pg_host, pg_port = postgres.address.rsplit(":", 1)
    config = {
        "sources": [{"name": "src", "kind": "mysql", "hosts": [my.address], "user": "cdc",
                     "password_file": "/run/secrets/cdc/source-password", "tables": [f"{db}.*"],
                     "heartbeat_interval_s": 0.5, "snapshot": "never"}],
        "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": topic_prefix},
        "targets": [{"name": "pg", "kind": "postgres", "dsn": f"postgresql://cdc@{pg_host}:{pg_port}/cdc",
                     "password_file": "/run/secrets/cdc/target-password", "schema": schema}],
        "apply": [{"source": "src", "target": "pg", "checkpoint_dir": "/var/lib/cdc/checkpoints/src-pg",
                   "trigger_interval_s": 0.5}],
        "logging": {"level": "INFO", "json": True},
    }
    (tmp_path / "cdc.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "cdc.yaml").chmod(0o444)
    ports = {"daemon": free_port(), "apply": free_port()}
    common = ["--network", "host", "--read-only", "--tmpfs", "/tmp",
              "-v", f"{tmp_path / 'cdc.yaml'}:/etc/cdc/cdc.yaml:ro", "-v", f"{secrets}:/run/secrets/cdc:ro",
              # the host's network: this test's ports, on loopback only
              "-e", "CDC_METRICS__HOST=127.0.0.1", "-e", f"CDC_METRICS__PORT={ports['daemon']}",
              "-e", f"CDC_METRICS__APPLY_PORT={ports['apply']}", "-e", "CDC_PROGRESS=off"]
    docker.check("run", "-d", "--name", "cdc-daemon", *common,
                 "-v", f"{_state_dir(tmp_path / 'daemon-state')}:/var/lib/cdc", image)
    docker.check("run", "-d", "--name", "cdc-apply", *common,
                 "-v", f"{_state_dir(tmp_path / 'apply-state')}:/var/lib/cdc", image,
                 "apply", "--config", "/etc/cdc/cdc.yaml")

    def logs(name: str) -> str:
        p = docker.docker("logs", "--tail", "60", name, timeout=30)
        return p.stdout + p.stderr

    def running(name: str):
        def check() -> str | None:
            state = docker.docker("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", name).stdout
            return None if state.startswith("running") else f"{name}: {state.strip()}\n{logs(name)}"
        return check

    for role, name in (("daemon", "cdc-daemon"), ("apply", "cdc-apply")):
        inspect = docker.check("inspect", "--format", "{{.HostConfig.ReadonlyRootfs}} {{.Config.User}}", name).split()
        assert inspect == ["true", f"{UID}:{UID}"], inspect
        assert docker.check("exec", name, "id", "-u").strip() == UID
        wait_until(lambda port=ports[role]: _http(port, "/readyz") == 200, 300, f"{name} /readyz",
                   interval=1, alive=running(name))
        assert _http(ports[role], "/healthz") == 200
        # the image's HEALTHCHECK: the first probe runs one interval (15 s) after the start
        wait_until(lambda n=name: docker.docker("inspect", "--format", "{{.State.Health.Status}}", n).stdout.strip()
                   == "healthy", 120, f"{name} healthy (docker's HEALTHCHECK)", interval=2, alive=running(name))
    read_only = docker.docker("exec", "cdc-daemon", "touch", "/opt/cdc/x")
    assert read_only.returncode != 0 and "Read-only file system" in read_only.stderr, read_only

    my.query(f"CREATE TABLE `{db}`.items (id INT PRIMARY KEY, name VARCHAR(40), qty DECIMAL(10,2))")
    for i in range(200):
        my.query(f"INSERT INTO `{db}`.items VALUES ({i}, 'item {i}', {i}.25)")
    my.query(f"UPDATE `{db}`.items SET qty = qty + 1 WHERE id % 3 = 0")
    my.query(f"DELETE FROM `{db}`.items WHERE id % 7 = 0")

    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"{topic_prefix}-probe"})
    try:
        topic = changes_topic(topic_prefix, "src")
        wait_until(lambda: consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1] > 200, 120,
                   f"records in {topic}", interval=1, alive=running("cdc-daemon"))
    finally:
        consumer.close()

    host_config = tmp_path / "host-cdc.yaml"  # the same config with the secrets where this host sees them
    host_config.write_text(yaml.safe_dump({
        **config, "sources": [{**config["sources"][0], "password_file": str(secrets / "source-password")}],
        "targets": [{**config["targets"][0], "password_file": str(secrets / "target-password")}]}))
    last: list[str] = []

    def equal() -> bool:
        p = subprocess.run([CDC, "compare", "--config", str(host_config), "--source", "src", "--target", "pg",
                            "--tables", f"{db}.items"], capture_output=True, text=True, check=False, timeout=120)
        last[:] = [p.stdout + p.stderr]
        return p.returncode == 0 and "items: EQUAL" in p.stdout

    try:
        wait_until(equal, 300, "cdc compare EQUAL", interval=3, alive=running("cdc-apply"))
    except TimeoutError as exc:
        raise AssertionError(f"{exc}\n{last[0] if last else ''}\n{logs('cdc-apply')}") from None
    with postgres.connect() as c:
        assert c.execute(f"SELECT count(*) FROM {schema}.items").fetchone()[0] == 200 - 29

    # both drain and stop on SIGTERM (tini forwards it) within the budget
    t0 = time.monotonic()
    docker.check("stop", "-t", "60", "cdc-daemon", "cdc-apply", timeout=150)
    codes = docker.check("inspect", "--format", "{{.State.ExitCode}}", "cdc-daemon", "cdc-apply").split()
    assert codes == ["0", "0"], (codes, logs("cdc-daemon"), logs("cdc-apply"))
    assert time.monotonic() - t0 < 150
