"""A DDL's definition is taken at its position, not when a lagging reader reaches it (#36 §4).

MariaDB or MySQL 9.7 -> `cdc run` -> broker -> Spark apply -> PostgreSQL. The daemon is stopped while the statements run and
started after them, so the reader reaches each DDL with the catalog already showing the LATER definition:

- a gh-ost/pt-osc cut-over (``CREATE _t_new LIKE t``, ``ALTER _t_new ADD COLUMN``, copy, ``RENAME t TO _t_old,
  _t_new TO t``, ``DROP _t_old``): the apply follows, and `cdc compare` says EQUAL;
- ``DROP COLUMN flag`` then ``ADD COLUMN flag ... DEFAULT 'new'`` (a row written between): the target holds the new
  default, not the old values;
- a rename swap through a temporary name (a->tmp, b->a, tmp->b): the values follow their columns.
"""

from __future__ import annotations

import pytest

from cdc.cli import main as cdc_main
from tests.e2e.apply_pipeline import Pipeline

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

OSC = [
    "CREATE TABLE {db}._t_new LIKE {db}.t",
    "ALTER TABLE {db}._t_new ADD COLUMN extra INT NOT NULL DEFAULT 7",
    "INSERT INTO {db}._t_new (id, v, flag, a, b) SELECT id, v, flag, a, b FROM {db}.t",
    "UPDATE {db}._t_new SET extra = 8 WHERE id = 2",
    "RENAME TABLE {db}.t TO {db}._t_old, {db}._t_new TO {db}.t",
    "DROP TABLE {db}._t_old",
    "INSERT INTO {db}.t (id, v, flag, a, b, extra) VALUES (100, 100, 'x', 'a100', 'b100', 9)",
]
DROP_ADD = [
    "ALTER TABLE {db}.t DROP COLUMN flag",
    "INSERT INTO {db}.t (id, v, a, b) VALUES (50, 50, 'a50', 'b50')",  # a row between the two statements
    "ALTER TABLE {db}.t ADD COLUMN flag VARCHAR(5) NOT NULL DEFAULT 'new'",
]
SWAP = [
    "ALTER TABLE {db}.t RENAME COLUMN a TO tmp",
    "ALTER TABLE {db}.t RENAME COLUMN b TO a",
    "INSERT INTO {db}.t (id, v, flag, tmp, a) VALUES (60, 60, 'x', 'a60', 'b60')",
    "ALTER TABLE {db}.t RENAME COLUMN tmp TO b",
]


def _behind(tmp_path, mariadb, broker, postgres, prefix, db, spark, capsys, statements: list[str]) -> Pipeline:
    """Table ``t`` in the target, the daemon stopped, ``statements`` run, the daemon started again (the reader is
    behind every one of them), applied up to a sentinel written after them; `cdc compare` of ``t`` says EQUAL."""
    q = mariadb.query
    p = Pipeline(tmp_path, mariadb, broker, postgres, prefix, db, targets=("pg",))
    p.start()
    try:
        q(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v INT, flag VARCHAR(5) NOT NULL DEFAULT 'old', "
          "a VARCHAR(10), b VARCHAR(10))")
        q(f"INSERT INTO `{db}`.t VALUES " + ", ".join(f"({i}, {i}, 'x', 'a{i}', 'b{i}')" for i in range(1, 6)))
        p.apply_until(spark, p.sentinel())
        p.stop()
        for s in statements:
            q(s.format(db=f"`{db}`"))
        sid = p.sentinel()
        p.start()
        p.apply_until(spark, sid)
    finally:
        p.stop()
    p.assert_equal(["t"])
    code = cdc_main(["compare", "--config", str(p.config_path), "--source", "src", "--target", "pg",
                     "--tables", f"{db}.t"])
    out = capsys.readouterr().out
    assert code == 0 and "t: EQUAL" in out, f"exit {code}\n{out}"
    return p


def test_osc_cut_over_with_the_reader_behind(tmp_path, mysql_source, broker, postgres, topic_prefix,
                                             tmp_source_db, spark, capsys):
    p = _behind(tmp_path, mysql_source, broker, postgres, topic_prefix, tmp_source_db, spark, capsys, OSC)
    assert p.target_query("pg", "SELECT id, extra FROM {t}t WHERE id IN (1, 2, 100) ORDER BY id") == \
        [(1, 7), (2, 8), (100, 9)]


def test_drop_then_add_of_one_name_with_the_reader_behind(tmp_path, mysql_source, broker, postgres, topic_prefix,
                                                          tmp_source_db, spark, capsys):
    p = _behind(tmp_path, mysql_source, broker, postgres, topic_prefix, tmp_source_db, spark, capsys, DROP_ADD)
    assert p.target_query("pg", "SELECT DISTINCT flag FROM {t}t") == [("new",)]  # not the old 'x'


def test_rename_swap_with_the_reader_behind(tmp_path, mysql_source, broker, postgres, topic_prefix,
                                            tmp_source_db, spark, capsys):
    p = _behind(tmp_path, mysql_source, broker, postgres, topic_prefix, tmp_source_db, spark, capsys, SWAP)
    assert p.target_query("pg", "SELECT id, a, b FROM {t}t WHERE id IN (1, 60) ORDER BY id") == \
        [(1, "b1", "a1"), (60, "b60", "a60")]
