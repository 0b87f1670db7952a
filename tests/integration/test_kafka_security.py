"""kafka.client on a TLS broker that requires a client certificate (tls_broker: tansu behind a TLS front,
cdc.dev.tls_proxy), the client key encrypted with a password read from a file (ssl.key.password_file): every
client the product creates reaches it from the config alone, and a wrong CA / key password is a clear error
naming the broker and the setting, never the password.

SASL is not tested: under ``--authentication`` tansu 0.6.0 (the shipped broker) offers SCRAM-SHA-256/512
(PLAIN: ``NoSharedMechanism``) but no user can be provisioned: AlterUserScramCredentials is refused before a
login (``NotAuthenticated``), and a user created on the same s3 storage by the broker started without
``--authentication`` is gone after the restart with it (``broker responded with unknown-user``).
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import orjson
import pytest
import yaml

from cdc.config.loader import load_config
from cdc.consumer import ChangeStreamConsumer
from cdc.consumer.transactions import Transaction
from cdc.errors import ConfigError, PublishError
from cdc.publish.recovery import read_tail
from cdc.publish.topics import ensure_topic, retention_warnings, topic_id, topic_spec
from cdc.stream.serde import get_serdes
from streaming.testing import StreamBuilder, produce

pytestmark = pytest.mark.kafka
ROOT = Path(__file__).resolve().parents[2]
TRANSACTIONS = 30


def secured_client(tmp_path: Path, certs, ca: Path | None = None, key_password: str | None = None) -> tuple[dict, str]:
    """``kafka.client`` for tls_broker with the client key encrypted under a fresh password, which is read
    from a file; returns (client block, the password)."""
    password = "kp-" + uuid.uuid4().hex[:12]
    (tmp_path / "key-password").write_text(password + "\n")
    key = tmp_path / "client-key.enc.pem"
    subprocess.run(["openssl", "pkey", "-in", str(certs.client_key), "-aes256", "-passout",
                    f"file:{tmp_path / 'key-password'}", "-out", str(key)], check=True, capture_output=True, timeout=60)
    (tmp_path / "given-password").write_text((key_password or password) + "\n")
    return {"security.protocol": "SSL", "ssl.ca.location": str(ca or certs.ca),
            "ssl.certificate.location": str(certs.client_cert), "ssl.key.location": str(key),
            "ssl.key.password_file": str(tmp_path / "given-password")}, password


def write_config(tmp_path: Path, broker, prefix: str, client: dict) -> Path:
    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(yaml.safe_dump({
        "sources": [{"name": "src", "kind": "mysql", "hosts": ["127.0.0.1:1"], "user": "u", "password": "p",
                     "tables": ["d.*"]}],
        "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": prefix, "client": client}}))
    return cfg


def cli(cfg: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdc.cli", *args, "--config", str(cfg), "--source", "src"],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False)


def test_every_client_reaches_the_tls_broker_from_the_config_alone(tls_broker, tls_certs, tmp_path, topic_prefix):
    client, password = secured_client(tmp_path, tls_certs)
    cfg = write_config(tmp_path, tls_broker, topic_prefix, client)
    kafka = load_config(cfg).kafka
    conn = kafka.connection()
    topic = f"{topic_prefix}.src.changes"
    ensure_topic(conn, topic, topic_spec(kafka, "changes"))  # admin
    assert topic_id(conn, topic) is not None and retention_warnings(conn, topic) == []
    sb = StreamBuilder("src")
    sb.schema("d.t", [("id", "int"), ("v", "varchar")], ["id"])
    for i in range(TRANSACTIONS):
        sb.tx(("c", "d.t", None, {"id": i, "v": f"v{i}"}), ("u", "d.t", {"id": i, "v": f"v{i}"}, {"id": i, "v": "w"}))
    enc = sb.encoded()
    produce(conn, topic, enc)  # a producer
    tail = read_tail(conn, topic, *get_serdes("json"))  # the daemon's start-up tail read
    assert tail.last_sequence == len(enc) and tail.end_offset == len(enc)

    for client_kind in ("confluent", "kafka-python"):  # the consumer library on both clients
        consumer = ChangeStreamConsumer.from_config(load_config(cfg), "src", client=client_kind, start="beginning")
        try:
            txs = [i for i in consumer.items(2.0) if isinstance(i, Transaction)]
        finally:
            consumer.close()
        assert len(txs) == TRANSACTIONS and txs[-1].changes[-1].value["after"] == {"id": TRANSACTIONS - 1, "v": "w"}

        out = cli(cfg, "tail", "--from-beginning", "--idle-exit", "2", "--client", client_kind)  # `cdc tail`
        assert out.returncode == 0, out.stderr
        values = [orjson.loads(line)["value"] for line in out.stdout.splitlines()]
        assert sum(v.get("status") == "END" for v in values) == TRANSACTIONS, out.stderr
        assert password not in out.stdout + out.stderr

    out = cli(cfg, "stream", "reset")  # `cdc stream reset` without --yes: describes the stream, changes nothing
    assert out.returncode == 1 and f"last sequence {len(enc)}" in out.stdout, out.stdout + out.stderr
    assert password not in out.stdout + out.stderr


def test_a_wrong_ca_names_the_broker_and_the_setting(tls_broker, tls_certs, other_ca_certs, tmp_path, topic_prefix):
    client, password = secured_client(tmp_path, tls_certs, ca=other_ca_certs.ca)
    kafka = load_config(write_config(tmp_path, tls_broker, topic_prefix, client)).kafka
    with pytest.raises(PublishError) as e:
        ensure_topic(kafka.connection(), f"{topic_prefix}.src.changes", timeout_s=5)
    msg = str(e.value)
    assert tls_broker.bootstrap in msg and "ssl.ca.location" in msg and "certificate verify failed" in msg, msg
    assert password not in msg

    out = cli(write_config(tmp_path, tls_broker, topic_prefix, client), "tail", "--from-beginning",
              "--idle-exit", "1", timeout=120)
    assert out.returncode != 0 and tls_broker.bootstrap in out.stderr and "ssl.ca.location" in out.stderr, out.stderr
    assert password not in out.stdout + out.stderr


def test_a_wrong_key_password_names_the_key_setting_and_never_the_password(tls_broker, tls_certs, tmp_path,
                                                                           topic_prefix):
    wrong = "wrong-" + uuid.uuid4().hex[:8]
    client, password = secured_client(tmp_path, tls_certs, key_password=wrong)
    cfg = write_config(tmp_path, tls_broker, topic_prefix, client)
    with pytest.raises(ConfigError) as e:  # librdkafka refuses the client at creation: no retry can help
        ensure_topic(load_config(cfg).kafka.connection(), f"{topic_prefix}.src.changes", timeout_s=5)
    msg = str(e.value)
    assert tls_broker.bootstrap in msg and "ssl.key.location" in msg and "kafka.client" in msg, msg
    assert wrong not in msg and password not in msg
    out = cli(cfg, "tail", "--from-beginning", "--idle-exit", "1")
    assert out.returncode != 0 and "ssl.key" in out.stderr, out.stderr
    assert wrong not in out.stdout + out.stderr and password not in out.stdout + out.stderr


def test_a_client_without_certificate_is_refused_by_the_front(tls_broker, tls_certs, tmp_path, topic_prefix):
    client = {"security.protocol": "SSL", "ssl.ca.location": str(tls_certs.ca)}
    kafka = load_config(write_config(tmp_path, tls_broker, topic_prefix, client)).kafka
    with pytest.raises(PublishError) as e:
        ensure_topic(kafka.connection(), f"{topic_prefix}.src.changes", timeout_s=5)
    # TLS 1.3: the client's handshake completes before the server checks its certificate, so librdkafka only
    # sees the connection closed ("brokers are down"), not a TLS error it could name
    assert tls_broker.bootstrap in str(e.value) and "brokers are down" in str(e.value), str(e.value)
