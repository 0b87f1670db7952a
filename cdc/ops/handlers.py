"""What each route of the operations API does (one method per ``operationId`` of cdc/ops/openapi.py).

Each method takes ``actor`` (who: the token's name), ``body`` (the JSON object sent, {} for GET) and the
path's parameters, and returns ``(HTTP status, answer, content type)``; it raises
cdc.ops.server.Refusal for anything it does not do. Actions are idempotent: asked again, an action
that is already so answers 200 with ``did: "nothing: ..."`` and writes no record. An action that did
something is recorded in the source's stream as an operations record (cdc/ops/control.py): by the
source's thread between transactions while it runs, at once by a short-lived publisher when it
does not.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from cdc.contract import Observation
from cdc.errors import CdcError
from cdc.ops import actions, openapi, status_page
from cdc.ops.control import operation
from cdc.ops.errors import Refusal
from cdc.runtime.health import describe

log = logging.getLogger(__name__)

_TYPES = {"string": str, "boolean": bool, "array": list, "integer": int, "number": (int, float)}


def check_body(op: dict[str, Any], body: dict[str, Any]) -> None:
    """Refusal 400 naming the field for a body the operation's schema does not take (unknown fields,
    wrong types, missing required ones)."""
    schema = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if schema is None:
        if body:
            raise Refusal(400, f"{op['operationId']} takes no body; got fields {sorted(body)}")
        return
    props = schema.get("properties", {})
    unknown = sorted(set(body) - set(props))
    if unknown:
        raise Refusal(400, f"unknown field(s) {unknown}; {op['operationId']} takes {sorted(props)}")
    for key in schema.get("required", []):
        if key not in body:
            raise Refusal(400, f"field {key!r} is required")
    for key, value in body.items():
        want = props[key].get("type")
        if want and (not isinstance(value, _TYPES[want]) or (want != "boolean" and isinstance(value, bool))):
            raise Refusal(400, f"field {key!r} must be a JSON {want}")
        if "enum" in props[key] and value not in props[key]["enum"]:
            raise Refusal(400, f"field {key!r} must be one of {', '.join(props[key]['enum'])}; got {value!r}")
        if want == "array" and (len(value) < props[key].get("minItems", 0)
                                or not all(isinstance(v, str) and v for v in value)):
            raise Refusal(400, f"field {key!r} must be a non-empty list of names")


def _ops_by_id() -> dict[str, dict[str, Any]]:
    return {op["operationId"]: op for _, _, op in openapi.routes()}


class Handlers:
    def __init__(self, daemon: Any, config_path: str | None) -> None:
        self.daemon, self.config_path = daemon, config_path
        self.ops = _ops_by_id()
        self.lag = status_page.LagHistory()
        self._lock = threading.Lock()  # one action at a time: state checks and changes do not interleave

    # -- read ----------------------------------------------------------------------------------------
    def get_openapi(self, *, actor: str, body: dict[str, Any]) -> tuple[int, Any, str]:
        return 200, openapi.DOCUMENT, "application/json"

    def list_sources(self, *, actor: str, body: dict[str, Any]) -> tuple[int, Any, str]:
        return 200, {"sources": [self._state(w) for w in self.daemon.workers]}, "application/json"

    def get_source(self, *, actor: str, body: dict[str, Any], name: str) -> tuple[int, Any, str]:
        return 200, self._state(self._worker(name)), "application/json"

    def list_apply(self, *, actor: str, body: dict[str, Any]) -> tuple[int, Any, str]:
        return 200, {"apply": self._apply_state()}, "application/json"

    def status_page(self, *, actor: str, body: dict[str, Any]) -> tuple[int, Any, str]:
        sources = self._sample_lag()
        try:
            apply, apply_error = self._apply_state(), None
        except Refusal as exc:  # the page still shows the sources
            apply, apply_error = [], str(exc)
        page = status_page.render(sources, apply, apply_error, self.lag.series())
        return 200, page.encode(), "text/html; charset=utf-8"

    def _sample_lag(self) -> list[dict[str, Any]]:
        """Every source's state, its lag added to the in-memory history (the status page's chart)."""
        sources = [self._state(w) for w in self.daemon.workers]
        for s in sources:
            self.lag.add(s["name"], s["lag_seconds"])
        return sources

    # -- act -----------------------------------------------------------------------------------------
    def pause_source(self, *, actor: str, body: dict[str, Any], name: str) -> tuple[int, Any, str]:
        check_body(self.ops["pause_source"], body)
        w = self._worker(name)
        with self._lock:
            c = w.control
            if c.paused:
                return self._done(name, f"nothing: already paused ({_who(c.paused_since)})")
            op = operation("pause", actor, reason=body.get("reason", ""))
            c.paused, c.paused_since = True, op
            if self._running(w):
                c.add(op)
                return self._done(name, "pausing: the source stops at its next transaction boundary, then writes "
                                  "the pause record; it stays paused across restarts until resumed", op)
            self.daemon.write_now(w, [op])
            return self._done(name, "paused (the source was not running): it stays paused when restarted", op)

    def resume_source(self, *, actor: str, body: dict[str, Any], name: str) -> tuple[int, Any, str]:
        check_body(self.ops["resume_source"], body)
        w = self._worker(name)
        with self._lock:
            c = w.control
            if not c.paused:
                return self._done(name, "nothing: not paused")
            if self._running(w) and not w.holding:
                raise Refusal(409, f"source {name} is still pausing (its reader stops at the next transaction "
                              "boundary); resume it once its state is paused", {"source": name})
            op = operation("resume", actor, reason=body.get("reason", ""))
            c.paused, c.paused_since = False, None
            if w.holding:
                c.add(op)  # the source thread writes it after reading the stream's tail, then reads on
                return self._done(name, "resuming: the source reads on from where it paused", op)
            self.daemon.write_now(w, [op])
            return self._done(name, f"resumed; the source is not running: restart it (POST {openapi.PREFIX}/"
                              f"sources/{name}/restart)", op)

    def restart_source(self, *, actor: str, body: dict[str, Any], name: str) -> tuple[int, Any, str]:
        check_body(self.ops["restart_source"], body)
        w = self._worker(name)
        with self._lock:
            if self._running(w):
                return self._done(name, f"nothing: the source runs (state {self._state(w)['state']})")
            if w.control.paused:
                raise Refusal(409, f"source {name} is paused: resume it (POST {openapi.PREFIX}/sources/{name}/"
                              "resume), then restart it", {"source": name})
            if self.daemon.stop.is_set():
                raise Refusal(409, "the daemon is stopping", {"source": name})
            op = operation("restart", actor, reason=body.get("reason", ""),
                           after=describe(w.error) if w.error is not None else "stopped")
            w.control.add(op)  # written by the new run once it has read the stream's tail
            self.daemon.restart(w)
            return self._done(name, "restarted from the stream's tail", op)

    def skip_transaction(self, *, actor: str, body: dict[str, Any], name: str) -> tuple[int, Any, str]:
        check_body(self.ops["skip_transaction"], body)
        if not (body.get("gtid") or body.get("xid")):
            raise Refusal(400, "name the transaction: field 'gtid' (MySQL/MariaDB) or 'xid' (Oracle), as the "
                          "source's error names it")
        w = self._worker(name)
        with self._lock:
            if self._running(w) and not w.holding:
                raise Refusal(409, f"source {name} is {self._state(w)['state']}: a skip moves a stopped or paused "
                              f"source (pause it first: POST {openapi.PREFIX}/sources/{name}/pause)", {"source": name})
            output = self._cli(actions.skip_argv(self._config(), name, body), name)
            what = {k: body[k] for k in ("gtid", "xid", "resync") if k in body}
            op = operation("skip", actor, reason=body.get("reason", ""), **what)
            self._record(w, op)
            nxt = "resume" if w.control.paused else "restart"
            return self._done(name, f"skipped {body.get('gtid') or body.get('xid')}; {nxt} the source (POST "
                              f"{openapi.PREFIX}/sources/{name}/{nxt})", op, output)

    def resync_tables(self, *, actor: str, body: dict[str, Any], name: str) -> tuple[int, Any, str]:
        check_body(self.ops["resync_tables"], body)
        w = self._worker(name)
        with self._lock:
            output = self._cli(actions.resync_argv(self._config(), name, body), name)
            op = operation("resync", actor, reason=body.get("reason", ""), tables=body["tables"],
                           resync=body.get("resync", True))
            self._record(w, op)
            return self._done(name, f"{'resync' if body.get('resync', True) else 'snapshot'} of "
                              f"{', '.join(body['tables'])} requested; the running source re-reads them", op, output)

    def decide_schema(self, *, actor: str, body: dict[str, Any], source: str, target: str) -> tuple[int, Any, str]:
        from cdc.registry import apply_hook

        list_decisions, record_decision = apply_hook("list_decisions"), apply_hook("record_decision")

        check_body(self.ops["decide_schema"], body)
        w = self._worker(source)
        decision, table, sequence = body["decision"], body["table"], body["sequence"]
        with self._lock:
            config = self._load_config()
            try:
                if any(seq == sequence and t == table and d == decision
                       for seq, t, d, _ in list_decisions(config, self._config(), source, target)):
                    return self._done(source, f"nothing: {decision} is already recorded for {table} at sequence "
                                      f"{sequence} in target {target}")
                said = record_decision(config, self._config(), source, target, decision, table, sequence)
            except CdcError as exc:
                raise Refusal(409, str(exc), {k: str(v) for k, v in exc.fields.items() if v is not None}) from None
            op = operation("schema", actor, reason=body.get("reason", ""), target=target, table=table,
                           sequence=sequence, decision=decision)
            self._record(w, op)
            return self._done(source, f"{decision} recorded for {table} at sequence {sequence} in target {target}; "
                              "restart `cdc apply` to go on", op, [said])

    # -- helpers -------------------------------------------------------------------------------------
    def _worker(self, name: str) -> Any:
        for w in self.daemon.workers:
            if w.spec.name == name:
                return w
        raise Refusal(404, f"no source {name!r} in this daemon; its sources: "
                      f"{', '.join(w.spec.name for w in self.daemon.workers)}", {"source": name})

    @staticmethod
    def _running(w: Any) -> bool:
        return w.thread is not None and w.thread.is_alive()

    def _record(self, w: Any, op: dict[str, Any]) -> None:
        if self._running(w):
            w.control.add(op)  # between transactions, or (paused) with the pause record after it
        else:
            self.daemon.write_now(w, [op])

    def _load_config(self) -> Any:
        from cdc.config.loader import load_config

        try:
            return load_config(self._config())
        except CdcError as exc:
            raise Refusal(409, f"cannot read the daemon's config file: {exc}") from None

    def _apply_state(self) -> list[dict[str, Any]]:
        """The apply items of the config file, read from their targets (cdc/ops/apply_state.py); [] without a
        config file."""
        from cdc.ops.apply_state import apply_items

        if not self.config_path:
            return []
        tails = {w.spec.name: self._state(w)["tail"]["sequence"] for w in self.daemon.workers}
        return apply_items(self._load_config(), self.config_path, tails)

    def _config(self) -> str:
        if not self.config_path:
            raise Refusal(409, "this daemon was started without a config file; the CLI's actions need one")
        return self.config_path

    @staticmethod
    def _cli(argv: list[str], name: str) -> list[str]:
        try:
            return actions.run_cli(argv)
        except CdcError as exc:
            raise Refusal(409, str(exc), {k: str(v) for k, v in exc.fields.items() if v is not None}) from None

    @staticmethod
    def _done(name: str, did: str, op: dict[str, Any] | None = None,
              output: list[str] | None = None) -> tuple[int, Any, str]:
        return 200, {"source": name, "did": did, "operation": op, "output": output or []}, "application/json"

    def _state(self, w: Any) -> dict[str, Any]:
        pub, c = w.publisher, w.control
        why = None
        if w.error is not None:
            state, why = "failed", describe(w.error)
        elif w.holding or (c.paused and not self._running(w) and w.done):
            state, why = "paused", f"paused by {_who(c.paused_since)}"
        elif w.done:
            state = "stopped"
        elif w.waiting:
            state, why = "waiting to restart", w.waiting
        elif pub is None or pub.next_sequence is None:
            state = "starting"
        else:
            state = "streaming"
            if c.paused:
                why = "pause requested: stops at the next transaction boundary"
        seen = observe(w, w.last_resume) if state in ("streaming", "starting") else Observation(
            lag_transactions_why=f"the source is {state}")
        if state == "streaming" and seen.snapshot is not None:
            state = "snapshotting"
        registry = self.daemon.registry
        lag = registry.get_sample_value("cdc_source_lag_seconds", {"source": w.spec.name})
        lease = w.lease
        return {"name": w.spec.name, "kind": w.spec.connector, "state": state, "why": why, "position": w.last_resume,
                "lag_seconds": lag, "lag_transactions": seen.lag_transactions,
                "lag_transactions_why": seen.lag_transactions_why, "snapshot": seen.snapshot,
                "open_transactions": seen.open_transactions,
                "tail": {"sequence": max(w.acknowledged, pub.acked_sequence if pub is not None else 0),
                         "epoch": pub.epoch if pub is not None else 0,
                         "writer": lease.writer if lease is not None else _writer_id()},
                "paused": c.paused_since if c.paused else None,
                "way_back": way_back(w.spec.name, state, w.error, self.config_path)}


def observe(w: Any, checkpoint: Any) -> Observation:
    """What the source's reader says it is doing (cdc.contract.Observable); a reader without ``observe``, or
    whose ``observe`` fails, is "not known" with the reason (the API answers all the same)."""
    reader = getattr(w, "source", None)
    if reader is None or not hasattr(reader, "observe"):
        return Observation(lag_transactions_why=f"the {w.spec.connector} reader does not say")
    try:
        return reader.observe(checkpoint if isinstance(checkpoint, dict) else None)
    except Exception as exc:  # a look from another thread at a reader that moved on: say so, answer
        log.warning("source %s: observing its reader failed: %s", w.spec.name, type(exc).__name__, exc_info=True)
        return Observation(lag_transactions_why=f"observing the reader failed: {type(exc).__name__}")


def _writer_id() -> str:
    from cdc.publish.lease import WRITER_ID

    return WRITER_ID


def _who(op: dict[str, Any] | None) -> str:
    return "?" if not op else f"{op.get('actor')} at {op.get('at_ms')} ms"


def way_back(name: str, state: str, error: BaseException | None, config: str | None) -> list[str]:
    """The CLI command and the API call that bring a source in ``state`` back (empty: nothing to do)."""
    api = f"{openapi.PREFIX}/sources/{name}"
    cfg = config or "cdc.yaml"
    if state == "paused":
        return [f"POST {api}/resume"]
    if state not in ("failed", "stopped"):
        return []
    out = []
    fields = error.fields if isinstance(error, CdcError) else {}
    gtid, txid = fields.get("gtid"), fields.get("txid")
    if gtid or txid:
        flag, key = ("--gtid", "gtid") if gtid else ("--xid", "xid")
        out += [f"cdc source skip --config {cfg} --source {name} {flag} {gtid or txid} --yes --resync",
                f'POST {api}/skip {{"{key}": "{gtid or txid}", "resync": true}}']
    return [*out, f"POST {api}/restart (or restart `cdc run --config {cfg}`)"]
