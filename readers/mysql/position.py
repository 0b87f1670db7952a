"""Positions in a MySQL/MariaDB binlog: ``GtidSet`` and ``BinlogPosition``.

``GtidSet`` is the reader's checkpoint: the FULL set of transactions already
seen, never a single GTID. It has two flavours with one interface:

* MySQL: ``uuid:1-5:7,uuid2:1-3``. Stored as half-open intervals
  ``[start, stop)`` per server uuid (so ``1-5`` is ``(1, 6)``), merged and
  sorted; printed closed (``1-5``, ``7``) like the server does.
  Tagged GTIDs (MySQL 8.3+, ``uuid:tag:N``): a tag is a name of 1-32
  letters, digits and ``_`` (not starting with a digit), case-insensitive
  (kept lowercase). In a set, a tag applies to the intervals after it:
  ``uuid:1-5:tag1:1-3:7,uuid2:tag2:4`` holds ``uuid:1..5`` untagged and
  ``uuid:tag1:1..3`` and ``uuid:tag1:7``. Each (uuid, tag) is its own
  sequence of transaction numbers, stored under the key ``uuid`` or
  ``uuid:tag`` and printed as the server prints it (per uuid: the untagged
  intervals, then each tag in order with its intervals).
* MariaDB: ``domain-server-seq`` per replication domain, e.g. ``0-1-42,1-7-3``
  (the shape of ``@@gtid_binlog_pos`` / ``@@gtid_slave_pos``). Within a
  domain, sequence numbers grow, so one GTID per domain stands for every
  transaction up to it.

Containment (``a.issuperset(b)``) means "a has seen every transaction of b".
For MariaDB that is: each domain of b is in a with a seq at least as high,
and where the seqs are equal the server ids agree (same seq from another
server is a different transaction: divergence).

An empty set has no flavour of its own and combines with either. Bad text
raises :class:`GtidParseError`; mixing flavours raises
:class:`GtidFlavorMismatch`.

``GtidState`` is the reader's running state: the same set, updated in place by
one GTID per transaction (``add``) and printed only when asked (``str``), where
each server uuid, tag or MariaDB domain keeps its own printed text and only the
one a transaction touched is printed again. It always equals
``GtidSet.parse(str(state))`` and prints exactly as that GtidSet does.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from readers.mysql.errors import GtidFlavorMismatch, GtidParseError

Flavor = Literal["mysql", "mariadb"]
Interval = tuple[int, int]  # half-open [start, stop)

_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
_MARIA = re.compile(r"^(\d+)-(\d+)-(\d+)$")
_TAG = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
_INTERVAL = re.compile(r"^\d+(-\d+)?$")
_TAGGED_FORMAT = 1  # COM_BINLOG_DUMP_GTID / Previous_gtids: first u64 = 1<<56 | n<<8 | 1 (MySQL 8.3+)


def _norm_uuid(text: str) -> str:
    h = text.replace("-", "").lower()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _merge(intervals: Iterable[Interval]) -> tuple[Interval, ...]:
    out: list[list[int]] = []
    for a, b in sorted(i for i in intervals if i[0] < i[1]):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return tuple((a, b) for a, b in out)


def _minus(xs: tuple[Interval, ...], ys: tuple[Interval, ...]) -> tuple[Interval, ...]:
    out: list[Interval] = []
    for a, b in xs:
        for c, d in ys:
            if d <= a or c >= b:
                continue
            if c > a:
                out.append((a, c))
            a = max(a, d)
            if a >= b:
                break
        if a < b:
            out.append((a, b))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class GtidSet:
    """Immutable GTID set. Build with :meth:`parse`, :meth:`empty` or operators.

    ``mysql``: ((tsid, ((start, stop), ...)), ...) sorted by tsid: ``uuid`` or ``uuid:tag``.
    ``mariadb``: ((domain, server, seq), ...) sorted by domain.
    At most one of them is non-empty.
    """

    mysql: tuple[tuple[str, tuple[Interval, ...]], ...] = ()
    mariadb: tuple[tuple[int, int, int], ...] = ()

    # construction --------------------------------------------------------
    @classmethod
    def empty(cls) -> GtidSet:
        return cls()

    @classmethod
    def parse(cls, text: str | None) -> GtidSet:
        """Parse either flavour; '' / None is the empty set. Whitespace and newlines are ignored."""
        if text is None:
            return cls()
        if not isinstance(text, str):
            raise GtidParseError("GTID set must be text", text=repr(text))
        parts = [p.strip() for p in re.sub(r"\s+", "", text).split(",") if p.strip()]
        if not parts:
            return cls()
        if all(_MARIA.match(p) for p in parts):
            return cls._parse_mariadb(parts, text)
        if any(":" not in p for p in parts):
            raise GtidParseError("not a MySQL uuid:interval set nor a MariaDB domain-server-seq list",
                                 text=text)
        return cls._parse_mysql(parts, text)

    @classmethod
    def _parse_mariadb(cls, parts: list[str], text: str) -> GtidSet:
        by_domain: dict[int, tuple[int, int]] = {}
        for p in parts:
            d, s, n = (int(x) for x in _MARIA.match(p).groups())  # type: ignore[union-attr]
            if d in by_domain:
                raise GtidParseError(f"domain {d} appears twice", text=text)
            by_domain[d] = (s, n)
        return cls(mariadb=tuple((d, s, n) for d, (s, n) in sorted(by_domain.items())))

    @classmethod
    def _parse_mysql(cls, parts: list[str], text: str) -> GtidSet:
        by_tsid: dict[str, list[Interval]] = {}
        for p in parts:
            uuid, *tokens = p.split(":")
            if not _UUID.match(uuid):
                raise GtidParseError(f"{uuid!r} is not a server uuid", text=text)
            if not tokens:
                raise GtidParseError(f"{p!r} has no transaction interval", text=text)
            tsid, open_tag = _norm_uuid(uuid), None
            for r in tokens:
                if not _INTERVAL.match(r):
                    if not _TAG.match(r):
                        raise GtidParseError(f"{r!r} in {p!r} is neither an interval N or N-M nor a tag", text=text)
                    if open_tag is not None:
                        raise GtidParseError(f"tag {open_tag!r} in {p!r} has no transaction interval", text=text)
                    tsid = f"{_norm_uuid(uuid)}:{r.lower()}"
                    open_tag = r
                    continue
                lo, _, hi = r.partition("-")
                a, b = int(lo), int(hi or lo)
                if a < 1 or b < a:
                    raise GtidParseError(f"interval {r!r} is empty or starts below 1", text=text)
                by_tsid.setdefault(tsid, []).append((a, b + 1))
                open_tag = None
            if open_tag is not None:
                raise GtidParseError(f"tag {open_tag!r} in {p!r} has no transaction interval", text=text)
        return cls(mysql=tuple((u, _merge(iv)) for u, iv in sorted(by_tsid.items())))

    @classmethod
    def of(cls, gtid: str) -> GtidSet:
        """A set holding one GTID (``uuid:N``, ``uuid:tag:N`` or ``d-s-n``)."""
        s = cls.parse(gtid)
        if len(s.mariadb) + sum(len(iv) for _, iv in s.mysql) != 1:
            raise GtidParseError("not a single GTID", text=gtid)
        return s

    # properties ----------------------------------------------------------
    @property
    def flavor(self) -> Flavor | None:
        return "mysql" if self.mysql else "mariadb" if self.mariadb else None

    def __bool__(self) -> bool:
        return bool(self.mysql or self.mariadb)

    def __str__(self) -> str:
        if self.mariadb:
            return ",".join(f"{d}-{s}-{n}" for d, s, n in self.mariadb)
        out: list[str] = []
        last = ""
        for tsid, iv in self.mysql:  # sorted: a uuid's untagged intervals first, then its tags in order
            uuid, _, tag = tsid.partition(":")
            text = (f":{tag}" if tag else "") + "".join(f":{a}" if b == a + 1 else f":{a}-{b - 1}" for a, b in iv)
            if uuid == last:
                out[-1] += text
            else:
                out.append(uuid + text)
            last = uuid
        return ",".join(out)

    def __repr__(self) -> str:
        return f"GtidSet({str(self)!r})"

    def tags(self) -> set[str]:
        """MySQL: the tags in the set (empty for a set without tagged GTIDs)."""
        return {tsid.partition(":")[2] for tsid, _ in self.mysql} - {""}

    # wire format ---------------------------------------------------------
    def encode(self) -> bytes:
        """MySQL's binary GTID set (COM_BINLOG_DUMP_GTID payload, Previous_gtids event body).

        Untagged: u64 n_sids, then per uuid its 16 bytes, u64 n_intervals and each interval as u64
        start, u64 stop (half-open), all little-endian; byte for byte what python-mysql-replication
        sends. With any tag (MySQL 8.3+ only; older servers refuse it): the first u64 is
        ``1<<56 | n<<8 | 1`` and every (uuid, tag) entry carries its tag after the uuid (one byte
        ``len<<1``, then the lowercase tag; 0 for untagged), as the server writes it.
        """
        if self.mariadb:
            raise GtidFlavorMismatch("a MariaDB GTID state has no MySQL binary encoding", left=str(self), right="")
        tagged = bool(self.tags())
        n = len(self.mysql)
        out = bytearray(struct.pack("<Q", (_TAGGED_FORMAT << 56 | n << 8 | _TAGGED_FORMAT) if tagged else n))
        for tsid, iv in self.mysql:
            uuid, _, tag = tsid.partition(":")
            out += bytes.fromhex(uuid.replace("-", ""))
            if tagged:
                out += bytes([len(tag) << 1]) + tag.encode()
            out += struct.pack("<Q", len(iv)) + b"".join(struct.pack("<QQ", a, b) for a, b in iv)
        return bytes(out)

    @classmethod
    def decode(cls, data: bytes) -> GtidSet:
        """Inverse of :meth:`encode` (either format). Raises GtidParseError on truncated or malformed bytes."""
        def fail(why: str) -> GtidParseError:
            return GtidParseError(f"binary GTID set: {why}", text=bytes(data[:64]).hex())

        pos = 0

        def take(n: int) -> bytes:
            nonlocal pos
            if pos + n > len(data):
                raise fail(f"truncated at byte {pos} of {len(data)}")
            pos += n
            return bytes(data[pos - n:pos])

        (head,) = struct.unpack("<Q", take(8))
        fmt = head >> 56
        if fmt == _TAGGED_FORMAT and head & 0xFF == _TAGGED_FORMAT:
            n, tagged = (head >> 8) & ((1 << 48) - 1), True
        elif fmt == 0:
            n, tagged = head, False
        else:
            raise fail(f"unknown GTID set format {fmt}")
        by_tsid: dict[str, list[Interval]] = {}
        for _ in range(n):
            uuid = _norm_uuid(take(16).hex())
            tsid = uuid
            if tagged:
                length = take(1)[0]
                if length & 1 or length >> 1 > 32:
                    raise fail(f"tag length byte 0x{length:02x} is not a tag of at most 32 characters")
                tag = take(length >> 1).decode("ascii", "replace")
                if tag and not _TAG.match(tag):
                    raise fail(f"{tag!r} is not a tag")
                tsid = f"{uuid}:{tag.lower()}" if tag else uuid
            (count,) = struct.unpack("<Q", take(8))
            for _ in range(count):
                a, b = struct.unpack("<QQ", take(16))
                if a < 1 or b <= a:
                    raise fail(f"interval [{a}, {b}) of {tsid} is empty or starts below 1")
                by_tsid.setdefault(tsid, []).append((a, b))
        if pos != len(data):
            raise fail(f"{len(data) - pos} bytes after the last entry")
        return cls(mysql=tuple((u, _merge(iv)) for u, iv in sorted(by_tsid.items())))

    def domains(self) -> dict[int, tuple[int, int]]:
        """MariaDB: domain -> (server, seq)."""
        return {d: (s, n) for d, s, n in self.mariadb}

    # algebra -------------------------------------------------------------
    def _check(self, other: GtidSet) -> None:
        if self.flavor and other.flavor and self.flavor != other.flavor:
            raise GtidFlavorMismatch("cannot combine a MySQL and a MariaDB GTID set",
                                     left=str(self), right=str(other))

    def union(self, other: GtidSet) -> GtidSet:
        self._check(other)
        if self.mariadb or other.mariadb:
            merged = self.domains()
            for d, s, n in other.mariadb:
                if d not in merged or n >= merged[d][1]:
                    merged[d] = (s, n)
            return GtidSet(mariadb=tuple((d, s, n) for d, (s, n) in sorted(merged.items())))
        by = {u: list(iv) for u, iv in self.mysql}
        for u, iv in other.mysql:
            by.setdefault(u, []).extend(iv)
        return GtidSet(mysql=tuple((u, _merge(iv)) for u, iv in sorted(by.items())))

    __or__ = union

    def add(self, gtid: str) -> GtidSet:
        """This set plus one GTID text (``uuid:N`` / ``uuid:tag:N`` / ``d-s-n``)."""
        return self.union(GtidSet.of(gtid))

    def subtract(self, other: GtidSet) -> GtidSet:
        """Transactions of self that other lacks.

        MariaDB: the domains where self is ahead of other (or on another
        server at the same seq): exactly "what other is missing of self".
        """
        self._check(other)
        if self.mariadb:
            theirs = other.domains()
            keep = [(d, s, n) for d, s, n in self.mariadb
                    if d not in theirs or n > theirs[d][1] or (n == theirs[d][1] and s != theirs[d][0])]
            return GtidSet(mariadb=tuple(keep))
        mine = dict(other.mysql)
        out = []
        for u, iv in self.mysql:
            rest = _minus(iv, mine.get(u, ()))
            if rest:
                out.append((u, rest))
        return GtidSet(mysql=tuple(out))

    __sub__ = subtract

    def issuperset(self, other: GtidSet) -> bool:
        """True when self has seen every transaction of other."""
        return not other.subtract(self)

    def issubset(self, other: GtidSet) -> bool:
        return other.issuperset(self)

    def contains_gtid(self, gtid: str) -> bool:
        return self.issuperset(GtidSet.of(gtid))

    __contains__ = contains_gtid

    def last_seq(self) -> int | None:
        """Highest transaction number anywhere in the set (for a metric)."""
        if self.mariadb:
            return max(n for _, _, n in self.mariadb)
        if self.mysql:
            return max(iv[-1][1] - 1 for _, iv in self.mysql)
        return None


def _interval_text(iv: Iterable[Interval]) -> str:
    return "".join(f":{a}" if b == a + 1 else f":{a}-{b - 1}" for a, b in iv)


class GtidState:
    """A GTID set updated in place, one GTID at a time (the reader's state between checkpoints).

    ``add(gtid)`` costs one dictionary update for the usual next GTID of a known
    server uuid, tag or domain; anything else (a new uuid, a gap, another
    flavour, text the fast path does not take) goes through :meth:`GtidSet.add`,
    with its validation and its errors. ``str()`` prints the whole set as
    :class:`GtidSet` does, re-printing only the entry that changed since the last
    print; :meth:`freeze` gives the equal immutable :class:`GtidSet`.
    """

    __slots__ = ("_fast", "_frozen", "_keys", "_maria", "_mysql", "_text", "_whole")

    def __init__(self, initial: GtidSet | None = None) -> None:
        self._reset(initial if initial is not None else GtidSet())

    def _reset(self, s: GtidSet) -> None:
        self._frozen: GtidSet | None = s
        self._maria: dict[int, tuple[int, int]] = {d: (sv, n) for d, sv, n in s.mariadb}
        self._mysql: dict[str, list[Interval]] = {u: list(iv) for u, iv in s.mysql}
        self._keys: list = sorted(self._maria) if s.mariadb else [u for u, _ in s.mysql]  # sorted, as printed
        self._text: dict = {}  # key -> its printed part (a MariaDB d-s-n, a tsid's ``[:tag]:intervals``)
        self._whole: str | None = None
        # MariaDB: (``d-s-``, d, s) of the last known domain and server add() took; the next GTID of that server,
        # in its printed form (no leading zero), is read by its sequence number alone
        self._fast: tuple[str, int, int] | None = None

    # -- updates ------------------------------------------------------------------------------------------------
    def add(self, gtid: str) -> None:
        """Take one GTID (``uuid:N``, ``uuid:tag:N``, ``d-s-n``); the same result as ``GtidSet.add``."""
        fast = self._fast
        if fast is not None and gtid.startswith(fast[0]):
            no = gtid[len(fast[0]):]
            if no.isdigit() and no.isascii() and (no[0] != "0" or len(no) == 1):  # as f"{n}" prints it
                d, sv, n = fast[1], fast[2], int(no)
                old = self._maria[d]  # the domain is known while _fast is set (_reset clears it)
                if n >= old[1] and old != (sv, n):  # as below
                    self._maria[d] = (sv, n)
                    self._text[d] = gtid  # f"{d}-{sv}-{n}", what __str__ prints for the domain
                    self._whole = gtid if len(self._keys) == 1 else None
                    self._frozen = None
                return
        if self._maria:
            parts = gtid.split("-")  # (no generator: this runs once per transaction)
            if len(parts) == 3 and gtid.isascii() and parts[0].isdigit() and parts[1].isdigit() \
                    and parts[2].isdigit():
                d, sv, n = int(parts[0]), int(parts[1]), int(parts[2])
                old = self._maria.get(d)
                if old is not None:  # a known domain: its seq moves (union: the later or equal seq wins)
                    self._fast = (f"{d}-{sv}-", d, sv)
                    if n >= old[1] and old != (sv, n):
                        self._maria[d] = (sv, n)
                        self._text.pop(d, None)
                        self._whole = self._frozen = None
                    return
        elif self._mysql:
            tsid, _, no = gtid.rpartition(":")
            iv = self._mysql.get(tsid)  # known keys are normalised: a text in another spelling takes the slow path
            if iv is not None and no.isascii() and no.isdigit() and int(no) >= 1:
                n = int(no)
                a, b = iv[-1]
                if n == b:  # the next transaction of this uuid (and tag): the last interval grows
                    iv[-1] = (a, b + 1)
                elif n < b and any(x <= n < y for x, y in iv):
                    return  # already in the set
                else:
                    self._mysql[tsid] = list(_merge([*iv, (n, n + 1)]))
                self._text.pop(tsid, None)
                self._whole = self._frozen = None
                return
        self._reset(self.freeze().add(gtid))  # validates; raises GtidParseError / GtidFlavorMismatch

    # -- reading ------------------------------------------------------------------------------------------------
    def freeze(self) -> GtidSet:
        """The equal immutable GtidSet (kept until the next change)."""
        if self._frozen is None:
            if self._maria:
                self._frozen = GtidSet(mariadb=tuple((d, *self._maria[d]) for d in self._keys))
            else:
                self._frozen = GtidSet(mysql=tuple((u, tuple(self._mysql[u])) for u in self._keys))
        return self._frozen

    def __str__(self) -> str:
        whole = self._whole
        if whole is not None:
            return whole
        text = self._text
        if self._maria:
            parts = []
            for d in self._keys:
                t = text.get(d)
                if t is None:
                    sv, n = self._maria[d]
                    t = text[d] = f"{d}-{sv}-{n}"
                parts.append(t)
            whole = ",".join(parts)
        else:
            out: list[str] = []
            last = ""
            for tsid in self._keys:
                t = text.get(tsid)
                uuid = tsid[:36]
                if t is None:
                    tag = tsid[37:]
                    t = text[tsid] = (f":{tag}" if tag else "") + _interval_text(self._mysql[tsid])
                if uuid == last:
                    out[-1] += t
                else:
                    out.append(uuid + t)
                last = uuid
            whole = ",".join(out)
        self._whole = whole
        return whole

    def __repr__(self) -> str:
        return f"GtidState({str(self)!r})"

    def __bool__(self) -> bool:
        return bool(self._maria or self._mysql)

    @property
    def flavor(self) -> Flavor | None:
        return "mariadb" if self._maria else "mysql" if self._mysql else None

    def issuperset(self, other: GtidSet) -> bool:
        """True when this state has seen every transaction of ``other`` (as GtidSet.issuperset)."""
        if self._maria and other.mariadb:
            mine = self._maria
            for d, sv, n in other.mariadb:
                have = mine.get(d)
                if have is None or have[1] < n or (have[1] == n and have[0] != sv):
                    return False
            return True
        return self.freeze().issuperset(other)


@dataclass(frozen=True, slots=True, order=True)
class BinlogPosition:
    """A point in one server's binlog: ``file`` (e.g. mysql-bin.000003) and byte ``pos``.

    Orders by file sequence number then offset. Only meaningful on the
    server that wrote it: use GTIDs (``cdc gtid locate``) across servers.
    """

    file: str
    pos: int

    @classmethod
    def parse(cls, text: str) -> BinlogPosition:
        file, sep, pos = text.rpartition(":")
        if not sep or not file or not pos.isdigit():
            raise GtidParseError("binlog position is not of the form FILE:POS", text=text)
        return cls(file, int(pos))

    def __str__(self) -> str:
        return f"{self.file}:{self.pos}"
