"""Primary selection and checkpoint validation with a scripted prober (no servers)."""

from __future__ import annotations

import pytest

from cdc.stream.events import TableId
from readers.mysql.connection import HostInfo
from readers.mysql.errors import AuthenticationFailed, BinlogPurged, ConnectionLost, Divergence, NoPrimaryFound
from readers.mysql.failover import choose_primary
from readers.mysql.position import GtidSet
from readers.mysql.tables import TableFilter, ddl_table


def host(address, state, *, read_only=False, replica=False, oldest=""):
    return HostInfo(address, "mariadb", "10.11", 1, read_only, replica, GtidSet.parse(state), GtidSet.parse(oldest))


def prober(table):
    def probe(address):
        got = table[address]
        if isinstance(got, Exception):
            raise got
        return got
    return probe


def test_picks_the_writable_primary_and_validates():
    hosts = {"a:1": ConnectionLost("down", host="a:1"), "b:1": host("b:1", "0-2-10", read_only=True, replica=True),
             "c:1": host("c:1", "0-3-12")}
    chosen = choose_primary(list(hosts), prober(hosts), GtidSet.parse("0-1-9"))
    assert chosen.address == "c:1"


def test_no_primary_is_transient():
    hosts = {"a:1": ConnectionLost("down", host="a:1"), "b:1": host("b:1", "0-2-10", read_only=True, replica=True)}
    with pytest.raises(NoPrimaryFound):
        choose_primary(list(hosts), prober(hosts), None)


def test_divergence_names_missing_gtids():
    hosts = {"a:1": host("a:1", "0-1-5,1-1-3")}
    with pytest.raises(Divergence) as info:
        choose_primary(list(hosts), prober(hosts), GtidSet.parse("0-1-7,1-1-3"))
    assert info.value.missing == "0-1-7"


def test_purged_binlog_is_terminal():
    hosts = {"a:1": host("a:1", "0-1-50", oldest="0-1-20")}
    with pytest.raises(BinlogPurged):
        choose_primary(list(hosts), prober(hosts), GtidSet.parse("0-1-10"))
    choose_primary(list(hosts), prober(hosts), GtidSet.parse("0-1-20"))  # exactly at the start: fine


def test_wrong_password_everywhere_is_terminal():
    hosts = {"a:1": AuthenticationFailed("no", host="a:1", user="u"), "b:1": ConnectionLost("down", host="b:1")}
    with pytest.raises(AuthenticationFailed):
        choose_primary(list(hosts), prober(hosts), None)


def test_single_host_may_be_a_replica():
    hosts = {"r:1": host("r:1", "0-1-5", read_only=True, replica=True)}
    assert choose_primary(list(hosts), prober(hosts), GtidSet.parse("0-1-5")).address == "r:1"


def test_table_filter_and_ddl_names():
    f = TableFilter(["shop.*", "crm.people"])
    assert f.matches(TableId("shop", "x")) and f.matches(TableId("crm", "people"))
    assert not f.matches(TableId("crm", "other"))
    assert ddl_table("ALTER TABLE `a b` ADD c INT", "shop") == TableId("shop", "a b")
    assert ddl_table("CREATE TABLE IF NOT EXISTS crm.people (id int)", "x") == TableId("crm", "people")
    assert ddl_table("CREATE DATABASE z", "x") is None


def test_purged_binlog_error_names_checkpoint_oldest_binlog_range_and_way_out():
    info = HostInfo("a:1", "mariadb", "10.11", 1, False, False, GtidSet.parse("0-1-90,1-5-7"),
                    GtidSet.parse("0-1-57,1-5-3"), "mariadb-bin.000007")
    with pytest.raises(BinlogPurged) as err:
        choose_primary(["a:1"], prober({"a:1": info}), GtidSet.parse("0-1-42"))
    text = str(err.value)
    assert "the checkpoint is 0-1-42" in text and "mariadb-bin.000007" in text and "starts after 0-1-57,1-5-3" in text
    assert "domain 0 seq 43..57 (up to 0-1-57), domain 1 seq 1..3 (up to 1-5-3)" in text
    assert "snapshot: when_needed" in text and "cdc stream reset" in text
    assert err.value.fields["missing"].startswith("domain 0 seq 43..57")


def test_purged_range_mysql_is_the_purged_set_minus_the_checkpoint():
    from readers.mysql.failover import purged_range

    u = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    assert purged_range(GtidSet.parse(f"{u}:1-10"), GtidSet.parse(f"{u}:1-25")) == f"GTIDs {u}:11-25"
