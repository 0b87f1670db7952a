"""The workload the apply benches share (cdc.bench.apply into PostgreSQL, cdc.bench.apply_lake into
Delta/Iceberg): the table's columns, its rows, the stream of N row changes, and a broker given by
``--kafka``. Its own module so that the two benches import it and not each other.
"""

from __future__ import annotations

from typing import Any

COLS = [("id", "bigint"), ("name", "varchar(40)"), ("amount", "decimal(12,2)"), ("at", "datetime(6)")]


def bench_row(i: int, v: int = 0) -> dict[str, Any]:
    return {"id": i, "name": f"name {i} v{v}", "amount": f"{i % 100000}.{v % 100:02d}",
            "at": f"2024-05-06T07:08:{i % 60:02d}.{i % 1000000:06d}"}


def bench_stream(n: int, tx_rows: int):
    from streaming.testing import StreamBuilder

    b = StreamBuilder(source="bench")
    b.schema("bench.t", COLS, ["id"])
    i = 0
    while i < n:
        ops = []
        for j in range(i, min(n, i + tx_rows)):
            if j % 10 == 9 and j >= 50:  # every tenth change updates an earlier row
                k = j - 50
                ops.append(("u", "bench.t", bench_row(k), bench_row(k, 1)))
            else:
                ops.append(("c", "bench.t", None, bench_row(j)))
        b.tx(*ops)
        i += tx_rows
    return b


class External:
    """A broker given by --kafka, with the create_topic of cdc.dev.broker.Broker."""

    def __init__(self, bootstrap: str) -> None:
        from cdc.dev.broker import ExternalBroker
        self._b = ExternalBroker(bootstrap).start()

    def create_topic(self, name: str) -> None:
        self._b.create_topic(name)
