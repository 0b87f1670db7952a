"""The way back from a refused transaction, without a rebuild: `cdc source skip ... --yes --resync`.

A session writes a captured table in STATEMENT format: the daemon stops on that GTID (and would at every
restart). After the setting is fixed, `cdc source skip` moves the stream's checkpoint past exactly that
transaction, records it in the stream, and requests an incremental snapshot of the table it touched;
the restarted daemon streams on and re-reads the table. Folding the stream as a consumer applies it
gives exactly the source's rows, including what the skipped statement wrote. On MariaDB and on MySQL 9.7
(``mysql_source``; MySQL: the capture user of the documented MySQL 8 statements, the signal table in ``ops``
where that grant lets it write).
"""

from __future__ import annotations

import re

import pytest
import yaml

from cdc.cli import main as cdc_main
from cdc.stream.envelope import changes_topic
from cdc.stream.resync_range import ResyncRange
from readers.mysql.position import GtidSet
from tests.e2e.mysql_daemon import Daemon, run_until_stop, wait_for
from tests.fixtures.services import capture_login
from tests.integration.stream_check import read_stream

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.slow]


def _fold(stream, table: str) -> dict:
    rows: dict = {}
    for _, changes, _ in stream.transactions:
        for r in changes:
            if r["source"]["table"] != table:
                continue
            if r["op"] == "x":  # a resync range (cdc.stream.resync_range): what the source no longer holds goes
                rng = ResyncRange.from_text(r["source"]["resync"], table)
                for k in rng.doomed([(k,) for k in rows]):
                    del rows[k[0]]
            elif r["op"] == "d":
                rows.pop(r["before"]["id"], None)
            else:
                rows[r["after"]["id"]] = r["after"]["v"]
    return rows


def _config(tmp_path, my, db: str, tables: list[str], signal: str, broker, topic_prefix: str):
    """The daemon's cdc.yaml for ``tables`` of ``db``, as the source's capture user (MySQL 9.7) or cdc."""
    user, password = capture_login(my)
    config = tmp_path / "cdc.yaml"
    config.write_text(yaml.safe_dump({
        "sources": [{"name": "s", "kind": "mysql", "hosts": [my.address], "user": user, "password": password,
                     "tables": [f"{db}.{t}" for t in tables], "signal_table": signal,
                     "heartbeat_interval_s": 0.5, "reconnect_backoff_s": 0.2, "snapshot": "never"}],
        "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": topic_prefix},
        "metrics": {"port": 0}, "drain_timeout_s": 20}))
    return config


def _resynced(tmp_path, config, my, db: str, broker, topic: str, signal: str) -> dict:
    """Start the daemon after the skip; wait until the stream is past the source's GTIDs and folds to the
    source's rows of ``items``; stop it cleanly and return those rows."""
    after = Daemon(config, tmp_path / "after.log").start()
    try:
        end = GtidSet.parse(my.gtid_binlog_pos())
        want = {i: v for i, v in my.query(f"SELECT id, v FROM `{db}`.items")}

        def done():
            s = read_stream(broker.bootstrap, topic)
            caught = any(GtidSet.parse(h["resume"]["gtid_set"]).issuperset(end)
                         for h in s.heartbeats if h.get("resume"))
            return caught and _fold(s, "items") == want
        wait_for(done, 90, "the resynced table in the stream", daemon=after)
        assert after.proc.poll() is None
    finally:
        assert after.stop() == 0
        my.query(f"DROP TABLE IF EXISTS {signal}")
    return want


def test_skip_a_statement_format_write_and_resync_its_table(tmp_path, mysql_source, tmp_source_db, broker,
                                                            topic_prefix, capsys):
    db, my = tmp_source_db, mysql_source
    my.query("CREATE DATABASE IF NOT EXISTS ops")
    signal = f"ops.cdc_signal_{db[-6:]}"
    my.query(f"CREATE TABLE `{db}`.items (id INT PRIMARY KEY, v VARCHAR(20))")
    my.query(f"CREATE TABLE `{db}`.other (id INT PRIMARY KEY)")
    config = _config(tmp_path, my, db, ["items", "other"], signal, broker, topic_prefix)
    topic = changes_topic(topic_prefix, "s")
    first = Daemon(config, tmp_path / "first.log").start()
    try:
        wait_for(lambda: "streaming from" in (tmp_path / "first.log").read_text(), 60, "daemon streaming")
        my.query(f"INSERT INTO `{db}`.items VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        conn = my.connect(db)
        try:
            with conn.cursor() as cur:
                cur.execute("SET SESSION binlog_format = STATEMENT")
                cur.execute("BEGIN")  # one transaction, two statements
                cur.execute("INSERT INTO items VALUES (100, 'statement')")
                cur.execute("UPDATE items SET v = 'by statement' WHERE id = 1")
                cur.execute("COMMIT")
                cur.execute("SET SESSION binlog_format = ROW")  # the setting is fixed
                cur.execute("INSERT INTO items VALUES (4, 'd')")
                cur.execute("INSERT INTO other VALUES (1)")
        finally:
            conn.close()
        wait_for(lambda: first.proc.poll() is not None, 60, "the daemon stopping on the statement")
        assert first.proc.returncode == 2
    finally:
        first.stop()
    log = (tmp_path / "first.log").read_text()
    refused = re.search(r"statement-format DML on captured table \S+ at \S+ gtid (\d+-\d+-\d+|[0-9a-f-]{36}:\d+)", log)
    assert refused and "cdc source skip" in log, log[-3000:]
    gtid = refused.group(1)

    # the same GTID stops a plain restart: no way past it without the command
    assert f"gtid {gtid}" in run_until_stop(config, tmp_path / "again.log", "the restart stopping on the same GTID")

    code = cdc_main(["source", "skip", "--config", str(config), "--source", "s", "--gtid", gtid, "--yes",
                     "--resync", "--reason", "statement-format write by a report job"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert f"moved past {gtid}" in out.out and f"{db}.items" in out.out, out.out
    skipped = [h for h in read_stream(broker.bootstrap, topic).heartbeats if (h.get("resume") or {}).get("skipped")]
    assert [h["resume"]["skipped"]["gtid"] for h in skipped] == [gtid]
    assert skipped[0]["resume"]["skipped"]["tables"] == [f"{db}.items"]
    # a second skip of the same GTID is refused: the checkpoint is past it
    assert cdc_main(["source", "skip", "--config", str(config), "--source", "s", "--gtid", gtid, "--yes"]) == 2
    assert "already holds" in capsys.readouterr().err

    want = _resynced(tmp_path, config, my, db, broker, topic, signal)
    stream = read_stream(broker.bootstrap, topic)
    assert _fold(stream, "items") == want and want[100] == "statement" and want[1] == "by statement"
    other = [r["after"]["id"] for _, rows, _ in stream.transactions for r in rows if r["source"]["table"] == "other"]
    assert other == [1]  # the other table streamed on, once


def test_skip_past_a_definition_the_rows_contradict_and_resync_its_table(tmp_path, mysql_source, tmp_source_db,
                                                                        broker, topic_prefix, capsys):
    """The way back from the stop at a definition the reader rebuilt and the rows contradict
    (readers/mysql/verify.py): the reader is behind an ADD COLUMN with an expression default and the DROP of
    that column, so the ADD's definition is rebuilt and its default is in no table map; the rows written under
    it stop the source, naming the GTID and the command. `cdc source skip --gtid G --yes --resync` moves past
    that transaction and re-reads the table: the stream then folds to exactly the source's rows."""
    db, my = tmp_source_db, mysql_source
    my.query("CREATE DATABASE IF NOT EXISTS ops")
    signal = f"ops.cdc_signal_{db[-6:]}"
    my.query(f"CREATE TABLE `{db}`.items (id INT PRIMARY KEY, v VARCHAR(20))")
    config = _config(tmp_path, my, db, ["items"], signal, broker, topic_prefix)
    topic = changes_topic(topic_prefix, "s")
    first = Daemon(config, tmp_path / "first.log").start()
    try:  # the checkpoint reaches the first rows; then the daemon is stopped and the statements run behind it
        wait_for(lambda: "streaming from" in (tmp_path / "first.log").read_text(), 60, "daemon streaming")
        my.query(f"INSERT INTO `{db}`.items VALUES (1, 'a'), (2, 'b')")
        wait_for(lambda: len(_fold(read_stream(broker.bootstrap, topic), "items")) == 2, 60, "the first rows",
                 daemon=first)
    finally:
        code = first.stop()
    assert code == 0
    t = f"`{db}`.items"
    my.query(f"ALTER TABLE {t} ADD COLUMN d DATETIME DEFAULT CURRENT_TIMESTAMP")
    my.query(f"INSERT INTO {t} (id, v) VALUES (3, 'under d')")
    my.query(f"UPDATE {t} SET v = 'changed' WHERE id = 1")
    my.query(f"ALTER TABLE {t} DROP COLUMN d")
    my.query(f"INSERT INTO {t} VALUES (4, 'after')")

    log = run_until_stop(config, tmp_path / "stopped.log", "the daemon stopping at the contradicted definition")
    refused = re.search(r"the rows of \S+ in transaction (\S+) at \S+ were written with a definition other", log)
    assert refused and "cdc source skip" in log and "--resync" in log, log[-3000:]
    gtid = refused.group(1)
    published = _fold(read_stream(broker.bootstrap, topic), "items")
    assert 3 not in published  # nothing of the stopped transaction went out

    code = cdc_main(["source", "skip", "--config", str(config), "--source", "s", "--gtid", gtid, "--yes",
                     "--resync", "--reason", "definition the rows contradict"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert f"moved past {gtid}" in out.out and f"{db}.items" in out.out, out.out

    want = _resynced(tmp_path, config, my, db, broker, topic, signal)
    assert _fold(read_stream(broker.bootstrap, topic), "items") == want == {
        1: "changed", 2: "b", 3: "under d", 4: "after"}
