"""A consumer process for the exactly-once test (tests/integration/test_consumer_exactly_once.py).

Applies each item of the change stream to a SQLite file: the rows, one line per
applied row change in ``applied`` (a log the test checks for doubles), and the
consumer's position, all in ONE database transaction; then commits the item to
the Kafka group. At start it resumes from the position stored in the database
(``start_after``), so a kill -9 anywhere loses nothing and repeats nothing.
Exits 0 once the item at sequence ``UNTIL`` is applied. Each row takes ``PACE_MS``
(a side effect's work), so a kill lands inside database transactions too.

    python -m tests.integration.consumer_child BOOTSTRAP TOPIC CLIENT DB_PATH GROUP UNTIL PACE_MS
"""

from __future__ import annotations

import sqlite3
import sys
import time

from cdc.consumer import ChangeStreamConsumer, Position


def main(bootstrap: str, topic: str, client: str, db_path: str, group: str, until: int, pace_s: float) -> int:
    db = sqlite3.connect(db_path, isolation_level=None)
    db.execute("CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
    db.execute("CREATE TABLE IF NOT EXISTS applied (sequence INTEGER NOT NULL, txid TEXT NOT NULL)")
    db.execute("CREATE TABLE IF NOT EXISTS position (one INTEGER PRIMARY KEY CHECK (one = 1), pos TEXT NOT NULL)")
    stored = db.execute("SELECT pos FROM position").fetchone()
    consumer = ChangeStreamConsumer(bootstrap, topic, client=client, group_id=group, start="beginning")
    if stored:
        consumer.start_after(Position.parse(stored[0]))
    for item in consumer:
        db.execute("BEGIN IMMEDIATE")
        for ch in item.changes:
            if ch.op in ("c", "r"):
                db.execute("INSERT INTO rows (id, v) VALUES (?, ?)", (ch.after["id"], ch.after["v"]))
            elif ch.op == "u":
                db.execute("UPDATE rows SET v = ? WHERE id = ?", (ch.after["v"], ch.key["id"]))
            elif ch.op == "d":
                db.execute("DELETE FROM rows WHERE id = ?", (ch.key["id"],))
            db.execute("INSERT INTO applied (sequence, txid) VALUES (?, ?)", (ch.sequence, getattr(item, "id", "")))
            time.sleep(pace_s)
        db.execute("INSERT INTO position (one, pos) VALUES (1, ?) ON CONFLICT (one) DO UPDATE SET pos = excluded.pos",
                   (str(item.position),))
        db.execute("COMMIT")
        time.sleep(pace_s * 3)  # kills land here too: applied, Kafka not yet told
        consumer.commit(item)  # after the database: a kill between the two is what start_after covers
        if item.position.sequence >= until:
            consumer.close()
            return 0
    return 1


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(main(a[0], a[1], a[2], a[3], a[4], int(a[5]), float(a[6]) / 1000))
