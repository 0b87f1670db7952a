"""Every MySQL/MariaDB type family from the real binlog reader through the Debezium record builder.

The rows of tests/e2e/type_cases.py (integer limits, DECIMAL(65,30), BIT(64), zero dates, TIME +-838 h,
TIMESTAMP(6), binary with trailing zero bytes, ENUM/SET, JSON, spatial) are inserted into MariaDB and into MySQL 9.7
(``binlog_rows``; on MySQL with its own columns too: VECTOR, GEOMCOLLECTION, TIMESTAMP written with an offset), read from the binlog by MySqlSource, and turned into per-table records in ``adaptive_micros``/``precise`` and in
``connect``/``double`` with schemas. Each payload value is decoded the way a Kafka Connect consumer decodes
it (by the field's logical type) and must give back the ordered stream's value of the same change, which
the other type tests hold equal to MariaDB's. This catches a type text from the reader that the codecs
do not know (it would fall back to a string and fail the comparison for typed values) and any lossy
encoding. Mapping reference: https://debezium.io/documentation/reference/stable/connectors/mysql.html
("Data type mappings").
"""

from __future__ import annotations

import base64
import struct
import uuid
from datetime import date, datetime, timedelta
from decimal import Context, Decimal
from types import SimpleNamespace

import orjson
import pytest

from cdc.debezium.record import DebeziumRecords, TxContext, json_bytes
from cdc.stream.events import Change
from readers.mysql.position import GtidSet
from tests.e2e import type_cases
from tests.integration.mysql_helpers import collect, is_mysql, source_for, transactions

pytestmark = pytest.mark.mysql

EPOCH = datetime(1970, 1, 1)


def _iso(dt: datetime, micros: bool) -> str:
    return dt.isoformat() if micros or dt.microsecond else dt.replace(microsecond=0).isoformat()


def _time_text(us: int) -> str:
    sign, us = ("-" if us < 0 else ""), abs(us)
    s, frac = divmod(us, 1_000_000)
    text = f"{sign}{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"
    return text + (f".{frac:06d}" if frac else "")


def _back(field: dict, v, stream_value):
    """A Connect consumer's decoding of ``v``, rendered like the ordered stream renders that type."""
    if v is None:
        return None
    name, kind = field.get("name"), field["type"]
    if name in ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date"):
        return (date(1970, 1, 1) + timedelta(days=v)).isoformat()
    if name in ("io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp"):
        return _iso(EPOCH + timedelta(milliseconds=v), False)
    if name == "io.debezium.time.MicroTimestamp":
        return _iso(EPOCH + timedelta(microseconds=v), "." in stream_value)
    if name == "io.debezium.time.MicroTime":
        return _time_text(v)
    if name == "org.apache.kafka.connect.data.Time":
        return _time_text(v * 1000)
    if name == "io.debezium.time.ZonedTimestamp":
        return datetime.fromisoformat(v.replace("Z", "+00:00")) == \
            datetime.fromisoformat(stream_value.replace("Z", "+00:00")) and stream_value
    if name == "org.apache.kafka.connect.data.Decimal":
        unscaled = int.from_bytes(base64.b64decode(v), "big", signed=True)
        return Decimal(unscaled).scaleb(-int(field["parameters"]["scale"]), Context(prec=100)) == \
            Decimal(str(stream_value)) and stream_value
    if name == "io.debezium.data.Bits":
        return int.from_bytes(base64.b64decode(v), "little")
    if kind == "boolean":
        return int(v)
    if name == "io.debezium.data.geometry.Point":
        raw = base64.b64decode(stream_value)
        assert (v["x"], v["y"]) == struct.unpack_from("<dd", raw, 9)
        return base64.b64encode(struct.pack("<I", v["srid"]) + base64.b64decode(v["wkb"])).decode()
    if name == "io.debezium.data.geometry.Geometry":
        return base64.b64encode(struct.pack("<I", v["srid"]) + base64.b64decode(v["wkb"])).decode()
    if name == "io.debezium.data.FloatVector":  # a Connect array of float32: the VECTOR's stored bytes again
        assert field["items"] == {"type": "float32", "optional": False} and all(isinstance(x, float) for x in v)
        return base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode()
    if kind == "float64" and isinstance(stream_value, str):  # decimal: double
        return abs(v - float(stream_value)) <= abs(float(stream_value)) * 1e-15 and stream_value
    return v


@pytest.fixture(scope="module", params=["mariadb", "mysql97"])
def binlog_rows(request):
    """(mysql, changes): whether the server is Oracle MySQL, and the type rows as the binlog reader read them."""
    server = request.getfixturevalue(f"{request.param}_primary")
    db = f"dbz_types_{uuid.uuid4().hex[:8]}"
    q = server.query
    q(f"CREATE DATABASE `{db}`")
    src = source_for(server, [f"{db}.*"])
    src.start(None)
    try:
        conn = server.connect()
        try:
            type_cases.load(conn, db, mysql=is_mysql(server))
            conn.commit()
        finally:
            conn.close()
        end = GtidSet.parse(server.gtid_binlog_pos())
        events = collect(src, lambda evs: src.state.issuperset(end), timeout=30)
    finally:
        src.close()
        q(f"DROP DATABASE IF EXISTS `{db}`")
    changes = [ch for _, rows in transactions(events) for ch in rows if isinstance(ch, Change)]
    assert len(changes) == len(type_cases.ROWS)
    return is_mysql(server), changes


@pytest.mark.parametrize(("temporal", "decimal"), [("adaptive_micros", "precise"), ("connect", "double")])
def test_every_type_decodes_back_to_the_stream_value(binlog_rows, temporal, decimal):
    builder = DebeziumRecords("s", "mysql", "cdc", SimpleNamespace(temporal=temporal, decimal=decimal))
    mysql, changes = binlog_rows
    bad, typed = [], set()
    for n, change in enumerate(changes):
        [rec] = builder.records(change, TxContext("t", 1, n + 1, n + 1, n + 1, 1))
        _, value = json_bytes(rec, True)
        record = orjson.loads(value)
        fields = {f["field"]: f for f in record["schema"]["fields"][1]["fields"]}
        assert set(fields) == {c for c, _ in type_cases.columns(mysql)}
        for column, v in record["payload"]["after"].items():
            want = change.after[column]
            if fields[column].get("name") or fields[column]["type"] != "string":
                typed.add(column)
            if (temporal == "connect" and fields[column].get("name") in
                    ("org.apache.kafka.connect.data.Timestamp", "org.apache.kafka.connect.data.Time")):
                continue  # millisecond types: the micros are cut by design (checked in the unit tests)
            got = _back(fields[column], v, want)
            if got != want:
                bad.append(f"{change.after['id']}.{column} ({fields[column]}): {v!r} -> {got!r} != stream {want!r}")
    assert not bad, "\n".join(bad)
    # the typed families really got Debezium's types (not the string fallback; MariaDB's JSON is LONGTEXT)
    assert {"dte", "dtm6", "ts6", "tm6", "d65", "b10", "b1", "biu", "e", "st", "g", "pt", "y"} <= typed
    if mysql:  # GEOMCOLLECTION a Geometry struct, the offset TIMESTAMP a ZonedTimestamp in UTC, VECTOR Debezium's
        # io.debezium.data.FloatVector (an array of float32)
        assert {"gc", "tso", "vec"} <= typed
