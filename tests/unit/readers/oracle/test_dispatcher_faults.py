"""Dispatcher, issue 13: TRUNCATE as an op 't' transaction, DDL published once across restarts,
LOB operations never dropped (stop, dead letter or counted skip). Hand-written V$LOGMNR_CONTENTS rows."""

from __future__ import annotations

import pytest

from cdc.stream.events import Begin, Change, Commit, SchemaChange
from readers.oracle.errors import UnsupportedLob
from readers.oracle.parse_pool import ParsePool
from readers.oracle.position import ResumeState
from tests.unit.readers.oracle.test_dispatcher import X1, X2, dispatcher, events, ins, row

LOCATOR = ('DECLARE \n loc_c CLOB; \n buf_c VARCHAR2(6426);\nBEGIN\n select "NOTE" into loc_c from "APP"."T" '
           "where \"ID\" = '1' and ROWID = 'R1' for update;")


def _shape(evs):
    return [(type(e).__name__, getattr(e, "op", None)) for e in evs]


def test_truncate_is_a_transaction_of_one_t_change_at_its_own_scn(tmp_path):
    d = dispatcher(tmp_path)
    evs = events(d, [ins(1, X1, 1), row(2, X1, 7), row(3, X2, 6), row(4, X2, 5, 'truncate table "APP"."T";'),
                     row(4, X2, 7), row(5, X1, 5, 'TRUNCATE TABLE "OTHER"."T";', owner="OTHER")])
    assert _shape(evs) == [("Begin", None), ("Change", "c"), ("Commit", None),
                           ("Begin", None), ("Change", "t"), ("Commit", None)]
    t = evs[4]
    assert str(t.table) == "APP.T" and t.before is None and t.after is None
    assert t.source["scn"] == t.source["commit_scn"] == 4 and t.source["txId"] == "6.1.42"
    assert evs[5].resume["commit_scn"] == 4 and evs[5].resume["xids_at_commit_scn"] == ["6.1.42"]


def test_a_ddl_is_published_once_across_a_restart_right_after_it(tmp_path):
    rows = [ins(1, X1, 1), row(2, X1, 7), row(3, X2, 5, 'alter table "APP"."T" add ("X" number);'),
            row(3, X2, 7), ins(4, X1, 2), row(5, X1, 7)]
    first = dispatcher(tmp_path)
    evs = events(first, rows[:3])
    ddl = evs[-1]
    assert isinstance(ddl, SchemaChange) and ddl.resume["xids_at_commit_scn"] == ["6.1.42"]
    # restart from the DDL's resume state: mining starts again at its SCN (low watermark 3)
    assert ddl.resume["low_watermark_scn"] == 3
    again = dispatcher(tmp_path, resume=ResumeState.from_json(ddl.resume))
    after = events(again, [r for r in rows if r[0] >= 3])
    assert not any(isinstance(e, SchemaChange) for e in after)
    assert _shape(after) == [("Begin", None), ("Change", "c"), ("Commit", None)]
    # a TRUNCATE's END carries the same test: a restart from it does not truncate again
    t_rows = [row(6, X2, 5, 'truncate table "APP"."T";'), row(6, X2, 7)]
    commit = next(e for e in events(again, t_rows) if isinstance(e, Commit))
    assert events(dispatcher(tmp_path, resume=ResumeState.from_json(commit.resume)), t_rows) == []


def test_a_ddl_split_over_csf_rows_is_joined(tmp_path):
    text = 'alter table "APP"."T" add ("' + "C" * 30 + '" number);'
    evs = events(dispatcher(tmp_path), [row(3, X2, 5, text[:10], csf=1), row(3, X2, 5, text[10:])])
    assert [e.ddl for e in evs] == [text]


def _lob_rows(commit_op=7, insert=True, then=()):
    rows = [row(1, X1, 1, 'insert into "APP"."T"("ID","NOTE") values (\'1\',EMPTY_CLOB());', rid="R1")] if insert else []
    return rows + [row(2, X1, 9, LOCATOR, rid="R1"),
                   row(3, X1, 10, " buf_c := 'abc''d';\n  dbms_lob.write(loc_c, 5, 1, buf_c);", rid="R1"),
                   row(3, X1, 10, " buf_c := 'xyz", csf=1, rid="R1"),
                   row(3, X1, 10, "';\n  dbms_lob.write(loc_c, 3, 7, buf_c);", rid="R1"),
                   row(4, X1, 11, " dbms_lob.trim(loc_c, 8);", rid="R1"),
                   row(4, X1, 28, " dbms_lob.erase(loc_c, 2, 1);", rid="R1"),
                   *then, row(5, X1, commit_op)]


@pytest.mark.parametrize("workers", [0, 1])
def test_lob_rows_of_an_inserted_row_are_assembled_into_its_image(tmp_path, workers):
    pool = ParsePool(1) if workers else None
    try:
        d = dispatcher(tmp_path, pool=pool)
        evs = events(d, _lob_rows()) + list(d.drain())
    finally:
        if pool is not None:
            pool.close()
    assert _shape(evs) == [("Begin", None), ("Change", "c"), ("Commit", None)]
    assert evs[1].after == {"ID": "1", "NOTE": "  c'd xy"}  # written, CSF joined, trimmed to 8, 2 erased


def test_lob_rows_that_cannot_be_assembled_stop_at_commit_naming_table_xid_and_scn(tmp_path):
    d = dispatcher(tmp_path)
    assert events(d, _lob_rows(commit_op=36, insert=False)) == []  # rolled back: nothing to refuse
    before = [ins(0, X2, 9), row(0, X2, 7)]
    got = []
    with pytest.raises(UnsupportedLob) as err:
        got.extend(dispatcher(tmp_path).feed(before + _lob_rows(insert=False)))
    e = err.value
    assert (e.table, e.xid, e.scn, e.commit_scn, e.operation) == ("APP.T", "5.7.100", 2, 5, "SEL_LOB_LOCATOR")
    assert "APP.T" in str(e) and "5.7.100" in str(e) and "SCN 2" in str(e) and "did not insert" in str(e)
    assert _shape(got) == [("Begin", None), ("Change", "c"), ("Commit", None)]  # nothing of the LOB transaction
    # a later change of the row whose LOB was written: its images would lack the value
    upd = row(4, X1, 3, 'update "APP"."T" set "ID" = \'2\' where "ID" = \'1\' and ROWID = \'R1\';', rid="R1")
    with pytest.raises(UnsupportedLob, match="UPDATE of a row whose LOB"):
        events(dispatcher(tmp_path), _lob_rows(then=[upd]))


@pytest.mark.parametrize("mode", ["dead_letter", "skip"])
def test_unassembled_lob_rows_go_to_the_dead_letter_topic_or_are_counted(tmp_path, mode):
    letters, counted = [], []
    kw = {"dead_letter": lambda err, raw: letters.append((err, raw))} if mode == "dead_letter" else {
        "unsupported": "skip"}
    d = dispatcher(tmp_path, on_refused=counted.append, **kw)
    evs = events(d, [ins(0, X1, 7)] + _lob_rows(insert=False))
    assert _shape(evs) == [("Begin", None), ("Change", "c"), ("Commit", None)]
    assert [c.operation for c in counted] == ["SEL_LOB_LOCATOR", "LOB_WRITE", "LOB_WRITE", "LOB_TRIM", "LOB_ERASE"]
    if mode == "dead_letter":
        assert [raw["operation"] for _, raw in letters] == [c.operation for c in counted]
        assert letters[1][1]["text"].startswith(" buf_c := 'abc''d'") and letters[1][1]["xid"] == "5.7.100"


def test_pool_mode_truncate_and_ddl_keep_their_place(tmp_path):
    pool = ParsePool(1)
    try:
        d = dispatcher(tmp_path, pool=pool, job_rows=2)
        rows = [ins(1, X1, 1), row(2, X1, 7), row(3, X2, 5, 'truncate table "APP"."T";'), row(3, X2, 7),
                ins(4, X1, 2), row(5, X1, 7), row(6, X2, 5, 'alter table "APP"."T" add ("X" number);')]
        evs = events(d, rows) + list(d.drain())
    finally:
        pool.close()
    assert [(type(e).__name__, getattr(e, "op", None)) for e in evs if not isinstance(e, (Begin, Commit))] == [
        ("Change", "c"), ("Change", "t"), ("Change", "c"), ("SchemaChange", None)]
    assert all(isinstance(e, Change) for e in evs if getattr(e, "op", None) == "t")


def test_a_partition_truncate_is_a_named_stop_before_its_scn(tmp_path):
    from readers.oracle.errors import UnloggedRowChange

    d = dispatcher(tmp_path)
    with pytest.raises(UnloggedRowChange) as err:
        events(d, [ins(1, X1, 1), row(2, X1, 7), row(3, X2, 5, 'ALTER TABLE "APP"."T" TRUNCATE PARTITION p0;')])
    e = err.value
    assert (e.table, e.scn, e.xid) == ("APP.T", 3, "6.1.42") and "TRUNCATE PARTITION" in str(e)
    assert d.commit_scn == 2  # the resume state stays before it
