"""One table holding every MySQL/MariaDB type family, with extreme and ordinary values and NULL.

Shared by the type-matrix tests (tests/integration/test_type_compare.py: the target modules and
`cdc compare` without Spark; tests/e2e/test_type_matrix.py: the whole pipeline). Cases taken from
peers' own type tests:

- python-mysql-replication ``pymysqlreplication/tests/test_data_type.py`` (integers at their signed
  and unsigned limits, ZEROFILL, DECIMAL up to (65,30) and negative, FLOAT/DOUBLE, BIT(1..64),
  DATE/DATETIME/TIMESTAMP with fractions, zero dates, TIME negative and 838 h, YEAR, CHAR/VARCHAR
  in utf8mb4 and latin1, BINARY/VARBINARY/BLOB, ENUM, SET incl. empty, JSON, GEOMETRY/POINT);
- Debezium ``debezium-connector-mysql/src/test/resources/ddl/regression_test.sql`` and
  ``datatypes_test.sql`` as used by ``MySqlConnectorRegressionIT`` (DOUBLE max, TIME '-838:59:59',
  BIT(64) all ones, DECIMAL(65,30), zero dates with sql_mode '', BINARY with trailing zero bytes).
"""

from __future__ import annotations

COLUMNS = [
    ("id", "INT PRIMARY KEY"),
    ("ti", "TINYINT"), ("tiu", "TINYINT UNSIGNED"), ("tz", "TINYINT(3) UNSIGNED ZEROFILL"),
    ("si", "SMALLINT"), ("siu", "SMALLINT UNSIGNED"), ("mi", "MEDIUMINT"), ("miu", "MEDIUMINT UNSIGNED"),
    ("i", "INT"), ("iu", "INT UNSIGNED"), ("bi", "BIGINT"), ("biu", "BIGINT UNSIGNED"),
    ("d10", "DECIMAL(10,2)"), ("d65", "DECIMAL(65,30)"), ("d650", "DECIMAL(65,0)"),
    ("f", "FLOAT"), ("dbl", "DOUBLE"),
    ("b1", "BIT(1)"), ("b10", "BIT(10)"), ("b64", "BIT(64)"),
    ("dte", "DATE"), ("dtm", "DATETIME"), ("dtm6", "DATETIME(6)"), ("ts6", "TIMESTAMP(6) NULL"),
    ("tm", "TIME"), ("tm6", "TIME(6)"), ("y", "YEAR"),
    ("ch", "CHAR(10)"), ("vc", "VARCHAR(40) CHARACTER SET utf8mb4"), ("vl", "VARCHAR(20) CHARACTER SET latin1"),
    ("tx", "TEXT"), ("bn", "BINARY(16)"), ("vb", "VARBINARY(40)"), ("bl", "BLOB"),
    ("e", "ENUM('a','b','c')"), ("st", "SET('x','y','z')"), ("j", "JSON"), ("g", "GEOMETRY"), ("pt", "POINT"),
]

ALL_BYTES = "".join(f"{i:02x}" for i in range(256))

# one row per line: extremes (max, min), ordinary values, zero/empty values, NULL everywhere but the key
ROWS = [
    ("(1, 127, 255, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807, "
    "18446744073709551615, 99999999.99, 99999999999999999999999999999999999.999999999999999999999999999999, "
    "99999999999999999999999999999999999999999999999999999999999999999, 3.4028234e38, 1.7976931348623157E308, "
    "b'1', b'1111111111', b'1111111111111111111111111111111111111111111111111111111111111111', "
    "'9999-12-31', '9999-12-31 23:59:59', '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07.999999', "
    "'838:59:59', '838:59:59.000000', 2155, 'abcdefghij', 'emoji \U0001F600 ü ß 中文', 'Grüße ÿ', "
    f"REPEAT('x', 3000), unhex('000102030405060708090a0b0c0d7400'), unhex('ff00ff00'), unhex('{ALL_BYTES}'), "
    "'c', 'x,y,z', '{\"k\": [1, 2.5, \"v\", null, true], \"u\": \"\\\\u00e9\"}', "
    "ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0))'), ST_GeomFromText('POINT(1.5 -2.25)', 4326))"),
    ("(2, -128, 0, 1, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0, -99999999.99, "
    "-0.000000000000000000000000000001, -99999999999999999999999999999999999999999999999999999999999999999, "
    "-1.175494e-38, 2.2250738585072014E-308, b'0', b'0', b'1000000000000000000000000000000000000000000000000000000000000000', "
    "'1000-01-01', '1000-01-01 00:00:00', '1000-01-01 00:00:00.000001', '1970-01-01 00:00:01.000000', "
    "'-838:59:59', '-00:00:01.250000', 1901, '', '', '', '', unhex('00'), x'', x'', 'a', '', '[]', "
    "ST_GeomFromText('LINESTRING(0 0,1 1,2 1)'), ST_GeomFromText('POINT(0 0)'))"),
    ("(3, 42, 42, 42, 42, 42, 42, 42, 42, 42, 42, 42, 42.42, 42.420000000000000000000000000000, 42, 42.42, 42.42, "
    "b'1', b'101', b'101', '2024-02-29', '2024-02-29 12:34:56', '2024-02-29 12:34:56.123456', "
    "'2024-02-29 12:34:56.5', '12:34:56', '-12:34:56.000001', 0, 'a  ', 'trailing  ', 'x', 'line\\nbreak\\ttab', "
    "unhex('ff'), x'00', x'7400', 'b', 'y', '{}', ST_GeomFromText('MULTIPOINT(0 0,1 2)'), "
    "ST_GeomFromText('POINT(3 4)'))"),
    # zero dates need sql_mode '': the stream and every target hold NULL for them (documented rule)
    ("(4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -0.0, b'0', b'0', b'0', '0000-00-00', "
    "'0000-00-00 00:00:00', '2024-00-10 00:00:00', '0000-00-00 00:00:00', '00:00:00', '00:00:00', 0, 'z', 'z', "
    "'z', 'z', x'', x'', x'', 'a', 'x', 'null', ST_GeomFromText('POINT(0 0)'), ST_GeomFromText('POINT(0 0)'))"),
    "(5, " + ", ".join(["NULL"] * 38) + ")",
]


# Oracle MySQL only (MySQL 9.7 leg): VECTOR (its float32 bytes: max float32, negative, fractions), the MySQL
# spelling GEOMCOLLECTION (empty too), TIMESTAMP literals with a time-zone offset (stored as UTC, one crossing
# midnight), an INVISIBLE column (not in SELECT *, in the binlog rows and information_schema like any other) and
# JSON documents holding dates, times and binary strings (opaque values in MySQL's binary JSON; one document is
# such a value alone), each value per row of ROWS
MYSQL_COLUMNS = [("vec", "VECTOR(3)"), ("gc", "GEOMCOLLECTION"), ("tso", "TIMESTAMP(3) NULL"),
                 ("hid", "VARCHAR(20) INVISIBLE"), ("jt", "JSON")]
MYSQL_VALUES = [
    ("STRING_TO_VECTOR('[1.5,-2.25,3.4028234e38]'), "
     "ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1),LINESTRING(0 0,1 1))'), '2024-02-29 12:34:56.789+05:30', "
     "'hidden \u00fc', JSON_OBJECT('at', CAST('2024-02-29 12:34:56.5' AS DATETIME(6)), 'd', "
     "CAST('2024-02-29' AS DATE), 't', CAST('-838:59:59' AS TIME), 'b', CAST(x'00ff' AS BINARY))"),
    ("STRING_TO_VECTOR('[0,0,0]'), ST_GeomFromText('GEOMETRYCOLLECTION EMPTY'), '2038-01-19 03:14:07.999+00:00', "
     "'', JSON_ARRAY(CAST('1000-01-01' AS DATE), CAST('9999-12-31 23:59:59.999999' AS DATETIME(6)))"),
    ("STRING_TO_VECTOR('[42.42,-1,0.1]'), ST_GeomFromText('GEOMETRYCOLLECTION(POINT(3 4))'), "
     "'2024-02-29 23:59:59.5-08:00', 'trailing  ', CAST(CAST('12:34:56.000001' AS TIME(6)) AS JSON)"),
    ("STRING_TO_VECTOR('[-0.5,1e-10,7]'), ST_GeomFromText('GEOMETRYCOLLECTION EMPTY'), '0000-00-00 00:00:00', "
     "'z', '{\"n\": 1}'"),
    "NULL, NULL, NULL, NULL, NULL",
]


def columns(mysql: bool = False) -> list[tuple[str, str]]:
    """The columns of the table; ``mysql``: with the Oracle MySQL-only ones (MYSQL_COLUMNS)."""
    return COLUMNS + (MYSQL_COLUMNS if mysql else [])


def create_sql(db: str, table: str = "types", mysql: bool = False) -> str:
    return f"CREATE TABLE `{db}`.`{table}` (" + ", ".join(f"`{c}` {t}" for c, t in columns(mysql)) + \
        ") DEFAULT CHARSET=utf8mb4"


def insert_sqls(db: str, table: str = "types", mysql: bool = False) -> list[str]:
    """One INSERT per row, naming every column (an INVISIBLE column takes a value only when named)."""
    rows = [r[:-1] + ", " + extra + ")" for r, extra in zip(ROWS, MYSQL_VALUES, strict=True)] if mysql else ROWS
    names = ", ".join(f"`{c}`" for c, _ in columns(mysql))
    return [f"INSERT INTO `{db}`.`{table}` ({names}) VALUES {r}" for r in rows]


def load(conn, db: str, table: str = "types", mysql: bool = False) -> None:
    """Create and fill the table on a PyMySQL connection (permissive sql_mode for the zero dates); ``mysql``:
    an Oracle MySQL server, with the MySQL-only columns too."""
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION', time_zone = '+00:00'")
        cur.execute(create_sql(db, table, mysql))
        for sql in insert_sqls(db, table, mysql):
            cur.execute(sql)
    conn.commit()
