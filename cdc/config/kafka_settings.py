"""Kafka client settings: the ONE place every Kafka client of the product gets its configuration.

``kafka.client`` (librdkafka names: ``security.protocol``, ``ssl.*``, ``sasl.*``
and any other client setting) reaches every client the product creates: the
producer, admin clients, the start-up tail read, ``cdc tail``, ``cdc stream
reset``, the consumer library and the Spark source on the driver and on the
executors. ``kafka.producer`` and ``kafka.consumer`` add role-only settings.
:meth:`KafkaConnection.settings` builds a client's dict for a role;
:meth:`KafkaConnection.kafka_python` translates the same settings for the
pure-Python client; :meth:`KafkaConnection.spark_options` /
:meth:`KafkaConnection.from_options` carry them through the Spark data
source's options (a partition pickles the connection to the executors).

Secrets: ``sasl.password``, ``ssl.key.password``, ``ssl.keystore.password``
and ``sasl.oauthbearer.client.secret`` are held as SecretStr (masked in every
repr, error and log line) and revealed only inside the dict handed to a
client. ``<secret>_file`` (``sasl.password_file: /run/secrets/kafka``) reads
the value from a file (one trailing newline stripped); the Spark options carry
the file's PATH, not its content, so a secret from a file never enters Spark's
plan or conf (an inline secret does, under a key Spark's default
``spark.redaction.regex`` masks). A pickled KafkaConnection (a Spark task, an
input partition) carries such a secret as its path too, and the unpickling
process (an executor) reads the file itself: the file must be at the same path
there (a secret mount on every worker). An inline secret travels as its value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import SecretStr

from cdc.config.credentials import FILE_SUFFIX, FileSecret, resolve_secrets, reveal, scrub, secret_file_of
from cdc.errors import ConfigError

Role = Literal["producer", "consumer", "admin"]
SECRET_KEYS = frozenset({"sasl.password", "ssl.key.password", "ssl.keystore.password",
                         "sasl.oauthbearer.client.secret"})
_SERVICE_KEYS = ("bootstrap.servers", "logger", "error_cb", "on_delivery", "stats_cb")
OPTION_PREFIX = "kafka."  # Spark data source options: kafka.<setting> (every client), kafka.consumer.<setting>
_CONSUMER_OPTION = OPTION_PREFIX + "consumer."

# librdkafka name -> KafkaConsumer keyword where the rule "dots become underscores" does not hold
_KAFKA_PYTHON_NAMES = {
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.crl.location": "ssl_crlfile",
    "ssl.cipher.suites": "ssl_ciphers",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
}


def parse_block(raw: Mapping[str, Any] | None, key: str) -> dict[str, Any]:
    """One settings block (``kafka.client``, ``kafka.producer``, ``kafka.consumer``) as given in the YAML:
    scalar values, secrets as SecretStr, ``<secret>_file`` read into a FileSecret under the secret's name
    (cdc.config.credentials.resolve_secrets). ValueError naming ``key.<setting>`` for a non-scalar value, a setting
    the service owns, a secret given twice or a secret file that cannot be read."""
    raw = raw or {}
    for name, value in raw.items():
        where = f"{key}.{name}"
        if name in _SERVICE_KEYS:
            raise ValueError(f"{where} is set by the service (bootstrap servers: kafka.bootstrap_servers)")
        secret = name in SECRET_KEYS or secret_file_of(name, SECRET_KEYS.__contains__) is not None
        if not secret and not isinstance(value, (str, int, float, bool)):
            raise ValueError(f"{where}: a Kafka client setting is a string, number or boolean "
                             f"(got {type(value).__name__})")
    return resolve_secrets(raw, key, SECRET_KEYS.__contains__)


def create_client(role: Role, conf: dict[str, Any]) -> Any:
    """A confluent-kafka Producer, Consumer or AdminClient (``role``) from ``conf`` (built by
    :meth:`KafkaConnection.settings`). librdkafka refusing the settings (a key it cannot read or decrypt, a
    CA file that is not one, an unknown setting) is a ConfigError naming the broker and librdkafka's reason,
    which names the setting; a secret's value never appears in it."""
    from confluent_kafka import Consumer, KafkaException, Producer
    from confluent_kafka.admin import AdminClient

    try:
        return {"producer": Producer, "consumer": Consumer, "admin": AdminClient}[role](conf)
    except (KafkaException, ValueError, TypeError) as exc:
        text = scrub(str(exc), [str(conf[key]) for key in SECRET_KEYS if conf.get(key)])
        raise ConfigError(f"cannot create a Kafka {role} client for broker {conf.get('bootstrap.servers')}: {text} "
                          f"(check kafka.client and kafka.{'consumer' if role == 'consumer' else 'producer'})",
                          key="kafka.client") from None


class LastError:
    """An ``error_cb`` that remembers librdkafka's last client error, so that a failed request's error can
    say WHY the broker was unreachable (a TLS handshake or SASL failure, with the settings to check) rather
    than only that it was. Served by the client's poll()."""

    def __init__(self) -> None:
        self.error: Any = None

    def __call__(self, err: Any) -> None:
        from confluent_kafka import KafkaError

        if err.code() != KafkaError._ALL_BROKERS_DOWN or self.error is None:
            self.error = err

    def explain(self) -> str:
        """``"; client error: <librdkafka's text> (<what to check>)"``, or "" when none was reported."""
        from confluent_kafka import KafkaError

        if self.error is None:
            return ""
        code, text = self.error.code(), self.error.str()
        hint = None
        if code == KafkaError._SSL or "SSL" in text:  # a TLS failure may come as a transport error too
            hint = ("check kafka.client ssl.* (ssl.ca.location: the CA that signed the broker's certificate; "
                    "ssl.certificate.location / ssl.key.location / ssl.key.password)")
        elif code == KafkaError._AUTHENTICATION or "SASL" in text:
            hint = "check kafka.client sasl.mechanism, sasl.username and sasl.password"
        return f"; client error: {text}" + (f" ({hint})" if hint else "")


@dataclass(frozen=True)
class KafkaConnection:
    """Where the brokers are and how every client talks to them. Picklable (it travels in Spark input
    partitions); its repr masks secrets (SecretStr values)."""

    bootstrap: str
    client: Mapping[str, Any] = field(default_factory=dict)
    producer: Mapping[str, Any] = field(default_factory=dict)
    consumer: Mapping[str, Any] = field(default_factory=dict)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # a secret read from a file travels as its path and is read again where it is unpickled (an executor):
        # its value never enters a pickled Spark task
        blocks = [{k: _FileRef(v.path) if isinstance(v, FileSecret) else v for k, v in b.items()}
                  for b in (self.client, self.producer, self.consumer)]
        return _unpickle_connection, (self.bootstrap, *blocks)

    @classmethod
    def of(cls, where: str | KafkaConnection | Any) -> KafkaConnection:
        """``where``: a KafkaConnection, a ``kafka:`` config (cdc.config.models.KafkaConfig) or bare bootstrap
        servers (a plaintext broker with no settings: the embedded one, tests, benchmarks)."""
        if isinstance(where, KafkaConnection):
            return where
        if isinstance(where, str):
            return cls(where)
        return where.connection()

    def settings(self, role: Role, defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The confluent-kafka (librdkafka) settings of a ``role`` client: ``defaults`` (the caller's), then
        ``kafka.client``, then the role's extras (``kafka.producer`` / ``kafka.consumer``; an admin client
        takes only ``kafka.client``), secrets revealed, and the logger that routes librdkafka's lines
        through Python logging (cdc.kafka_log). Build it right before creating the client; never log it."""
        from cdc.kafka_log import KAFKA_LOG

        extras = {"producer": self.producer, "consumer": self.consumer}.get(role, {})
        return {"bootstrap.servers": self.bootstrap, **(defaults or {}), **reveal(self.client), **reveal(extras),
                "logger": KAFKA_LOG}

    def kafka_python(self) -> dict[str, Any]:
        """``kafka.client`` and ``kafka.consumer`` as KafkaConsumer keyword arguments (kafka-python).
        ConfigError naming the setting when kafka-python has no equivalent."""
        from kafka import KafkaConsumer

        out: dict[str, Any] = {}
        for block, extras in (("kafka.client", self.client), ("kafka.consumer", self.consumer)):
            for name, value in reveal(extras).items():
                if name == "ssl.endpoint.identification.algorithm":
                    out["ssl_check_hostname"] = str(value).lower() == "https"
                    continue
                kw = _KAFKA_PYTHON_NAMES.get(name, name.replace(".", "_"))
                if kw not in KafkaConsumer.DEFAULT_CONFIG:
                    raise ConfigError(f"{block}.{name} has no kafka-python equivalent: remove it or use "
                                      f"the confluent client", key=f"{block}.{name}")
                out[kw] = value
        if out.get("security_protocol") in ("SSL", "SASL_SSL") and "ssl_check_hostname" not in out:
            out["ssl_check_hostname"] = True  # librdkafka verifies the broker's name by default: so do we
        return out

    def spark_options(self) -> dict[str, str]:
        """The Spark data source options carrying this connection (see :meth:`from_options`): a secret from
        a file travels as its path (``kafka.sasl.password_file``), never as its value."""
        opts = {"bootstrap_servers": self.bootstrap}
        for prefix, block in ((OPTION_PREFIX, self.client), (_CONSUMER_OPTION, self.consumer)):
            for name, value in block.items():
                if isinstance(value, FileSecret):
                    opts[f"{prefix}{name}{FILE_SUFFIX}"] = value.path
                else:
                    opts[prefix + name] = str(value.get_secret_value() if isinstance(value, SecretStr) else value)
        return opts

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> KafkaConnection:
        """The connection :meth:`spark_options` wrote (secret files are read here, on the driver).
        ConfigError naming the option when a secret file cannot be read."""
        client = {k[len(OPTION_PREFIX):]: v for k, v in options.items()
                  if k.startswith(OPTION_PREFIX) and not k.startswith(_CONSUMER_OPTION)}
        consumer = {k[len(_CONSUMER_OPTION):]: v for k, v in options.items() if k.startswith(_CONSUMER_OPTION)}
        try:
            return cls(options["bootstrap_servers"], parse_block(client, "kafka"),
                       consumer=parse_block(consumer, "kafka.consumer"))
        except ValueError as exc:
            raise ConfigError(f"data source option {exc}", key="options") from None


@dataclass(frozen=True)
class _FileRef:
    """A pickled FileSecret: the path only."""

    path: str


def _unpickle_connection(bootstrap: str, *blocks: Mapping[str, Any]) -> KafkaConnection:
    """A KafkaConnection unpickled: every secret file read here (ConfigError naming the setting and the file
    when this host cannot read it, e.g. a worker without the secret mount)."""
    from cdc.config.credentials import file_secret

    read = []
    for block_name, block in zip(("kafka.client", "kafka.producer", "kafka.consumer"), blocks):
        out = {}
        for name, value in block.items():
            if isinstance(value, _FileRef):
                try:
                    value = file_secret(value.path, f"{block_name}.{name}{FILE_SUFFIX}")
                except ValueError as exc:
                    raise ConfigError(f"{exc} on this host (a Spark executor reads the Kafka secret file itself: "
                                      f"mount it at the same path on every worker)",
                                      key=f"{block_name}.{name}{FILE_SUFFIX}") from None
            out[name] = value
        read.append(out)
    return KafkaConnection(bootstrap, *read)

