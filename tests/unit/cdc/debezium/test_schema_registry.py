"""The Schema Registry settings and failures: config errors name the keys, the secret stays masked, a
registry nobody answers on is a PublishError (retried), a refused schema a Terminal error naming the subject."""

from __future__ import annotations

import socket
import uuid

import pytest

from cdc.config.loader import parse_config
from cdc.config.models import KafkaConfig
from cdc.debezium.errors import SchemaRefused
from cdc.debezium.schema_registry import RegistryAvro
from cdc.errors import ConfigError, PublishError, Terminal

KEY = {"type": "struct", "name": "cdc.s1.shop.t.Key", "optional": False,
       "fields": [{"field": "id", "type": "int32", "optional": False}]}


def _config(**kafka) -> None:
    parse_config({"kafka": {"bootstrap_servers": "127.0.0.1:9092", **kafka}}, "cdc.yaml")


def test_config_names_what_is_missing_or_contradictory():
    with pytest.raises(ConfigError, match="avro_framing: schema_registry needs encoding: avro and a schema_regis"):
        _config(avro_framing="schema_registry", encoding="avro")
    with pytest.raises(ConfigError, match="schema_registry is set but avro_framing is 'confluent'"):
        _config(encoding="avro", schema_registry={"url": "http://r:8081"})
    with pytest.raises(ConfigError, match="debezium.transaction_topic with encoding: avro needs avro_framing"):
        _config(encoding="avro", debezium={"transaction_topic": True})
    with pytest.raises(ConfigError, match=r"key 'kafka.schema_registry.url' in cdc.yaml: String should match"):
        _config(encoding="avro", avro_framing="schema_registry", schema_registry={"url": "r:8081"})
    with pytest.raises(ConfigError, match=r"kafka.schema_registry.sasl"):
        _config(encoding="avro", avro_framing="schema_registry", schema_registry={"url": "http://r", "sasl": 1})


def test_the_basic_auth_secret_is_masked_and_unwrapped_only_for_the_client():
    k = KafkaConfig(bootstrap_servers="x", encoding="avro", avro_framing="schema_registry",
                    schema_registry={"url": "https://r:8081", "basic.auth.user.info": "cdc:s3cret"})
    assert "s3cret" not in repr(k) and "s3cret" not in str(k.model_dump())
    assert k.schema_registry.client_settings() == {"url": "https://r:8081", "basic.auth.user.info": "cdc:s3cret"}


def test_an_unreachable_registry_is_a_publish_error_naming_it():
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ser = RegistryAvro({"url": f"http://127.0.0.1:{port}", "max.retries": 0, "timeout": 5})
    with pytest.raises(PublishError, match=f"Schema Registry http://127.0.0.1:{port}") as info:
        ser.encode("cdc.s1.shop.t", "key", KEY, {"id": 1})
    assert not isinstance(info.value, Terminal)


def test_a_schema_the_registry_refuses_stops_the_source_naming_the_subject():
    ser = RegistryAvro({"url": f"mock://{uuid.uuid4().hex}"})
    # the mock registry checks no compatibility; make it answer as a real one does for an incompatible schema
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    def refuse(*_a, **_kw):
        raise SchemaRegistryError(409, 409, "Schema being registered is incompatible with an earlier schema")

    ser.client.register_schema_full_response = refuse
    ser.client.register_schema = refuse
    with pytest.raises(SchemaRefused, match=r"refused the key schema of cdc.s1.shop.t \(subject cdc.s1.shop.t-key\)"
                       r": Schema being registered is incompatible") as info:
        ser.encode("cdc.s1.shop.t", "key", KEY, {"id": 1})
    assert isinstance(info.value, Terminal) and info.value.subject == "cdc.s1.shop.t-key"


def test_the_secret_comes_from_the_environment_as_documented(tmp_path):
    from cdc.config.loader import load_config

    path = tmp_path / "cdc.yaml"
    path.write_text("kafka: {bootstrap_servers: 'b:9092', encoding: avro, avro_framing: schema_registry, "
                    "schema_registry: {url: 'https://r:8081'}}\n")
    config = load_config(path, {"CDC_KAFKA__SCHEMA_REGISTRY__BASIC_AUTH_USER_INFO": "cdc:from-env"})
    assert config.kafka.schema_registry.client_settings()["basic.auth.user.info"] == "cdc:from-env"
