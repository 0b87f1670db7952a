"""Oracle types (LogMiner simulator) -> publisher -> broker -> apply engine -> typed PostgreSQL and DuckDB
columns, every value checked one by one (issue #14, the Oracle part of its type matrix).

No Oracle server runs here: the source is the LogMiner simulator (readers/oracle/sim/), whose
APP.TYPES transaction (workload option ``types_at``) inserts rows with DATE, TIMESTAMP(0/3/6/9),
TIMESTAMP WITH TIME ZONE and WITH LOCAL TIME ZONE, NUMBER (38 digits, small fractions), BINARY_DOUBLE
(incl. NaN and -Inf), RAW (zero bytes), VARCHAR2 (a quote) and NCHAR (UNISTR with a surrogate pair,
pad spaces) as LogMiner writes them into SQL_REDO, then updates one of them. The records are read
back from the broker and applied by the real engine (streaming/apply/engine.py) into tables it
creates from the stream's schema records.

What this catches: an Oracle DATE landing in a ``date`` column (the time of day gone) or refused as
``TO_DATE(...)`` text, a TIMESTAMP WITH TIME ZONE shifted the wrong way or by the session zone, a
TIMESTAMP(9) value with nanoseconds rounded or cut instead of refused (row 4 must be dead-lettered
with its column named), a RAW's bytes wrong, NUMBER digits lost.
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime, timezone
from decimal import Decimal

import pytest

from cdc.config.models import ApplyConfig, TargetConfig
from cdc.metrics import SourceMetrics
from cdc.schema.table_map import TableMap
from readers.oracle.sim import simulator
from readers.oracle.sim.demo import make_source, pump
from readers.oracle.sim.workload import TYPE_COLUMNS, TYPES_TABLE, table_name
from streaming.apply.engine import ApplyEngine
from streaming.targets import make_target
from tests.integration.stream_check import oracle_publisher, stream_records

pytestmark = [pytest.mark.oracle, pytest.mark.kafka, pytest.mark.postgres]

OPTS = "seed=7,transactions=8,lanes=2,types_at=3"


def _want() -> dict[int, dict]:
    """APP.TYPES as the source holds it after the transaction: the model's rows in the stream's encoding."""
    state: dict[int, dict] = {}
    for _, _, rows in simulator.instance(OPTS).model.committed():
        for _op, _s, table, _before, after in rows:
            if table == table_name(TYPES_TABLE):
                state[int(after["ID"])] = after
    return state


def _canon(col: str, v):
    """A target's DB-API value or a stream value, in one comparable form per column type."""
    if v is None:
        return None
    kind = TYPE_COLUMNS[col]
    if kind.startswith(("DATE", "TIMESTAMP")):
        if isinstance(v, datetime):
            return (v.astimezone(timezone.utc).replace(tzinfo=None).isoformat() + "Z") if v.tzinfo else v.isoformat()
        return v
    if kind == "NUMBER":
        return Decimal(str(v))
    if kind == "BINARY_DOUBLE":
        return repr(float(v))  # 'nan', '-inf' compare as text
    if kind == "RAW":
        return bytes.fromhex(v[10:-2]) if isinstance(v, str) else bytes(v)
    return v


@pytest.fixture
def stream_topic(broker, topic_prefix, tmp_path):
    pub = oracle_publisher(broker, topic_prefix)
    assert pub.recover() is None
    stats = pump(make_source("ora", OPTS, str(tmp_path), SourceMetrics("ora")), pub)
    pub.close()
    assert stats["transactions"] > 0
    return pub.topic


@pytest.mark.parametrize("kind", ["postgres", "duckdb"])
def test_oracle_types_land_exactly_in_typed_columns(kind, broker, stream_topic, tmp_path, request):
    records = stream_records(broker.bootstrap, stream_topic)
    name = "o" + uuid.uuid4().hex[:10]
    if kind == "postgres":
        pg = request.getfixturevalue("postgres")
        with pg.connect() as c:
            c.execute(f"CREATE SCHEMA {name}")
            c.commit()
        cfg = TargetConfig(name="t", kind="postgres", dsn=pg.dsn, schema=name, dead_letter_table="cdc_dead")
    else:
        cfg = TargetConfig(name="t", kind="duckdb", path=str(tmp_path / "t.duckdb"), dead_letter_table="cdc_dead")
    target = make_target(cfg).open()
    try:
        engine = ApplyEngine("ora", target, TableMap.from_config(ApplyConfig(source="ora", target="t"))).start()
        result = engine.apply_records(records, 0)
        assert result.dead_letters == 1  # row 4: TIMESTAMP(9) with nanoseconds
        table = "TYPES"  # APP.TYPES lands as TYPES in the target's default schema
        assert target.table_columns(table) is not None
        types = {c.lower(): t.lower() for c, t in _column_types(target, kind, name, table).items()}
        assert types["c_date"].startswith("timestamp") and types["c_tsltz"].startswith("timestamp")
        assert "time zone" in types["c_tstz"] or types["c_tstz"] == "timestamp with time zone"
        cols = list(TYPE_COLUMNS)

        def sel(c: str) -> str:
            q = target.quote(c)
            return f"timezone('UTC', {q})" if kind == "duckdb" and c == "C_TSTZ" else q

        cur = target.execute(f"SELECT {', '.join(sel(c) for c in cols)} FROM {target.qualified(table)}")
        got = {int(r[0]): dict(zip(cols, r)) for r in cur.fetchall()}
        dead = target.execute(f"SELECT error, record_value FROM {target.qualified('cdc_dead')}").fetchall()
        target.commit()
    finally:
        target.close()
    want = _want()
    assert sorted(want) == [1, 2, 3, 4] and sorted(got) == [1, 2, 3]
    bad = []
    for ident in (1, 2, 3):
        for c in cols:
            w, g = want[ident][c], got[ident][c]
            if kind == "duckdb" and c == "C_TSTZ" and g is not None:
                g = g.isoformat() + "Z"  # timezone('UTC', ..) hands the UTC wall clock
            if _canon(c, w) != _canon(c, g):
                bad.append(f"{kind} id={ident} {c} ({TYPE_COLUMNS[c]}): target {g!r} != source {w!r}")
    assert not bad, "\n".join(bad)
    # independent of the model: what a user finds in the target, column by column
    one, two = got[1], got[2]
    assert _canon("C_DATE", one["C_DATE"]) == "2024-03-01T00:00:01"  # DATE keeps its time of day (updated)
    assert _canon("C_TS6", one["C_TS6"]) == "2024-03-01T00:00:00.500000"
    assert _canon("C_TSTZ", one["C_TSTZ"]) in ("2024-03-01T05:14:15.123456Z", "2024-03-01T05:14:15.123456")
    assert _canon("C_TS0", two["C_TS0"]) == "0001-01-01T00:00:00" and _canon("C_DATE", two["C_DATE"]) == \
        "9999-12-31T23:59:59"
    assert bytes(one["C_RAW"]) == b"\x00\xff\x10" and bytes(two["C_RAW"]) == b"\x00"
    assert Decimal(str(one["C_NUM"])) == Decimal(12345678901234567890123456789012345678)
    assert math.isnan(got[3]["C_BDBL"]) and two["C_BDBL"] == -math.inf and one["C_BDBL"] == 1.10000002
    assert one["C_NCHAR"] == "été 😀" and one["C_VC"] == "it's" and two["C_NCHAR"] == "ab  "
    assert len(dead) == 1 and "C_TS9" in dead[0][0] and "below the microsecond" in dead[0][0]
    assert "2024-02-29T13:14:15.123456789" in dead[0][1]


def _column_types(target, kind: str, schema: str, table: str) -> dict[str, str]:
    if kind == "postgres":
        cur = target.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = %s "
                             "AND table_name = %s", [schema, table])
    else:
        cur = target.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ?",
                             [table])
    out = dict(cur.fetchall())
    target.commit()
    return out
