"""The change stream's structure, checked: the one state machine every reader of the stream uses.

Fed the records a reader TAKES (after the sequence rule of cdc.stream.sequence has
dropped duplicates and refused gaps), in stream order, :class:`StreamStructure`
holds them to the structure rules of the contract (DESIGN.md "The change
stream", cdc.stream.envelope for the records):

- BEGIN opens a transaction; a second BEGIN before its END (or ABORTED) is refused;
- a data record sits inside a transaction, and names it: its ``transaction.id``
  is the id of the BEGIN it follows, its ``total_order`` its place in the
  transaction (1, 2, ...) and its ``data_collection_order`` its place among the
  transaction's records of its table;
- END closes the transaction it follows: the same id, an ``event_count`` equal to
  the data records since that BEGIN, and ``data_collections`` equal to those
  records counted per table;
- ABORTED closes the open transaction (same id): a consumer applies nothing of
  it. An ABORTED with no open transaction is refused (the publisher writes one
  only to close the transaction its predecessor left open);
- HEARTBEAT only between transactions (the publisher never writes one inside);
- SCHEMA between transactions (a DDL, or a table definition), or inside one only
  as the table definition the publisher writes before a table's first row in
  the transaction (``ddl`` null, ``resume`` null: never a checkpoint);
- any other ``status`` is refused;
- the writer epoch (the ``cdc.epoch`` header, cdc.stream.envelope.record_epoch) is
  the same on every record from a BEGIN to its END (one writer writes a
  transaction); an ABORTED may carry a higher one (the newer writer closing
  the transaction its predecessor left open), never a lower one; across
  transactions it never decreases: a record of an older writer after a newer
  one's is refused. A record without the header (epoch 0: written before
  epochs) is held to the first rule only. A reader that does not read the
  header passes None (the epoch rules are then not checked).

Each refusal raises :class:`cdc.errors.StreamCorrupt` naming topic, partition,
offset and sequence of the record that broke the structure, what was expected
there and what was found, and the transaction it breaks. The check runs as
records are read, before a reader hands anything out or applies it, so the
transaction a violation breaks is never applied (a reader applies a transaction
only once its END passed this check). Two daemons writing one stream (both
numbering from the same tail) interleave their records; after the sequence rule
the reader sees one writer's BEGIN followed by the other's rows, HEARTBEATs or
END, which these rules refuse; when both copy the same source transactions
(one daemon a few records ahead of the other: a heartbeat or a table definition
more), a transaction mixed from the two has rows out of their ``total_order``.

A checker that raised stays broken: every later call raises the same error.
Where a reader does not read a record's table or transaction id (the Spark
boundary scan looks only at record keys), it passes :data:`NOT_READ` and that
rule is left to the reader that does (the apply engine).
"""

from __future__ import annotations

from typing import Any

from cdc.errors import StreamCorrupt
from cdc.stream.envelope import ABORTED, BEGIN, END, HEARTBEAT, SCHEMA

# what an operator does about a fenced writer's records in the stream (docs/faults.md "Two daemons")
WAY_BACK = ("The way back: a daemon fenced by a newer one wrote these records late (its client still held them); "
            "what was applied before this point is consistent. Check that one daemon runs for the source, then "
            "rebuild the stream and what was applied from it: `cdc stream reset --source NAME --yes`, and drop "
            "the target's tables and its cdc_progress row (docs/faults.md)")
NOT_READ: Any = type("NotRead", (), {"__repr__": lambda self: "NOT_READ"})()  # a field this reader did not decode


class _Open:
    """The open transaction: its BEGIN and what was counted since."""

    __slots__ = ("epoch", "offset", "rows", "sequence", "tables", "txid", "uncounted")

    def __init__(self, txid: Any, offset: int, sequence: int, epoch: int | None) -> None:
        self.txid, self.offset, self.sequence, self.epoch = txid, offset, sequence, epoch
        self.rows = 0
        self.uncounted = 0  # rows whose table this reader did not read: per-table counts not checked
        self.tables: dict[Any, int] = {}


class StreamStructure:
    """The structure rules over the records of one partition, fed in stream order (see the module docstring).

    ``open_txid`` / ``open_offset`` / ``open_sequence``: the open transaction's BEGIN (None between
    transactions). Every method raises StreamCorrupt on a violation, before changing any state."""

    __slots__ = ("_broken", "_epoch", "_epoch_at", "_open", "partition", "topic")

    def __init__(self, topic: str, partition: int = 0, epoch: int = 0) -> None:
        """``epoch``: the highest writer epoch of the records before the first one fed (a reader that goes on
        from an earlier check, such as the apply engine batch after batch); 0 when unknown."""
        self.topic, self.partition = topic, partition
        self._open: _Open | None = None
        self._broken: StreamCorrupt | None = None
        self._epoch = epoch  # the highest writer epoch seen (0: none yet, or only records without one)
        self._epoch_at: tuple[int, int | None] | None = None  # (offset, sequence) of the record that carried it

    @property
    def in_transaction(self) -> bool:
        return self._open is not None

    @property
    def open_txid(self) -> Any:
        return None if self._open is None else self._open.txid

    @property
    def open_offset(self) -> int | None:
        return None if self._open is None else self._open.offset

    @property
    def open_sequence(self) -> int | None:
        return None if self._open is None else self._open.sequence

    @property
    def broken(self) -> StreamCorrupt | None:
        return self._broken

    @property
    def epoch(self) -> int:
        """The highest writer epoch seen so far (0: none)."""
        return self._epoch

    # ---- records -----------------------------------------------------------------------------
    def begin(self, offset: int, sequence: int, txid: Any, epoch: int | None = None) -> None:
        self._ok()
        if self._open is not None:
            self._fail(offset, sequence, f"the END or ABORTED of transaction {self._open.txid!r}",
                       f"the BEGIN of transaction {txid!r}")
        if epoch is not None:
            self._epoch_ok(offset, sequence, epoch, f"the BEGIN of transaction {txid!r}")
        self._open = _Open(txid, offset, sequence, epoch)

    def row(self, offset: int, sequence: int, table: Any = NOT_READ, txid: Any = NOT_READ,
            total_order: Any = NOT_READ, table_order: Any = NOT_READ, epoch: int | None = None) -> None:
        """One data record (``table``: "db.table" from its key; ``txid``, ``total_order``, ``table_order``:
        its ``transaction.id``, ``transaction.total_order``, ``transaction.data_collection_order``;
        ``epoch``: its writer epoch, None when not read)."""
        self._ok()
        tx = self._open
        if tx is None:
            self._fail(offset, sequence, "a BEGIN before any data record",
                       f"a data record{_of(table)} outside any transaction")
        if epoch is not None:
            self._epoch_ok(offset, sequence, epoch, f"a data record{_of(table)}")
        if txid is not NOT_READ and txid != tx.txid:
            self._fail(offset, sequence, f"a data record of the open transaction {tx.txid!r}",
                       f"a data record{_of(table)} of transaction {txid!r}")
        if total_order is not NOT_READ and total_order != tx.rows + 1:
            self._fail(offset, sequence, f"the data record {tx.rows + 1} of transaction {tx.txid!r} (total_order "
                       f"{tx.rows + 1})", f"a data record{_of(table)} with total_order {total_order!r}")
        if table is NOT_READ:
            tx.uncounted += 1
        else:
            n = tx.tables.get(table, 0) + 1
            if table_order is not NOT_READ and table_order != n:
                self._fail(offset, sequence, f"the data record {n} of {table} in transaction {tx.txid!r} "
                           f"(data_collection_order {n})", f"data_collection_order {table_order!r}")
            tx.tables[table] = n
        tx.rows += 1

    def rows(self, offset: int, sequence: int, n: int, tables: dict[Any, int] | None,
             epoch: int | None = None) -> None:
        """``n`` data records at once, the first at ``offset``/``sequence``, all of the open transaction (the
        caller checked their ``transaction.id``); ``tables``: their count per table (None: not read);
        ``epoch``: their writer epoch when they all carry the same (None: not read, or the caller checks
        a record with another through :meth:`row`)."""
        self._ok()
        if n <= 0:
            return
        tx = self._open
        if tx is None:
            self._fail(offset, sequence, "a BEGIN before any data record", "a data record outside any transaction")
        if epoch is not None:
            self._epoch_ok(offset, sequence, epoch, "a data record")
        tx.rows += n
        if tables is None:
            tx.uncounted += n
        else:
            for t, k in tables.items():
                tx.tables[t] = tx.tables.get(t, 0) + k

    def end(self, offset: int, sequence: int, txid: Any, event_count: Any = NOT_READ,
            data_collections: Any = NOT_READ, epoch: int | None = None) -> None:
        self._ok()
        tx = self._open
        if tx is None:
            self._fail(offset, sequence, "a BEGIN before an END", f"the END of transaction {txid!r} with no open "
                       "transaction")
        if txid != tx.txid:
            self._fail(offset, sequence, f"the END of the open transaction {tx.txid!r} (BEGIN at offset {tx.offset})",
                       f"the END of transaction {txid!r}")
        if epoch is not None:
            self._epoch_ok(offset, sequence, epoch, f"the END of transaction {txid!r}")
        if event_count is not NOT_READ and (type(event_count) is not int or event_count != tx.rows):
            self._fail(offset, sequence, f"event_count {tx.rows} (the data records since its BEGIN at offset "
                       f"{tx.offset})", f"event_count {event_count!r}")
        if data_collections is not NOT_READ and not tx.uncounted:
            said = _collections(data_collections)
            seen = {t: n for t, n in tx.tables.items() if n}
            if said != seen:
                self._fail(offset, sequence, f"data_collections {_show(seen)} (the data records per table since "
                           f"its BEGIN at offset {tx.offset})", f"data_collections {data_collections!r}")
        self._open = None

    def aborted(self, offset: int, sequence: int, txid: Any, epoch: int | None = None) -> None:
        self._ok()
        tx = self._open
        if tx is None:
            self._fail(offset, sequence, "an ABORTED only to close an open transaction",
                       f"the ABORTED of transaction {txid!r} with no open transaction")
        if txid != tx.txid:
            self._fail(offset, sequence, f"the ABORTED of the open transaction {tx.txid!r} (BEGIN at offset "
                       f"{tx.offset})", f"the ABORTED of transaction {txid!r}")
        if epoch is not None:  # the writer that left the transaction open, or a newer one closing it
            self._epoch_ok(offset, sequence, epoch, f"the ABORTED of transaction {txid!r}", closing=True)
        self._open = None

    def schema(self, offset: int, sequence: int, table: Any = NOT_READ, ddl: Any = NOT_READ,
               resume: Any = NOT_READ, epoch: int | None = None) -> None:
        self._ok()
        tx = self._open
        if tx is not None and ((ddl is not NOT_READ and ddl is not None)
                               or (resume is not NOT_READ and resume is not None)):
            self._fail(offset, sequence, f"a table definition only (no DDL, no resume state) inside the open "
                       f"transaction {tx.txid!r}", f"a SCHEMA record{_of(table)} with ddl {ddl!r}")
        if epoch is not None:
            self._epoch_ok(offset, sequence, epoch, f"a SCHEMA record{_of(table)}")

    def heartbeat(self, offset: int, sequence: int, epoch: int | None = None) -> None:
        self._ok()
        if self._open is not None:
            self._fail(offset, sequence, f"the END or ABORTED of the open transaction {self._open.txid!r}",
                       "a HEARTBEAT")
        if epoch is not None:
            self._epoch_ok(offset, sequence, epoch, "a HEARTBEAT")

    def other(self, offset: int, sequence: int, status: Any) -> None:
        """A record whose ``status`` is none of the contract's: always a violation."""
        self._ok()
        self._fail(offset, sequence, "a data record or a BEGIN, END, ABORTED, SCHEMA or HEARTBEAT marker",
                   f"a record with status {status!r}")

    def record(self, offset: int, sequence: int, key: Any, value: dict[str, Any], epoch: int | None = None) -> str:
        """A decoded record (cdc.stream.envelope): checked by its ``status``; returns the status ("data" for a data
        record). ``key`` names the table of a data record (``{"table", "key"}``); ``epoch``: its writer epoch
        (cdc.stream.envelope.record_epoch of its headers; None: not read)."""
        status = value.get("status")
        if status is None:
            table = key.get("table") if isinstance(key, dict) else None
            if table is None:
                src = value.get("source") or {}
                table = f"{src.get('db')}.{src.get('table')}"
            where = value.get("transaction") or {}
            self.row(offset, sequence, table, where.get("id"), where.get("total_order"),
                     where.get("data_collection_order"), epoch)
            return "data"
        if status == BEGIN:
            self.begin(offset, sequence, value.get("id"), epoch)
        elif status == END:
            self.end(offset, sequence, value.get("id"), value.get("event_count"), value.get("data_collections"),
                     epoch)
        elif status == ABORTED:
            self.aborted(offset, sequence, value.get("id"), epoch)
        elif status == SCHEMA:
            self.schema(offset, sequence, value.get("table"), value.get("ddl"), value.get("resume"), epoch)
        elif status == HEARTBEAT:
            self.heartbeat(offset, sequence, epoch)
        else:
            self.other(offset, sequence, status)
        return status

    # ---- writer epochs -----------------------------------------------------------------------
    def _epoch_ok(self, offset: int, sequence: int, epoch: Any, what: str, *, closing: bool = False) -> None:
        """The epoch rules (module docstring) for a record of ``epoch``; remembers the highest epoch seen.
        ``closing``: an ABORTED, which may carry a higher epoch than its BEGIN."""
        if type(epoch) is not int or epoch < 0:
            self._fail(offset, sequence, "a writer epoch (header cdc.epoch: a decimal number, 0 or more)",
                       f"{what} with epoch {epoch!r}", epoch=epoch)
        tx = self._open
        if tx is not None and tx.epoch is not None and (epoch < tx.epoch if closing else epoch != tx.epoch):
            self._fail(offset, sequence, f"epoch {tx.epoch}{' or higher' if closing else ''} (the epoch of its "
                       f"writer, from the BEGIN at offset {tx.offset}, sequence {tx.sequence})",
                       f"{what} with epoch {epoch}", epoch=epoch, previous_epoch=tx.epoch)
        if epoch and epoch < self._epoch:
            at_offset, at_sequence = self._epoch_at or (None, None)
            where = (f"reached the stream at offset {at_offset}, sequence {at_sequence}" if at_offset is not None
                     else "were applied before this reader's start position")
            self._fail(offset, sequence, f"epoch {self._epoch} or higher (a newer writer's records, epoch "
                       f"{self._epoch}, {where}; an older writer's may not follow them)",
                       f"{what} with epoch {epoch}", epoch=epoch, previous_epoch=self._epoch, way_back=WAY_BACK)
        if epoch > self._epoch:
            self._epoch, self._epoch_at = epoch, (offset, sequence)

    # ---- failing -----------------------------------------------------------------------------
    def _ok(self) -> None:
        if self._broken is not None:
            raise self._broken

    def _fail(self, offset: int, sequence: int, expected: str, found: str, **fields: Any) -> None:
        tx = self._open
        way_back = fields.pop("way_back", None)
        breaks = (f"; transaction {tx.txid!r} (BEGIN at offset {tx.offset}, sequence {tx.sequence}) is not applied"
                  if tx is not None else "")
        self._broken = err = StreamCorrupt(
            f"{self.topic}[{self.partition}]: {found} at offset {offset}, sequence {sequence}, where the stream's "
            f"structure expects {expected}{breaks}. The stream is not what one publisher writes: two daemons "
            f"writing the same source (each numbering from the same tail), or records lost, doubled or reordered "
            f"between the publisher and this reader; nothing from this point on is applied"
            + (f". {way_back}" if way_back else ""),
            topic=self.topic, partition=self.partition, offset=offset, sequence=sequence,
            txid=None if tx is None else tx.txid, **fields)
        err.expected, err.found = expected, found  # for callers and tests (the message says both)
        raise self._broken


def _of(table: Any) -> str:
    return "" if table is NOT_READ or table is None else f" of {table}"


def _collections(value: Any) -> dict[Any, int] | Any:
    """END's ``data_collections`` as {table: count} (zero counts left out); the value itself when malformed
    (it then never equals a count)."""
    if not isinstance(value, list):
        return value
    out: dict[Any, int] = {}
    for d in value:
        if not isinstance(d, dict) or type(d.get("event_count")) is not int:
            return value
        t = d.get("data_collection")
        out[t] = out.get(t, 0) + d["event_count"]
    return {t: n for t, n in out.items() if n}


def _show(counts: dict[Any, int]) -> str:
    return "[" + ", ".join(f"{t}: {n}" for t, n in counts.items()) + "]"
