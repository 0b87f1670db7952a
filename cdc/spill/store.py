"""Transaction buffers with a spill policy: memory bounded however large a transaction is.

``TransactionStore(directory, policy)`` hands out one ``TxBuffer`` per open
transaction. A buffer keeps its items in memory until it holds more than
``policy.threshold_rows``; from then on it goes to disk in chunk files of
``policy.chunk_rows`` items (the seed paper: "switch file every 1,000
records", so no single file grows without bound). Chunk files are written by
the store's writer thread and read back by a reader thread per iteration,
each behind a bounded queue (count AND bytes); an exception in either thread
is handed to the caller on its next call, never swallowed.

Items are values of the spill format (cdc.spill.codec: row tuples of scalars; sequences come back
as tuples) with a ``key`` (Oracle: the ROW_ID) so
that ``undo(key)`` can remove the latest earlier item with that key (a
partial rollback) wherever that item is: in memory (removed at once) or on
disk (resolved by a pre-pass over the chunks when the buffer is iterated).

MEMORY BOUND ACROSS TRANSACTIONS (``max_memory_bytes``, the service's
``max_buffer_bytes``): the store counts the bytes of every item held in
memory, in any buffer, plus the chunks handed to the writer and not yet
written (:attr:`TransactionStore.memory_bytes`, exact at every append).
A quarter of the bound is left to the caller for what it holds outside the
store (:attr:`TransactionStore.outside_budget`: the Oracle dispatcher keeps
the first rows of each transaction in a plain list and moves the largest
such transactions into the store when they pass it). Of the remaining
M = 3/4 ``max_memory_bytes``, the writer queue gets Q = M / 8 (at most
``policy.queue_bytes``); when the items held in buffers exceed M - 3Q
(room for the queue, the chunk being written and the one waiting to be
queued), the LARGEST open buffers go to disk first
(all their items, in chunks of ``chunk_rows``) until the held bytes are
back under three quarters of that; a spilled buffer keeps writing chunks
as before and is spilled again whenever it is among the largest. So
memory_bytes stays under M however many transactions are open, as long as
one chunk (``chunk_rows`` items) is smaller than Q:
:attr:`peak_memory_bytes` records the highest value seen. A buffer
being iterated (its commit) is never spilled under it. Bytes are the
sizes the caller passes to ``append`` (the Oracle dispatcher: the
SQL_REDO's length + 120), not Python's object sizes.

DATA AT REST: the files live in a private directory (cdc.spill.dirs: 0700, owner and mode checked
when the store is created, refused otherwise), are created exclusively with mode 0600 under
unpredictable names, hold one checked frame each (cdc.spill.codec: msgpack, a digest per chunk, no
code runs when read), are removed on ``discard()`` (commit done or rollback) and at ``close()``;
leftovers of an earlier process are swept when the store is created (logged: files and bytes).
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from cdc.errors import SpillError
from cdc.spill import codec as spill_codec
from cdc.spill.dirs import PrivateDir

__all__ = ["SpillError", "SpillPolicy", "TransactionStore", "TxBuffer"]

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class SpillPolicy:
    threshold_rows: int = 10_000   # a buffer above this many items spills
    chunk_rows: int = 1_000        # items per chunk file
    queue_chunks: int = 4          # writer/reader queue bound, in chunks ...
    queue_bytes: int = 16 << 20    # ... and in bytes

    def should_spill(self, rows: int) -> bool:  # Debezium SpillStrategy.shouldSpill, by size
        return rows > self.threshold_rows


_STOP = object()
_MEM_BYTES = attrgetter("_mem_bytes")


class _BoundedQueue:
    """A FIFO bounded by item count and by bytes; put() blocks while either bound is reached."""

    def __init__(self, max_items: int, max_bytes: int) -> None:
        self._q: list[tuple[Any, int]] = []
        self._bytes = 0
        self._max_items, self._max_bytes = max_items, max_bytes
        self._cv = threading.Condition()

    def put(self, item: Any, nbytes: int) -> None:
        with self._cv:
            while self._q and (len(self._q) >= self._max_items or self._bytes + nbytes > self._max_bytes):
                self._cv.wait()
            self._q.append((item, nbytes))
            self._bytes += nbytes
            self._cv.notify_all()

    def get(self) -> Any:
        with self._cv:
            while not self._q:
                self._cv.wait()
            item, nbytes = self._q.pop(0)
            self._bytes -= nbytes
            self._cv.notify_all()
            return item


class TransactionStore:
    """All open transaction buffers of one reader, with the shared writer thread.

    ``max_memory_bytes``: the bound on :attr:`memory_bytes` across all buffers (None: only the
    per-buffer ``policy.threshold_rows`` applies); see the module docstring.
    """

    def __init__(self, directory: str, policy: SpillPolicy | None = None,
                 on_bytes: Callable[[int, int], None] | None = None, max_memory_bytes: int | None = None) -> None:
        self.directory = directory
        self.policy = policy or SpillPolicy()
        self._on_bytes = on_bytes
        self.max_memory_bytes = max_memory_bytes
        # what the caller may hold outside the store (the Oracle dispatcher's first rows of each transaction)
        self.outside_budget = None if max_memory_bytes is None else max_memory_bytes // 4
        queue_bytes = self.policy.queue_bytes
        if max_memory_bytes is not None:
            own = max_memory_bytes - self.outside_budget
            # held in memory besides the buffers: the writer queue, the chunk being written, the one being queued
            queue_bytes = max(1, min(queue_bytes, own // 8))
            self._spill_above = own - 3 * queue_bytes  # bytes held in buffers that make the largest spill
        else:
            self._spill_above = float("inf")
        self._held = 0  # bytes of items held in buffers (the consumer thread's)
        self._queued = 0  # bytes of chunks handed to the writer, not yet written (under _lock)
        self.spilled_bytes = 0
        self.peak_memory_bytes = 0
        self.pressure_spills = 0  # buffers spilled because of max_memory_bytes
        self._open: dict[int, TxBuffer] = {}  # buffers that may be spilled (open, not being iterated)
        self._lock = threading.Lock()
        self._writes = _BoundedQueue(self.policy.queue_chunks, queue_bytes)
        self._writer: threading.Thread | None = None
        self._writer_error: BaseException | None = None
        self._seq = 0
        self.dir = PrivateDir(directory)
        files, nbytes = self.dir.sweep()  # an earlier process's: their transactions will be read again
        if files:
            log.info("swept %d stale spill files (%d bytes) from %s", files, nbytes, directory)

    @property
    def memory_bytes(self) -> int:
        """Bytes held in memory: items in buffers plus chunks not yet written."""
        return self._held + self._queued

    def open(self, txid: str) -> TxBuffer:
        with self._lock:
            self._seq += 1
            buf = TxBuffer(self, txid, self._seq)
        self._open[buf.seq] = buf
        return buf

    def account_spilled(self, nbytes: int) -> None:
        """Bytes another spill in this directory wrote (+) or removed (-) (readers.oracle.columnar.arrow_spill)."""
        self._account(spilled=nbytes)

    def close(self) -> None:
        if self._writer is not None:
            self._writes.put(_STOP, 0)
            self._writer.join(timeout=10)
            self._writer = None
        if not self.dir.closed:  # close() twice (a reader closed after a failed start) is fine
            self.dir.sweep()
            self.dir.close()

    # -- internals -------------------------------------------------------------------------------------

    def _report(self) -> None:
        if self._on_bytes is not None:
            self._on_bytes(self.memory_bytes, self.spilled_bytes)

    def _account(self, queued: int = 0, spilled: int = 0) -> None:
        with self._lock:
            self._queued += queued
            self.spilled_bytes += spilled
        self._report()

    def _relieve(self) -> None:
        """Held bytes above the bound: spill the largest buffers (all their items) until under 3/4 of it."""
        target = self._spill_above * 3 // 4
        for buf in sorted(self._open.values(), key=_MEM_BYTES, reverse=True):
            if self._held <= target:
                break
            if buf._mem:
                buf.spilled = True
                self.pressure_spills += 1
                while buf._mem:  # in chunks of chunk_rows: each one waits for room in the writer queue
                    buf._flush(self.policy.chunk_rows if len(buf._mem) > self.policy.chunk_rows else None)

    def _submit(self, buf: TxBuffer, name: str, chunk: list, nbytes: int) -> None:
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_loop, name="spill-writer", daemon=True)
            self._writer.start()
        with self._lock:
            self._queued += nbytes
            self._held -= nbytes
        self._writes.put((buf, name, chunk, nbytes), nbytes)
        self._report()

    def _write_loop(self) -> None:
        while True:
            job = self._writes.get()
            if job is _STOP:
                return
            buf, name, chunk, nbytes = job
            try:
                if not buf.discarded:
                    try:
                        frame = spill_codec.encode(chunk)
                    except TypeError as exc:
                        raise SpillError(f"cannot spill transaction {buf.txid}: {exc}", txid=buf.txid) from None
                    self.dir.create(name, frame)
                    self._account(queued=-nbytes, spilled=nbytes)
                else:
                    self._account(queued=-nbytes)
            except BaseException as exc:  # noqa: BLE001 -- handed to the producer on its next call
                self._writer_error = exc if isinstance(exc, SpillError) else SpillError(
                    f"cannot write spill file {self.dir.where(name)}: {exc!r}", path=self.dir.where(name))
                self._account(queued=-nbytes)
            finally:
                buf._chunk_done()

    def check(self) -> None:
        if self._writer_error is not None:
            raise self._writer_error


def read_chunk(directory: PrivateDir, name: str, number: int, txid: str,
               decode: Callable[[bytes], Any] = spill_codec.unframe) -> Any:
    """``decode`` of chunk file ``name`` (chunk ``number`` of transaction ``txid``), or SpillError naming file,
    chunk and offset when it cannot be read or is not the frame that was written: never other rows."""
    where = directory.where(name)
    try:
        return decode(directory.read(name))
    except OSError as exc:
        raise SpillError(f"cannot read spill chunk {number} of transaction {txid} from {where}: {exc.strerror}",
                         path=where, chunk=number) from None
    except spill_codec.ChunkCorrupt as exc:
        raise SpillError(f"spill chunk {number} of transaction {txid} in {where} is corrupt: {exc}; the source "
                         f"stops before this transaction's END, a restart reads it again from the source",
                         path=where, chunk=number, offset=exc.offset) from None


class TxBuffer:
    """The items of one open transaction, in append order. Single consumer thread."""

    def __init__(self, store: TransactionStore, txid: str, seq: int) -> None:
        self.store, self.txid, self.seq = store, txid, seq
        self._prefix = f"tx{seq:08d}"
        self._mem: list[list] = []          # [index, key, item, nbytes]; item None = undone
        self._mem_bytes = 0                 # bytes of _mem (also counted in store._held)
        self._count = 0                     # items appended (undone ones included)
        self._chunks: list[tuple[str, int]] = []  # (file name, bytes) in order
        self._pending_undo: list[tuple[Any, int]] = []  # (key, items appended before the undo)
        self._in_flight = 0
        self._cv: threading.Condition | None = None  # created on the first spill: most buffers never spill
        self.spilled = False
        self.discarded = False

    def __len__(self) -> int:
        return self._count

    def append(self, item: Any, key: Any = None, nbytes: int = 200) -> None:
        self._mem.append([self._count, key, item, nbytes])
        self._count += 1
        self._mem_bytes += nbytes
        store = self.store
        held = store._held = store._held + nbytes
        store.peak_memory_bytes = max(store.peak_memory_bytes, held + store._queued)
        if held > store._spill_above:
            store._relieve()
        elif self._count % 256 == 0:
            store._report()
        policy = store.policy
        if self.spilled:
            if len(self._mem) >= policy.chunk_rows:
                self._flush()
        elif policy.should_spill(len(self._mem)):
            self.spilled = True
            while len(self._mem) >= policy.chunk_rows:
                self._flush(policy.chunk_rows)

    def undo(self, key: Any) -> None:
        """Remove the latest earlier item with ``key`` (a ROLLBACK=1 row undoing it)."""
        for entry in reversed(self._mem):
            if entry[2] is not None and entry[1] == key:
                entry[2] = None
                return
        self._pending_undo.append((key, self._count))

    def _flush(self, n: int | None = None) -> None:
        self.store.check()  # before anything moves: a failed writer stops the producer here
        part = self._mem if n is None else self._mem[:n]
        self._mem = [] if n is None else self._mem[n:]
        chunk = [(e[0], e[1], e[2]) for e in part if e[2] is not None]
        nbytes = sum(e[3] for e in part)
        self._mem_bytes -= nbytes  # the chunk stays counted in store.memory_bytes until written
        name = f"{self._prefix}.{len(self._chunks):06d}.{secrets.token_hex(8)}.chunk"  # unpredictable
        self._chunks.append((name, nbytes))
        if self._cv is None:
            self._cv = threading.Condition()
        with self._cv:
            self._in_flight += 1
        self.store._submit(self, name, chunk, nbytes)

    def _chunk_done(self) -> None:
        with self._cv:
            self._in_flight -= 1
            self._cv.notify_all()

    def _wait_written(self) -> None:
        """Until the writer is done with this buffer's chunks; raises its error if it failed."""
        with self._cv:
            while self._in_flight:
                self._cv.wait(timeout=1.0)
        self.store.check()

    def _read_chunk(self, number: int) -> tuple:
        """Chunk ``number`` as written, or SpillError naming file, chunk and offset: never other rows."""
        return read_chunk(self.store.dir, self._chunks[number][0], number, self.txid, spill_codec.decode)

    def _resolve_pending(self) -> set[int]:
        """Pre-pass: the indices removed by undos whose target had already left memory."""
        keys = {k for k, _ in self._pending_undo}
        where: dict[Any, list[int]] = {k: [] for k in keys}
        for number in range(len(self._chunks)):
            for index, key, _item in self._read_chunk(number):
                if key in where:
                    where[key].append(index)
        for e in self._mem:
            if e[2] is not None and e[1] in where:
                where[e[1]].append(e[0])
        removed: set[int] = set()
        for key, before in self._pending_undo:
            cands = [i for i in where[key] if i < before and i not in removed]
            if cands:
                removed.add(max(cands))
        return removed

    def __iter__(self) -> Iterator[Any]:
        """The surviving items in append order: chunk files first (read by a reader thread), then memory."""
        self.store._open.pop(self.seq, None)  # being read: never spilled under the reader
        removed: set[int] = set()
        if self._chunks:
            self._wait_written()
            if self._pending_undo:
                removed = self._resolve_pending()
            policy = self.store.policy
            q = _BoundedQueue(max(2, policy.queue_chunks), policy.queue_bytes)

            def read_all() -> None:
                try:
                    for number, (_name, nbytes) in enumerate(self._chunks):
                        q.put(self._read_chunk(number), nbytes)
                    q.put(_STOP, 0)
                except BaseException as exc:  # noqa: BLE001 -- handed to the consumer
                    q.put(exc, 0)

            reader = threading.Thread(target=read_all, name="spill-reader", daemon=True)
            reader.start()
            while True:
                chunk = q.get()
                if chunk is _STOP:
                    break
                if isinstance(chunk, BaseException):
                    raise chunk
                for index, _key, item in chunk:
                    if index not in removed:
                        yield item
            reader.join()
        elif self._pending_undo:
            removed = self._resolve_pending()
        for index, _key, item, _n in self._mem:
            if item is not None and index not in removed:
                yield item

    def discard(self) -> None:
        """Forget the transaction: memory released, chunk files removed (commit done or rollback)."""
        if self._chunks:
            with self._cv:  # the writer's error (if any) was handed to the producer: cleaning up goes on
                while self._in_flight:
                    self._cv.wait(timeout=1.0)
        self.discarded = True
        for name, _ in self._chunks:
            self.store.dir.remove(name)
        spilled = sum(n for _, n in self._chunks)
        store = self.store
        store._open.pop(self.seq, None)
        with store._lock:
            store._held -= self._mem_bytes
        store._account(spilled=-spilled)
        self._chunks, self._mem, self._mem_bytes = [], [], 0
