"""Configuration of an Oracle LogMiner source (``kind: oracle``)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from cdc.config.credentials import PasswordLogin
from cdc.config.tls import OracleTls
from cdc.contract import HeartbeatInterval
from cdc.schema.table_glob import check_pattern, is_literal
from cdc.transforms.config import OutboxColumns, OutboxConfig, TransformsConfig, check_computed


class OracleSourceConfig(PasswordLogin):
    """``kind: oracle``.

    ``dsn`` is the separate LogMiner instance co-located with the ADG standby
    (``host:1521/LOGMNR``); ``standby_dsn`` the standby itself (dictionary
    build, log lists). ``dsn: simulator`` or ``simulator:<workload options>``
    (e.g. ``simulator:transactions=1000,lanes=8``) selects the built-in
    LogMiner simulator for both, which needs no login. The password: ``password``,
    ``password_file`` or ``passwordless: true`` (cdc.config.credentials); ``user`` is its own key.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_\-]+$", description="the source's name: its stream is the topic "
                      "<topic_prefix>.<name>.changes and apply[].source refers to it (letters, digits, _ and -)")
    kind: Literal["oracle"] = Field(default="oracle", description="oracle: an Oracle LogMiner reader")
    dsn: str = Field(description="mining instance, e.g. host:1521/MINER, or 'simulator' for the built-in LogMiner simulator")
    standby_dsn: str | None = Field(default=None, description="the ADG standby that builds the dictionary and "
                                    "lists the logs, and that snapshots read (none: dsn)")
    user: str = Field(default="", description="login user of the mining and standby connections")
    tls: OracleTls | None = Field(default=None, description="wallet / server-DN settings for oracledb.connect "
                                  "(cdc/config/tls.py); TCPS is chosen by the dsn")
    tables: list[str] = Field(min_length=1, description="SCHEMA.TABLE patterns (globs in the table part, as "
                                                         "apply[].tables: cdc/schema/table_glob.py); SCHEMA.* for a whole schema")
    dictionary: Literal["flat_file", "redo_log", "online_catalog"] = Field(
        default="flat_file", description="LogMiner's dictionary: flat_file: built on the standby into "
        "dictionary_path/dictionary_file at start and rebuilt after a DDL of a captured table; redo_log: "
        "DICT_FROM_REDO_LOGS with DDL tracking; online_catalog: DICT_FROM_ONLINE_CATALOG")
    dictionary_path: str = Field(default="/home/oracle/logmnr", description="directory (12c+: directory object) on the standby host")
    dictionary_file: str = Field(default="dictionary.ora", description="file name of the flat-file dictionary "
                                 "in dictionary_path (a rebuild after a DDL writes <stem>.<scn>.<ext> beside it)")
    sessions: int = Field(default=2, ge=1, le=32, description="LogMiner sessions mining SCN ranges in "
                          "parallel (1 to 32)")
    scn_range_size: int = Field(default=20_000, gt=0, description="SCNs in one range a session "
                                "mines with one START_LOGMNR")
    scn_overlap: int = Field(default=0, ge=0, description="SCNs mined before each range and dropped (context for LogMiner)")
    session_recycle_s: float = Field(default=600.0, gt=0, description="seconds after which a "
                                     "LogMiner session's connection is closed and reopened (its PGA only shrinks "
                                     "that way)")
    poll_interval_s: float = Field(default=0.5, gt=0, description="seconds a mining session waits before asking "
                                   "again when the standby has no new SCN range to mine")
    heartbeat_interval_s: HeartbeatInterval = 5.0
    fetch_size: int = Field(default=2000, gt=0, description="rows of V$LOGMNR_CONTENTS fetched per round trip "
                             "(the cursor's arraysize, or the Arrow batch size of the columnar pipeline)")
    pipeline: Literal["rows", "columnar"] = Field(
        default="columnar", description="columnar: fetch V$LOGMNR_CONTENTS as Arrow batches (fetch_df_batches) and "
                                    "route them with array kernels (readers/oracle/columnar/stage.py); rows: fetch "
                                    "tuples and route them one by one")
    parse_workers: int | None = Field(
        default=None, ge=0, le=8,
        description="processes parsing SQL_REDO (0: in the reader thread; default: 1 with 2+ CPUs, else 0)")
    staged_ranges: int = Field(default=4, ge=1, description="mined SCN ranges held in memory "
                               "ahead of the dispatcher (at least sessions)")
    spill_threshold_rows: int = Field(default=10_000, gt=0, description="an open transaction holding more rows "
                                       "than this spills them to files under spill_dir (also the columnar "
                                       "pipeline's bound on rows pending dispatch)")
    spill_chunk_rows: int = Field(default=1_000, gt=0, description="rows per spill file chunk of a spilled "
                                  "transaction")
    start_scn: int | None = Field(default=None, description="first SCN to mine when there is no stream yet")
    snapshot: Literal["never", "initial", "when_needed"] = Field(
        default="never", description="initial: a new stream starts with the tables' rows AS OF one SCN (op 'r'); "
                                     "when_needed: that, and a re-snapshot when the archived logs are gone past the "
                                     "checkpoint")
    snapshot_chunk_rows: int = Field(default=5_000, gt=0, description="rows read per query of the "
                                 "initial snapshot")
    unsupported: Literal["fail", "skip"] = Field(
        default="fail", description="a committed change LogMiner cannot decode (or a LOB it cannot assemble), "
        "when kafka.dead_letter_topic is not set: fail: the source stops naming table, XID and SCN; skip: it is "
        "logged, counted in cdc_source_errors_total and left out")
    temporal: Literal["iso", "redo_text"] = Field(
        default="iso", description="iso: DATE/TIMESTAMP values as the stream's ISO text and types (readers/oracle/"
                                   "convert.py); redo_text: the SQL_REDO text and Oracle's type names")
    conversions: dict[str, Literal["text", "int", "decimal", "float", "date", "timestamp"]] = Field(
        default_factory=dict, description="'SCHEMA.TABLE.COLUMN' (or '*.*.COLUMN') -> type; default: literal text")
    transforms: TransformsConfig | None = Field(default=None, description="columns left out, masked or "
                                                "encrypted, rows filtered, columns computed before anything reaches "
                                                "Kafka; names as the dictionary spells them (docs/transforms.md)")
    outbox: OutboxConfig | None = Field(default=None, description="an outbox table routed to one topic per "
                                        "aggregate type, exactly once; table read in upper case, column names "
                                        "as the dictionary spells them (left out: Debezium's names in upper "
                                        "case, ID, AGGREGATETYPE, ...) (docs/transforms.md)")

    def needs_login(self) -> bool:
        return not self.dsn.startswith("simulator")

    @field_validator("transforms")
    @classmethod
    def _upper_match(cls, transforms: TransformsConfig | None) -> TransformsConfig | None:
        """A rule's ``match`` is read in upper case, as ``tables`` is (Oracle's dictionary names)."""
        if transforms is not None:
            for rule in transforms.tables:
                rule.match = rule.match.upper()
        return transforms

    @field_validator("outbox")
    @classmethod
    def _outbox_names(cls, outbox: OutboxConfig | None) -> OutboxConfig | None:
        """The outbox table is read in upper case, as ``tables`` is; a column name left out is Debezium's in
        upper case (the dictionary's spelling of an unquoted name); one given is taken as written."""
        if outbox is not None:
            outbox.table = outbox.table.upper()
            cols = outbox.columns
            for name in OutboxColumns.model_fields:
                if name not in cols.model_fields_set:
                    setattr(cols, name, getattr(cols, name).upper())
        return outbox

    @model_validator(mode="after")
    def _computed_types(self) -> OracleSourceConfig:
        from readers.oracle.types import logical_type

        check_computed(self.transforms, logical_type)
        return self

    @field_validator("tables")
    @classmethod
    def _schema_table(cls, tables: list[str]) -> list[str]:
        for t in tables:
            if not is_literal(check_pattern(t).partition(".")[0]):
                raise ValueError(f"table {t!r}: the schema part must be a schema name (globs only in the table part)")
        return tables
