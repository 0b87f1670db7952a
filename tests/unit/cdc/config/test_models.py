import pytest

from cdc.config.loader import load_config
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
        load_config(path, env={"CDC_SOURCES__0__HOSTS": "[nohost:x]"})
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


APPLY = GOOD + """
targets:
  - name: wh
    kind: duckdb
    path: /tmp/wh.duckdb
apply:
  - source: shop
    target: wh
"""


def _fails(tmp_path, text, env=None) -> ConfigError:
    path = tmp_path / "cdc.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config(path, env=env or {})
    assert str(path) in str(exc.value), exc.value
    return exc.value


def test_apply_key_typo_is_refused_naming_key_and_file(tmp_path):
    err = _fails(tmp_path, APPLY + "    max_record_per_batch: 10\n")
    assert "apply[0].max_record_per_batch" in str(err) and err.key == "apply[0].max_record_per_batch"


def test_apply_target_that_names_nothing(tmp_path):
    err = _fails(tmp_path, APPLY.replace("target: wh", "target: warehouse"))
    assert err.key == "apply[0].target" and "'warehouse'" in str(err) and "['wh']" in str(err)


def test_apply_source_that_names_nothing_when_sources_are_configured(tmp_path):
    err = _fails(tmp_path, APPLY + "  - source: shopp\n    target: wh\n")
    assert err.key == "apply[1].source" and "'shopp'" in str(err) and "['shop']" in str(err)


def test_apply_reference_from_env_names_the_variable(tmp_path):
    err = _fails(tmp_path, APPLY, env={"CDC_APPLY__0__TARGET": "nope"})
    assert "CDC_APPLY__0__TARGET" in str(err) and err.key == "apply[0].target"


def test_apply_only_config_may_name_a_stream_of_another_daemon(tmp_path):
    path = tmp_path / "cdc.yaml"
    path.write_text(APPLY.split("sources:")[0] + "kafka:" + APPLY.split("kafka:")[1])
    cfg = load_config(path, env={})
    assert cfg.sources == [] and cfg.apply[0].source == "shop"


VIEWS = APPLY + """    views:
      - name: by_status
        sql: SELECT o.status, COUNT(*) AS n FROM orders o GROUP BY o.status
      - name: paid
        from: {o: orders}
        where: [o.status = 'paid']
        select: [o.id, o.amount]
"""


def test_views_are_typed_and_read_back_as_written(tmp_path):
    from streaming.views.definition import parse_views

    path = tmp_path / "cdc.yaml"
    path.write_text(VIEWS)
    views = load_config(path, env={}).apply[0].views
    assert views[1].as_mapping() == {"name": "paid", "from": {"o": "orders"}, "where": ["o.status = 'paid'"],
                                     "select": ["o.id", "o.amount"]}
    assert [v.name for v in parse_views(views)] == ["by_status", "paid"]


@pytest.mark.parametrize("old, new, key, words", [
    ("GROUP BY o.status\n", "GROUP BY o.status\n        groupby: [o.status]\n", "apply[0].views[0].groupby",
     "unknown key"),
    ("name: paid", "name: 9paid", "apply[0].views[1].name", "pattern"),
    ("where: [o.status = 'paid']", "sql: SELECT 1", "apply[0].views[1]", "not both"),
    ("from: {o: orders}", "join: [o.a = o.b]", "apply[0].views[1]", "select and from"),
])
def test_bad_view_config_names_the_key(tmp_path, old, new, key, words):
    err = _fails(tmp_path, VIEWS.replace(old, new, 1))
    assert err.key == key and words in str(err), str(err)


TYPOS = """
sources:
  - name: shop
    kind: mysql
    hosts: ["db1:3306"]
    user: cdc
    passwordless: true
    tabels: ["shop.*"]
kafka: {bootstrap_server: "127.0.0.1:9092"}
"""


def test_an_unknown_key_is_named_with_its_path_and_the_closest_valid_key(tmp_path):
    err = _fails(tmp_path, TYPOS)
    text = str(err)
    assert err.key == "sources[0].tabels"  # the trailer names the offending key, not the one it hides
    assert "key 'sources[0].tabels' in " in text and "did you mean 'sources[0].tables'?" in text
    assert "key 'kafka.bootstrap_server' in " in text and "did you mean 'kafka.bootstrap_servers'?" in text
    assert "Extra inputs" not in text
    assert text.index("tabels") < text.index("Field required")  # the typo before what it made missing


def test_an_unknown_key_with_no_close_match_lists_the_valid_keys(tmp_path):
    err = _fails(tmp_path, TYPOS.replace("tabels", "tables").replace("bootstrap_server", "bootstrap_servers")
                 + "zzzz: 1\n")
    assert err.key == "zzzz" and "key 'zzzz' in " in str(err) and "valid keys here: " in str(err)
    assert "sources" in str(err).split("valid keys here: ")[1]
