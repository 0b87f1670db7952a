"""Database logins (cdc.config.credentials): password, password_file, a DSN's password, passwordless; and the
environment override rule of cdc.config.loader (string fields verbatim, structured fields as YAML)."""

from __future__ import annotations

import pytest

from cdc.config.dsn import mask, split_password
from cdc.config.loader import load_config
from cdc.config.models import TargetConfig
from cdc.errors import ConfigError

LEAK = "Leak-Me-7f3a9#*!"

BASE = """
sources:
  - name: shop
    kind: mysql
    hosts: ["db1:3306"]
    user: cdc
{login}
    tables: ["shop.*"]
kafka: {{bootstrap_servers: "127.0.0.1:9092"}}
"""


def _load(tmp_path, login: str = "", env: dict[str, str] | None = None, extra: str = ""):
    path = tmp_path / "cdc.yaml"
    path.write_text(BASE.format(login=login) + extra)
    return load_config(path, env=env or {})


def _fails(tmp_path, login: str = "", env: dict[str, str] | None = None, extra: str = "") -> str:
    with pytest.raises(ConfigError) as exc:
        _load(tmp_path, login, env, extra)
    return str(exc.value)


@pytest.mark.parametrize("password", ["123456", "#s3cret", "*Xk9!pq", LEAK, "  spaced  ", "null", "[a, b]", "yes"])
def test_an_env_password_is_taken_verbatim(tmp_path, password):
    cfg = _load(tmp_path, env={"CDC_SOURCES__0__PASSWORD": password})
    assert cfg.sources[0].password.get_secret_value() == password
    if len(password) > 4:  # ("null" and "yes" occur in any dump)
        assert password not in repr(cfg) + str(cfg) + cfg.model_dump_json()


def test_structured_env_values_are_still_parsed(tmp_path):
    cfg = _load(tmp_path, "    passwordless: true", env={
        "CDC_SOURCES__0__HOSTS": "[a:1, b:2]", "CDC_METRICS__PORT": "9200", "CDC_SOURCES__0__CONNECT_TIMEOUT_S": "2.5",
        "CDC_LOGGING__JSON": "true", "CDC_KAFKA__TOPIC_PREFIX": "007", "CDC_SOURCES__0__SNAPSHOT": "initial"})
    src = cfg.sources[0]
    assert (src.hosts, cfg.metrics.port, src.connect_timeout_s, cfg.logging.json_) == (["a:1", "b:2"], 9200, 2.5, True)
    assert cfg.kafka.topic_prefix == "007" and src.snapshot == "initial"  # a str field: not the number 7


def test_a_field_taking_text_or_a_list_keeps_text_verbatim_and_lists_parsed(tmp_path):
    extra = ("targets: [{name: d, kind: duckdb, path: /tmp/x.duckdb}]\n"
             "apply: [{source: shop, target: d, views: [{name: v, select: x, from: t}]}]\n")
    cfg = _load(tmp_path, "    passwordless: true", extra=extra, env={
        "CDC_APPLY__0__VIEWS__0__SELECT": "[a, b]", "CDC_APPLY__0__VIEWS__0__WHERE": "x = '#1'"})
    view = cfg.apply[0].views[0]
    assert view.select == ["a", "b"] and view.where == "x = '#1'"


def test_a_broken_structured_env_value_names_the_variable_not_the_value(tmp_path):
    text = _fails(tmp_path, "    passwordless: true", env={"CDC_SOURCES__0__HOSTS": "[a:1, " + LEAK})
    assert "CDC_SOURCES__0__HOSTS" in text and "sources[0].hosts" in text and LEAK not in text


def test_a_secret_is_never_echoed_in_a_config_error(tmp_path):
    text = _fails(tmp_path, "    password: 123456")  # YAML makes it a number: refused, not shown
    assert "sources[0].password" in text and "***" in text and "123456" not in text
    text = _fails(tmp_path, f"    password: '{LEAK}'\n    server_id: -1")  # a bad value next to the password
    assert "sources[0].server_id" in text and LEAK not in text


def test_password_file_is_read_at_load_without_its_newline(tmp_path):
    secret = tmp_path / "mysql"
    secret.write_text(LEAK + "\n")
    cfg = _load(tmp_path, f"    password_file: {secret}")
    assert cfg.sources[0].password.get_secret_value() == LEAK
    assert LEAK not in repr(cfg) + cfg.model_dump_json()
    cfg = _load(tmp_path, env={"CDC_SOURCES__0__PASSWORD_FILE": str(secret)})
    assert cfg.sources[0].password.get_secret_value() == LEAK


@pytest.mark.parametrize("content, words", [(None, "cannot read"), ("", "is empty"), ("\n", "is empty")])
def test_an_unreadable_or_empty_password_file_names_key_and_file(tmp_path, content, words):
    secret = tmp_path / "pw"
    if content is not None:
        secret.write_text(content)
    text = _fails(tmp_path, f"    password_file: {secret}")
    assert "sources[0].password_file" in text and str(secret) in text and words in text


def test_a_missing_password_names_the_key_unless_passwordless_is_declared(tmp_path):
    text = _fails(tmp_path)
    assert "sources[0].password" in text and "passwordless: true" in text
    assert _load(tmp_path, "    passwordless: true").sources[0].password.get_secret_value() == ""
    assert "sources[0].password" in _fails(tmp_path, "    password: ''")  # empty is not a declaration
    assert "sources[0].password" in _fails(tmp_path, env={"CDC_SOURCES__0__PASSWORD": ""})


@pytest.mark.parametrize("login, key", [
    ("    password: a\n    password_file: /etc/hostname", "sources[0].password_file"),
    ("    password: a\n    passwordless: true", "sources[0].passwordless"),
])
def test_two_sources_of_one_password_are_an_error(tmp_path, login, key):
    assert key in _fails(tmp_path, login)


def test_a_target_takes_its_password_out_of_the_dsn(tmp_path):
    t = TargetConfig(name="pg", kind="postgres", dsn=f"postgresql://cdc:{LEAK.replace('#', '%23')}@pg:5432/cdc")
    assert t.dsn == "postgresql://cdc@pg:5432/cdc" and t.password.get_secret_value() == LEAK
    assert t.login_kwargs() == {"password": LEAK}
    assert LEAK not in repr(t) + t.model_dump_json()
    t = TargetConfig(name="o", kind="oracle", dsn="scott/tiger@db:1521/svc")
    assert (t.dsn, t.password.get_secret_value()) == ("scott@db:1521/svc", "tiger")


def test_the_issue_config_loads(tmp_path):
    mysql_pw, pg_pw = tmp_path / "mysql", tmp_path / "pg"
    mysql_pw.write_text("m-secret\n")
    pg_pw.write_text("p-secret")
    extra = ("targets:\n  - {name: pg, kind: postgres, dsn: \"postgresql://cdc@pg:5432/cdc?sslmode=verify-full"
             f"&sslrootcert=/etc/cdc/pg-ca.pem\", password_file: {pg_pw}}}\n")
    cfg = _load(tmp_path, f"    password_file: {mysql_pw}", extra=extra)
    assert cfg.sources[0].password.get_secret_value() == "m-secret"
    assert cfg.targets[0].login_kwargs() == {"password": "p-secret"}
    assert "sslrootcert=/etc/cdc/pg-ca.pem" in cfg.targets[0].dsn


def test_a_target_without_login_needs_no_password_and_a_database_target_does():
    assert TargetConfig(name="d", kind="duckdb", path="/tmp/x.duckdb").login_kwargs() == {}
    with pytest.raises(ValueError, match="password"):
        TargetConfig(name="pg", kind="postgres", dsn="postgresql://cdc@pg/cdc")
    t = TargetConfig(name="pg", kind="postgres", dsn="postgresql://pg/cdc", user="cdc", password="x")
    assert t.login_kwargs() == {"user": "cdc", "password": "x"}


@pytest.mark.parametrize("dsn, masked, stripped, password", [
    ("mysql://u:s%40cret@h:1/db", "mysql://u:***@h:1/db", "mysql://u@h:1/db", "s@cret"),
    ("postgresql://u@h/db?sslmode=require&password=x", "postgresql://u@h/db?sslmode=require&password=***",
     "postgresql://u@h/db?sslmode=require", "x"),
    ("host=h password='a b\\'c' user=x", "host=h password=*** user=x", "host=h user=x", "a b'c"),
    ("scott/tiger@db:1521/svc", "scott/***@db:1521/svc", "scott@db:1521/svc", "tiger"),
    ("postgresql://u@h/db", "postgresql://u@h/db", "postgresql://u@h/db", None),
    ("db:1521/svc", "db:1521/svc", "db:1521/svc", None),
])
def test_one_function_finds_a_dsn_password_in_every_form(dsn, masked, stripped, password):
    assert mask(dsn) == masked and split_password(dsn) == (stripped, password)


def test_a_loaded_login_reloads_from_its_dump():
    for t in (TargetConfig(name="pg", kind="postgres", dsn="postgresql://cdc@pg/cdc", passwordless=True),
              TargetConfig(name="d", kind="duckdb", path="/tmp/x.duckdb"),
              TargetConfig(name="pg", kind="postgres", dsn="postgresql://cdc:pw@pg/cdc")):
        again = TargetConfig(**t.model_dump(by_alias=True))
        assert again.login_kwargs() == t.login_kwargs() and again.dsn == t.dsn


def test_a_password_from_env_and_a_password_file_names_the_variable_and_the_file_key(tmp_path):
    text = _fails(tmp_path, "    password_file: /etc/hostname", env={"CDC_SOURCES__0__PASSWORD": "x"})
    assert "password and password_file each give a password" in text
    assert "sources[0].password from env CDC_SOURCES__0__PASSWORD" in text
    assert f"sources[0].password_file from {tmp_path / 'cdc.yaml'}" in text
    assert "'x'" not in text and "(got x)" not in text
