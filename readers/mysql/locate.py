"""`cdc gtid locate`: the same point in another server's binlog, via GTIDs (seed 002).

After a failover, a file:pos on the old primary means nothing on the new
one. The GTID state does: this tool reads the state reached at ``--file
--pos`` on ``--from`` (every transaction that ended at or before that
offset, starting from the file's Gtid_list / Previous_gtids header), then
walks ``--to``'s binlogs to the first transaction boundary where that state
is contained, and prints one JSON line ``{"gtid_set", "file", "pos"}``.

Both walks use ``SHOW BINLOG EVENTS`` and ``SHOW BINARY LOGS``, on MariaDB
(GTIDs ``domain-server-seq``, the ``Gtid_list`` header; REPLICATION SLAVE and
BINLOG MONITOR) and on MySQL 8.0+/9.x alike (GTIDs ``uuid:N`` and tagged
``uuid:tag:N``, the ``Previous_gtids`` header that holds the server's
``gtid_executed`` when the file was opened; REPLICATION SLAVE and REPLICATION
CLIENT). A transaction ends at the last event before the next GTID event
(Xid, COMMIT query or the DDL itself); a compressed MySQL transaction
(``Transaction_payload``) lists its events at the payload's end offset, which
is where it ends. The file's header ends with its ``Gtid_list`` /
``Previous_gtids`` event: any offset from there on holds that state. Events
that belong to no transaction never extend one: the ``Rotate`` / ``Stop``
that closes a file, and MariaDB's ``Binlog_checkpoint``, which the server
writes into a new file when it gets to it, after a transaction that may
already be there. Exit 1 with
a message when the state is not found on ``--to`` (it lacks transactions:
divergence, or its binlogs are purged).
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Iterator
from typing import Any

from cdc.config.credentials import read_secret_file
from cdc.config.tls import MySqlTls
from readers.mysql.connection import open_connection
from readers.mysql.errors import CdcError, Divergence
from readers.mysql.position import GtidSet

_MARIA_GTID = re.compile(r"GTID (\d+-\d+-\d+)")
_MYSQL_GTID = re.compile(r"GTID_NEXT\s*=\s*'([^']+)'")
_OUTSIDE = ("Rotate", "Stop", "Binlog_checkpoint")  # part of no transaction: never extend one


def _gtid_of(info: str) -> str | None:
    m = _MARIA_GTID.search(info) or _MYSQL_GTID.search(info)
    return m.group(1) if m else None


def walk(cur: Any, file: str) -> Iterator[tuple[GtidSet, int]]:
    """(state, offset) at every transaction boundary of ``file``, header end first."""
    cur.execute(f"SHOW BINLOG EVENTS IN '{file}'")
    state = GtidSet()
    gtid: str | None = None
    last_end = 4
    header_done = False
    for _log, pos, etype, _sid, end, info in cur.fetchall():
        etype = str(etype)
        if etype in ("Gtid_list", "Previous_gtids"):
            state = GtidSet.parse(str(info).strip("[]").replace(",\n", ",") or "")
            header_done = True
            yield state, int(end)
        elif etype == "Gtid" or etype.lower().startswith("gtid_tagged"):  # MySQL 8.3+ tagged GTID (uuid:tag:N)
            if not header_done:
                header_done = True
                yield state, int(pos)
            if gtid is not None:
                state = state.add(gtid)
                yield state, last_end
            gtid = _gtid_of(str(info))
        if etype not in _OUTSIDE:
            last_end = int(end)
    if gtid is not None:
        state = state.add(gtid)
    yield state, last_end


def state_at(cur: Any, file: str, pos: int) -> GtidSet:
    state = GtidSet()
    for s, end in walk(cur, file):
        if end > pos:
            break
        state = s
    return state


def find_state(cur: Any, wanted: GtidSet) -> tuple[str, int] | None:
    cur.execute("SHOW BINARY LOGS")
    for (name, *_rest) in cur.fetchall():
        for state, end in walk(cur, name):
            if state.issuperset(wanted):
                return name, end
    return None


def locate(src: str, file: str, pos: int, dst: str, user: str, password: str,
           tls: MySqlTls | None = None) -> dict[str, Any]:
    with open_connection(src, user, password, tls=tls) as a, a.cursor() as cur:
        wanted = state_at(cur, file, pos)
    with open_connection(dst, user, password, tls=tls) as b, b.cursor() as cur:
        found = find_state(cur, wanted)
    if found is None:
        raise Divergence(f"{dst} never reaches the GTID state {wanted or '<empty>'} of {src} {file}:{pos} "
                         "(it lacks transactions, or its binlogs were purged)", host=dst, gtid_set=str(wanted))
    return {"gtid_set": str(wanted), "file": found[0], "pos": found[1]}


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="gtid_command", metavar="TOOL", required=True)
    p = sub.add_parser("locate", help="map FILE:POS on one server to the same point on another")
    p.add_argument("--from", dest="src", required=True, metavar="HOST:PORT")
    p.add_argument("--file", required=True)
    p.add_argument("--pos", required=True, type=int)
    p.add_argument("--to", dest="dst", required=True, metavar="HOST:PORT")
    p.add_argument("--user", default="cdc")
    # never a --password: a process argument is visible to every user of the host (ps, /proc)
    p.add_argument("--password-file", metavar="FILE",
                   help="file holding the password (default: the MYSQL_PWD environment variable, else none)")
    for name, what in (("ca", "CA file: require TLS and verify the servers (and their host names)"),
                       ("cert", "client certificate (REQUIRE X509 accounts)"), ("key", "client certificate's key")):
        p.add_argument(f"--ssl-{name}", metavar="FILE", help=what + "; as a source's tls block")


def main(args: argparse.Namespace) -> int:
    try:
        password = read_secret_file(args.password_file) if args.password_file else os.environ.get("MYSQL_PWD", "")
    except ValueError as exc:
        print(f"cdc gtid locate: --password-file: {exc}")
        return 2
    try:
        tls = MySqlTls(ca=args.ssl_ca, cert=args.ssl_cert, key=args.ssl_key) \
            if args.ssl_ca or args.ssl_cert or args.ssl_key else None
    except ValueError as exc:  # a missing file, a key without its certificate
        print(f"cdc gtid locate: --ssl-*: {exc.errors()[0]['msg'] if hasattr(exc, 'errors') else exc}")
        return 2
    try:
        result = locate(args.src, args.file, args.pos, args.dst, args.user, password, tls)
    except Divergence as exc:
        print(f"cdc gtid locate: {exc.message}")
        return 1
    except CdcError:
        raise
    print(json.dumps(result))
    return 0
