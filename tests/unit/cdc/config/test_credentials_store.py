"""Secrets among a lake target's library settings (cdc.config.credentials.resolve_secrets, is_store_secret,
SecretDsn): storage_options and Iceberg catalog settings whose name says secret, and the catalog_uri's
password, never appear in a repr, a JSON dump or a config error; ``<key>_file`` reads the value."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from cdc.config.credentials import (
    FileSecret,
    SecretDsn,
    is_store_secret,
    resolve_secrets,
    reveal,
    scrub,
)
from cdc.config.loader import load_config
from cdc.errors import ConfigError

LEAK = "Leak-Me-7f3a9#*!"
LEAK2 = "An0ther~Leak.Key9"  # URL-safe: it goes inside catalog URIs unencoded

BASE = """
kafka: {{bootstrap_servers: "127.0.0.1:9092"}}
targets:
{targets}
"""


def _load(tmp_path, targets: str, env: dict[str, str] | None = None):
    path = tmp_path / "cdc.yaml"
    path.write_text(BASE.format(targets=targets))
    return load_config(path, env=env or {})


def _fails(tmp_path, targets: str, env: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as exc:
        _load(tmp_path, targets, env)
    return str(exc.value)


@pytest.mark.parametrize("name", ["AWS_SECRET_ACCESS_KEY", "aws_secret_access_key", "AWS_SESSION_TOKEN",
                                  "azure_storage_account_key", "AZURE_STORAGE_SAS_KEY", "azure_client_secret",
                                  "google_service_account_key", "s3.secret-access-key", "adls.account-key",
                                  "adls.sas-token", "gcs.oauth2.token", "credential", "token", "db.password"])
def test_secret_names(name):
    assert is_store_secret(name)


@pytest.mark.parametrize("name", ["AWS_ACCESS_KEY_ID", "s3.access-key-id", "AWS_REGION", "aws_endpoint_url",
                                  "azure_storage_account_name", "timeout", "aws_web_identity_token_file",
                                  "AZURE_FEDERATED_TOKEN_FILE", "s3.endpoint", "name"])
def test_not_secret_names(name):
    assert not is_store_secret(name)


def test_resolve_secrets_holds_secrets_and_reads_files(tmp_path):
    (tmp_path / "k").write_text(LEAK + "\n")
    out = resolve_secrets({"AWS_SECRET_ACCESS_KEY_FILE": str(tmp_path / "k"), "AWS_SESSION_TOKEN": LEAK2,
                           "AWS_REGION": "eu-west-1", "aws_web_identity_token_file": "/var/run/token"},
                          "storage_options", is_store_secret, {"aws_web_identity_token_file"})
    assert isinstance(out["AWS_SECRET_ACCESS_KEY"], FileSecret) and out["AWS_SECRET_ACCESS_KEY"].path == str(tmp_path / "k")
    assert isinstance(out["AWS_SESSION_TOKEN"], SecretStr) and "AWS_SECRET_ACCESS_KEY_FILE" not in out
    assert out["aws_web_identity_token_file"] == "/var/run/token"  # the library's own file setting: unchanged
    assert LEAK not in repr(out) and LEAK2 not in repr(out)
    assert reveal(out) == {"AWS_SECRET_ACCESS_KEY": LEAK, "AWS_SESSION_TOKEN": LEAK2, "AWS_REGION": "eu-west-1",
                           "aws_web_identity_token_file": "/var/run/token"}


def test_secret_dsn_and_scrub_mask_the_password():
    uri = SecretDsn(f"postgresql://cat:{LEAK2}@pg:5432/catalog")
    assert str(uri) == "postgresql://cat:***@pg:5432/catalog" and LEAK2 not in repr(uri)
    assert uri.get_secret_value().endswith(f"{LEAK2}@pg:5432/catalog")
    text = f"could not parse {uri.get_secret_value()}; token {LEAK}"
    assert scrub(text, [LEAK, LEAK2], uri.get_secret_value()) == "could not parse postgresql://cat:***@pg:5432/catalog; token ***"


def test_a_loaded_lake_config_shows_no_secret(tmp_path):
    (tmp_path / "aws").write_text(LEAK + "\n")
    (tmp_path / "uri").write_text(f"postgresql://cat:{LEAK2}@pg:5432/catalog\n")
    cfg = _load(tmp_path, f"""
  - name: lake
    kind: delta
    path: s3://bucket/lake
    storage_options:
      AWS_ACCESS_KEY_ID: AKIAEXAMPLE
      AWS_SECRET_ACCESS_KEY_file: {tmp_path / "aws"}
      AWS_REGION: eu-west-1
  - name: ice
    kind: iceberg
    catalog_uri_file: {tmp_path / "uri"}
    warehouse: s3://bucket/wh
    catalog: {{s3.secret-access-key: "{LEAK}", s3.access-key-id: AKIAEXAMPLE, py-io-impl: x.y}}
  - name: ice2
    kind: iceberg
    catalog_uri: "postgresql://cat:{LEAK2}@pg:5432/catalog"
    warehouse: /wh
""")
    for shown in (repr(cfg), str(cfg), cfg.model_dump_json(), repr(cfg.model_dump()), str(cfg.targets)):
        assert LEAK not in shown and LEAK2 not in shown, shown
    lake, ice, ice2 = cfg.targets
    assert "AKIAEXAMPLE" in repr(lake) and "eu-west-1" in repr(lake)  # the check above can fail: values are shown
    assert reveal(lake.storage_options) == {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": LEAK,
                                            "AWS_REGION": "eu-west-1"}
    assert ice.catalog_uri.get_secret_value() == ice2.catalog_uri.get_secret_value() == \
        f"postgresql://cat:{LEAK2}@pg:5432/catalog"
    assert "postgresql://cat:***@pg:5432/catalog" in repr(ice)
    assert reveal(ice.catalog)["s3.secret-access-key"] == LEAK and ice.catalog["py-io-impl"] == "x.y"


def test_an_env_storage_secret_is_verbatim_and_masked(tmp_path):
    cfg = _load(tmp_path, "  - {name: lake, kind: delta, path: /lake}\n  - {name: ice, kind: iceberg}",
                env={"CDC_TARGETS__0__STORAGE_OPTIONS__AWS_SECRET_ACCESS_KEY": "[" + LEAK,
                     "CDC_TARGETS__1__CATALOG_URI": f"sqlite:///x.db?password={LEAK2}"})
    (key, value), = cfg.targets[0].storage_options.items()
    assert key.lower() == "aws_secret_access_key" and isinstance(value, SecretStr)
    assert value.get_secret_value() == "[" + LEAK and LEAK not in repr(cfg)
    assert cfg.targets[1].catalog_uri.get_secret_value().endswith(LEAK2) and LEAK2 not in repr(cfg)


def test_a_key_of_another_target_kind_is_refused_naming_the_valid_keys(tmp_path):
    msg = _fails(tmp_path, "  - {name: pg, kind: postgres, dsn: postgresql://h/db, passwordless: true, "
                           "storage_options: {AWS_REGION: x}}")
    assert "key 'targets[0].storage_options'" in msg and "unknown key" in msg and "valid keys here:" in msg
    assert "catalog" not in msg.split("valid keys here:")[1]  # only the postgres model's keys


def test_store_secret_errors_name_the_key_and_file_never_the_value(tmp_path):
    msg = _fails(tmp_path, f"  - {{name: lake, kind: delta, path: /l, storage_options: {{AWS_SECRET_ACCESS_KEY_FILE: "
                           f"{tmp_path}/missing}}}}")
    assert "storage_options.AWS_SECRET_ACCESS_KEY_FILE" in msg and f"{tmp_path}/missing" in msg
    (tmp_path / "k").write_text(LEAK)
    msg = _fails(tmp_path, f"  - {{name: lake, kind: delta, path: /l, storage_options: {{AWS_SECRET_ACCESS_KEY: "
                           f"'{LEAK2}', AWS_SECRET_ACCESS_KEY_FILE: {tmp_path}/k}}}}")
    assert "not both" in msg and LEAK not in msg and LEAK2 not in msg
    msg = _fails(tmp_path, f"  - {{name: lake, kind: delta, path: /l, storage_options: {{AWS_REGION: [{LEAK2}]}}}}")
    assert "storage_options.AWS_REGION: an object-store setting is text (got list)" in msg and LEAK2 not in msg
    msg = _fails(tmp_path, f"  - {{name: i, kind: iceberg, warehouse: /w, catalog_uri: 'postgresql://c:{LEAK2}@h/d', "
                           f"catalog_uri_file: {tmp_path}/k}}")
    assert "catalog_uri_file" in msg and "not both" in msg and LEAK2 not in msg and LEAK not in msg
    msg = _fails(tmp_path, f"  - {{name: i, kind: iceberg, warehouse: /w, catalog_uri_file: {tmp_path}/missing}}")
    assert "catalog_uri_file" in msg and f"{tmp_path}/missing" in msg


def test_a_target_kind_that_is_none_of_the_packages_names_them(tmp_path):
    msg = _fails(tmp_path, "  - {name: pg, kind: pg, dsn: postgresql://h/db}")
    assert "key 'targets[0].kind'" in msg and "'postgres'" in msg and "'iceberg'" in msg and "got 'pg'" in msg
    msg = _fails(tmp_path, "  - {name: pg, dsn: postgresql://h/db}")
    assert "key 'targets[0].kind'" in msg and "'duckdb'" in msg and "missing" in msg
