"""The one MySQL DSN parser: defaults, encoding, and errors that name where the DSN came from."""

from __future__ import annotations

import pytest

from cdc.compare.endpoints import from_dsn
from cdc.config.dsn import mask, parse_mysql_dsn
from cdc.config.models import TargetConfig
from cdc.errors import ConfigError
from streaming.targets.mysql.target import MySqlTarget


def test_full_dsn():
    d = parse_mysql_dsn("mysql://cdc:p%40ss@db.local:3307/shop")
    assert (d.host, d.port, d.user, d.password, d.database) == ("db.local", 3307, "cdc", "p@ss", "shop")
    assert "p@ss" not in repr(d)


def test_defaults_are_the_same_for_every_user_of_a_dsn():
    d = parse_mysql_dsn("mariadb://")
    assert (d.host, d.port, d.user, d.password, d.database) == ("127.0.0.1", 3306, "root", "", None)
    assert d.connect_args() == {"host": "127.0.0.1", "port": 3306, "user": "root", "password": ""}
    # compare endpoints and the MySQL target read the DSN the same way
    assert from_dsn("e", "mysql://h:1/db").params == {**parse_mysql_dsn("mysql://h:1/db").connect_args()}
    target = MySqlTarget(TargetConfig(name="t", kind="mysql", dsn="mysql://h:1/db", passwordless=True))
    assert (target._kw["user"], target._kw["database"], target.schema) == ("root", "db", "db")


@pytest.mark.parametrize("dsn, words", [
    ("postgresql://u@h/db", "is not a MySQL DSN"),
    ("mysql://u:secret@h:port/db", "port"),
    (None, "is not a MySQL DSN"),
])
def test_bad_dsn_names_where_and_masks_the_password(dsn, words):
    with pytest.raises(ConfigError) as exc:
        parse_mysql_dsn(dsn, "targets[1].dsn")
    assert words in str(exc.value) and "targets[1].dsn" in str(exc.value) and exc.value.key == "targets[1].dsn"
    assert "secret" not in str(exc.value)


def test_mask():
    assert mask("mysql://u:secret@h:1/db") == "mysql://u:***@h:1/db"
    assert mask("mysql://u@h/db") == "mysql://u@h/db"
