"""SQL_REDO statements -> the JSON of their row images and record key, in one native pass.

The columnar pipeline's per-row work (readers/oracle/columnar/stage.py): for each surviving DML row,
:func:`build` returns ``(op, key, before, after)``: the op letter and the exact bytes
``orjson.dumps`` gives for the record key's values and the two row images that the row path
(``parse_redo`` -> ``Converter`` -> ``cdc.stream.envelope.data_record``) would publish; given the rows'
positions (``sources``), also the JSON of the Change's ``source`` fields after the opening brace
(:func:`reference_source`). :func:`reference`
is that definition in Python; the native module ``_redo_native`` (readers/oracle/columnar/_redo_native.c,
built by ``make setup``) computes the same bytes in C for the shapes it can vouch for and returns
None for any other row (``UNISTR``, ``||`` chains, bare numbers, table aliases, a ROWID inside the
WHERE clause, other temporal encodings, malformed text...), which then takes the row path. Without
the compiled module (no C compiler where the package was installed) every row takes the row path.

``specs[i]`` describes a table: ``(temporal, pk)``, the names of the columns whose
``TO_DATE('YYYY-MM-DD HH24:MI:SS')`` text ``temporal: iso`` turns into ``YYYY-MM-DDTHH:MM:SS``
(readers/oracle/convert.py), and the primary key column names (None: the record key is the whole
row image, as in ``cdc.stream.wire.key_values``). The key bytes are the key VALUES
(``cdc.stream.wire.key_json``): the one column's value for a one-column key, ``{col: value, ...}``
for a longer one, the row image for none. The C file holds its own copy of the source-field and
string-escape bytes; tests/unit/cdc/stream/test_wire_conformance.py holds it to cdc.stream.wire.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from cdc.stream import wire
from readers.oracle.convert import iso_temporal
from readers.oracle.parser import parse_redo

try:
    from readers.oracle.columnar import _redo_native  # type: ignore[attr-defined]
except ImportError:  # not compiled here: the row path for every row
    _redo_native = None

NATIVE = _redo_native is not None
Spec = tuple[tuple[str, ...], "tuple[str, ...] | None"]
Built = tuple[Any, ...]  # (op, key, before, after[, source])
# (SCNs, commit SCNs, txIds as JSON bytes, RS_IDs, SSNs): one per statement
Sources = tuple[Sequence[int], Sequence[int], Sequence[bytes], Sequence["str | None"], Sequence["int | None"]]


def build(sqls: Sequence[str], spec_of_row: Sequence[int], specs: Sequence[Spec],
          sources: Sources | None = None) -> list[Built | None]:
    """``(op, key, before, after)`` JSON bytes per statement (``+ (source,)`` with ``sources``), or None
    where the row path must decide."""
    if _redo_native is None:
        return [None] * len(sqls)
    return _redo_native.build(sqls, spec_of_row, specs, sources)


def reference_source(scn: int, commit_scn: int, xid: str, rs_id: str | None, ssn: int | None) -> bytes:
    """The ``source`` part :func:`build` adds: a Change's source fields (readers/oracle/dispatcher.py) as the
    publisher splices them (cdc.stream.wire.source_fields)."""
    return wire.source_fields({"scn": scn, "commit_scn": commit_scn, "txId": xid, "rs_id": rs_id, "ssn": ssn})


def reference(sql: str, spec: Spec) -> Built:
    """The definition :func:`build` is held to: the row path's bytes (raises what ``parse_redo`` raises)."""
    temporal, pk = spec
    op, _schema, _table, before, after = parse_redo(sql)
    for image in (before, after):
        if image:
            for col in temporal:
                v = image.get(col)
                if v is not None:
                    image[col] = iso_temporal(v)
    row: Any = after if after is not None else before
    key = orjson.dumps(row) if pk is None else wire.key_json(row, pk)  # None: the whole row (wire.key_values)
    return op, key, orjson.dumps(before), orjson.dumps(after)
