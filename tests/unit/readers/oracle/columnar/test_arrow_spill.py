"""``pipeline: columnar`` with big open transactions: their rows go to Arrow IPC chunk files
(readers/oracle/columnar/arrow_spill.py) and come back at COMMIT through the native record pass. The events equal
the row pipeline's; a rare row while a transaction is spilled hands its rows, spilled ones in their
place, to the row path; a chunk that is not what was written, a missing one or a full disk stops the
source naming the file before the transaction's Commit, and a restart from the last END publishes it
whole, once."""

from __future__ import annotations

import os

import pytest

from cdc.errors import SpillError
from cdc.stream.events import Begin, ChangeBatch, Commit, SchemaChange
from tests.unit.readers.oracle.columnar.columnar_helpers import collect, events
from tests.unit.readers.oracle.helpers import run, source

# one 3,000-row UPDATE transaction (transaction 0) beside 40 others with rollbacks, partial rollbacks, CSF
BIG = ("seed=3,transactions=40,lanes=4,threads=2,big_txn_rows=3000,log_scns=300,rollback_rate=0.2,"
       "partial_rollback_rate=0.3,csf_rate=0.2")
SMALL_BOUND = {"spill_threshold_rows": 200, "fetch_size": 97, "parse_workers": 0}


def _keep_feed(feeds):
    return lambda src: feeds.append(src.columnar)


@pytest.mark.parametrize("opts", [BIG, BIG.replace("seed=3", "seed=4") + ",unknown_sqn_rate=1.0"])
def test_a_big_transaction_spills_as_arrow_and_the_events_are_the_row_pipelines(tmp_path, opts):
    feeds: list = []
    rows, _ = events(opts, tmp_path, fetch_size=97, parse_workers=0, pipeline="rows")
    cols, _ = events(opts, tmp_path, pipeline="columnar", after_start=_keep_feed(feeds), **SMALL_BOUND)
    assert cols == rows
    feed = feeds[0]
    assert feed.spill.spilled_rows >= 2_500 and feed.batches_rows == 0  # spilled, never handed to the row path
    assert feed.peak_pending_bytes <= feed.max_pending_bytes and len(feed.spill) == 0


def test_a_rare_row_while_transactions_are_spilled_hands_their_rows_to_the_row_path_in_place(tmp_path):
    opts = BIG + ",lob_at=5"  # LOB rows come while transactions are spilled (found for this seed and bound)
    cfg = {"spill_threshold_rows": 20, "fetch_size": 50, "parse_workers": 0}
    handed: list[int] = []

    def hook(src):
        feed = src.columnar
        to_rows = feed._raw_rows

        def raw_rows(table):
            handed.append(sum(feed.spill.rows(raw) for raw in feed.spill.raws()))
            return to_rows(table)

        feed._raw_rows = raw_rows

    rows, _ = events(opts, tmp_path, pipeline="rows", **cfg)
    cols, _ = events(opts, tmp_path, pipeline="columnar", after_start=hook, **cfg)
    assert cols == rows
    assert sum(handed) > 0  # spilled rows went back in their places


def test_a_ddl_or_truncate_leaves_the_open_transactions_columnar(tmp_path):
    """A DDL row goes through the row path alone, at its place; the open and spilled transactions stay."""
    opts = BIG + ",ddl_at=5,truncate_at=8"
    cfg = {"spill_threshold_rows": 20, "fetch_size": 50, "parse_workers": 0}
    feeds: list = []
    rows, _ = events(opts, tmp_path, pipeline="rows", **cfg)
    cols, _ = events(opts, tmp_path, pipeline="columnar", after_start=_keep_feed(feeds), **cfg)
    assert cols == rows
    assert any(isinstance(ev, SchemaChange) for ev in cols) and any(getattr(ev, "op", "") == "t" for ev in cols)
    assert feeds[0].batches_rows == 0 and feeds[0].spill.spilled_rows > 0


def _collect(src, resume=None, after_start=None):
    """Events (a ChangeBatch as it is) until caught up or a SpillError: (events, the error or None, last resume)."""
    out, last, error = collect(src, resume, after_start=after_start, expand=False, until=(SpillError,))
    return out, error, last


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete"])
def test_a_damaged_chunk_stops_before_the_commit_and_a_restart_publishes_the_transaction_once(tmp_path, damage):
    spills = []

    def hook(src):  # damage a spilled transaction's first chunk once it has a second
        spill = src.columnar.spill
        spills.append(spill)
        spill.append = lambda raw, xid, rows: _damage(spill, raw, xid, rows, damage)

    got, failure, resume = _collect(source(BIG, tmp_path, pipeline="columnar", **SMALL_BOUND), after_start=hook)
    assert failure is not None, "a damaged chunk went unnoticed"
    msg = str(failure)
    assert "spill chunk 0 of transaction" in msg and failure.path.startswith(spills[0].store.dir.path)
    assert failure.chunk == 0
    assert ("corrupt" in msg) if damage != "delete" else ("cannot read" in msg and "No such file" in msg)
    # the damaged transaction never reached its Commit (its earlier ChangeBatches may have gone out: no END)
    begun = [ev.txid for ev in got if isinstance(ev, Begin)]
    committed = [ev.txid for ev in got if isinstance(ev, Commit)]
    assert begun[:len(committed)] == committed and len(begun) - len(committed) <= 1
    # restart from the last END: every transaction exactly once, in order, the damaged one whole
    assert _commits(got) + _restart(tmp_path, resume) == _everything(tmp_path)


def _damage(spill, raw, xid, rows, how):
    type(spill).append(spill, raw, xid, rows)
    chunks = spill._txs[raw].chunks
    if len(chunks) != 2:
        return
    path = os.path.join(spill.store.dir.path, chunks[0][0])
    if how == "delete":
        os.unlink(path)
        return
    with open(path, "rb") as fh:
        data = bytearray(fh.read())
    if how == "flip":
        data[len(data) // 2] ^= 0x01
    else:
        del data[-100:]
    with open(path, "wb") as fh:
        fh.write(bytes(data))


def test_a_full_disk_stops_naming_the_directory_and_a_restart_publishes_everything_once(tiny_disk, tmp_path):
    src = source(BIG, tmp_path, pipeline="columnar", **SMALL_BOUND)
    src.context.spill_dir = str(tiny_disk)  # 64 KiB: the big transaction's chunks do not fit
    got, failure, resume = _collect(src)
    assert failure is not None
    msg = str(failure)
    assert f"the file system holding {tiny_disk}" in msg and "is full" in msg and "No space left on device" in msg
    assert not [f for f in os.listdir(os.path.join(tiny_disk, "ora"))]  # no partial file; the rest removed at close
    assert _commits(got) + _restart(tmp_path, resume) == _everything(tmp_path)


def _commits(evs) -> list:
    """(commit SCN, txid, rows) of the committed transactions among ``evs``."""
    out, rows = [], 0
    for ev in evs:
        if isinstance(ev, Begin):
            rows = 0
        elif isinstance(ev, ChangeBatch):
            rows += len(ev.rows)
        elif isinstance(ev, Commit):
            out.append((ev.position["commit_scn"], ev.txid, rows))
    return out


def _restart(tmp_path, resume) -> list:
    """(commit SCN, txid, rows) of the transactions a columnar source publishes from ``resume`` on."""
    txs, _ = run(source(BIG, tmp_path, pipeline="columnar", **SMALL_BOUND), resume)
    return [(scn, xid, len(rows)) for scn, xid, rows in txs]


def _everything(tmp_path) -> list:
    """The row pipeline's transactions from the start (the model leaves the big one out)."""
    txs, _ = run(source(BIG, tmp_path, pipeline="rows", fetch_size=97, parse_workers=0))
    return [(scn, xid, len(rows)) for scn, xid, rows in txs]


def test_many_small_open_transactions_go_to_the_row_path_not_into_a_file_per_row(tmp_path):
    """More open transactions than half the row bound: their stubs alone pass it, so spilling cannot help;
    the row path takes them (as before the Arrow spill) and no chunk file is written."""
    opts = "seed=8,transactions=200,lanes=60,rows_min=3,rows_max=8,partial_rollback_rate=0.3,csf_rate=0.1"
    cfg = {"spill_threshold_rows": 40, "fetch_size": 50, "parse_workers": 0}
    feeds: list = []
    rows, _ = events(opts, tmp_path, pipeline="rows", **cfg)
    cols, _ = events(opts, tmp_path, pipeline="columnar", after_start=_keep_feed(feeds), **cfg)
    assert cols == rows
    assert feeds[0].batches_rows > 0 and feeds[0].spill.spilled_rows == 0


def test_a_stop_with_a_transaction_spilled_leaves_no_file_and_no_spilled_bytes(tmp_path):
    src = source(BIG, tmp_path, pipeline="columnar", **SMALL_BOUND)
    src.start(None)
    for seen, _ev in enumerate(src.events()):
        if src.columnar.spill.spilled_rows and len(src.columnar.spill):
            break  # the big transaction is open and partly on disk
        assert seen < 100_000 and not src.caught_up(), "the big transaction never spilled"
    where = src.columnar.spill.store.dir.path
    assert os.listdir(where) and src.store.spilled_bytes > 0
    src.close()
    assert not os.listdir(where) and src.store.spilled_bytes == 0


def test_a_chunk_whose_digest_passes_but_is_not_arrow_is_a_spill_error(tmp_path):
    import pyarrow as pa

    from cdc.spill import codec as spill_codec
    from cdc.spill.store import TransactionStore
    from readers.oracle.columnar.arrow_spill import ArrowSpill

    store = TransactionStore(str(tmp_path / "s"))
    spill = ArrowSpill(store)
    spill.append("raw", "1.2.3", pa.table({"ROW_ID": ["a"], "ROLLBACK": [0], "CSF": [0]}))
    name = spill._txs["raw"].chunks[0][0]
    store.dir.remove(name)
    store.dir.create(name, spill_codec.frame(b"not arrow at all"))  # a forged digest
    with pytest.raises(SpillError, match=r"spill chunk 0 of transaction 1\.2\.3 .* not an Arrow IPC stream"):
        list(spill.chunks("raw"))
    spill.close()
    assert store.spilled_bytes == 0
    store.close()


def test_a_restart_from_a_ddls_resume_state_publishes_what_followed_once(tmp_path):
    """The DDL's resume state, taken while the columnar feed holds open (and spilled) transactions: a restart
    from it publishes exactly the transactions committed after the DDL, each once, the DDL not again."""
    opts = BIG + ",ddl_at=5"
    cfg = {"spill_threshold_rows": 20, "fetch_size": 50, "parse_workers": 0, "pipeline": "columnar"}
    first, _ = events(opts, tmp_path, **cfg)
    at = next(i for i, ev in enumerate(first) if isinstance(ev, SchemaChange) and ev.ddl)
    ddl = first[at]
    assert ddl.resume["low_watermark_scn"] < ddl.resume["commit_scn"]  # transactions were open across it
    after = [(ev.position["commit_scn"], ev.txid) for ev in first[at:] if isinstance(ev, Commit)]
    again, _ = events(opts, tmp_path, ddl.resume, **cfg)
    assert [(ev.position["commit_scn"], ev.txid) for ev in again if isinstance(ev, Commit)] == after
    assert not any(isinstance(ev, SchemaChange) and ev.ddl == ddl.ddl for ev in again)
