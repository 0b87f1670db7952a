"""Dispatcher edge cases with hand-written V$LOGMNR_CONTENTS rows (session.CONTENTS_SQL layout)."""

from __future__ import annotations

import datetime as dt

import pytest

from cdc.spill.store import TransactionStore
from cdc.stream.events import Begin, Change, SchemaChange
from readers.oracle.dispatcher import Dispatcher
from readers.oracle.errors import LogMinerError, RedoParseError, UnsupportedOperation
from readers.oracle.position import ResumeState, Xid

X1 = Xid(5, 7, 100).raw
X1_ODD = Xid(5, 7, Xid.UNKNOWN_SQN).raw
X2 = Xid(6, 1, 42).raw
TS = dt.datetime(2024, 1, 1)


def row(scn, xid, op, sql="", table="T", rollback=0, csf=0, rid=None, owner="APP", info=None):
    x = Xid.parse(xid)
    named = op in (1, 2, 3, 5, 9, 10, 11, 28, 29, 255)  # rows LogMiner attributes to a table
    return (scn, TS, 1, xid, x.usn, x.slot, x.sqn, op, owner if named else None,
            table if named else None, rid, rollback, csf, sql, "rs", scn, info, 0)


def ins(scn, xid, ident, **kw):
    return row(scn, xid, 1, f'insert into "APP"."T"("ID") values (\'{ident}\');', rid=f"R{ident}", **kw)


def dispatcher(tmp_path, **kw):
    return Dispatcher(TransactionStore(str(tmp_path / "spill")), lambda o, t: o == "APP", resume=kw.pop("resume", None),
                      schema_of=lambda o, t, scn=None: None, **kw)


def events(d, rows):
    return list(d.feed(rows))


def test_commit_order_rollback_partial_and_odd_xid(tmp_path):
    d = dispatcher(tmp_path)
    evs = events(d, [
        row(1, X1, 6), ins(2, X1, 1), ins(3, X2, 2), ins(4, X1, 3),
        row(5, X1, 2, 'delete from "APP"."T" where "ID" = \'3\';', rollback=1, rid="R3"),  # partial rollback of ID 3
        row(6, X2, 7), row(7, X1, 7)])
    kinds = [(type(e).__name__, getattr(e, "txid", None)) for e in evs]
    assert kinds == [("Begin", "6.1.42"), ("Change", None), ("Commit", "6.1.42"),
                     ("Begin", "5.7.100"), ("Change", None), ("Commit", "5.7.100")]
    assert evs[4].after == {"ID": "1"}
    assert evs[5].resume == {"low_watermark_scn": 7, "commit_scn": 7, "xids_at_commit_scn": ["5.7.100"]}
    d2 = dispatcher(tmp_path)
    assert events(d2, [ins(1, X1, 1), row(2, X1_ODD, 2, "undo", rollback=1, rid="R1"), row(3, X1_ODD, 36)]) == []
    assert d2.open == {}


def test_csf_pieces_are_joined_before_parsing(tmp_path):
    sql = 'insert into "APP"."T"("ID","NOTE") values (\'1\',\'' + "n" * 5000 + "');"
    pieces = [sql[:4000], sql[4000:]]
    evs = events(dispatcher(tmp_path), [row(1, X1, 1, pieces[0], csf=1, rid="R1"), ins(2, X2, 9),
                                        row(3, X1, 1, pieces[1], rid="R1"), row(4, X1, 7)])
    change = next(e for e in evs if isinstance(e, Change))
    assert change.after == {"ID": "1", "NOTE": "n" * 5000}


def test_resume_drops_published_transactions(tmp_path):
    d = dispatcher(tmp_path, resume=ResumeState(1, 5, frozenset({"5.7.100"})))
    evs = events(d, [ins(1, X1, 1), ins(2, X2, 2), row(5, X1, 7), row(5, X2, 7)])
    assert [e.txid for e in evs if isinstance(e, Begin)] == ["6.1.42"]


def test_parse_error_names_scn_xid_table_and_text(tmp_path):
    d = dispatcher(tmp_path)
    with pytest.raises(RedoParseError) as err:
        events(d, [row(9, X1, 1, 'insert into "APP"."T"("ID") values (oops', rid="R"), row(10, X1, 7)])
    e = err.value
    assert (e.scn, e.xid, e.table) == (9, "5.7.100", "APP.T") and "oops" in e.text


def test_ddl_unsupported_and_missing_scn(tmp_path):
    ddls: list[int] = []
    d = dispatcher(tmp_path, on_ddl=ddls.append)
    [ddl] = events(d, [row(3, X1, 5, 'alter table "APP"."T" add ("X" number);')])
    assert ddls == [3]  # the reader rebuilds the flat-file dictionary
    assert isinstance(ddl, SchemaChange) and ddl.ddl.startswith("alter table") and ddl.resume["low_watermark_scn"] == 3
    # an UNSUPPORTED row stops the reader at its transaction's COMMIT (a rollback never does)
    assert events(d, [row(4, X2, 255, "Unsupported"), row(4, X2, 36)]) == []
    with pytest.raises(UnsupportedOperation) as err:
        events(d, [row(4, X2, 255, "Unsupported", info="Unsupported (column type)"), row(5, X2, 7)])
    assert err.value.scn == 4 and err.value.table == "APP.T" and err.value.xid == "6.1.42"
    skip = dispatcher(tmp_path, unsupported="skip")
    assert events(skip, [row(4, X1, 255, "Unsupported"), row(5, X1, 7)]) == [] and skip.skipped_unsupported == 1
    with pytest.raises(LogMinerError, match="MISSING_SCN"):
        events(d, [row(6, X1, 34, "")])
    assert events(d, [row(7, X2, 1, "insert ...", owner="OTHER", rid="R"), row(8, X2, 7)]) == []


def test_an_unknown_object_after_a_dictionary_rebuild_restarts_the_source(tmp_path):
    """Rows mined ahead with the dictionary from before a CREATE TABLE: a restart (SourceUnavailable) fixes them;
    an unknown object with no rebuild before it is a stop (DictionaryMismatch, Terminal for the daemon)."""
    from cdc.errors import SourceUnavailable
    from readers.oracle.errors import DictionaryMismatch, DictionaryStale

    unknown = row(5, X2, 1, 'insert into "UNKNOWN"."OBJ# 7"("ID") values (\'1\');', owner="UNKNOWN", table="OBJ# 7")
    with pytest.raises(DictionaryMismatch) as plain:
        events(dispatcher(tmp_path), [unknown])
    assert not isinstance(plain.value, SourceUnavailable)
    rebuilt = []
    d = dispatcher(tmp_path, on_ddl=rebuilt.append)
    with pytest.raises(DictionaryStale, match="rebuilt for a DDL at SCN 3") as stale:
        events(d, [row(3, X1, 5, 'create table "APP"."N" ("ID" number)', table="N"), unknown])
    assert rebuilt == [3] and isinstance(stale.value, SourceUnavailable)
