"""cdc.checks: what a table pattern check and a topic settings check say (no services)."""

from __future__ import annotations

from types import SimpleNamespace

from cdc.checks import Check, _setting_checks, pattern_checks

TABLES = ["shop.orders", "shop.order_items", "crm.customers"]


def test_a_pattern_matching_tables_is_ok_and_names_them():
    [c] = pattern_checks("source s", ["shop.order_*"], TABLES, "h:1", "sources[0].tables")
    assert c.ok and "shop.order_items" in c.detail and "shop.orders" not in c.detail


def test_a_pattern_matching_nothing_names_what_exists():
    [in_db, no_db] = pattern_checks("source s", ["shop.invoice*", "demo.*"], TABLES, "h:1", "sources[0].tables")
    assert not in_db.ok and "'shop.invoice*' matches no table" in in_db.detail
    assert "shop has shop.order_items, shop.orders" in in_db.detail and "sources[0].tables" in in_db.fix
    assert not no_db.ok and "no database matches 'demo'" in no_db.detail and "databases: crm, shop" in no_db.detail


def test_topic_settings_name_the_fix_and_the_size_limit():
    def entries(**kw):
        return {k.replace("_", "."): SimpleNamespace(value=v) for k, v in kw.items()}

    want = {"retention.ms": "-1", "retention.bytes": "-1"}
    found = _setting_checks("kafka topic t", "t", "b:9092",
                            entries(retention_ms="604800000", retention_bytes="-1", cleanup_policy="compact",
                                    max_message_bytes="1048588"), want, 8 << 20)
    bad = {c.check.rsplit(" ", 1)[1]: c for c in found if not c.ok}
    assert set(bad) == {"retention.ms", "cleanup.policy", "max.message.bytes"}
    assert bad["retention.ms"].fix.endswith("--entity-name t --add-config retention.ms=-1")
    assert "kafka.producer message.max.bytes: 1048588" in bad["max.message.bytes"].fix
    unknown = _setting_checks("kafka topic t", "t", "b", {}, want, 1)
    assert all(c.ok and c.detail.startswith("UNVERIFIED") for c in unknown)


def test_line_format():
    assert Check("kafka b", False, "unreachable", "start it").line() == "FAIL  kafka b: unreachable\n      fix: start it"
    assert Check("kafka b", True, "reachable").line() == "ok    kafka b: reachable"
