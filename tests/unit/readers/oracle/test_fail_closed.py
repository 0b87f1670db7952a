"""Fail closed on Oracle: an OPERATION_CODE the dispatcher does not decode, on a captured table, is refused
like UNSUPPORTED by both pipelines (a stop naming table, SCN and code, or the dead-letter/skip policy),
and no resume state yielded before the stop passes it; a code that changes no rows (SELECT_FOR_UPDATE)
passes and the published transactions equal the model's."""

from __future__ import annotations

import pytest

from cdc.stream.events import Begin, Commit
from readers.oracle.errors import UnsupportedOperation
from tests.unit.readers.oracle.columnar.columnar_helpers import collect
from tests.unit.readers.oracle.helpers import expected, source

OPTS = "seed=11,transactions=8,lanes=2,rollback_rate=0,partial_rollback_rate=0,rows_max=3,odd_op_at=3"


def _commits(events):
    return [e.txid for e in events if isinstance(e, Commit)]


@pytest.mark.parametrize("pipeline", ["rows", "columnar"])
@pytest.mark.parametrize("code", [68, 70, 99, 200])
def test_an_unknown_operation_code_on_a_captured_table_stops_before_its_transaction(tmp_path, pipeline, code):
    src = source(f"{OPTS},odd_op={code}", tmp_path, pipeline=pipeline)
    out, last, err = collect(src, until=(UnsupportedOperation,))
    assert err is not None, f"{pipeline}: operation {code} on a captured table was published or dropped"
    assert f"OPERATION_CODE {code}" in str(err) and err.table.startswith("APP.") and err.scn > 0
    odd_xid = err.xid
    assert odd_xid not in _commits(out) and all(e.txid != odd_xid for e in out if isinstance(e, Begin))
    assert last is None or last["low_watermark_scn"] <= err.scn, f"the resume state passed SCN {err.scn}: {last}"
    # the transactions published before the stop are the model's, in order, each once
    want = [x for _, x, _ in expected(f"{OPTS},odd_op={code}")]
    assert _commits(out) == want[:len(_commits(out))]


@pytest.mark.parametrize("pipeline", ["rows", "columnar"])
def test_an_unknown_operation_code_goes_to_the_skip_policy_when_configured(tmp_path, pipeline):
    src = source(f"{OPTS},odd_op=68", tmp_path, pipeline=pipeline, unsupported="skip")
    out, _, err = collect(src, until=(UnsupportedOperation,))
    assert err is None and len(_commits(out)) == len(expected(f"{OPTS},odd_op=68"))


@pytest.mark.parametrize("pipeline", ["rows", "columnar"])
def test_select_for_update_changes_nothing_and_passes(tmp_path, pipeline):
    src = source(f"{OPTS},odd_op=25", tmp_path, pipeline=pipeline)
    out, _, err = collect(src, until=(UnsupportedOperation,))
    assert err is None
    assert _commits(out) == [x for _, x, _ in expected(f"{OPTS},odd_op=25")]
