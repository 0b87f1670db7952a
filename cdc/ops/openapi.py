"""The OpenAPI 3 document of the operations API: the one list of its routes.

cdc/ops/server.py routes by this document (each operation's ``operationId`` is a handler method,
``x-cdc-role`` the role it needs), so a route exists exactly when it is documented; the tests hold
the handlers and the document to each other, and docs/operations-api.md is generated from it
(cdc/dev/ops_api_reference.py).
"""

from __future__ import annotations

from typing import Any

VERSION = "1"
PREFIX = "/api/v1"

_ERROR = {"type": "object", "required": ["error"], "properties": {
    "error": {"type": "string", "description": "what was refused and why, naming the field or state to fix"},
    "fields": {"type": "object", "description": "the refusal's names and positions (no row values)"}}}

_OPERATION = {"type": "object", "required": ["action", "actor", "at_ms", "detail"], "properties": {
    "action": {"type": "string", "enum": ["pause", "resume", "restart", "skip", "resync", "schema"]},
    "actor": {"type": "string", "description": "the token's name (api.tokens[].name), or 'loopback' "
              "without authentication"},
    "at_ms": {"type": "integer", "description": "when, in milliseconds since the epoch"},
    "detail": {"type": "object"}}}

_SOURCE = {"type": "object", "required": ["name", "kind", "state"], "properties": {
    "name": {"type": "string"},
    "kind": {"type": "string", "description": "mysql, oracle, shadow"},
    "state": {"type": "string", "enum": ["starting", "streaming", "snapshotting", "paused", "waiting to restart",
                                         "stopped", "failed"],
              "description": "snapshotting: an initial or incremental snapshot is being read (see snapshot); the "
              "stream goes on after it (incremental: alongside it)"},
    "why": {"type": "string", "nullable": True, "description": "why the source is not streaming (the /readyz "
            "reason: error class and position, no row values)"},
    "position": {"type": "object", "nullable": True, "description": "resume state of the last acknowledged "
                 "checkpoint (MySQL: gtid_set; Oracle: SCNs)"},
    "lag_seconds": {"type": "number", "nullable": True, "description": "cdc_source_lag_seconds"},
    "lag_transactions": {"type": "integer", "nullable": True, "description": "source transactions not yet "
                         "published (MySQL/MariaDB: the server's binlog GTID set minus the checkpoint's, counted); "
                         "null: not known, lag_transactions_why says why"},
    "lag_transactions_why": {"type": "string", "nullable": True, "description": "why lag_transactions is null"},
    "snapshot": {"type": "object", "nullable": True, "description": "the snapshot being read (null: none)",
                 "properties": {
                     "kind": {"type": "string", "enum": ["initial", "incremental"]},
                     "table": {"type": "string", "nullable": True, "description": "the table being read"},
                     "tables_done": {"type": "integer", "nullable": True, "description": "tables read before it"},
                     "tables_total": {"type": "integer", "nullable": True, "description": "tables to read in all "
                                      "(null: incremental, see tables_queued)"},
                     "tables_queued": {"type": "array", "items": {"type": "string"}, "description": "incremental: "
                                       "the tables requested after it"},
                     "after": {"type": "array", "nullable": True, "items": {}, "description": "primary key of the "
                               "last row read of the table"},
                     "resync": {"type": "boolean", "description": "the tables' rows replace the target's"}}},
    "open_transactions": {"type": "array", "nullable": True, "description": "transactions the reader holds "
                          "read but not committed, oldest first (Oracle); null: the reader holds none of its own "
                          "(MySQL: the binlog holds committed transactions only)", "items": {
                              "type": "object", "properties": {
                                  "xid": {"type": "string", "description": "the XID (usn.slot.sqn), as `cdc source "
                                          "skip --xid` takes it"},
                                  "start_scn": {"type": "integer", "description": "SCN of its first row"},
                                  "started_ms": {"type": "integer", "nullable": True, "description": "its first "
                                                 "row's timestamp (source clock, ms since the epoch)"},
                                  "age_s": {"type": "number", "nullable": True, "description": "seconds since "
                                            "started_ms"},
                                  "rows": {"type": "integer", "description": "rows buffered (spilled ones "
                                           "included)"},
                                  "bytes": {"type": "integer", "description": "bytes of redo text held in memory "
                                            "for it (about)"}}}},
    "tail": {"type": "object", "properties": {
        "sequence": {"type": "integer", "description": "highest sequence known to be in the stream"},
        "epoch": {"type": "integer", "description": "writer epoch of this daemon's publisher"},
        "writer": {"type": "string", "description": "this daemon's writer id (host:pid:nonce)"}}},
    "paused": {"allOf": [{"$ref": "#/components/schemas/Operation"}], "nullable": True,
               "description": "the pause in force (null: not paused)"},
    "way_back": {"type": "array", "items": {"type": "string"}, "description": "the CLI commands and API calls "
                 "that bring a stopped or paused source back"}}}

_APPLY = {"type": "object", "required": ["source", "target"], "properties": {
    "source": {"type": "string", "description": "apply[].source"},
    "target": {"type": "string", "description": "apply[].target"},
    "progress": {"type": "object", "nullable": True, "description": "the target's progress row (null: nothing "
                 "applied yet): last_sequence, position (the source's commit position), epoch"},
    "last_batch": {"type": "object", "nullable": True, "description": "the last micro-batch that committed: "
                   "batch_id, applied_at (target time, UTC), last_commit_ms (source commit time)"},
    "records_behind": {"type": "integer", "nullable": True, "description": "stream sequences not applied yet "
                       "(null: the source is not one of this daemon's)"},
    "lag_seconds": {"type": "number", "nullable": True, "description": "age of the last applied source commit "
                    "while records wait (0: caught up)"},
    "dead_letters": {"type": "integer", "nullable": True, "description": "rows of this source in the target's "
                     "dead_letter_table (null: the target keeps none, or not in SQL)"},
    "schema_decisions": {"type": "array", "items": {"type": "object"}, "description": "the decisions recorded "
                         "(`cdc schema list`)"},
    "error": {"type": "string", "nullable": True, "description": "why the target could not be read"}}}

_DONE = {"type": "object", "required": ["source", "did"], "properties": {
    "source": {"type": "string"},
    "did": {"type": "string", "description": "what the call changed ('nothing: ...' when it was already so)"},
    "operation": {"allOf": [{"$ref": "#/components/schemas/Operation"}], "nullable": True,
                  "description": "the operations record written to the change stream (null: none, nothing done)"},
    "output": {"type": "array", "items": {"type": "string"}, "description": "what the CLI command printed"}}}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_REFUSALS = {
    "400": _json({"$ref": "#/components/schemas/Error"}, "malformed request: JSON, fields"),
    "401": _json({"$ref": "#/components/schemas/Error"}, "no token, or a token not accepted"),
    "403": _json({"$ref": "#/components/schemas/Error"}, "the role of the token or client certificate may not do "
                 "this, or the certificate's CN has no role"),
}
_NAME = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}, "description": "source name"}


def _action(op_id: str, summary: str, body: dict[str, Any] | None, required: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "operationId": op_id, "summary": summary, "x-cdc-role": "operator", "parameters": [_NAME],
        "responses": {"200": _json({"$ref": "#/components/schemas/Done"}, "done (or already so: `did` says)"),
                      **_REFUSALS,
                      "404": _json({"$ref": "#/components/schemas/Error"}, "no such source"),
                      "409": _json({"$ref": "#/components/schemas/Error"}, "refused in the source's state, or by "
                                   "the CLI command's checks"),
                      "413": _json({"$ref": "#/components/schemas/Error"}, "body over api.max_body_bytes")}}
    if body is not None:
        out["requestBody"] = {"required": required,
                              "content": {"application/json": {"schema": {**body, "additionalProperties": False}}}}
    return out


_REASON = {"reason": {"type": "string", "description": "free text recorded with the action"}}

DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "cdc operations API", "version": VERSION,
             "description": "State of the capture daemon's sources and the operator's actions. Every action is "
             "idempotent, answers with what it did, and is recorded in the source's change stream as an "
             "operations record (a HEARTBEAT whose resume carries `operation`: who, what, when)."},
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                       "description": "a token of api.tokens (read from its file). With "
                                       "api.tls.client_ca_file, a TLS client certificate that CA signed instead: "
                                       "its subject CN is the actor, api.tls.client_roles its role (a CN not there: "
                                       "403; no certificate, or one another CA signed: refused in the TLS "
                                       "handshake)"}},
        "schemas": {"Error": _ERROR, "Operation": _OPERATION, "Source": _SOURCE, "Done": _DONE,
                    "Apply": _APPLY}},
    "security": [{"bearer": []}],
    "paths": {
        f"{PREFIX}/openapi.json": {"get": {
            "operationId": "get_openapi", "summary": "this document", "x-cdc-role": "read",
            "responses": {"200": _json({"type": "object"}, "the OpenAPI document"), **_REFUSALS}}},
        f"{PREFIX}/sources": {"get": {
            "operationId": "list_sources", "summary": "every source of the daemon with its state, position, lag "
            "and the stream's tail", "x-cdc-role": "read",
            "responses": {"200": _json({"type": "object", "required": ["sources"], "properties": {
                "sources": {"type": "array", "items": {"$ref": "#/components/schemas/Source"}}}}, "the sources"),
                **_REFUSALS}}},
        f"{PREFIX}/sources/{{name}}": {"get": {
            "operationId": "get_source", "summary": "one source", "x-cdc-role": "read", "parameters": [_NAME],
            "responses": {"200": _json({"$ref": "#/components/schemas/Source"}, "the source"), **_REFUSALS,
                          "404": _json({"$ref": "#/components/schemas/Error"}, "no such source")}}},
        f"{PREFIX}/sources/{{name}}/pause": {"post": _action(
            "pause_source", "stop the source at its next transaction boundary and keep it stopped, across "
            "daemon restarts, until resumed", {"type": "object", "properties": _REASON})},
        f"{PREFIX}/sources/{{name}}/resume": {"post": _action(
            "resume_source", "resume a paused source from where it paused", {"type": "object",
                                                                              "properties": _REASON})},
        f"{PREFIX}/sources/{{name}}/restart": {"post": _action(
            "restart_source", "start a stopped or failed source again from the stream's tail",
            {"type": "object", "properties": _REASON})},
        f"{PREFIX}/sources/{{name}}/skip": {"post": _action(
            "skip_transaction", "move a stopped or paused source past the one transaction it stopped on "
            "(`cdc source skip`: the same code and checks), then restart it yourself",
            {"type": "object", "properties": {
                "gtid": {"type": "string", "description": "MySQL/MariaDB: the GTID the source stopped on"},
                "xid": {"type": "string", "description": "Oracle: the XID the source stopped on"},
                "resync": {"type": "boolean", "description": "re-read the tables it touched"}, **_REASON}},
            required=True)},
        f"{PREFIX}/sources/{{name}}/resync": {"post": _action(
            "resync_tables", "re-read tables while streaming continues (`cdc snapshot --resync`: the same code); "
            "resync false: a plain incremental snapshot", {"type": "object", "required": ["tables"], "properties": {
                "tables": {"type": "array", "minItems": 1, "items": {"type": "string"},
                           "description": "db.table names"},
                "resync": {"type": "boolean", "default": True,
                           "description": "also delete target rows the source does not hold"}, **_REASON}},
            required=True)},
        f"{PREFIX}/apply": {"get": {
            "operationId": "list_apply", "summary": "every apply item of the daemon's config file: the target's "
            "progress row, the last batch, records behind, dead letters, schema decisions (read from the targets)",
            "x-cdc-role": "read",
            "responses": {"200": _json({"type": "object", "required": ["apply"], "properties": {
                "apply": {"type": "array", "items": {"$ref": "#/components/schemas/Apply"}}}}, "the apply items"),
                **_REFUSALS}}},
        f"{PREFIX}/apply/{{source}}/{{target}}/schema": {"post": {
            **_action("decide_schema", "record the decision for the schema change the apply stopped at "
                      "(`cdc schema accept|skip|evolve`: the same code and checks); then restart `cdc apply`",
                      {"type": "object", "required": ["decision", "table", "sequence"], "properties": {
                          "decision": {"type": "string", "enum": ["accept", "skip", "evolve"],
                                       "description": "accept: the target already matches; skip: keep the "
                                       "target's shape; evolve: follow the change"},
                          "table": {"type": "string", "description": "the source table (db.table) the stop named"},
                          "sequence": {"type": "integer", "description": "the SCHEMA record's sequence the stop "
                                       "named"}, **_REASON}}, required=True),
            "parameters": [
                {"name": "source", "in": "path", "required": True, "schema": {"type": "string"},
                 "description": "apply[].source (a source of this daemon: the decision is recorded in its stream)"},
                {"name": "target", "in": "path", "required": True, "schema": {"type": "string"},
                 "description": "apply[].target"}]}},
        "/status": {"get": {
            "operationId": "status_page", "summary": "one HTML page: each source, position, lag, the last error "
            "and the way back", "x-cdc-role": "read",
            "responses": {"200": {"description": "the page", "content": {"text/html": {"schema": {"type": "string"}}}},
                          **_REFUSALS}}},
    },
}


def routes() -> list[tuple[str, str, dict[str, Any]]]:
    """(METHOD, path template, operation) for every operation of the document."""
    return [(method.upper(), path, op) for path, item in DOCUMENT["paths"].items() for method, op in item.items()]
