"""The service configuration's models: one pydantic model per section of the YAML file.

Read and validated by cdc.config.loader (load_config/parse_config: the file, the environment
overrides, the error messages).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from cdc.config.credentials import (
    reveal,
)
from cdc.config.kafka_settings import KafkaConnection, parse_block
from cdc.config.target_base import TargetConfig, TargetTimeouts  # noqa: F401 (importers name them from here)
from cdc.errors import ConfigError
from cdc.ops.config import AlertsConfig, ApiConfig  # the ``api:`` and ``alerts:`` sections live with cdc/ops
from cdc.registry import SOURCE_CONFIGS, TARGET_CONFIGS
from cdc.schema.evolution import SchemaChangeConfig
from cdc.spill.dirs import default_spill_dir

SourceConfig = Annotated[Union[tuple(SOURCE_CONFIGS.values())], Field(discriminator="kind")]  # noqa: UP007
TargetKindConfig = Annotated[Union[tuple(TARGET_CONFIGS.values())], Field(discriminator="kind")]  # noqa: UP007


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


class TableMapping(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="db.table of the source table (a glob pattern selects without renaming)")
    target: str | None = Field(default=None, description="its table name in the target (none: the source "
                               "table's name)")
    mode: Literal["upsert", "soft_delete", "history"] = Field(
        default="upsert", description="upsert: the target mirrors the source; soft_delete: a delete sets "
        "_cdc_deleted and _cdc_deleted_at instead of removing the row; history: every change is a row of its "
        "own (_cdc_op, _cdc_commit_ts, _cdc_sequence; key: the source key + _cdc_sequence). docs/transforms.md")
    metadata_columns: bool = Field(default=False, description="add _cdc_op, _cdc_commit_ts, _cdc_txid (GTID/XID), "
                                   "_cdc_sequence and _cdc_applied_at to every row written")


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
    max_records_per_batch: int = Field(default=500_000, gt=0, description="records one micro-batch reads at "
                                       "most (it still ends only where a transaction ends)")
    max_bytes_per_batch: int = Field(default=64 * 1024 * 1024, gt=0, description="bytes of records (keys and "
                                     "values as the broker holds them) one micro-batch reads at most; the batch "
                                     "ends at the last transaction end within both limits, a transaction larger "
                                     "than either makes a batch of its own")
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
    targets: list[TargetKindConfig] = Field(default_factory=list, description="the databases and table formats "
                                        "the apply jobs write")
    apply: list[ApplyConfig] = Field(default_factory=list, description="apply jobs: each applies one source's "
                                     "stream to one target")
    metrics: MetricsConfig = Field(default_factory=MetricsConfig, description="the HTTP endpoint of metrics and "
                                   "health checks")
    logging: LoggingConfig = Field(default_factory=LoggingConfig, description="log level and format")
    api: ApiConfig = Field(default_factory=ApiConfig, description="the operations API (cdc/ops): off by default")
    alerts: AlertsConfig = Field(default_factory=AlertsConfig, description="webhook alerts (cdc/ops/alerts.py): "
                                 "off by default")
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
