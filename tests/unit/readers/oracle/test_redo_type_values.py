"""What the stream carries for every Oracle type LogMiner writes into SQL_REDO (issue #14).

The shapes are those of LogMiner's SQL_REDO as Debezium's Oracle connector tests show them
(``LogMinerDmlParserTest``, ``OracleValueConverters``: quoted numbers, 'Nan'/'Inf'/'-Inf' for
BINARY_FLOAT/DOUBLE, TO_DATE/TO_TIMESTAMP/TO_TIMESTAMP_TZ, TO_YMINTERVAL/TO_DSINTERVAL, UNISTR,
HEXTORAW). The parser hands the SQL_REDO value as text, exactly (no float rounding, no time zone
shift, all 9 fraction digits): the stream carries it so under ``temporal: redo_text``; the default
``temporal: iso`` then turns DATE/TIMESTAMP values into ISO text (test_temporal_iso.py), and
``conversions`` (readers/oracle/convert.py) turn a column into int/decimal/float/date/timestamp on request. This pins both, type by type, so a change in what
a consumer receives is a test failure, not a surprise. Fault injected: each type's extreme value
(NUMBER of 38 digits, negative scale, NaN and infinities, 9 fraction digits, a zone offset,
supplementary characters through UNISTR surrogate pairs, a RAW with a zero byte).
"""

from __future__ import annotations

import math

from cdc.stream.events import Change, TableId
from readers.oracle.convert import Converter
from readers.oracle.parser import parse_redo

# (Oracle type, SQL_REDO literal, stream value by default)
CASES = [
    ("NUMBER(38)", "'12345678901234567890123456789012345678'", "12345678901234567890123456789012345678"),
    ("NUMBER(10,2)", "'-1.5'", "-1.5"),
    ("NUMBER(5,-2)", "'12300'", "12300"),
    ("NUMBER", "'.000001'", ".000001"),
    ("BINARY_FLOAT", "'1.10000002E+000'", "1.10000002E+000"),
    ("BINARY_DOUBLE NaN", "'Nan'", "Nan"),
    ("BINARY_DOUBLE +inf", "'Inf'", "Inf"),
    ("BINARY_DOUBLE -inf", "'-Inf'", "-Inf"),
    ("DATE", "TO_DATE('2024-02-29 13:14:15', 'YYYY-MM-DD HH24:MI:SS')",
     "TO_DATE('2024-02-29 13:14:15', 'YYYY-MM-DD HH24:MI:SS')"),
    ("TIMESTAMP(0)", "TO_TIMESTAMP('2024-02-29 13:14:15.')", "TO_TIMESTAMP('2024-02-29 13:14:15.')"),
    ("TIMESTAMP(9)", "TO_TIMESTAMP('2024-02-29 13:14:15.123456789')", "TO_TIMESTAMP('2024-02-29 13:14:15.123456789')"),
    ("TIMESTAMP(6) WITH TIME ZONE", "TO_TIMESTAMP_TZ('2024-02-29 13:14:15.123456 -06:00')",
     "TO_TIMESTAMP_TZ('2024-02-29 13:14:15.123456 -06:00')"),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", "TO_TIMESTAMP('2024-02-29 19:14:15.123456')",
     "TO_TIMESTAMP('2024-02-29 19:14:15.123456')"),
    ("INTERVAL YEAR TO MONTH", "TO_YMINTERVAL('+02-03')", "TO_YMINTERVAL('+02-03')"),
    ("INTERVAL DAY TO SECOND", "TO_DSINTERVAL('+01 02:03:04.500000')", "TO_DSINTERVAL('+01 02:03:04.500000')"),
    ("INTERVAL literal", "INTERVAL '1-2' YEAR(2) TO MONTH", "INTERVAL '1-2' YEAR(2) TO MONTH"),
    ("CHAR(4)", "'ab  '", "ab  "),
    ("NCHAR / NVARCHAR2 via UNISTR", "UNISTR('\\00e9t\\00e9 \\d83d\\de00 \\005c')", "été 😀 \\"),
    ("VARCHAR2 with quote", "'it''s'", "it's"),
    ("RAW", "HEXTORAW('00ff')", "HEXTORAW('00ff')"),
    ("ROWID", "'AAAR3sAAEAAAACXAAA'", "AAAR3sAAEAAAACXAAA"),
    ("any type, NULL", "NULL", None),
]


def _row() -> dict:
    cols = [f"C{i}" for i in range(len(CASES))]
    sql = ('insert into "S"."T"(' + ",".join(f'"{c}"' for c in cols) + ") values ("
           + ",".join(lit for _, lit, _ in CASES) + ");")
    op, schema, table, before, after = parse_redo(sql)
    assert (op, schema, table, before) == ("c", "S", "T", None)
    return after


def test_default_stream_value_per_oracle_type_is_the_exact_redo_text():
    after = _row()
    got = {name: after[f"C{i}"] for i, (name, _, _) in enumerate(CASES)}
    assert got == {name: want for name, _, want in CASES}


def test_conversions_per_oracle_type():
    """What ``conversions`` make of them (values exact; DATE keeps only the day under 'date')."""
    after = _row()
    idx = {name: f"C{i}" for i, (name, _, _) in enumerate(CASES)}
    rules = {"S.T." + idx["NUMBER(38)"]: "decimal", "S.T." + idx["NUMBER(5,-2)"]: "int",
             "S.T." + idx["NUMBER"]: "decimal", "S.T." + idx["BINARY_FLOAT"]: "float",
             "S.T." + idx["BINARY_DOUBLE NaN"]: "float", "S.T." + idx["BINARY_DOUBLE -inf"]: "float",
             "S.T." + idx["DATE"]: "timestamp", "S.T." + idx["TIMESTAMP(0)"]: "timestamp",
             "S.T." + idx["TIMESTAMP(9)"]: "timestamp"}
    ch = Change(TableId("S", "T"), "c", None, dict(after), {"scn": 100})
    Converter(rules)(ch)
    a = ch.after
    assert a[idx["NUMBER(38)"]] == "12345678901234567890123456789012345678"
    assert a[idx["NUMBER(5,-2)"]] == 12300 and a[idx["NUMBER"]] == "0.000001"
    assert a[idx["BINARY_FLOAT"]] == 1.10000002 and math.isnan(a[idx["BINARY_DOUBLE NaN"]])
    assert a[idx["BINARY_DOUBLE -inf"]] == -math.inf
    assert a[idx["DATE"]] == "2024-02-29T13:14:15"  # 'date' would keep only '2024-02-29'
    assert a[idx["TIMESTAMP(0)"]] == "2024-02-29T13:14:15"
    assert a[idx["TIMESTAMP(9)"]] == "2024-02-29T13:14:15.123456789"  # all 9 digits
