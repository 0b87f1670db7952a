"""Which snapshot rows are the first and the last of a whole snapshot (Debezium's ``snapshot`` flag).

Debezium marks the first row of a snapshot ``source.snapshot = "first"``, the last one ``"last"`` and
the rows between ``"true"``. A snapshot reader knows the first row when it reads it, but the last only
once it knows no row follows: :func:`with_ends` looks ahead over the reader's chunks (one chunk with
rows, plus any chunks without rows in between) and hands each chunk out with the two facts. Readers put
the mark into ``Change.source["snapshot"]`` of those rows; the publisher's ``source`` block and the
per-table Debezium records take it from there (a row without a mark is ``"true"``).

The look-ahead reads the next chunk before the current one is published, so a reader must take each
chunk's resume state when it READS it (not later from shared state): the resume state written with a
chunk names that chunk, never the one read ahead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

C = TypeVar("C")

FIRST, LAST = "first", "last"


def with_ends(chunks: Iterable[C], has_rows: Callable[[C], bool], *, fresh: bool,
              complete: Callable[[], bool]) -> Iterator[tuple[C, bool, bool]]:
    """``(chunk, holds the first row, holds the last row)`` for every chunk, in order.

    ``fresh``: the snapshot starts here (a resumed one has published its first row before a restart).
    ``complete()``: asked when the chunks run out: False when they ended because the reader was told to
    stop (the snapshot continues after a restart, so nothing read so far holds its last row)."""
    first_pending = fresh
    held: list[C] = []  # a chunk with rows, then the chunks without rows read after it
    for chunk in chunks:
        if has_rows(chunk):
            for h in held:  # this chunk has rows: nothing held holds the last row
                yield h, first_pending and has_rows(h), False
                first_pending = first_pending and not has_rows(h)
            held = [chunk]
        elif held:
            held.append(chunk)
        else:
            yield chunk, False, False  # no row read yet: neither first nor last
    done = complete()
    for h in held:
        yield h, first_pending and has_rows(h), done and has_rows(h)
        first_pending = first_pending and not has_rows(h)


def row_mark(i: int, rows: int, first: bool, last: bool) -> str | None:
    """The mark of row ``i`` of a chunk of ``rows`` rows that holds the first/last row (a one-row snapshot
    is ``last``, as Debezium marks it), else None."""
    if last and i == rows - 1:
        return LAST
    if first and i == 0:
        return FIRST
    return None
