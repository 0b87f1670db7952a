"""What the cdc-stream source ships to Spark executors holds a Kafka secret from a file as its path, never its
value: the reader and its input partitions are pickled with Spark's own cloudpickle, as Spark ships them, and
the executor side (unpickling) reads the file itself."""

from __future__ import annotations

import pytest
from pyspark import cloudpickle

from cdc.errors import ConfigError
from streaming.stream.batches import RangePartition
from streaming.stream.datasource import CdcStreamReader, _Partition

PASSWORD = "s3cr3t-Kafka-pw-7f1c"


def _options(**extra: str) -> dict[str, str]:
    return {"bootstrap_servers": "127.0.0.1:9", "topic": "p.src.changes", "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.username": "cdc", **extra}


def _shipped(options: dict[str, str]) -> list[bytes]:
    reader = CdcStreamReader(options)
    partition = _Partition(RangePartition(reader.kafka, reader.topic, 0, 0, 100, "json"))
    return [cloudpickle.dumps(reader), cloudpickle.dumps(partition)]


def test_a_secret_file_travels_as_its_path_and_the_executor_reads_it(tmp_path):
    secret = tmp_path / "kafka-password"
    secret.write_text(PASSWORD + "\n")
    blobs = _shipped(_options(**{"kafka.sasl.password_file": str(secret)}))
    for blob in blobs:
        assert PASSWORD.encode() not in blob
        assert str(secret).encode() in blob
    # the executor: unpickling reads the file there (a changed file is read anew)
    reader, partition = (cloudpickle.loads(b) for b in blobs)
    assert reader.kafka.settings("consumer")["sasl.password"] == PASSWORD
    assert partition.rng.kafka.settings("consumer")["sasl.password"] == PASSWORD
    secret.write_text("rotated\n")
    assert cloudpickle.loads(blobs[1]).rng.kafka.settings("consumer")["sasl.password"] == "rotated"


def test_an_executor_without_the_secret_file_says_which_file_and_setting(tmp_path):
    secret = tmp_path / "kafka-password"
    secret.write_text(PASSWORD)
    blobs = _shipped(_options(**{"kafka.sasl.password_file": str(secret)}))
    secret.unlink()
    with pytest.raises(ConfigError) as err:
        cloudpickle.loads(blobs[1])
    text = str(err.value)
    assert "kafka.client.sasl.password_file" in text and str(secret) in text and "every worker" in text
    assert PASSWORD not in text


def test_an_inline_secret_is_in_the_shipped_task():
    # the control: the check above can see a value in the pickles (an inline secret needs Spark's RPC
    # authentication and encryption: docs/spark-cluster.md)
    assert all(PASSWORD.encode() in blob for blob in _shipped(_options(**{"kafka.sasl.password": PASSWORD})))
