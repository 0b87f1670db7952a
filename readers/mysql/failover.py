"""Finding the primary among the configured hosts and validating our checkpoint on it.

Rules (DESIGN.md "Sources", seed 002: resume on the new primary by GTID):

* Probe every host. With one configured host, that host is the source
  whatever its role (reading from a replica is allowed). With several, the
  source is the first, in configuration order, that is a writable primary
  (read_only=0 and not replicating). None found: NoPrimaryFound (Transient:
  a promotion may be under way, the caller retries with backoff).
* Validate the checkpoint (our full GTID state) on the chosen host:
  - every GTID we published must be in its history, else Divergence naming
    the missing GTIDs (Terminal: never fall back to an older position);
  - the binlogs it still holds must start at or before our state, else
    BinlogPurged (Terminal).
* All hosts rejecting our password is AuthenticationFailed (Terminal).
"""

from __future__ import annotations

from collections.abc import Callable

from cdc.config.tls import MySqlTls
from readers.mysql.connection import HostInfo, probe
from readers.mysql.errors import AuthenticationFailed, BinlogPurged, CdcError, Divergence, NoPrimaryFound, Terminal
from readers.mysql.position import GtidSet

Prober = Callable[[str], HostInfo]


def validate(info: HostInfo, checkpoint: GtidSet | None) -> None:
    """Raise Divergence / BinlogPurged when ``info`` cannot continue after ``checkpoint``."""
    if checkpoint is None or not checkpoint:
        return
    if checkpoint.flavor != info.gtid_state.flavor and info.gtid_state:
        raise Divergence(f"{info.address} is a {info.flavor} server but the checkpoint is a "
                         f"{checkpoint.flavor} GTID set", host=info.address, checkpoint=str(checkpoint))
    missing = checkpoint - info.gtid_state
    if missing:
        raise Divergence(
            f"divergence: {info.address} lacks GTIDs already published ({missing}); its history is "
            f"{info.gtid_state or 'empty'}. Refusing to continue from an older position",
            host=info.address, missing=str(missing), checkpoint=str(checkpoint))
    if info.oldest and not checkpoint.issuperset(info.oldest):
        missing = purged_range(checkpoint, info.oldest)
        raise BinlogPurged(
            f"binlog purged past the checkpoint on {info.address}: the checkpoint is {checkpoint}, the oldest "
            f"binlog still there ({info.oldest_file or '?'}) starts after {info.oldest}, so {missing} can no longer "
            f"be read. {WAY_OUT}", host=info.address, checkpoint=str(checkpoint), purged=str(info.oldest),
            missing=missing, oldest_file=info.oldest_file)


WAY_OUT = ("Way out: set `snapshot: when_needed` on the source and restart (the captured tables are re-snapshotted "
           "and streaming continues), or start the stream afresh (`cdc stream reset`, then rebuild the targets); "
           "see the runbook 'binlog purged past the checkpoint'. Keep binlogs longer than the longest outage "
           "(binlog_expire_logs_seconds / expire_logs_days).")


def purged_range(checkpoint: GtidSet, oldest: GtidSet) -> str:
    """The transactions between ``checkpoint`` and the start of the oldest binlog (``oldest``): gone with the
    purged logs. MariaDB: ``domain D seq A..B`` per domain; MySQL: the GTID set ``gtid_purged - checkpoint``."""
    gone = oldest - checkpoint
    if not gone.mariadb:
        return f"GTIDs {gone}"
    have = checkpoint.domains()
    return ", ".join(f"domain {d} seq {have.get(d, (0, 0))[1] + 1}..{n} (up to {d}-{srv}-{n})"
                     for d, srv, n in gone.mariadb)


def choose_primary(hosts: list[str], prober: Prober, checkpoint: GtidSet | None) -> HostInfo:
    """The host to stream from, validated against ``checkpoint`` (None: no earlier stream)."""
    infos: list[HostInfo] = []
    problems: dict[str, str] = {}
    auth_failure: AuthenticationFailed | None = None
    for address in hosts:
        try:
            infos.append(prober(address))
        except AuthenticationFailed as exc:
            auth_failure = exc
            problems[address] = str(exc)
        except CdcError as exc:
            if isinstance(exc, Terminal):
                raise
            problems[address] = str(exc)
    if not infos and auth_failure is not None:
        raise auth_failure  # no host let us in: retrying with the same password cannot help
    if len(hosts) == 1 and infos:
        chosen = infos[0]
    else:
        primaries = [i for i in infos if i.writable_primary]
        if not primaries:
            roles = {i.address: ("read_only" if i.read_only else "") + (" replica" if i.is_replica else "")
                     for i in infos}
            said = "; ".join(f"{h}: {why}" for h, why in {**problems, **roles}.items())
            raise NoPrimaryFound(f"no writable primary among {hosts} ({said})" if len(hosts) > 1 else
                                 f"{said}; fix: check the host:port in `hosts` and that the server runs there")
        chosen = primaries[0]
    validate(chosen, checkpoint)
    return chosen


def default_prober(user: str, password: str, timeout_s: float, tls: MySqlTls | None = None) -> Prober:
    return lambda address: probe(address, user, password, timeout_s, tls)


def current_host(config) -> str:
    """The host a one-shot tool (`cdc compare`) reads from: the one the daemon would stream from now.

    ``config``: a MySqlSourceConfig. One configured host: that host, unprobed (its connect error is
    the tool's own). Several: the first writable primary, as ``choose_primary`` picks it without a
    checkpoint; raises NoPrimaryFound naming every host's state, or AuthenticationFailed.
    """
    if len(config.hosts) == 1:
        return config.hosts[0]
    prober = default_prober(config.user, config.password.get_secret_value(), config.connect_timeout_s, config.tls)
    return choose_primary(config.hosts, prober, None).address
