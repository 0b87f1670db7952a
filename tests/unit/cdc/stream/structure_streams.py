"""Change streams for the structure property tests: what one publisher writes, and what goes wrong with it.

A *writer* turns a plan (transactions, aborted transactions, heartbeats, DDL) into (key, value) records
exactly as cdc.stream.envelope builds them, numbering from a given sequence, the way cdc.publish.publisher does:
a table definition (SCHEMA, no ddl, no resume) inside the transaction that first touches a table, END
with event_count and data_collections, ABORTED closing a transaction cut short. The strategies build:

- ``valid``: one writer's stream (schemas first, a HEARTBEAT last);
- ``interleaved``: a common prefix, then two writers numbering from the same tail (two daemons of one
  source), their records merged in an arbitrary order;
- ``damaged``: a valid stream with one record dropped, doubled or swapped with its neighbour (a marker
  involved), renumbered so that only the structure rules can see it; ``damage_at`` is the first position
  where it differs from the original.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import strategies as st

from cdc.consumer.assembler import TransactionAssembler
from cdc.consumer.transactions import Transaction
from cdc.errors import StreamCorrupt
from cdc.stream import envelope
from cdc.stream.events import Column, TableId, TableSchema

TABLES = ("db.a", "db.b")
SCHEMAS = {t: TableSchema(TableId.parse(t), (Column("id", "int", False), Column("v", "int")), ("id",))
           for t in TABLES}
Record = tuple[dict | None, dict]

row = st.tuples(st.sampled_from(("c", "u", "d")), st.sampled_from(TABLES), st.integers(0, 5), st.integers(0, 99))
step = st.one_of(
    st.tuples(st.just("tx"), st.lists(row, max_size=4)),
    st.tuples(st.just("tx"), st.lists(row, min_size=1, max_size=4)),
    st.tuples(st.just("abort"), st.lists(row, max_size=3)),
    st.tuples(st.just("hb"), st.just([])),
    st.tuples(st.just("ddl"), st.just([])),
)
plans = st.lists(step, min_size=1, max_size=6)


def write(plan: list[tuple[str, list]], first_sequence: int, tag: str, seen: set[str] | None = None) -> list[Record]:
    """One publisher's records for ``plan``, sequences from ``first_sequence``; transaction ids ``tag-k``."""
    out: list[Record] = []
    seq = first_sequence
    seen = set() if seen is None else seen

    def nxt() -> int:
        nonlocal seq
        seq += 1
        return seq - 1

    n_tx = 0
    for k, (kind, rows) in enumerate(plan):
        ts = 1_700_000_000_000 + k
        if kind == "hb":
            out.append((None, envelope.heartbeat_record(nxt(), ts, {"tag": tag, "k": k})))
            continue
        if kind == "ddl":
            out.append(({"table": TABLES[0]}, envelope.schema_record(nxt(), TABLES[0], "ALTER TABLE db.a COMMENT 'x'",
                                                                     SCHEMAS[TABLES[0]], ts, {"tag": tag, "k": k})))
            continue
        txid = f"{tag}-{n_tx}"  # counted over transactions only: another plan's heartbeats do not shift it
        n_tx += 1
        ts = 1_700_000_000_000 + n_tx
        out.append((None, envelope.begin_record(nxt(), txid, ts)))
        counts: dict[str, int] = {}
        for j, (op, table, key, v) in enumerate(rows):
            if table not in seen:  # the publisher's first-sight table definition, inside the transaction
                seen.add(table)
                out.append(({"table": table}, envelope.schema_record(nxt(), table, None, SCHEMAS[table], ts, None)))
            image = {"id": key, "v": v}
            counts[table] = counts.get(table, 0) + 1
            value = {"sequence": nxt(), "before": None if op == "c" else image, "after": None if op == "d" else image,
                     "op": op, "ts_ms": ts, "source": {"db": "db", "table": table.split(".")[1], "ts_ms": ts},
                     "transaction": {"id": txid, "total_order": j + 1, "data_collection_order": counts[table]}}
            out.append(({"table": table, "key": {"id": key}}, value))
        if kind == "abort":
            out.append((None, envelope.aborted_record(nxt(), txid, ts)))
        else:
            out.append((None, envelope.end_record(nxt(), txid, ts, counts, {"tag": tag, "tx": n_tx}, {"tx": n_tx})))
    return out


def renumber(records: list[Record], first: int = 1) -> list[Record]:
    out = []
    for i, (k, v) in enumerate(records):
        out.append((k, {**v, "sequence": first + i}))
    return out


@st.composite
def valid(draw: Any) -> list[Record]:
    recs = write(draw(plans), 1, "A")
    recs.append((None, envelope.heartbeat_record(len(recs) + 1, 1, {"tag": "end"})))
    return recs


@st.composite
def interleaved(draw: Any) -> tuple[list[Record], list[list[Record]]]:
    """(the merged records, [prefix, writer A's records, writer B's records])."""
    seen: set[str] = set()
    prefix = write(draw(st.lists(step, max_size=2)), 1, "P", seen)
    tail = len(prefix) + 1
    plan_a = draw(plans)
    a = write(plan_a, tail, "A", set(seen))
    if draw(st.booleans()):  # two daemons of one source: the same transactions, B a new process (it writes its
        # table definitions again) whose heartbeats fall elsewhere, so its numbering is shifted from A's
        plan_b = [s for s in plan_a if s[0] != "hb" or draw(st.booleans())]
        for _ in range(draw(st.integers(0, 2))):
            plan_b.insert(draw(st.integers(0, len(plan_b))), ("hb", []))
        b = write(plan_b, tail, "A", set())
    else:  # another source's transactions (ids of their own)
        b = write(draw(plans), tail, "B", set(seen))
    # the broker appends each producer's batches whole: runs of records of one writer, then of the other
    runs = draw(st.lists(st.integers(1, 5), min_size=len(a) + len(b), max_size=len(a) + len(b)))
    merged, i, j, take_a = list(prefix), 0, 0, draw(st.booleans())
    for run in runs:
        if take_a:
            merged.extend(a[i:i + run])
            i += run
        else:
            merged.extend(b[j:j + run])
            j += run
        take_a = not take_a
    merged.extend(a[i:] + b[j:])
    return merged, [prefix, a, b]


DAMAGING = (envelope.BEGIN, envelope.END, envelope.ABORTED)


def _inside_spans(records: list[Record]) -> list[int]:
    """Positions of BEGIN, data, END and ABORTED records (in-transaction table definitions left out: the
    publisher may write one anywhere before the table's first row, and dropping one loses nothing; so are
    the rows of an aborted transaction: nothing of it is applied, whatever it holds)."""
    aborted = {v["id"] for _k, v in records if v.get("status") == envelope.ABORTED}
    return [i for i, (_k, v) in enumerate(records) if v.get("status") in DAMAGING
            or (v.get("status") is None and v["transaction"]["id"] not in aborted)]


@st.composite
def damaged(draw: Any) -> tuple[list[Record], list[Record], int, str]:
    """(the original, the damaged stream, the first position where they differ, what was done)."""
    original = draw(valid())
    spans = _inside_spans(original)
    if not spans:  # a plan of heartbeats and DDL only: add a transaction
        original = renumber(original[:-1] + write([("tx", [("c", "db.a", 1, 1)])], 1, "X") + original[-1:])
        spans = _inside_spans(original)
    how = draw(st.sampled_from(("drop", "double", "swap")))
    if how == "swap":
        pairs = [i for i in range(len(original) - 1)
                 if (original[i][1].get("status") in DAMAGING or original[i + 1][1].get("status") in DAMAGING)
                 and not _definition(original[i]) and not _definition(original[i + 1])]
        i = draw(st.sampled_from(pairs))
        recs = original[:i] + [original[i + 1], original[i]] + original[i + 2:]
        return original, renumber(recs), i, f"swap {i},{i + 1}"
    i = draw(st.sampled_from(spans))
    if how == "drop":
        return original, renumber(original[:i] + original[i + 1:]), i, f"drop {i}"
    return original, renumber(original[:i + 1] + original[i:]), i + 1, f"double {i}"


def _definition(rec: Record) -> bool:
    v = rec[1]
    return v.get("status") == envelope.SCHEMA and v.get("ddl") is None and v.get("resume") is None


def consume(records: list[Record]) -> tuple[list[Transaction], StreamCorrupt | None, TransactionAssembler]:
    """What the consumer library hands out (offset = position), and the error it stopped on."""
    asm = TransactionAssembler("t")
    out: list[Transaction] = []
    for offset, (key, value) in enumerate(records):
        try:
            item = asm.feed(offset, key, value)
        except StreamCorrupt as exc:
            return out, exc, asm
        if isinstance(item, Transaction):
            out.append(item)
    return out, None, asm


def committed(records: list[Record], before: int | None = None) -> list[tuple[str, int]]:
    """(id, END sequence) of the transactions a valid stream commits, those whose END sits before ``before``."""
    return [(v["id"], v["sequence"]) for i, (_k, v) in enumerate(records)
            if v.get("status") == envelope.END and (before is None or i < before)]


def fingerprint(begin: dict, rows: list[dict], end: dict) -> bytes:
    """What a transaction says, whatever sequences its records got: two writers copying the same source may
    number the same transaction differently, and a transaction whose every record is one writer's own content
    is that writer's transaction (a mixture differs in content, which is what this compares)."""
    def content(v: dict) -> dict:
        return {k: x for k, x in v.items() if k != "sequence"}
    return orjson.dumps([content(begin), [content(r) for r in rows], content(end)], option=orjson.OPT_SORT_KEYS)


def transactions_of(records: list[Record]) -> set[bytes]:
    """Fingerprints of the committed transactions of one writer's records (what an intact one looks like)."""
    out, begin, rows = set(), None, []
    for _k, v in records:
        status = v.get("status")
        if status == envelope.BEGIN:
            begin, rows = v, []
        elif status is None:
            rows.append(v)
        elif status == envelope.END:
            out.add(fingerprint(begin, rows, v))
        elif status == envelope.ABORTED:
            begin = None
    return out


def fold(transactions: list[Transaction]) -> dict[str, dict[int, int]]:
    """The tables after applying ``transactions`` in order (upsert by key, delete by key)."""
    state: dict[str, dict[int, int]] = {t: {} for t in TABLES}
    for tx in transactions:
        for ch in tx.changes:
            if ch.op == "d":
                state[ch.table].pop(ch.key["id"], None)
            else:
                state[ch.table][ch.key["id"]] = ch.after["v"]
    return state
