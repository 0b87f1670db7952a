"""Oracle types (LogMiner simulator) -> publisher -> broker -> the per-table topic in Debezium's typed JSON
(``temporal: adaptive_micros``, ``decimal: precise``, ``schemas: true``), decoded the way a Kafka Connect
consumer decodes it (by each field's logical type name) and compared value by value with the source.

No Oracle server runs here: the source is the LogMiner simulator's APP.TYPES transaction (DATE,
TIMESTAMP(0/3/6/9), WITH [LOCAL] TIME ZONE, NUMBER, BINARY_DOUBLE with NaN and -Inf, RAW, VARCHAR2,
NCHAR) as LogMiner writes it into SQL_REDO. Mapping reference: Debezium's Oracle connector, "Data type
mappings" (https://debezium.io/documentation/reference/stable/connectors/oracle.html#oracle-data-type-mappings).
"""

from __future__ import annotations

import base64
import math
import re
from datetime import datetime, timedelta
from decimal import Context, Decimal

import orjson
import pytest

from cdc.config.models import KafkaConfig
from cdc.debezium.connect_schema import schema_name
from cdc.metrics import SourceMetrics
from cdc.publish.publisher import Publisher
from cdc.publish.recovery import make_consumer, read_range, watermarks
from cdc.stream.envelope import table_topic
from readers.oracle.sim import simulator
from readers.oracle.sim.demo import make_source, pump
from readers.oracle.sim.workload import TYPES_TABLE, table_name

pytestmark = [pytest.mark.oracle, pytest.mark.kafka]

OPTS = "seed=7,transactions=8,lanes=2,types_at=3"
EPOCH = datetime(1970, 1, 1)
UNITS = {"io.debezium.time.Timestamp": 3, "io.debezium.time.MicroTimestamp": 6, "io.debezium.time.NanoTimestamp": 9}


def _epoch(text: str, digits: int) -> int:
    """An ISO wall clock -> epoch units of 10**-digits s, by datetime arithmetic (independent of the code)."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?", text)
    whole = datetime.fromisoformat(m.group(1)) - EPOCH
    return (whole // timedelta(seconds=1)) * 10 ** digits + int(((m.group(2) or "") + "0" * 9)[:digits])


def _decode(field: dict, v):
    """A Connect consumer's view of one payload value, by the field's schema."""
    if v is None:
        return None
    name = field.get("name")
    if name == "io.debezium.data.VariableScaleDecimal":
        unscaled = int.from_bytes(base64.b64decode(v["value"]), "big", signed=True)
        return Decimal(unscaled).scaleb(-v["scale"], Context(prec=100))
    if field["type"] == "bytes":
        return base64.b64decode(v)
    return v


def _expected(column: str, field: dict, v):
    """The source value (stream encoding, from the simulator's model) in the consumer's terms."""
    if v is None:
        return None
    name = field.get("name")
    if name in UNITS:
        return _epoch(v, UNITS[name])
    if name == "io.debezium.time.ZonedTimestamp":  # the same instant; the fraction is padded to the column's
        return datetime.fromisoformat(v.replace("Z", "+00:00"))
    if name == "io.debezium.data.VariableScaleDecimal":
        return Decimal(v)
    if field["type"] == "float64":
        return float({"Nan": "nan", "-Inf": "-inf", "Inf": "inf"}.get(v, v))
    if column == "C_RAW":
        return bytes.fromhex(v[len("HEXTORAW('"):-2])
    return v


def test_oracle_types_on_the_per_table_topic_decode_to_the_source_values(broker, topic_prefix, tmp_path):
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix, per_table_topics=True,
                        debezium={"temporal": "adaptive_micros", "decimal": "precise", "schemas": True})
    pub = Publisher("ora", "oracle", kafka, SourceMetrics("ora"))
    assert pub.recover() is None
    stats = pump(make_source("ora", OPTS, str(tmp_path), SourceMetrics("ora")), pub)
    pub.close()
    assert stats["transactions"] > 0
    want: dict[int, dict] = {}
    for _, _, rows in simulator.instance(OPTS).model.committed():
        for _op, _s, table, _before, after in rows:
            if table == table_name(TYPES_TABLE):
                want[int(after["ID"])] = after
    consumer = make_consumer(broker.bootstrap)
    topic = table_topic(topic_prefix, "ora", "APP", "TYPES")
    try:
        low, high = watermarks(consumer, topic)
        records = [(orjson.loads(m.key()), orjson.loads(m.value()))
                   for m in read_range(consumer, topic, low, None, reported_high=high)]
    finally:
        consumer.close()
    assert [v["payload"]["op"] for _, v in records] == ["c", "c", "c", "c", "u"]
    got: dict[int, dict] = {}
    for key, value in records:
        schema, payload = value["schema"], value["payload"]
        fields = {f["field"]: f for f in schema["fields"][1]["fields"]}  # the `after` row schema
        assert schema["name"] == f"{schema_name(topic)}.Envelope" and payload["source"]["connector"] == "oracle"
        assert payload["source"]["scn"].isdigit() and payload["source"]["txId"]
        row = {c: _decode(fields[c], v) for c, v in payload["after"].items()}
        if row["C_TSTZ"] is not None:
            row["C_TSTZ"] = datetime.fromisoformat(row["C_TSTZ"].replace("Z", "+00:00"))
        ident = int(row["ID"])
        assert _decode(key["schema"]["fields"][0], key["payload"]["ID"]) == ident
        got[ident] = (row, fields)
    assert sorted(got) == sorted(want) == [1, 2, 3, 4]
    bad = []
    for ident, (row, fields) in got.items():
        for column, source in want[ident].items():
            expected, actual = _expected(column, fields[column], source), row[column]
            if isinstance(expected, float) and not math.isfinite(expected):
                same = actual is None  # NaN and infinities: JSON null (documented)
            else:
                same = expected == actual
            if not same:
                bad.append(f"id={ident} {column} ({fields[column].get('name') or fields[column]['type']}): "
                           f"{actual!r} != source {source!r} -> {expected!r}")
    assert not bad, "\n".join(bad)
    # independent of the model: values a Debezium-typed consumer sees
    one, four = got[1][0], got[4][0]
    assert one["C_DATE"] == 1709251201000 and one["C_TS6"] == 1709251200500000  # after the update
    assert four["C_TS9"] == 1709212455123456789  # NanoTimestamp keeps the nanoseconds
    assert one["C_RAW"] == b"\x00\xff\x10"
    assert records[0][1]["payload"]["after"]["C_TSTZ"] == "2024-03-01T05:14:15.123456Z"
    assert got[2][0]["C_NUM"] == Decimal("-0.000001") and one["C_NUM"] == Decimal(12345678901234567890123456789012345678)
    assert got[1][1]["C_TS9"]["name"] == "io.debezium.time.NanoTimestamp"
    assert got[1][1]["C_DATE"]["name"] == "io.debezium.time.Timestamp"
