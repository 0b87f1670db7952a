"""Issue #35 decision c: SCHEMA records carry the source kind next to the columns' logical types; a record written
before them is read with the configured source's kind, and without one the job stops naming source, record and fix."""

from __future__ import annotations

import pytest

from cdc.schema.logical import LogicalType
from cdc.stream import envelope
from cdc.stream.events import Column, TableId, TableSchema
from readers.oracle.types import logical_type as oracle_type
from streaming.apply.catalog import Catalog
from streaming.errors import ApplyError

OLD = TableSchema(TableId("HR", "EMP"), (Column("ID", "number(10,0)", False), Column("D", "date")), ("ID",))


def _catalog(kind: str | None, required: bool) -> Catalog:
    cat = Catalog("ora1", target=None, table_map=None)  # type: ignore[arg-type]  # typed() needs neither
    cat.source_kind, cat.require_kind = kind, required
    return cat


def test_the_kind_is_written_with_the_logical_types_only() -> None:
    typed = TableSchema(OLD.table, tuple(Column(c.name, c.type, c.nullable, None, oracle_type(c.type))
                                         for c in OLD.columns), OLD.primary_key)
    assert envelope.schema_record(5, "HR.EMP", None, typed, 1, None, kind="oracle")["schema"]["kind"] == "oracle"
    # a schema without logical types (a hand-built one, the golden stream's) is written exactly as before
    assert envelope.schema_record(5, "HR.EMP", None, OLD, 1, None, kind="oracle") == \
        envelope.schema_record(5, "HR.EMP", None, OLD, 1, None)


def test_an_old_record_is_read_with_the_records_kind_else_the_configured_one() -> None:
    by_record = _catalog(None, True).typed(OLD, "oracle", 7)
    assert by_record.columns[1].logical == LogicalType("timestamp", precision=0)  # Oracle DATE: a wall clock
    by_config = _catalog("oracle", True).typed(OLD, None, 7)
    assert [c.logical for c in by_config.columns] == [c.logical for c in by_record.columns]
    assert by_config.columns[0].logical.dialect == "oracle"


def test_an_old_record_without_a_configured_source_stops_naming_source_sequence_and_fix() -> None:
    with pytest.raises(ApplyError) as err:
        _catalog(None, True).typed(OLD, None, 7)
    msg = str(err.value)
    assert "'ora1'" in msg and "sequence 7" in msg and "sources:" in msg and "kind:" in msg
    assert _catalog(None, False).typed(OLD, None, 7) is OLD  # tests and benches: the type maps read the texts
