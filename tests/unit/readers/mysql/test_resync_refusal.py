"""`cdc snapshot --resync` refuses, naming why, a table it cannot resync with range deletes."""

from __future__ import annotations

from types import SimpleNamespace

from readers.mysql.snapshot_cmd import resync_refusal


class _Cursor:
    def __init__(self, types):
        self.types, self.sql = types, None

    def execute(self, sql, params=None):
        self.sql = (sql, params)

    def fetchall(self):
        return [(t,) for t in self.types]


def _config(per_table: bool = False):
    return SimpleNamespace(kafka=SimpleNamespace(per_table_topics=per_table))


def test_integer_keys_qualify_composite_included():
    assert resync_refusal(_Cursor(["int(11)", b"bigint(20) unsigned"]), "d.t", _config()) is None


def test_text_keys_and_keyless_tables_are_refused_with_the_way_out():
    why = resync_refusal(_Cursor(["int(11)", "varchar(20)"]), "d.t", _config())
    assert "int(11), varchar(20)" in why and "cdc compare --repair" in why
    assert "none" in resync_refusal(_Cursor([]), "d.t", _config())


def test_per_table_topics_are_refused_before_looking_at_the_key():
    cur = _Cursor(["int"])
    assert "per_table_topics" in resync_refusal(cur, "d.t", _config(per_table=True)) and cur.sql is None
