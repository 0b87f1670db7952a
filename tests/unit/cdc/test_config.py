import pytest

from cdc.config import load_config
from cdc.errors import ConfigError

GOOD = """
sources:
  - name: shop
    kind: mysql
    hosts: ["127.0.0.1:3306", "127.0.0.1:3307"]
    user: cdc
    password: secret
    tables: ["shop.*", "crm.customers"]
kafka:
  bootstrap_servers: 127.0.0.1:9092
  topic_prefix: cdc
  encoding: json
"""


def test_minimal_config_as_written(tmp_path):
    path = tmp_path / "cdc.yaml"
    path.write_text(GOOD)
    cfg = load_config(path, env={})
    assert cfg.sources[0].hosts == ["127.0.0.1:3306", "127.0.0.1:3307"]
    assert cfg.sources[0].password.get_secret_value() == "secret"
    assert "secret" not in repr(cfg)
    assert cfg.kafka.encoding == "json"


def test_env_override_wins(tmp_path):
    path = tmp_path / "cdc.yaml"
    path.write_text(GOOD)
    cfg = load_config(path, env={"CDC_KAFKA__BOOTSTRAP_SERVERS": "10.0.0.1:9093", "CDC_SOURCES__0__PASSWORD": "x"})
    assert cfg.kafka.bootstrap_servers == "10.0.0.1:9093"
    assert cfg.sources[0].password.get_secret_value() == "x"


def test_bad_key_names_key_and_file(tmp_path):
    path = tmp_path / "cdc.yaml"
    path.write_text(GOOD.replace("encoding: json", "encoding: xml"))
    with pytest.raises(ConfigError) as exc:
        load_config(path, env={})
    assert "kafka.encoding" in str(exc.value) and str(path) in str(exc.value)


def test_bad_env_value_names_env_var(tmp_path):
    path = tmp_path / "cdc.yaml"
    path.write_text(GOOD)
    with pytest.raises(ConfigError) as exc:
        load_config(path, env={"CDC_SOURCES__0__HOSTS": "[nohost]"})
    assert "CDC_SOURCES__0__HOSTS" in str(exc.value)


def test_unknown_key_is_refused(tmp_path):
    path = tmp_path / "cdc.yaml"
    path.write_text(GOOD + "\nbogus: 1\n")
    with pytest.raises(ConfigError) as exc:
        load_config(path, env={})
    assert "bogus" in str(exc.value)


def test_broken_yaml_names_line(tmp_path):
    path = tmp_path / "cdc.yaml"
    path.write_text("kafka: [\n")
    with pytest.raises(ConfigError) as exc:
        load_config(path, env={})
    assert "line" in str(exc.value)
