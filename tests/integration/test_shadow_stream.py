"""Shadow source into the real broker: a crash after the shadow update but before the stream
write loses nothing and repeats nothing (resume from the stream's tail)."""

from __future__ import annotations

import pytest

from cdc.config.models import KafkaConfig
from cdc.contract import SourceContext
from cdc.metrics import SourceMetrics
from readers.shadow.config import ShadowSourceConfig
from readers.shadow.reader import ShadowSource
from tests.integration.stream_check import read_stream

pytestmark = [pytest.mark.mysql, pytest.mark.kafka]


def publisher(broker, prefix):
    from cdc.publish.publisher import Publisher

    return Publisher("sh", "shadow", KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=prefix),
                     SourceMetrics("sh"))


def test_crash_between_shadow_update_and_stream_write(mariadb_primary, tmp_mysql_db, broker, topic_prefix):
    db = tmp_mysql_db
    mariadb_primary.query(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(10))")
    mariadb_primary.query(f"INSERT INTO {db}.t VALUES (1, 'a'), (2, 'b'), (3, NULL)")
    cfg = ShadowSourceConfig(name="sh", dsn=f"mysql://root@127.0.0.1:{mariadb_primary.port}/{db}",
                             tables=[f"{db}.t"], shadow_schema=f"{db}_shadow", passwordless=True)

    def run(publish: bool) -> None:
        pub = publisher(broker, topic_prefix)
        src = ShadowSource(cfg, SourceContext(metrics=SourceMetrics("sh")))
        try:
            src.start(pub.recover())
            for ev in src.run_cycle():
                if publish:
                    pub.publish(ev)
            pub.flush()
        finally:
            src.close()
            pub.close()

    run(publish=True)                                             # cycle 1: the initial rows
    mariadb_primary.query(f"UPDATE {db}.t SET v = '' WHERE id = 3")
    mariadb_primary.query(f"DELETE FROM {db}.t WHERE id = 1")
    run(publish=False)                                            # cycle 2 computed, daemon dies before writing
    mariadb_primary.query(f"INSERT INTO {db}.t VALUES (4, 'd')")
    run(publish=True)                                             # restart from the tail: cycle 2 redone
    run(publish=True)                                             # nothing changed: only a heartbeat

    stream = read_stream(broker.bootstrap, f"{topic_prefix}.sh.changes")
    assert [end["resume"] for _, _, end in stream.transactions] == [{"cycle": 1}, {"cycle": 2}]
    state: dict = {}
    for _, rows, _ in stream.transactions:
        for r in rows:
            if r["op"] == "d":
                state.pop(r["before"]["id"])
            else:
                state[r["after"]["id"]] = r["after"]["v"]
    assert state == {2: "b", 3: "", 4: "d"}
    assert [r["op"] for r in stream.transactions[1][1]] == ["d", "u", "c"]
    mariadb_primary.query(f"DROP DATABASE IF EXISTS {db}_shadow")
