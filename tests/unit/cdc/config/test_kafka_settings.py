"""kafka.client / kafka.producer / kafka.consumer: one settings dict per role, secrets masked and read from files,
the kafka-python translation, the Spark options (a secret file travels as its path)."""

from __future__ import annotations

import pickle

import pytest

from cdc.config.kafka_settings import KafkaConnection
from cdc.config.loader import parse_config
from cdc.errors import ConfigError
from cdc.publish.producer import producer_config

PASSWORD = "pw-6f1c2b9e"


def _kafka(tmp_path, **blocks):
    return parse_config({"kafka": {"bootstrap_servers": "b1:9093", **blocks}}).kafka


def test_the_client_block_reaches_every_role_and_role_extras_only_their_role():
    k = parse_config({"kafka": {"bootstrap_servers": "b1:9093", "client": {"security.protocol": "SSL"},
                                "producer": {"linger.ms": 3}, "consumer": {"fetch.wait.max.ms": 7}}}).kafka
    conn = k.connection()
    admin, producer, consumer = (conn.settings(r) for r in ("admin", "producer", "consumer"))
    assert all(s["bootstrap.servers"] == "b1:9093" and s["security.protocol"] == "SSL" and s["logger"].name == "cdc.kafka"
               for s in (admin, producer, consumer))
    assert producer["linger.ms"] == 3 and "linger.ms" not in consumer and "linger.ms" not in admin
    assert consumer["fetch.wait.max.ms"] == 7 and "fetch.wait.max.ms" not in producer and "fetch.wait.max.ms" not in admin
    assert conn.settings("consumer", {"fetch.wait.max.ms": 100, "group.id": "g"})["fetch.wait.max.ms"] == 7  # ours are defaults


def test_a_secret_is_masked_everywhere_but_in_the_dict_handed_to_the_client(tmp_path):
    k = _kafka(tmp_path, client={"sasl.username": "cdc", "sasl.password": PASSWORD})
    conn = k.connection()
    for text in (repr(k), str(k), repr(conn), k.model_dump_json(), repr(pickle.loads(pickle.dumps(conn)))):
        assert PASSWORD not in text
    assert conn.settings("admin")["sasl.password"] == PASSWORD
    assert pickle.loads(pickle.dumps(conn)).settings("consumer")["sasl.password"] == PASSWORD  # to Spark executors


def test_a_password_file_is_read_with_one_trailing_newline_stripped(tmp_path):
    f = tmp_path / "kafka"
    f.write_text(PASSWORD + "\n")
    conn = _kafka(tmp_path, client={"sasl.password_file": str(f), "ssl.key.password_file": str(f)}).connection()
    assert conn.settings("producer")["sasl.password"] == PASSWORD
    assert conn.settings("producer")["ssl.key.password"] == PASSWORD
    assert "sasl.password_file" not in conn.settings("producer")


def test_an_unreadable_password_file_names_the_key_and_the_file(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(ConfigError) as e:
        _kafka(tmp_path, client={"sasl.password_file": str(missing)})
    assert "kafka.client.sasl.password_file" in str(e.value) and str(missing) in str(e.value)
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match=r"kafka\.consumer\.sasl\.password_file.*empty"):
        _kafka(tmp_path, consumer={"sasl.password_file": str(empty)})


def test_a_secret_that_parsed_as_a_list_is_refused_without_showing_it(tmp_path):
    with pytest.raises(ConfigError) as e:
        _kafka(tmp_path, client={"sasl.password": ["hunter2"]})
    assert "kafka.client.sasl.password: a secret is text" in str(e.value) and "hunter2" not in str(e.value)


def test_a_secret_given_twice_or_a_service_setting_is_refused_by_name(tmp_path):
    f = tmp_path / "kafka"
    f.write_text(PASSWORD)
    with pytest.raises(ConfigError, match=r"kafka\.client\.sasl\.password_file: give kafka\.client\.sasl\.password or"):
        _kafka(tmp_path, client={"sasl.password": "x", "sasl.password_file": str(f)})
    with pytest.raises(ConfigError, match=r"kafka\.client\.bootstrap\.servers is set by the service"):
        _kafka(tmp_path, client={"bootstrap.servers": "elsewhere:1"})
    conn = _kafka(tmp_path, client={"enable.idempotence": False}).connection()
    with pytest.raises(ConfigError) as e:
        producer_config(conn)  # the guarantees rest on it: not even the client block may set it
    assert "kafka.client.enable.idempotence" in str(e.value) and "kafka.idempotence" in str(e.value)


def test_kafka_python_gets_the_same_settings_under_its_own_names(tmp_path):
    f = tmp_path / "kafka"
    f.write_text(PASSWORD)
    conn = _kafka(tmp_path, client={
        "security.protocol": "SASL_SSL", "ssl.ca.location": "/ca.pem", "ssl.certificate.location": "/c.pem",
        "ssl.key.location": "/k.pem", "ssl.key.password": "kp", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "cdc", "sasl.password_file": str(f), "client.id": "cdc-1"},
        consumer={"ssl.endpoint.identification.algorithm": "none"}).connection()
    assert conn.kafka_python() == {
        "security_protocol": "SASL_SSL", "ssl_cafile": "/ca.pem", "ssl_certfile": "/c.pem", "ssl_keyfile": "/k.pem",
        "ssl_password": "kp", "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "cdc",
        "sasl_plain_password": PASSWORD, "client_id": "cdc-1", "ssl_check_hostname": False}
    assert _kafka(tmp_path, client={"security.protocol": "SSL"}).connection().kafka_python()["ssl_check_hostname"]


def test_a_setting_kafka_python_cannot_take_is_an_error_naming_it(tmp_path):
    conn = _kafka(tmp_path, client={"security.protocol": "SSL", "ssl.keystore.location": "/ks.p12"}).connection()
    with pytest.raises(ConfigError) as e:
        conn.kafka_python()
    assert e.value.fields["key"] == "kafka.client.ssl.keystore.location"
    assert "no kafka-python equivalent" in str(e.value)


def test_spark_options_carry_a_secret_file_as_its_path_and_come_back_whole(tmp_path):
    f = tmp_path / "kafka"
    f.write_text(PASSWORD)
    conn = _kafka(tmp_path, client={"security.protocol": "SASL_SSL", "sasl.password_file": str(f)},
                  consumer={"fetch.wait.max.ms": 20}).connection()
    opts = conn.spark_options()
    assert opts == {"bootstrap_servers": "b1:9093", "kafka.security.protocol": "SASL_SSL",
                    "kafka.sasl.password_file": str(f), "kafka.consumer.fetch.wait.max.ms": "20"}
    assert PASSWORD not in repr(opts)
    back = KafkaConnection.from_options({**opts, "topic": "t"})
    assert back.settings("consumer")["sasl.password"] == PASSWORD
    assert back.settings("consumer")["fetch.wait.max.ms"] == "20"
    inline = _kafka(tmp_path, client={"sasl.password": PASSWORD}).connection().spark_options()
    assert inline["kafka.sasl.password"] == PASSWORD  # Spark's default redaction regex masks keys with "password"


def test_a_bare_bootstrap_string_is_a_plaintext_connection():
    assert KafkaConnection.of("h:1").settings("admin")["bootstrap.servers"] == "h:1"
    assert set(KafkaConnection.of("h:1").settings("admin")) == {"bootstrap.servers", "logger"}


def test_the_last_client_error_names_the_settings_to_check():
    from confluent_kafka import KafkaError

    from cdc.config.kafka_settings import LastError

    errors = LastError()
    assert errors.explain() == ""
    errors(KafkaError(KafkaError._TRANSPORT, "ssl://b1:9093/bootstrap: SSL handshake failed: certificate verify failed"))
    errors(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))  # does not hide the cause
    assert "certificate verify failed" in errors.explain() and "ssl.ca.location" in errors.explain()
    errors(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: invalid credentials"))
    assert "sasl.username and sasl.password" in errors.explain()


def test_a_client_librdkafka_refuses_is_a_config_error_naming_the_broker_never_a_secret():
    from cdc.config.kafka_settings import create_client

    conf = KafkaConnection("b1:9093", {"sasl.password": PASSWORD, "no.such.setting": 1}).settings("admin")
    with pytest.raises(ConfigError) as e:
        create_client("admin", conf)
    assert "b1:9093" in str(e.value) and "no.such.setting" in str(e.value) and PASSWORD not in str(e.value)
