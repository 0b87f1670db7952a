"""A MySQL/MariaDB source's ``hosts``: a host without port gets 3306; IPv6 literals are written in brackets."""

import pytest

from cdc.config.loader import parse_config
from cdc.errors import ConfigError
from readers.mysql.connection import split_host


def _hosts(*hosts: str) -> list[str]:
    config = parse_config({"sources": [{"name": "shop", "kind": "mysql", "hosts": list(hosts), "user": "cdc",
                                        "passwordless": True, "tables": ["shop.*"]}],
                           "kafka": {"bootstrap_servers": "127.0.0.1:9092"}})
    return config.sources[0].hosts


def test_a_host_without_port_gets_3306_and_ipv6_in_brackets_works() -> None:
    assert _hosts("127.0.0.1", "db2:3307", "[::1]", "[fe80::1]:3310") == [
        "127.0.0.1:3306", "db2:3307", "[::1]:3306", "[fe80::1]:3310"]
    assert split_host("[::1]:3306") == ("::1", 3306)
    assert split_host("127.0.0.1:3306") == ("127.0.0.1", 3306)


@pytest.mark.parametrize("host, words", [
    ("::1", "brackets"),
    ("db:port", "port 1 to 65535"),
    ("db:70000", "port 1 to 65535"),
    ("[::1]x", "[IPv6]:port"),
    (":3306", "host:port"),
])
def test_a_malformed_host_names_the_key_and_the_forms(host: str, words: str) -> None:
    with pytest.raises(ConfigError) as exc:
        _hosts(host)
    assert "sources[0].hosts" in str(exc.value) and words in str(exc.value)
