"""The service configuration: one YAML file, every key overridable by env var.

Override rule: ``CDC_`` + the key path in upper case joined by ``__``; list
items by index. Examples::

    CDC_KAFKA__BOOTSTRAP_SERVERS=127.0.0.1:9092
    CDC_SOURCES__0__PASSWORD=secret

The value of a string field (``str``, ``SecretStr``, a ``Literal`` of strings)
is taken verbatim: a password ``123456``, ``#s3cret`` or ``*Xk9!pq`` is that
text. Only where the field expects a structured value (a list, mapping,
number, boolean, model) is it parsed as a YAML flow value (``[a, b]`` gives a
list, ``5`` a number); a field that takes either (``str | list[str]``) keeps
the parsed value only when it is a list or mapping. Validation errors name
the key, the file and, for overridden keys, the environment variable; they
never show the value of a secret (``***``) nor a DSN's password.
"""

from __future__ import annotations

import difflib
import os
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Union

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SecretStr,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from cdc.config.credentials import (
    STORE_FILE_SETTINGS,
    PasswordLogin,
    SecretDsn,
    file_secret,
    is_store_secret,
    resolve_secrets,
    reveal,
)
from cdc.config.dsn import mask
from cdc.config.kafka_settings import KafkaConnection, parse_block
from cdc.config.options import CONFIG_ENV, DEFAULT_CONFIG
from cdc.config.tls import MySqlTls, OracleTls, tls_kind
from cdc.errors import ConfigError
from cdc.ops.config import ApiConfig  # the ``api:`` section lives with the operations API
from cdc.registry import SOURCE_CONFIGS
from cdc.schema.evolution import SchemaChangeConfig
from cdc.spill.dirs import default_spill_dir

ENV_PREFIX = "CDC_"

SourceConfig = Annotated[Union[tuple(SOURCE_CONFIGS.values())], Field(discriminator="kind")]


class SchemaRegistryConfig(BaseModel):
    """A Confluent Schema Registry (``kafka.avro_framing: schema_registry``): the SchemaRegistryClient's own
    settings, under their own names; ``mock://<scope>`` is the client's in-memory registry (tests)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    url: str = Field(pattern=r"^(https?|mock)://", description="the registry's URL (http://, https://; several "
                     "comma-separated; mock://<scope>: the client's in-memory registry)")
    basic_auth_user_info: SecretStr | None = Field(default=None, alias="basic.auth.user.info",
                                                   description="HTTP basic auth as "
                                                   "user:password (a secret)")
    ssl_ca_location: str | None = Field(default=None, alias="ssl.ca.location",
                                        description="CA certificate file (PEM) that verifies the registry")
    ssl_certificate_location: str | None = Field(default=None, alias="ssl.certificate.location",
                                                 description="client certificate file (PEM), for mutual TLS")
    ssl_key_location: str | None = Field(default=None, alias="ssl.key.location",
                                         description="client private key file (PEM), for mutual TLS")
    ssl_key_password: SecretStr | None = Field(default=None, alias="ssl.key.password",
                                               description="password of the client private key")

    def client_settings(self) -> dict[str, Any]:
        """The settings as SchemaRegistryClient takes them (secrets unwrapped here, at connect time)."""
        return reveal(self.model_dump(by_alias=True, exclude_none=True))


class DebeziumConfig(BaseModel):
    """How per-table topics encode Debezium records (cdc/debezium/). The defaults keep the values the
    per-table topics carried before this option: the stream's ISO temporal text and decimal text."""

    model_config = ConfigDict(extra="forbid")

    temporal: Literal["iso", "connect", "adaptive_micros"] = Field(
        default="iso", description="temporal values: iso: the stream's ISO text (io.debezium.time.Iso*); "
        "adaptive_micros: Debezium's time.precision.mode adaptive_time_microseconds (epoch days, micro- and "
        "milliseconds); connect: Kafka Connect's Date/Time/Timestamp (docs/consuming.md)")
    decimal: Literal["string", "precise", "double"] = Field(
        default="string", description="DECIMAL/NUMBER values, as Debezium's decimal.handling.mode: string: "
        "text; precise: Kafka Connect Decimal (unscaled two's-complement bytes); double: a float")
    schemas: bool = Field(default=False, description="JSON encoding: every key and value "
                          "as Kafka Connect JsonConverter's {schema, payload} (false: the payload alone)")
    transaction_topic: bool = Field(default=False, description="also write Debezium's transaction-metadata "
                                    "topic <topic_prefix>.<source>.transaction (BEGIN/END of each transaction)")
    schema_change_topic: bool = Field(default=False, description="also write Debezium's schema-change topic "
                                      "<topic_prefix>.<source> (one record per DDL or table definition)")


class TopicsConfig(BaseModel):
    """How the service creates its topics (cdc.publish.topics.topic_spec). ``changes``, ``per_table``,
    ``dead_letter``, ``transaction`` and ``schema_change`` (the Debezium-shaped topics of kafka.debezium):
    topic config overrides (``partitions`` too, except for the changes topic: always 1)."""

    model_config = ConfigDict(extra="forbid")

    replication_factor: int | None = Field(default=None, ge=1, description="replicas of each topic the service "
                                          "creates (none: the broker's default)")
    min_insync_replicas: int | None = Field(default=None, ge=1, description="min.insync.replicas of each topic "
                                           "the service creates, unless its own settings give one (none: the "
                                           "broker's default)")
    changes: dict[str, str | int] = Field(default_factory=dict, description="topic config of the changes topic "
                                          "(partitions: always 1; default retention: forever)")
    per_table: dict[str, str | int] = Field(default_factory=dict, description="topic config of the per-table "
                                            "topics (default: cleanup.policy compact)")
    dead_letter: dict[str, str | int] = Field(default_factory=dict, description="topic config of "
                                              "kafka.dead_letter_topic (default: the broker's)")
    transaction: dict[str, str | int] = Field(default_factory=dict, description="topic config of the Debezium "
                                              "transaction topic (default: the broker's)")
    schema_change: dict[str, str | int] = Field(default_factory=dict, description="topic config of the Debezium "
                                                "schema-change topic (default: the broker's)")

    @field_validator("changes")
    @classmethod
    def _one_partition(cls, v: dict[str, str | int]) -> dict[str, str | int]:
        if str(v.get("partitions", 1)) != "1":
            raise ValueError(f"the changes topic has exactly 1 partition (it is ordered); got partitions="
                             f"{v['partitions']}")
        return v


class KafkaConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    bootstrap_servers: str = Field(description="the brokers, host:port[,host:port...] (librdkafka's "
                                   "bootstrap.servers)")
    topic_prefix: str = Field(default="cdc", pattern=r"^[A-Za-z0-9_\-.]+$", description="first part of every "
                              "topic name: <topic_prefix>.<source>.changes, per-table <topic_prefix>.<source>."
                              "<db>.<table>, ...")
    encoding: Literal["json", "avro"] = Field(default="json", description="how records are serialized: json "
                                              "or avro (framed as avro_framing says)")
    per_table_topics: bool = Field(default=False, description="also write each table's changes, as Debezium "
                                   "records (kafka.debezium), to <topic_prefix>.<source>.<db>.<table>")
    debezium: DebeziumConfig = Field(default_factory=DebeziumConfig, description="how per-table and Debezium "
                                     "topics encode their records")
    dead_letter_topic: str | None = Field(default=None, description="topic for a change a reader cannot decode "
                                          "or a record above the broker's size limit, which is then skipped "
                                          "(none: the source stops at it)")
    client: dict[str, Any] = Field(default_factory=dict, description="librdkafka settings for EVERY Kafka client "
                                   "(security.protocol, ssl.*, sasl.*; sasl.password_file: read from a file)")
    producer: dict[str, Any] = Field(default_factory=dict, description="librdkafka settings for the "
                                     "producers only, over kafka.client")
    consumer: dict[str, Any] = Field(default_factory=dict, description="librdkafka settings for the "
                                     "consumers only, over kafka.client")
    topics: TopicsConfig = Field(default_factory=lambda: TopicsConfig(), description="settings the service "
                                 "creates its topics with")
    avro_framing: Literal["confluent", "plain", "schema_registry"] = Field(
        default="confluent", description="confluent/plain: the shipped .avsc schemas, no registry (a 5-byte header "
        "whose id is a CRC32 of the schema, or none); schema_registry: per-table, transaction and schema-change "
        "topics in per-table schemas registered in kafka.schema_registry (cdc/debezium/schema_registry.py)")
    schema_registry: SchemaRegistryConfig | None = Field(default=None, description="the Schema Registry of "
                                                         "avro_framing: schema_registry (none: no registry)")
    idempotence: bool = Field(default=True, description="idempotent producer (false: brokers without "
                              "InitProducerId; retries may then append duplicate runs)")
    delivery_timeout_s: float = Field(default=120.0, gt=0, description="seconds a record may stay "
                                      "unacknowledged by the broker; then the source stops and restarts from the "
                                      "stream's tail")
    writer_fencing: bool = Field(default=True, description="one daemon writes a source's stream: a lease the broker "
                                 "arbitrates (transactional.id cdc-writer.<prefix>.<source>, topic "
                                 "<prefix>.<source>.writer); a newer daemon fences the older (cdc/publish/lease.py)")

    @field_validator("client", "producer", "consumer", mode="before")
    @classmethod
    def _settings_block(cls, raw: Any, info: ValidationInfo) -> dict[str, Any]:
        """Secrets become SecretStr, ``<secret>_file`` is read (cdc.config.kafka_settings.parse_block)."""
        if not isinstance(raw, dict):
            raise ValueError("a mapping of librdkafka settings")  # noqa: TRY004 - pydantic reports ValueError
        return parse_block(raw, f"kafka.{info.field_name}")

    def connection(self) -> KafkaConnection:
        """How every Kafka client reaches the brokers (cdc.config.kafka_settings)."""
        return KafkaConnection(self.bootstrap_servers, self.client, self.producer, self.consumer)

    @model_validator(mode="after")
    def _registry_fits_framing(self) -> KafkaConfig:
        if self.avro_framing == "schema_registry" and (self.schema_registry is None or self.encoding != "avro"):
            raise ValueError("avro_framing: schema_registry needs encoding: avro and a schema_registry: {url: ...}")
        if self.schema_registry is not None and self.avro_framing != "schema_registry":
            raise ValueError(f"schema_registry is set but avro_framing is {self.avro_framing!r}: "
                             "set avro_framing: schema_registry to use it, or remove it")
        extra = [k for k in ("transaction_topic", "schema_change_topic") if getattr(self.debezium, k)]
        if extra and self.encoding == "avro" and self.avro_framing != "schema_registry":
            raise ValueError(f"debezium.{extra[0]} with encoding: avro needs avro_framing: schema_registry (the "
                             "shipped .avsc schemas have no shape for Debezium's transaction and schema-change topics)")
        return self


class TargetTimeouts(BaseModel):
    """Every wait on a database target is bounded (``targets[].timeouts``; 0 turns one bound off).

    PostgreSQL gets them as libpq connect options (connect_timeout, keepalives, tcp_user_timeout) and
    session settings (statement_timeout, lock_timeout, idle_in_transaction_session_timeout); MySQL/MariaDB
    as PyMySQL connect/read/write timeouts and session variables; Oracle as the connect timeout, TCP
    keepalive and the per-call timeout. ``reply_s`` is the client's own bound on one call: a call that hears
    nothing from the server for that long (a dead network path, a hung proxy: the kernel's keepalives do not
    see those) ends the connection, and the batch is retried."""

    model_config = ConfigDict(extra="forbid")

    connect_s: float = Field(default=10.0, gt=0, description="seconds to open a connection, login "
                                                        "included")
    statement_s: float = Field(default=300.0, ge=0, description="seconds after which the server "
                                                         "cancels one statement (0: no bound)")
    lock_s: float = Field(default=0.0, ge=0, description="seconds after which the server gives "
                                                         "up a lock wait (0: statement_s bounds it)")
    idle_in_transaction_s: float = Field(default=120.0, ge=0, description="seconds after which the server ends "
                                         "a session idle inside a transaction (a driver that died mid-batch; "
                                         "0: no bound)")
    keepalive_idle_s: int = Field(default=30, gt=0, description="TCP keepalive: seconds a connection "
                                 "is idle before the first probe")
    keepalive_interval_s: int = Field(default=10, gt=0, description="TCP keepalive: seconds between "
                                     "probes")
    keepalive_count: int = Field(default=3, gt=0, description="TCP keepalive: unanswered probes "
                                "after which the connection counts as dead")
    reply_s: float | None = Field(default=None, ge=0, description="seconds the client waits for the "
                                  "server's reply to one call, then ends the connection and the batch is "
                                  "retried (none: statement_s + 30; 0: no bound)")

    @property
    def reply_bound_s(self) -> float | None:
        """The client-side bound on one call, None when off."""
        if self.reply_s is not None:
            return self.reply_s or None
        return self.statement_s + 30.0 if self.statement_s else None


class ApplyRetry(BaseModel):
    """``apply[].retry``: a batch that failed transiently (lock or statement timeout, deadlock, serialization
    failure, lost connection) is rolled back whole and applied again after ``initial_backoff_s``, doubling up
    to ``max_backoff_s``, at most ``attempts`` times in all; then the job stops naming target, batch and
    sequence range."""

    model_config = ConfigDict(extra="forbid")

    attempts: int = Field(default=10, ge=1, description="tries of one batch, the first included; "
                          "then the job stops")
    initial_backoff_s: float = Field(default=1.0, ge=0, description="seconds before the first retry of a "
                                     "failed batch, doubled at each further one")
    max_backoff_s: float = Field(default=30.0, ge=0, description="seconds the wait between retries grows to "
                                 "at most")


class TargetConfig(PasswordLogin):
    """One target. Database targets (postgres, mysql, oracle) log in: ``user`` (else the DSN's) and
    a password from ``password``, ``password_file`` or the DSN (cdc.config.credentials), else ``passwordless``."""

    model_config = ConfigDict(extra="forbid")
    dsn_field = "dsn"

    name: str = Field(description="the target's name, which apply[].target refers to")
    kind: Literal["postgres", "mysql", "duckdb", "oracle", "parquet", "delta", "iceberg"] = Field(
        description="the kind of database or table format written")
    dsn: str | None = Field(default=None, description="database targets: where to connect (postgresql://, "
                            "mysql://, oracle host:port/service; duckdb and parquet: a file or directory path)")
    user: str | None = Field(default=None, description="login user (default: the DSN's)")
    path: str | None = Field(default=None, description="duckdb: the database file (else dsn; neither: in "
                             "memory); parquet: the directory (else dsn); delta: the root directory or "
                             "object-store URI of the tables (required)")
    schema_: str | None = Field(default=None, alias="schema", description="database schema the tables are "
                                "written to (none: the connection's default)")
    dead_letter_table: str | None = Field(default=None, description="table (created when missing) receiving "
                                          "records the apply cannot write, with the error (none: such a record "
                                          "stops the apply)")
    timeouts: TargetTimeouts = Field(default_factory=TargetTimeouts, description="bounds on every wait on a "
                                     "database target")
    # lakehouse targets (streaming/targets/delta.py, iceberg.py). Secrets among the settings (a name matching
    # cdc.config.credentials.STORE_SECRET) are SecretStr, <name>_file reads one from a file; the catalog_uri's password
    # is masked wherever the URI is shown (SecretDsn). Unwrapped only where handed to deltalake / pyiceberg.
    storage_options: dict[str, str | SecretStr] = Field(default_factory=dict,
                                                        description="delta: object-store settings "
                                                        "(AWS_REGION, AWS_ACCESS_KEY_ID, ...) passed to deltalake; "
                                                        "iceberg takes its own in catalog")
    catalog_uri: SecretDsn | None = Field(default=None, description="iceberg: SQL catalog URI (sqlite:///..., "
                                          "postgresql://...; its password: better catalog_uri_file)")
    warehouse: str | None = Field(default=None, description="iceberg: the location (path or "
                                      "object-store URI) where table files are written")
    namespace: str = Field(default="cdc", description="iceberg: the catalog namespace of the tables (created "
                           "when missing)")
    catalog: dict[str, Any] = Field(default_factory=dict, description="iceberg: other pyiceberg catalog settings")
    tls: Annotated[Annotated[MySqlTls, Tag("mysql")] | Annotated[OracleTls, Tag("oracle")],
                   Discriminator(tls_kind)] | None = Field(
        default=None, description="mysql: {ca, cert, key, verify_identity}; oracle: wallet settings (cdc/config/tls.py); "
                                  "postgres: libpq's sslmode/sslrootcert/sslcert/sslkey in the dsn instead")

    def needs_login(self) -> bool:
        return self.kind in ("postgres", "mysql", "oracle")

    @model_validator(mode="before")
    @classmethod
    def _catalog_uri_file(cls, data: Any) -> Any:
        """``catalog_uri_file``: the whole catalog URI (with its password) read from a file."""
        if isinstance(data, dict) and "catalog_uri_file" in data:
            data = dict(data)
            path = data.pop("catalog_uri_file")
            if data.get("catalog_uri") is not None:
                raise ValueError("give catalog_uri or catalog_uri_file, not both")
            if path is not None:
                data["catalog_uri"] = SecretDsn(file_secret(str(path), "catalog_uri_file").get_secret_value())
        return data

    @field_validator("storage_options", "catalog", mode="before")
    @classmethod
    def _store_secrets(cls, raw: Any, info: ValidationInfo) -> Any:
        """Secret settings become SecretStr, ``<secret>_file`` is read (cdc.config.credentials.resolve_secrets)."""
        if not isinstance(raw, dict):
            return raw  # pydantic reports a mapping is expected
        out = resolve_secrets(raw, info.field_name, is_store_secret, STORE_FILE_SETTINGS)
        if info.field_name == "storage_options":  # deltalake takes text only
            for name, value in out.items():
                if not isinstance(value, (str, SecretStr)):  # the value is not shown: it may be a secret, mis-parsed
                    raise ValueError(f"storage_options.{name}: an object-store setting is text (got "  # noqa: TRY004
                                     f"{type(value).__name__}); quote it")
        return out

    def login_kwargs(self) -> dict[str, Any]:
        """``user`` (when set) and the unwrapped password, as driver keywords, for connect() only."""
        return {**({"user": self.user} if self.user else {}), **super().login_kwargs()}

    @model_validator(mode="after")
    def _tls_fits_kind(self) -> TargetConfig:
        if self.tls is not None and tls_kind(self.tls) != self.kind:
            raise ValueError(f"tls: a {self.kind} target takes {_TLS_TAKES.get(self.kind, 'no tls block')}")
        return self


_TLS_TAKES = {
    "mysql": "tls: {ca, cert, key, verify_identity}",
    "oracle": "tls: {config_dir, wallet_location, wallet_password, ssl_server_dn_match, ssl_server_cert_dn}",
    "postgres": "no tls block: libpq's settings go in the dsn (sslmode=verify-full&sslrootcert=/path/ca.pem)",
}


class TableMapping(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="db.table of the source table (a glob pattern selects without renaming)")
    target: str | None = Field(default=None, description="its table name in the target (none: the source "
                               "table's name)")


class ViewConfig(BaseModel):
    """One maintained view (streaming/views/definition.py reads it): ``sql``, or the same in parts
    ``select``/``from``/``join``/``where``/``group_by`` (each a string or a list of strings; ``from``
    also a mapping alias -> table). The SQL itself is checked when the apply job parses the view."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,47}$", description="the view's table in the target "
                      "(a letter or _, then letters, digits, _; at most 48 characters)")
    sql: str | None = Field(default=None, description="the whole view as one SELECT (or give select and from)")
    select: str | list[str] | None = Field(default=None, description="the SELECT list (items, or one string)")
    from_: str | list[str] | dict[str, str] | None = Field(default=None, alias="from", description="the FROM "
                                                           "tables ('table alias' items, or alias -> table)")
    join: str | list[str] | None = Field(default=None, description="join conditions between the from "
                                         "tables: equalities such as o.customer_id = c.id, joined by AND")
    where: str | list[str] | None = Field(default=None, description="WHERE conditions, joined by AND")
    group_by: str | list[str] | None = Field(default=None, description="GROUP BY columns")

    @model_validator(mode="after")
    def _sql_or_parts(self) -> ViewConfig:
        parts = [k for k in ("select", "from_", "join", "where", "group_by") if getattr(self, k) is not None]
        if self.sql is not None and parts:
            raise ValueError(f"view {self.name!r}: give either sql or select/from/..., not both")
        if self.sql is None and (self.select is None or self.from_ is None):
            raise ValueError(f"view {self.name!r}: give sql, or select and from")
        return self

    def as_mapping(self) -> dict[str, Any]:
        """The view as written in the YAML (``from``, not ``from_``), without the keys left out."""
        return self.model_dump(by_alias=True, exclude_none=True)


class ApplyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="the source whose stream this job applies (a sources[].name, or the "
                        "stream of that name another daemon writes when this file has no sources)")
    target: str = Field(description="the targets[].name it writes to")
    tables: list[str | TableMapping] | None = Field(default=None, description="source tables applied: db.table "
                                                   "globs or {source, target} renames (none: every table)")
    exclude: list[str] = Field(default_factory=list, description="db.table globs never applied (wins over "
                               "tables)")
    max_records_per_batch: int = Field(default=100_000, gt=0, description="records one micro-batch reads at "
                                       "most (it still ends only where a transaction ends)")
    trigger_interval_s: float = Field(default=0.5, ge=0, description="seconds between micro-batch starts "
                                      "(Spark processing-time trigger; 0: each batch as soon as the last ends)")
    freshness_interval_s: float = Field(default=60.0, ge=0, description="seconds: an idle stream (heartbeats "
                                        "only) commits its progress row at most this often (0: every heartbeat)")
    checkpoint_dir: str | None = Field(default=None, description="the Spark checkpoint directory (none: "
                                       "$CDC_CHECKPOINT_ROOT, else ~/.local/state/cdc/checkpoints, then "
                                       "<prefix>.<source>.<target>-<digest of target, broker and stream>)")
    views: list[ViewConfig] = Field(default_factory=list, description="maintained views kept in the target in "
                                    "the same transaction as their base tables (docs/views.md)")
    schema_changes: SchemaChangeConfig = Field(default_factory=SchemaChangeConfig,
                                               description="what the apply does at a DDL (docs/schema-evolution.md)")
    drop_table: Literal["keep", "drop"] = Field(default="keep", description="a source table dropped or renamed "
                                                "out of the applied tables: keep its target table, or drop it")
    rename_in: Literal["stop", "create"] = Field(default="stop", description="a table renamed into the applied "
                                                 "tables (its rows never in the stream): stop, or create it empty")
    retry: ApplyRetry = Field(default_factory=ApplyRetry, description="how a batch that failed transiently is "
                              "retried")
    max_batch_s: float = Field(default=600.0, ge=0, description="seconds: a micro-batch (with its "
                               "retries) running longer makes /readyz fail naming it (0: no bound)")


class MetricsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = Field(default="127.0.0.1", description="address the daemon's /metrics, /healthz and /readyz "
                      "listen on (0.0.0.0: every interface)")
    port: int = Field(default=9108, ge=0, le=65535, description="TCP port of the daemon's /metrics, /healthz "
                      "and /readyz (0: one the system picks)")
    apply_port: int | None = Field(default=None, ge=0, le=65535,
                                   description="TCP port of the apply job's /metrics, "
                                   "/healthz and /readyz (none: metrics.port + 1, or one the system picks "
                                   "when metrics.port is 0; 0: not served)")


class LoggingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(default="INFO", description="the least severe "
                                                                "log lines written (librdkafka's too)")
    json_: bool = Field(default=False, alias="json", description="log lines to stderr as one JSON object each "
                        "(false: text lines)")


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sources: list[SourceConfig] = Field(default_factory=list, description="the databases the daemon reads, "
                                        "one stream each (kind: mysql, oracle or shadow)")
    kafka: KafkaConfig = Field(description="the brokers, topics and record encoding of the streams")
    targets: list[TargetConfig] = Field(default_factory=list, description="the databases and table formats "
                                        "the apply jobs write")
    apply: list[ApplyConfig] = Field(default_factory=list, description="apply jobs: each applies one source's "
                                     "stream to one target")
    metrics: MetricsConfig = Field(default_factory=MetricsConfig, description="the HTTP endpoint of metrics and "
                                   "health checks")
    logging: LoggingConfig = Field(default_factory=LoggingConfig, description="log level and format")
    api: ApiConfig = Field(default_factory=ApiConfig, description="the operations API (cdc/ops): off by default")
    spill_dir: str = Field(default_factory=default_spill_dir, description="directory under which each source "
                           "gets its private directory for transactions spilled to disk (cdc/spill/dirs.py)")
    max_buffer_bytes: int = Field(default=64 * 1024 * 1024, gt=0, description="bytes of open transactions a "
                                  "reader holds in memory across transactions before spilling the largest to "
                                  "spill_dir (Oracle sources)")
    drain_timeout_s: float = Field(default=30.0, gt=0, description="seconds a source has, at SIGTERM, "
                                   "to reach a transaction boundary; past them the daemon exits with status 1 "
                                   "and the next start closes the cut-off transaction as ABORTED")
    source_restart_limit: int = Field(default=0, ge=0, description="restarts in a row of a source its reader cannot "
                                      "reach (or of an unreachable broker) before the source stops; 0: no limit")

    def source(self, name: str) -> SourceConfig:
        for s in self.sources:
            if s.name == name:
                return s
        raise ConfigError(f"no source named {name!r}", key="sources", known=[s.name for s in self.sources])

    def target(self, name: str) -> TargetConfig:
        for t in self.targets:
            if t.name == name:
                return t
        raise ConfigError(f"no target named {name!r}", key="targets", known=[t.name for t in self.targets])


def load_config(path: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> Config:
    """Read, override from the environment, validate. Raises ConfigError."""
    path = Path(path)
    env = os.environ if env is None else env
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist: give the file with --config FILE or the "
                          f"{CONFIG_ENV} environment variable (default: ./{DEFAULT_CONFIG})", file=str(path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"config file {path} is not valid YAML{where}: {exc}", file=str(path)) from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must hold a mapping at the top level", file=str(path))
    overridden = _apply_env(raw, env)
    return parse_config(raw, str(path), overridden)


def parse_config(raw: dict[str, Any], origin: str = "<dict>", overridden: dict[str, str] | None = None) -> Config:
    overridden = overridden or {}
    try:
        config = Config.model_validate(raw)
    except ValidationError as exc:
        problems = []
        # an unknown key first: a typo also makes the key it misspells "Field required" further down
        errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
        for err in errors:
            key = _dotted(err["loc"])
            where = f"env {overridden[key]}" if key in overridden else origin
            if err["type"] == "extra_forbidden":
                problems.append(f"key '{key}' in {where}: unknown key{_did_you_mean(err['loc'])}")
                continue
            value = f" (got {_shown(err)})" if err.get("input") is not None and not isinstance(err["input"], dict) else ""
            problems.append(f"key '{key}' in {where}: {err['msg']}{value}{_login_origins(err, key, origin, overridden)}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems), file=origin,
                          key=_dotted(errors[0]["loc"])) from None
    _check_references(config, origin, overridden)
    return config


def _did_you_mean(loc: tuple[Any, ...]) -> str:
    """For an unknown key at ``loc``: the closest valid key of the same model (difflib), else the valid keys."""
    path, root = list(loc[:-1]), Config
    if len(path) > 2 and path[0] == "sources" and path[2] in SOURCE_CONFIGS:  # only the keys of that source kind
        path, root = path[3:], SOURCE_CONFIGS[path[2]]
    models = [t for t in _field_types(path, root) or [] if isinstance(t, type) and issubclass(t, BaseModel)]
    valid = sorted({f.alias or n for m in models for n, f in m.model_fields.items()})
    if not valid:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), valid, n=1, cutoff=0.6)
    parent = _dotted(loc[:-1])
    if close:
        return f"; did you mean '{parent + '.' if parent else ''}{close[0]}'?"
    return f"; valid keys here: {', '.join(valid)}"


def _login_origins(err: Any, key: str, origin: str, overridden: dict[str, str]) -> str:
    """For a login error (cdc.config.credentials) whose other login keys an environment variable set: where each
    of them came from, so "password and password_file each give a password" names the variable and the file
    key (a password from CDC_SOURCES__0__PASSWORD is not in the YAML the user reads)."""
    if err.get("type") != "login":
        return ""
    parent = key.rpartition(".")[0]
    prefix = f"{parent}." if parent else ""
    named = [leaf for leaf in ("password", "password_file", "passwordless") if leaf in err["msg"]]
    if not any(f"{prefix}{leaf}" in overridden for leaf in named):
        return ""
    said = [f"{prefix}{leaf} from env {overridden[prefix + leaf]}" if prefix + leaf in overridden
            else f"{prefix}{leaf} from {origin}" for leaf in named]
    return f" ({'; '.join(said)})"


def _check_references(config: Config, origin: str, overridden: dict[str, str]) -> None:
    """``apply[i].target`` must name a configured target; ``apply[i].source`` a configured source
    when the file configures sources (a config without ``sources:`` is an apply-only config: the
    source names a stream a daemon configured elsewhere writes)."""
    targets, sources = [t.name for t in config.targets], [s.name for s in config.sources]
    problems: list[tuple[str, str]] = []
    for i, job in enumerate(config.apply):
        if job.target not in targets:
            problems.append((f"apply[{i}].target", f"no target named {job.target!r} (targets: {targets})"))
        if sources and job.source not in sources:
            problems.append((f"apply[{i}].source", f"no source named {job.source!r} (sources: {sources})"))
    if problems:
        lines = [f"key '{key}' in {'env ' + overridden[key] if key in overridden else origin}: {msg}"
                 for key, msg in problems]
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines), file=origin, key=problems[0][0])


def _dotted(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif item in SOURCE_CONFIGS and parts and (parts[-1].endswith("]") or parts[-1] == ".tls"):
            continue  # discriminator tag pydantic inserts for unions (sources[i], targets[i].tls)
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts)


def _apply_env(raw: dict[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    """Apply CDC_* overrides in place; return {dotted key: env var name}."""
    overridden: dict[str, str] = {}
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or "__" not in name and name.count("_") < 2:
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX):].split("__")]
        if path[0] not in Config.model_fields:
            continue  # CDC_TEST_KAFKA and friends are not config keys
        node: Any = raw
        loc: list[Any] = []
        for part in path[:-1]:
            key: Any = int(part) if part.isdigit() else part
            if isinstance(node, list):
                if not isinstance(key, int) or key >= len(node):
                    raise ConfigError(f"env {name}: no list item {part} to override", key=name)
                node = node[key]
            else:
                node = node.setdefault(key, {})
            loc.append(key)
        leaf: Any = int(path[-1]) if path[-1].isdigit() else path[-1]
        key = _dotted(tuple(loc + [leaf]))
        node[leaf] = _env_value(env[name], _field_types(loc + [leaf]), name, key)
        overridden[key] = name
    return overridden


def _env_value(text: str, alternatives: list[Any] | None, name: str, key: str) -> Any:
    """The value an environment variable gives a field whose type ``alternatives`` lists (module
    docstring: verbatim for text, YAML for structured values). The value is never echoed."""
    takes_text = alternatives is None or any(_is_text(t) for t in alternatives)
    if takes_text and alternatives and all(_is_text(t) for t in alternatives):
        return text
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        if takes_text:
            return text
        mark = getattr(exc, "problem_mark", None)
        where = f" at column {mark.column + 1}" if mark else ""
        raise ConfigError(f"env {name}: the value of key '{key}' is not a valid YAML value{where}",
                          key=key, env=name) from None
    return parsed if not takes_text or isinstance(parsed, (list, dict)) else text


def _is_text(tp: Any) -> bool:
    if typing.get_origin(tp) is Literal:
        return all(isinstance(a, str) for a in typing.get_args(tp))
    return isinstance(tp, type) and issubclass(tp, (str, SecretStr, os.PathLike))


def _members(tp: Any) -> list[Any]:
    """The alternatives of a type annotation: Annotated unwrapped, unions flattened, None dropped."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return _members(typing.get_args(tp)[0])
    if origin in (Union, types.UnionType):
        return [m for arg in typing.get_args(tp) for m in _members(arg)]
    return [] if tp is type(None) else [tp]


def _field_types(path: list[Any], root: Any = None) -> list[Any] | None:
    """The type alternatives of the field at ``path`` (keys and list indexes from ``root``, else ``Config``, down),
    found by walking the models; None where any value is possible (``Any``, a path off the models).

    A union of models (the ``sources`` kinds, a target's ``tls``) contributes the field from every
    member that has it; a path item naming no field of such a union is a discriminator tag of a
    validation error's location and is passed over.
    """
    current: list[Any] = [root or Config]
    for part in path:
        found: list[Any] = []
        for tp in current:
            origin = typing.get_origin(tp)
            if isinstance(tp, type) and issubclass(tp, BaseModel):
                field = next((f for n, f in tp.model_fields.items() if part in (n, f.alias)), None)
                found += _members(field.annotation) if field is not None else []
            elif origin is list and isinstance(part, int):
                found += _members(typing.get_args(tp)[0])
            elif origin is dict and isinstance(part, str):
                found += _members(typing.get_args(tp)[1])
        if not found:
            if isinstance(part, str) and all(isinstance(t, type) and issubclass(t, BaseModel) for t in current):
                continue
            return None
        if any(t is Any for t in found):
            return None
        current = found
    return current


def _shown(err: Mapping[str, Any]) -> str:
    """The rejected value as a config error shows it: ``***`` for a secret, a DSN masked."""
    alternatives = _field_types(list(err["loc"])) or []
    if any(isinstance(t, type) and issubclass(t, SecretStr) for t in alternatives):
        return "***"
    value = err["input"]
    return repr(mask(value) if isinstance(value, str) else value)
