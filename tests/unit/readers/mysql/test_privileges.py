"""Which privilege each statement of the reader needs, by server version, and the run-time access-denied error."""

from __future__ import annotations

import pickle

import pymysql

from readers.mysql.privileges import (
    MissingPrivilege,
    binlog_events_privilege,
    binlog_list_privilege,
    denied,
    replica_status_privilege,
)


def test_replica_status_privilege_by_version():
    assert replica_status_privilege(True, "10.11.19-MariaDB-0+deb12u1") == "SLAVE MONITOR"
    assert replica_status_privilege(True, "10.5.9-MariaDB") == "SLAVE MONITOR"
    assert replica_status_privilege(True, "10.5.8-MariaDB") == "REPLICATION SLAVE ADMIN"
    assert replica_status_privilege(True, "10.4.30-MariaDB") == "REPLICATION CLIENT"
    assert replica_status_privilege(False, "8.0.36") == "REPLICATION CLIENT"


def test_binlog_list_privilege_by_version():
    assert binlog_list_privilege(True, "10.6.1-MariaDB") == "BINLOG MONITOR"
    assert binlog_list_privilege(True, "10.4.30-MariaDB") == "REPLICATION CLIENT"
    assert binlog_list_privilege(False, "8.4.0") == "REPLICATION CLIENT"


def test_binlog_events_privilege_by_version():  # SHOW BINLOG EVENTS: a DDL's statement at its position
    assert binlog_events_privilege(True, "10.11.19-MariaDB") == "BINLOG MONITOR"
    assert binlog_events_privilege(True, "10.4.30-MariaDB") == "REPLICATION SLAVE"
    assert binlog_events_privilege(False, "9.7.4") == "REPLICATION SLAVE"


def test_access_denied_at_run_time_names_the_privilege_and_the_grant():
    exc = pymysql.err.OperationalError(1227, "Access denied; you need (at least one of) the SUPER, SLAVE MONITOR "
                                             "privilege(s) for this operation")
    err = denied(exc, "db1:3306", "cdc")
    assert isinstance(err, MissingPrivilege) and err.privilege == "SLAVE MONITOR"
    assert "db1:3306: user 'cdc' lacks the SLAVE MONITOR privilege" in str(err)
    assert "fix: GRANT SLAVE MONITOR ON *.* TO 'cdc'@'%';" in str(err)
    assert str(pickle.loads(pickle.dumps(err))) == str(err)  # crosses processes like every CdcError


def test_other_errors_are_not_privilege_errors():
    assert denied(pymysql.err.OperationalError(1045, "Access denied for user 'cdc'"), "db1:3306", "cdc") is None
    assert denied(pymysql.err.OperationalError(2003, "Can't connect"), "db1:3306", "cdc") is None
