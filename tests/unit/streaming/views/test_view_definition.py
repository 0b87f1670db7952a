"""View definitions: both forms parse to the same ViewDef; unsupported constructs are
refused with an error naming the view and the construct."""

from __future__ import annotations

import pytest

from streaming.views.definition import parse_view, parse_views
from streaming.views.errors import ViewDefinitionError
from streaming.views.sqlparse import Col

SQL = ("SELECT c.region, COUNT(*) AS n, SUM(o.amount) AS total FROM orders o JOIN customers c "
       "ON o.customer_id = c.id WHERE o.status = 'paid' AND o.amount > -1 GROUP BY c.region")
PARTS = {"from": ["orders o", "customers c"], "join": ["o.customer_id = c.id"],
         "where": "o.status = 'paid' AND o.amount > -1", "group_by": ["c.region"],
         "select": ["c.region", "COUNT(*) AS n", "SUM(o.amount) AS total"]}


def test_sql_and_yaml_forms_agree():
    a = parse_view({"name": "sales", "sql": SQL})
    b = parse_view({"name": "sales", **PARTS})
    assert a == b and a.fingerprint == b.fingerprint
    assert a.keys == (("region", Col("c", "region")),)
    assert a.columns_of("o") == ["amount", "customer_id", "status"]


def test_view_without_aggregates_keys_on_all_outputs_and_hidden_group_columns():
    spj = parse_view({"name": "p", "sql": "SELECT id, name AS who FROM t WHERE x IS NOT NULL"})
    assert [k for k, _ in spj.keys] == ["id", "who"] and not spj.aggregate
    hidden = parse_view({"name": "h", "sql": "SELECT MAX(t.a) AS m FROM t GROUP BY t.b"})
    assert hidden.keys == (("__g0", Col("t", "b")),)


@pytest.mark.parametrize("sql, construct", [
    ("SELECT a FROM t LEFT JOIN u ON t.a = u.b", "outer joins"),
    ("SELECT a + 1 FROM t", "expression"),
    ("SELECT * FROM t", "SELECT *"),
    ("SELECT a FROM t WHERE a = 1 OR b = 2", "OR in conditions"),
    ("SELECT a FROM t WHERE a IN (1, 2)", "IN lists"),
    ("SELECT DISTINCT a FROM t", "DISTINCT"),
    ("SELECT a FROM t ORDER BY a", "ORDER BY"),
    ("SELECT a, COUNT(*) FROM t GROUP BY a HAVING COUNT(*) > 1", "HAVING"),
    ("SELECT upper(a) FROM t", "upper()"),
    ("SELECT COUNT(DISTINCT a) FROM t", "DISTINCT aggregate"),
    ("SELECT a FROM (SELECT a FROM t) s", "subquery"),
    ("SELECT t.a FROM t, u", "cross join"),
    ("SELECT t.a FROM t JOIN u ON t.a < u.b", "non-equi join"),
    ("SELECT a, COUNT(*) FROM t", "ungrouped column"),
    ("SELECT a.x FROM a, b, c, d, e WHERE a.x = b.x AND b.x = c.x AND c.x = d.x AND d.x = e.x",
     "more than 4 tables"),
])
def test_unsupported_constructs_are_named(sql, construct):
    with pytest.raises(ViewDefinitionError) as err:
        parse_view({"name": "bad_view", "sql": sql})
    assert err.value.view == "bad_view" and construct in str(err.value.construct)
    assert "bad_view" in str(err.value)


def test_config_mistakes_name_the_key():
    with pytest.raises(ViewDefinitionError, match="unknown keys"):
        parse_view({"name": "v", "sql": "SELECT a FROM t", "groupby": ["a"]})
    with pytest.raises(ViewDefinitionError, match=r"views\[1\].name"):
        parse_views([{"name": "ok", "sql": "SELECT a FROM t"}, {"sql": "SELECT a FROM t"}])
    with pytest.raises(ViewDefinitionError, match="defined twice"):
        parse_views([{"name": "v", "sql": "SELECT a FROM t"}, {"name": "v", "sql": "SELECT b FROM t"}])
    with pytest.raises(ViewDefinitionError, match="must be qualified"):
        parse_view({"name": "v", "sql": "SELECT a FROM t JOIN u ON t.x = u.x"})
    with pytest.raises(ViewDefinitionError, match="unknown table alias"):
        parse_view({"name": "v", "select": ["z.a"], "from": ["t"]})
