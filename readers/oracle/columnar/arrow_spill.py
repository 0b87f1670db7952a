"""Big open transactions' raw rows on disk as Arrow IPC chunk files (``pipeline: columnar``).

readers.oracle.columnar.stage holds the raw rows of the open transactions as Arrow between batches. When they
pass their bound, the largest transactions' captured DML rows move here, all but each transaction's
first row (its *stub*, which stays with the open rows, so the transaction keeps its start SCN, its
place in the low watermark and in the open count without anything said here). A spilled transaction's
later rows join it at the next spill. In memory per spilled row stays only what deciding which rows
survive needs first: its ROLLBACK and CSF flags (:meth:`ArrowSpill.flags`); the ROW_IDs a partial
rollback is matched on are read back from the chunks only for a transaction that has a rollback row
(:meth:`ArrowSpill.row_ids`, one chunk at a time, as cdc.spill's pre-pass). At COMMIT the chunks come back
one at a time, in order (:meth:`ArrowSpill.chunks`), through the native record pass and out as one
ChangeBatch each; at COMMIT, ROLLBACK or a hand-over to the row path the files go
(:meth:`ArrowSpill.discard`).

DATA AT REST as cdc.spill's: the files live in the source's private spill directory (cdc.spill.dirs:
0700, checked), created exclusively with mode 0600 under unpredictable names, one checked frame per
file (cdc.spill.codec.frame: BLAKE2b digest; a changed or truncated chunk raises SpillError naming file,
chunk and offset, never other rows); an earlier process's files are swept when the store is created,
the rest when it closes. Their bytes count in the store's spilled bytes (the buffer metrics).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from cdc.errors import SpillError
from cdc.spill import codec as spill_codec
from cdc.spill.store import TransactionStore, read_chunk

CHUNK_ROWS = 16_384  # rows per chunk file at most (what one ChangeBatch of a released chunk holds)


@dataclass(slots=True)
class _Spilled:
    xid: str  # for messages
    chunks: list[tuple[str, int]] = field(default_factory=list)  # (file name, bytes) in row order
    rollback: list[np.ndarray] = field(default_factory=list)
    csf: list[np.ndarray] = field(default_factory=list)
    rows: int = 0


class ArrowSpill:
    """The spilled transactions of one columnar feed, by raw XID, in ``store``'s private directory."""

    def __init__(self, store: TransactionStore) -> None:
        self.store = store
        self._txs: dict[Any, _Spilled] = {}
        self.spilled_rows = 0  # rows written since the start (tests, benches)

    def __contains__(self, raw: Any) -> bool:
        return raw in self._txs

    def __len__(self) -> int:
        return len(self._txs)

    def raws(self) -> list[Any]:
        return list(self._txs)

    def rows(self, raw: Any) -> int:
        tx = self._txs.get(raw)
        return 0 if tx is None else tx.rows

    def append(self, raw: Any, xid: str, rows: pa.Table) -> None:
        """Write ``rows`` (raw V$LOGMNR_CONTENTS rows of transaction ``raw``, in order) after its earlier ones."""
        tx = self._txs.get(raw)
        if tx is None:
            tx = self._txs[raw] = _Spilled(xid)
        for start in range(0, rows.num_rows, CHUNK_ROWS):
            part = rows.slice(start, CHUNK_ROWS)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, part.schema) as writer:
                writer.write_table(part)
            data = spill_codec.frame(memoryview(sink.getvalue()))
            name = f"col{len(tx.chunks):06d}.{secrets.token_hex(8)}.arrow"  # unpredictable
            self.store.dir.create(name, data)
            tx.chunks.append((name, len(data)))
            tx.rollback.append(_flags(part.column("ROLLBACK")))
            tx.csf.append(_flags(part.column("CSF")))
            tx.rows += part.num_rows
            self.spilled_rows += part.num_rows
            self.store.account_spilled(len(data))

    def flags(self, raw: Any) -> tuple[np.ndarray, np.ndarray]:
        """ROLLBACK and CSF (bool) of every spilled row of ``raw``, in order."""
        tx = self._txs[raw]
        return np.concatenate(tx.rollback), np.concatenate(tx.csf)

    def row_ids(self, raw: Any) -> Iterator[pa.Array]:
        """The ROW_IDs of every spilled row of ``raw``, in order, chunk by chunk (read back from the files)."""
        for chunk in self.chunks(raw):
            yield chunk.column("ROW_ID").combine_chunks()

    def chunks(self, raw: Any) -> Iterator[pa.Table]:
        """The spilled rows of ``raw`` back, chunk by chunk, in order; SpillError names a chunk that is not
        what was written."""
        tx = self._txs[raw]
        for number, (name, _nbytes) in enumerate(tx.chunks):
            where = self.store.dir.where(name)
            payload = read_chunk(self.store.dir, name, number, tx.xid)
            try:
                table = pa.ipc.open_stream(pa.py_buffer(payload)).read_all()
            except pa.ArrowException as exc:  # only reachable with a forged digest
                raise SpillError(f"spill chunk {number} of transaction {tx.xid} in {where} is corrupt: not an Arrow "
                                 f"IPC stream ({exc})", path=where, chunk=number) from None
            if table.num_rows != len(tx.csf[number]):  # a forged digest: never other rows
                raise SpillError(f"spill chunk {number} of transaction {tx.xid} in {where} holds {table.num_rows} "
                                 f"rows, {len(tx.csf[number])} were written", path=where, chunk=number)
            yield table

    def discard(self, raw: Any) -> None:
        """Forget transaction ``raw`` (committed, rolled back or handed over): its files removed."""
        tx = self._txs.pop(raw, None)
        if tx is not None:
            for name, _ in tx.chunks:
                self.store.dir.remove(name)
            self.store.account_spilled(-sum(n for _, n in tx.chunks))

    def close(self) -> None:
        for raw in self.raws():
            self.discard(raw)


def _flags(column: Any) -> np.ndarray:
    return np.asarray(column.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64) != 0
