"""One CompareDialect per database cdc compare reads: fingerprints, bucket SQL, catalog, connections.

``compare_dialect(name)`` gives the object for a cdc.schema.sql_dialects name; the
compare modules call its methods instead of testing the database's name.
"""

from __future__ import annotations

from cdc.compare.dialects.dialect_interface import SEP, CompareDialect
from cdc.compare.dialects.duckdb_compare import DuckDbCompare
from cdc.compare.dialects.mysql_compare import MySqlCompare
from cdc.compare.dialects.oracle_compare import OracleCompare
from cdc.compare.dialects.postgres_compare import PostgresCompare
from cdc.schema.sql_dialects import DUCKDB, MYSQL, ORACLE, POSTGRES

__all__ = ["COMPARE_DIALECTS", "SEP", "CompareDialect", "compare_dialect"]

COMPARE_DIALECTS: dict[str, CompareDialect] = {
    d.name: d for d in (MySqlCompare(MYSQL), PostgresCompare(POSTGRES), DuckDbCompare(DUCKDB), OracleCompare(ORACLE))}


def compare_dialect(name: str) -> CompareDialect:
    """The compare dialect called ``name``: the core's, else the one the target package of that kind declares in
    ``COMPARE_DIALECT``; ConfigError naming the known ones otherwise."""
    from cdc.registry import dialect  # a target package's own (streaming/targets/<kind>/: COMPARE_DIALECT)

    return dialect(COMPARE_DIALECTS, "COMPARE_DIALECT", name)
