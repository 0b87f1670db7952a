"""cdc.table_glob: one pattern rule for the sources' ``tables`` and the apply side's ``tables``/``exclude``."""

from __future__ import annotations

import pytest

from cdc.config.models import ApplyConfig
from cdc.schema import table_glob
from cdc.schema.table_map import TableMap
from cdc.stream.events import TableId
from readers.mysql.config import MySqlSourceConfig
from readers.mysql.tables import TableFilter
from readers.oracle.config import OracleSourceConfig

NAMES = ["shop.order_items", "shop.orders", "shop.orders_archive", "shop.orderXitems", "shop.customers",
         "crm.order_items", "shop_old.order_items"]


@pytest.mark.parametrize("pattern,expected", [
    ("shop.order_*", ["shop.order_items"]),  # '_' is a character, not LIKE's any-one
    ("shop.order*", ["shop.orderXitems", "shop.order_items", "shop.orders", "shop.orders_archive"]),
    ("shop.*", ["shop.customers", "shop.orderXitems", "shop.order_items", "shop.orders", "shop.orders_archive"]),
    ("*.order_items", ["crm.order_items", "shop.order_items", "shop_old.order_items"]),
    ("shop.orders", ["shop.orders"]),
    ("shop.order?items", ["shop.orderXitems", "shop.order_items"]),
    ("shop.ORDERS", []),  # case-sensitive
])
def test_pattern_rule(pattern, expected):
    assert table_glob.select(NAMES, [pattern]) == sorted(expected)


@pytest.mark.parametrize("pattern", ["shop.order_*", "shop.*", "*.order_items", "shop.orders", "shop.order?items"])
def test_source_filter_and_apply_map_agree(pattern):
    """The binlog reader's filter and the apply side's table map take exactly the same tables."""
    source = TableFilter([pattern])
    apply = TableMap.from_config(ApplyConfig(source="s", target="t", tables=[pattern]))
    for name in NAMES:
        assert source.matches(TableId.parse(name)) == apply.wanted(name), name


def test_db_match_of_a_table_glob():
    f = TableFilter(["shop.order_*"])
    assert f.matches_db("shop") and not f.matches_db("crm")


def test_config_refuses_a_pattern_without_a_database_part():
    with pytest.raises(ValueError, match="not of the form db.table"):
        MySqlSourceConfig(name="s", hosts=["h:1"], user="u", password="p", tables=["orders"])
    assert MySqlSourceConfig(name="s", hosts=["h:1"], user="u", password="p", tables=["shop.order_*"]).tables == ["shop.order_*"]
    with pytest.raises(ValueError, match="schema part must be a schema name"):
        OracleSourceConfig(name="o", dsn="simulator", tables=["AP*.T0"])
    assert OracleSourceConfig(name="o", dsn="simulator", tables=["APP.T*"]).tables == ["APP.T*"]


def test_oracle_row_filter_and_supplemental_check_use_the_rule():
    from cdc.contract import SourceContext
    from cdc.metrics import SourceMetrics
    from readers.oracle.check import supplemental_problems
    from readers.oracle.reader import OracleSource

    cfg = OracleSourceConfig(name="o", dsn="simulator", tables=["app.order_*"])
    src = OracleSource(cfg, SourceContext(metrics=SourceMetrics("o")))
    assert src.captured("APP", "ORDER_ITEMS") and not src.captured("APP", "ORDERS")

    def query(sql, binds=None):
        if "V$DATABASE" in sql:
            return [("YES", "NO")]
        if "ALL_LOG_GROUPS" in sql:
            return []
        return [("APP", "ORDER_ITEMS"), ("APP", "ORDERS"), ("APP", "ORDERXITEMS")]
    problems = supplemental_problems(query, cfg.tables)
    assert len(problems) == 1 and "APP.ORDER_ITEMS" in problems[0]
