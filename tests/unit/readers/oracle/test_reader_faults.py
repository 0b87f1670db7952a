"""OracleSource on the LogMiner simulator (no Oracle server runs here), issue 13: TRUNCATE and DDL
rows as LogMiner shows them, a restart right after a DDL, supplemental logging refused at start,
LOB operations (INSERT with EMPTY_CLOB(), SEL_LOB_LOCATOR, LOB_WRITE pieces, LOB_TRIM) assembled into the
row image, or, where they cannot be (the LOB of a row the transaction did not insert), never dropped."""

from __future__ import annotations

import pytest

from cdc.contract import SourceContext
from cdc.metrics import SourceMetrics
from cdc.stream.events import Begin, Change, Commit, Heartbeat, SchemaChange, expand
from readers.oracle.config import OracleSourceConfig
from readers.oracle.errors import SupplementalLoggingMissing, UnsupportedLob
from readers.oracle.reader import OracleSource
from readers.oracle.sim import simulator
from tests.unit.readers.oracle.helpers import expected, source

DDL = "seed=21,transactions=30,lanes=3,threads=2,log_scns=40,truncate_at=7:16,ddl_at=10:20"
LOB = "seed=22,transactions=12,lanes=2,threads=1,lob_at=5"
LOB_UPDATE = "seed=24,transactions=12,lanes=2,threads=1,lob_update_at=5"


def _read(src, resume=None, until=None):
    """Start and read until caught up (or ``until(event)``); (transactions, DDL texts, last resume, events)."""
    src.start(resume)
    txs, ddls, cur, last, evs = [], [], None, resume, []
    try:
        for ev in expand(src.events()):  # a ChangeBatch as its Changes
            evs.append(ev)
            if isinstance(ev, Begin):
                cur = []
            elif isinstance(ev, Change):
                cur.append((ev.op, ev.table.db, ev.table.table, ev.before, ev.after))
            elif isinstance(ev, Commit):
                txs.append((ev.position["commit_scn"], ev.txid, cur))
                last = ev.resume
            elif isinstance(ev, SchemaChange):
                ddls.append(ev.ddl)
                last = ev.resume
            elif isinstance(ev, Heartbeat):
                last = ev.resume or last
                if src.caught_up():
                    break
            if until is not None and until(ev):
                break
    finally:
        src.close()
    return txs, ddls, last, evs


@pytest.mark.parametrize("workers", [0, 1])
def test_truncate_and_ddl_rows_as_logminer_shows_them(tmp_path, workers):
    txs, ddls, _, _ = _read(source(DDL, tmp_path, sessions=2, scn_range_size=15, parse_workers=workers))
    assert txs == expected(DDL)
    truncs = [(scn, rows) for scn, _, rows in txs if rows[0][0] == "t"]
    assert [rows for _, rows in truncs] == [[("t", "APP", "T1", None, None)], [("t", "APP", "T1", None, None)]]
    assert ddls == ['alter table "APP"."T1" modify ("NOTE" varchar2(4000));',
                    'alter table "APP"."T2" modify ("NOTE" varchar2(4000));']


def test_a_restart_right_after_a_ddl_or_a_truncate_emits_it_once(tmp_path):
    # first run: stop right after the first DDL; second: right after the first TRUNCATE's Commit; third: the rest
    first, ddl1, resume, _ = _read(source(DDL, tmp_path, sessions=2, scn_range_size=15),
                                   until=lambda ev: isinstance(ev, SchemaChange))
    second, ddl2, resume2, _ = _read(source(DDL, tmp_path, sessions=2, scn_range_size=15), resume,
                                     until=lambda ev: isinstance(ev, Change) and ev.op == "t")
    # the until above stops inside the TRUNCATE (before its Commit): resume from the last END instead
    rest, ddl3, _, _ = _read(source(DDL, tmp_path, sessions=3, scn_range_size=7), resume2)
    got = first + second + rest
    assert got == expected(DDL), "a transaction was lost or published twice across the restarts"
    assert ddl1 + ddl2 + ddl3 == ['alter table "APP"."T1" modify ("NOTE" varchar2(4000));',
                                  'alter table "APP"."T2" modify ("NOTE" varchar2(4000));']


def test_supplemental_logging_is_checked_at_start(tmp_path):
    bare = "seed=23,transactions=5,supplemental="
    with pytest.raises(SupplementalLoggingMissing) as err:
        source(bare, tmp_path).start(None)
    text = str(err.value)
    assert "ALTER DATABASE ADD SUPPLEMENTAL LOG DATA;" in text
    for t in ("T0", "T1", "T2"):
        assert f'ALTER TABLE "APP"."{t}" ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS;' in text
    some = "seed=23,transactions=5,supplemental=min+T0:T2"
    with pytest.raises(SupplementalLoggingMissing) as err:
        source(some, tmp_path).start(None)
    assert err.value.problems == [(
        "table APP.T1 has no ALL COLUMNS supplemental logging (no log group of type 'ALL COLUMN LOGGING' in "
        'ALL_LOG_GROUPS); fix on the primary: ALTER TABLE "APP"."T1" ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS;')]
    ok = source(some, tmp_path, tables=["APP.T0", "APP.T2"])  # the captured tables are logged
    ok.start(None)
    ok.close()
    whole = source("seed=23,transactions=5,supplemental=db_all", tmp_path)  # database-wide ALL: MIN is IMPLICIT
    whole.start(None)
    whole.close()


def test_lob_rows_of_an_inserted_row_are_assembled(tmp_path):
    lob_tx = simulator.instance(LOB).model.txn(5)
    ops = [r[0] for r in lob_tx.records]
    assert ops[:4] == [6, 1, 9, 10] and ops[-2:] == [11, 7]  # START, INSERT, SEL_LOB_LOCATOR, LOB_WRITE.., TRIM, COMMIT
    assert "EMPTY_CLOB()" in lob_tx.records[1][5] and "dbms_lob.write(loc_c, 2000, 1, buf_c);" in lob_tx.records[3][5]
    for workers in (0, 1):
        txs, _, _, _ = _read(source(LOB, tmp_path, sessions=2, scn_range_size=5, parse_workers=workers))
        assert txs == expected(LOB)
        note = next(rows for _, x, rows in txs if x == str(lob_tx.xid))[0][4]["NOTE"]
        assert len(note) > 4000 and note.startswith("lob 10000 piece 0; ")


def test_lob_rows_of_an_existing_row_stop_the_source_naming_table_xid_and_scn(tmp_path):
    lob_tx = simulator.instance(LOB_UPDATE).model.txn(5)
    src = source(LOB_UPDATE, tmp_path, sessions=2, scn_range_size=5)
    published = []
    with pytest.raises(UnsupportedLob) as err:
        _read(src, until=lambda ev: published.append(ev) and False)
    e = err.value
    assert e.table == "APP.T2" and e.xid == str(lob_tx.xid) and e.operation == "SEL_LOB_LOCATOR"
    assert f"XID {lob_tx.xid}" in str(e) and f"SCN {e.scn}" in str(e)
    committed = [x for _, x, _ in expected(LOB_UPDATE)]
    got = [ev.txid for ev in published if isinstance(ev, Commit)]
    assert not any(isinstance(ev, Begin) and ev.txid == str(lob_tx.xid) for ev in published)
    assert got == committed[:committed.index(str(lob_tx.xid))]  # everything before it, in order, nothing after


def test_unassembled_lob_rows_go_to_the_dead_letter_topic_and_are_counted(tmp_path):
    letters = []
    metrics = SourceMetrics("ora-dl")
    cfg = OracleSourceConfig(name="ora-dl", dsn="simulator:" + LOB_UPDATE, tables=["APP.*"],
                             dictionary_path=str(tmp_path), heartbeat_interval_s=0.05, poll_interval_s=0.01)
    ctx = SourceContext(metrics, spill_dir=str(tmp_path / "spill"))
    ctx.dead_letter = lambda err, raw: letters.append((type(err).__name__, raw))
    txs, _, _, _ = _read(OracleSource(cfg, ctx))
    lob_tx = simulator.instance(LOB_UPDATE).model.txn(5)
    pieces = sum(1 for r in lob_tx.records if r[0] == 10)
    assert [raw["operation"] for _, raw in letters] == ["SEL_LOB_LOCATOR"] + ["LOB_WRITE"] * pieces + ["LOB_TRIM"]
    assert {raw["xid"] for _, raw in letters} == {str(lob_tx.xid)} and letters[0][0] == "UnsupportedLob"
    assert metrics._m.errors.labels("ora-dl", "UnsupportedLob")._value.get() == len(letters)
    # every other transaction is published; the LOB-only one had nothing else to publish
    assert [x for _, x, _ in txs] == [x for _, x, _ in expected(LOB_UPDATE) if x != str(lob_tx.xid)]


def test_cdc_check_names_the_missing_supplemental_logging(tmp_path, capsys):
    import argparse

    import yaml

    from cdc.checks import main

    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(yaml.safe_dump({"kafka": {"bootstrap_servers": "127.0.0.1:1"}, "sources": [
        {"name": "bad", "kind": "oracle", "dsn": "simulator:seed=26,transactions=3,supplemental=min+T0",
         "tables": ["APP.*"], "dictionary_path": str(tmp_path)},
        {"name": "good", "kind": "oracle", "dsn": "simulator:seed=26,transactions=3", "tables": ["APP.*"],
         "dictionary_path": str(tmp_path)}]}))
    assert main(argparse.Namespace(config=str(cfg), source=None, json=False)) == 1
    out = capsys.readouterr().out
    assert out.count("FAIL  source bad: supplemental logging") == 2
    assert "ok    source good: supplemental logging" in out and "ok    source good: tables APP.*: matches" in out
    assert 'fix: on the primary: ALTER TABLE "APP"."T2" ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS;' in out
