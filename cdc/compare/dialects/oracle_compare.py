"""Oracle for cdc compare: fingerprints only, untested (no Oracle server runs where this is built).

No endpoint connects to Oracle and the bucket pass does not run there (LISTAGG is
limited): its tables would be compared by the row pass.
"""

from __future__ import annotations

from typing import Any, NoReturn

from cdc.compare.columns import ColumnInfo
from cdc.compare.dialects.dialect_interface import SEP, CompareDialect, DsnEndpoint
from cdc.compare.errors import CompareError

_NUMBER = "RTRIM(RTRIM(TO_CHAR({c}, 'TM9'), '0'), '.')"


class OracleCompare(CompareDialect):
    own_types = ((("binary_float",), "float", 6), (("binary_double",), "float", 15),
                 (("varchar2", "nvarchar2", "nchar", "clob", "varchar"), "string", None))
    """'' is NULL (the null flag says it); a DATE carries a time of day; rows are joined with ||."""
    sha256_sql = "LOWER(SUBSTR(RAWTOHEX(STANDARD_HASH({}, 'SHA256')), 1, 32))"

    buckets = False

    # ---- fingerprints --------------------------------------------------------------------------
    def int_text(self, c: str, col: ColumnInfo) -> str:
        return f"TO_CHAR({c})"

    def bool_text(self, c: str, col: ColumnInfo) -> str:
        return f"TO_CHAR({c})"

    def decimal_text(self, c: str, col: ColumnInfo, trim: bool) -> str:
        return _NUMBER.format(c=c)

    def float_text(self, c: str, col: ColumnInfo) -> str:
        return _NUMBER.format(c=c)

    def string_text(self, c: str, col: ColumnInfo) -> str:
        return c

    def binary_text(self, c: str, col: ColumnInfo) -> str:
        return f"LOWER(RAWTOHEX({c}))"

    def date_text(self, c: str, col: ColumnInfo) -> str:  # Oracle DATE carries a time of day
        return f"TO_CHAR({c}, 'YYYY-MM-DD HH24:MI:SS') || '.000000'"

    def datetime_text(self, c: str, col: ColumnInfo) -> str:
        return f"TO_CHAR({c}, 'YYYY-MM-DD HH24:MI:SS.FF6')"

    def timestamptz_text(self, c: str, col: ColumnInfo) -> str:
        return f"TO_CHAR(SYS_EXTRACT_UTC({c}), 'YYYY-MM-DD HH24:MI:SS.FF6')"

    def time_text(self, c: str, col: ColumnInfo) -> str:
        return f"TO_CHAR({c})"

    def other_text(self, c: str, col: ColumnInfo) -> str:
        return f"TO_CHAR({c})"

    def float_digits(self, x: str, digits: int) -> str:
        raise ValueError(f"no float rendering for {self.name!r}")  # floats render through TO_CHAR 'TM9'

    def length_flag(self, col: ColumnInfo, rendered: str, lengths: str = "chars") -> str:
        return f"NVL({super().length_flag(col, rendered, lengths)}, 0)"  # '' is NULL: the null flag says it

    def row_text(self, flags: list[str], values: list[str]) -> str:
        flag_sql = " || ',' || ".join(f"TO_CHAR({f})" for f in flags)
        return f"{flag_sql} || '{SEP}' || " + f" || '{SEP}' || ".join(values)

    # ---- bucket pass and row pass --------------------------------------------------------------
    def bucket_digest(self, text: str, order_by: str, ordered: bool) -> str:
        raise NotImplementedError("bucket pass is not implemented for Oracle (LISTAGG is limited); "
                                  "the row pass is used")

    def integer_division(self) -> str:
        return self._no_buckets()

    def row_estimate_sql(self) -> str:
        return self._no_buckets()

    def one_row(self) -> str:
        return "WHERE ROWNUM = 1"

    @staticmethod
    def _no_buckets() -> NoReturn:
        raise NotImplementedError("the bucket pass does not run on Oracle; the row pass is used")

    # ---- endpoints -----------------------------------------------------------------------------
    def connect(self, endpoint: str, params: dict[str, Any]) -> Any:
        raise CompareError(f"endpoint {endpoint}: dialect {self.name!r} cannot be connected here", endpoint=endpoint)

    def dsn_params(self, endpoint: str, dsn: str, tls: Any, login: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        raise CompareError(f"endpoint {endpoint}: an Oracle DSN cannot be compared here (no Oracle server runs "
                           "where this is built)", endpoint=endpoint)

    def target_params(self, tgt: Any, from_dsn: DsnEndpoint) -> tuple[str, dict[str, Any], str | None] | None:
        return None  # compare with an Oracle target is not supported
