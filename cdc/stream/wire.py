"""The record bytes of the JSON changes topic: the one owner of their templates and of the key rule.

cdc.stream.envelope says what a record holds (dicts); this module says how its bytes are cut, for
every producer that writes them without building the dicts: the publisher's JSON paths
(cdc/publish/publisher.py and its C splice, cdc/publish/_splice_native.c), the MySQL reader's
serialized rows (readers/mysql/reader.py) and the Oracle columnar pipeline's
(readers/oracle/columnar/redo_json.py and its C pass). Every byte here is what ``orjson.dumps`` gives
for the envelope's dicts; tests/unit/cdc/stream/test_wire_conformance.py holds every producer to it.

Pieces:

- data record value: :data:`VALUE` (a ``%`` template) and :data:`VALUE_FRAGMENTS`, its literal parts
  between the holes, which the C splice takes at import (:func:`value_fragments`);
- the ``source`` block: a table's constant part cut around ``ts_ms`` (:func:`source_parts`); a change's
  own fields as ``,"k":v,...}`` (:func:`source_fields`), or cut around one field (:func:`source_split`);
- the record key: ``{"table": "db.t", "key": K}`` where K is :func:`key_values` (the key rule); as bytes,
  :func:`key_head` + :func:`key_json` + :func:`key_close`;
- markers: :data:`BEGIN_VALUE`, :data:`END_VALUE`, :data:`COLLECTION`;
- the writer-epoch header: :data:`EPOCH_HEADER`, :func:`epoch_headers`, :func:`record_epoch`.
"""

from __future__ import annotations

from typing import Any

import orjson

dumps = orjson.dumps

EPOCH_HEADER = "cdc.epoch"
SOURCE_VERSION = "cdc-1"
OPS = {op: dumps(op) for op in ("c", "u", "d", "r", "t")}
NULL = b"null"
NO_SOURCE_FIELDS = b"}"  # source_fields({})

# A data record's value: orjson.dumps of cdc.stream.envelope.data_record's dict. Holes, in order: sequence,
# before, after, op (JSON), ts_ms, source head, commit ts_ms (JSON), source tail, source fields, txid (JSON),
# total_order, data_collection_order.
VALUE_FRAGMENTS = (b'{"sequence":', b',"before":', b',"after":', b',"op":', b',"ts_ms":', b',"source":',
                   b',"transaction":{"id":', b',"total_order":', b',"data_collection_order":', b"}}")
VALUE = (VALUE_FRAGMENTS[0] + b"%d" + VALUE_FRAGMENTS[1] + b"%b" + VALUE_FRAGMENTS[2] + b"%b" + VALUE_FRAGMENTS[3]
         + b"%b" + VALUE_FRAGMENTS[4] + b"%d" + VALUE_FRAGMENTS[5] + b"%b%b%b%b" + VALUE_FRAGMENTS[6] + b"%b"
         + VALUE_FRAGMENTS[7] + b"%d" + VALUE_FRAGMENTS[8] + b"%d" + VALUE_FRAGMENTS[9])
BEGIN_VALUE = b'{"sequence":%d,"status":"BEGIN","id":%b,"event_count":null,"data_collections":null,"ts_ms":%b}'
END_VALUE = (b'{"sequence":%d,"status":"END","id":%b,"event_count":%d,"data_collections":[%b],"ts_ms":%b,'
             b'"position":%b,"resume":%b}')
COLLECTION = b'{"data_collection":%b,"event_count":%d}'


def value_fragments() -> tuple[bytes, ...]:
    """:data:`VALUE_FRAGMENTS` as the C splice takes them (``_splice_native.configure``)."""
    return VALUE_FRAGMENTS


# ---------------------------------------------------------------- the source block

def source_base(db: str, table: str, source_name: str, connector: str) -> dict[str, Any]:
    """The constant part of a data record's ``source`` block (envelope.data_record), ``ts_ms`` a placeholder."""
    return {"version": SOURCE_VERSION, "connector": connector, "name": source_name, "ts_ms": 0,
            "db": db, "schema": db, "table": table, "snapshot": "false"}


def source_parts(base: dict[str, Any]) -> tuple[bytes, bytes, bytes]:
    """(head, tail, tail of op 'r') of :func:`source_base`'s JSON cut around ``ts_ms``: a record's ``source``
    is ``head + dumps(commit ts_ms) + tail + source_fields(own fields)``."""
    keys = list(base)
    cut = keys.index("ts_ms")
    head = dumps({k: base[k] for k in keys[:cut]})[:-1] + b',"ts_ms":'
    tail = {k: base[k] for k in keys[cut + 1:]}
    return head, b"," + dumps(tail)[1:-1], b"," + dumps({**tail, "snapshot": "true"})[1:-1]


def source_fields(fields: dict[str, Any]) -> bytes:
    """A change's own ``source`` fields as they close the block: ``,"k":v,...}`` (``}`` when none)."""
    return b"," + dumps(fields)[1:] if fields else NO_SOURCE_FIELDS


def source_split(fields: dict[str, Any], hole: str) -> tuple[bytes, bytes]:
    """(head, tail) with ``source_fields(fields) == head + dumps(fields[hole]) + tail`` (a reader's
    per-row field, like MySQL's ``row``, filled in per row)."""
    keys = list(fields)
    cut = keys.index(hole)
    before = {k: fields[k] for k in keys[:cut]}
    after = {k: fields[k] for k in keys[cut + 1:]}
    head = (b"," + dumps(before)[1:-1] + b"," if before else b",") + dumps(hole) + b":"
    return head, (b"," + dumps(after)[1:] if after else NO_SOURCE_FIELDS)


# ---------------------------------------------------------------- the record key

def key_values(row: dict[str, Any], pk: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """The key rule: the primary-key values of a row image, as a dict in key order (the whole row when
    the table has no key)."""
    if pk:
        return {name: row.get(name) for name in pk}
    return dict(row)


def key_json(row: dict[str, Any], pk: tuple[str, ...] | list[str]) -> bytes:
    """The key values of a row as they sit in the key bytes (between :func:`key_head` and :func:`key_close`):
    one column's value for a one-column key, else ``dumps(key_values(row, pk))``. Raises orjson.JSONEncodeError."""
    if len(pk) == 1:
        return dumps(row.get(pk[0]))
    return dumps(key_values(row, pk))


def key_head(name: str, pk: tuple[str, ...] | list[str]) -> bytes:
    """The key bytes of table ``name`` up to the key values (:func:`key_json`)."""
    head = b'{"table":' + dumps(name) + b',"key":'
    return head + b"{" + dumps(pk[0]) + b":" if len(pk) == 1 else head


def key_close(pk: tuple[str, ...] | list[str]) -> bytes:
    return b"}}" if len(pk) == 1 else b"}"


# ---------------------------------------------------------------- the writer epoch

def epoch_headers(epoch: int) -> dict[str, bytes]:
    """The headers of every record a writer of epoch ``epoch`` produces to the changes topic (a dict: the
    cheapest form for confluent-kafka's produce)."""
    return {EPOCH_HEADER: str(int(epoch)).encode()}


def record_epoch(headers: Any) -> int:
    """The writer epoch of a record from its Kafka headers (a list of (name, bytes), as confluent-kafka and
    kafka-python give them, or a dict; None when it has none): 0 when the header is absent. A header that
    is not a decimal number is returned as -1, which every epoch rule refuses (cdc.stream.stream_structure)."""
    if not headers:
        return 0
    for name, value in (headers.items() if isinstance(headers, dict) else headers):
        if name == EPOCH_HEADER:
            try:
                return int(value)
            except (TypeError, ValueError):
                return -1
    return 0


def record_epochs(headers: list[Any]) -> list[int]:
    """:func:`record_epoch` of each record's headers (a fetch's records, in order): a record whose only header is
    one its fetch has seen already (the writer's epoch, the same on every record it wrote) is looked up, not
    parsed again."""
    seen: dict[tuple, int] = {}
    out = []
    for h in headers:
        if type(h) is list and len(h) == 1:
            e = seen.get(h[0])
            if e is None:
                e = seen[h[0]] = record_epoch(h)
            out.append(e)
        else:
            out.append(record_epoch(h))
    return out
