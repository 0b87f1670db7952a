"""A minimal SQL target for views outside the apply job (``cdc views``, tests, bench).

``DbTarget`` offers what the maintainer needs from the engine's target:
``dialect`` and ``cursor()`` inside one open transaction, plus ``commit()``
and ``close()``. ``open_target`` opens one from a ``TargetConfig``.
"""

from __future__ import annotations

from typing import Any

from cdc.schema.sql_dialects import sql_dialect
from streaming.views.dialect import DIALECTS, dialect_for
from streaming.views.errors import ViewError


class DbTarget:
    def __init__(self, conn: Any, dialect: str) -> None:
        self.conn, self.dialect = conn, dialect

    def cursor(self) -> Any:
        # a DuckDB "cursor" is a second connection with its own transaction: use the connection
        return sql_dialect(self.dialect).cursor(self.conn)

    def begin(self) -> None:
        dialect_for(self.dialect).begin(self.conn)  # DuckDB: BEGIN TRANSACTION; the others open one by themselves

    def commit(self) -> None:
        self.conn.commit()

    def rollback(self) -> None:
        self.conn.rollback()

    def close(self) -> None:
        self.conn.close()


def open_target(cfg: Any) -> DbTarget:
    """Connect to a target from its config (kind postgres, duckdb or mysql: the dialect connects)."""
    d = DIALECTS.get(cfg.kind)
    if d is not None:
        return DbTarget(d.connect(cfg), d.name)
    raise ViewError(f"maintained views are not supported on target {cfg.name!r} of kind {cfg.kind!r}",
                    target=cfg.name, kind=cfg.kind)
