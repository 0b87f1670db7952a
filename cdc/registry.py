"""The one place where the core names the readers and the apply side.

- ``READERS``: source ``kind`` -> the reader class (``cls(config, context)``, cdc.contract.Source);
- ``SOURCE_CONFIGS``: the pydantic config model of each kind (cdc.config.models builds its union from it);
- ``TARGET_CONFIGS``: the config model of each target kind, built from the target packages
  (streaming/targets/<kind>/: a new target kind is a new package there, and no line here);
- ``CHECKS``: what `cdc check` runs for each source kind and for targets;
- ``LOCATORS``: which of a source's hosts a one-shot tool (`cdc compare`) reads (the current primary);
- ``COMMANDS``: the `cdc` sub-commands and the module that implements each;
- ``TYPE_PARSERS``: each kind's reading of its own type text into a cdc.schema.logical.LogicalType (the
  only readers of a source's spellings; the core asks them through :func:`logical_of` for a column that
  came without one: a SCHEMA record written before the field, a schema built by hand);
- ``DEBEZIUM_SOURCES``: the fields each kind declares for the Debezium ``source`` block (cdc/debezium);
- ``SOURCE_COMMANDS``: the commands on one source that each kind opts into (`cdc source skip`, `cdc snapshot`);
- ``APPLY_HOOKS``: the apply side the operations API and `cdc compare` reach (schema decisions, progress, dead
  letters, target modes);
- ``STAND_INS``: dev/test tools that serve a source DSN ``<scheme>[:options]`` in-process instead of a server
  (the LogMiner simulator): the only way product code reaches a tool.

Everything else in ``cdc/`` depends on neither ``readers`` nor ``streaming``; only this module and
the tools under cdc/dev and cdc/bench import them (tests/unit/cdc/test_layout.py checks it). A new
source kind is a folder under readers/ plus one line in each table here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from cdc.errors import ConfigError
from cdc.schema.logical import LogicalType
from readers.mysql.config import MySqlSourceConfig
from readers.oracle.config import OracleSourceConfig
from readers.shadow.config import ShadowSourceConfig
from streaming.targets import config_models

READERS: dict[str, str] = {
    "mysql": "readers.mysql.reader:MySqlSource",
    "oracle": "readers.oracle.reader:OracleSource",
    "shadow": "readers.shadow.reader:ShadowSource",
}

SOURCE_CONFIGS: dict[str, type] = {
    "mysql": MySqlSourceConfig,
    "oracle": OracleSourceConfig,
    "shadow": ShadowSourceConfig,
}

TARGET_CONFIGS: dict[str, type] = config_models()

CHECKS: dict[str, str] = {  # `cdc check` (cdc/checks.py): source kind (or "target") -> checks(config, key)
    "mysql": "readers.mysql.check:checks",
    "oracle": "readers.oracle.check:checks",
    "shadow": "readers.shadow.reader:checks",
    "target": "streaming.apply.target_check:checks",
}

LOCATORS: dict[str, str] = {  # one-shot tools (`cdc compare`): source kind -> current_host(config) -> "host:port"
    "mysql": "readers.mysql.failover:current_host",
}

TYPE_PARSERS: dict[str, str] = {  # source kind -> logical_type(type_text) -> LogicalType
    "mysql": "readers.mysql.types:logical_type",
    "oracle": "readers.oracle.types:logical_type",
    "shadow": "readers.shadow.types:logical_type",
}

DEBEZIUM_SOURCES: dict[str, str] = {  # source kind -> its Debezium ``source`` fields after the common ones
    "mysql": "readers.mysql.debezium:SOURCE_FIELDS",
    "oracle": "readers.oracle.debezium:SOURCE_FIELDS",
    "shadow": "readers.mysql.debezium:SOURCE_FIELDS",  # the shadow source publishes MySQL's block (as it always has)
}

DEBEZIUM_COLUMNS: dict[str, str] = {  # source kind -> column_type(type_text): a schema-change Column's type fields
    "mysql": "readers.mysql.debezium:column_type",
    "oracle": "readers.oracle.debezium:column_type",
    "shadow": "readers.mysql.debezium:column_type",  # as its source block: MySQL's
}

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("cdc.runtime.run_cmd", "run the capture daemon (readers + publisher)"),
    "apply": ("streaming.apply.apply_cmd", "run the Spark apply job into the targets"),
    "schema": ("streaming.apply.schema_cmd", "way back from a DDL the apply stopped at: `cdc schema accept|skip|evolve`"),
    "check": ("cdc.checks", "check sources (settings, table patterns), Kafka (topic settings) and targets (writes)"),
    "gtid": ("readers.mysql.locate", "GTID tools: `cdc gtid locate`"),
    "oracle": ("readers.oracle.tools", "Oracle tools: `cdc oracle parse`"),
    "compare": ("cdc.compare.compare_cmd", "prove a target equals its source (MD5 merge)"),
    "snapshot": ("cdc.runtime.snapshot_cmd", "re-snapshot one table while streaming continues"),
    "source": ("cdc.runtime.source_cmd", "a stopped source: `cdc source skip` moves past a refused transaction"),
    "views": ("streaming.views.views_cmd", "maintained views: `cdc views rebuild`"),
    "lake": ("streaming.targets.lake_cmd", "Delta/Iceberg targets: `cdc lake snapshot|compact`"),
    "dev": ("cdc.dev.dev_cmd", "embedded services: `cdc dev up|down|status`"),
    "bench": ("cdc.bench.bench_cmd", "benchmarks: `cdc bench mysql|apply|oracle|compare|views`"),
    "tail": ("cdc.consumer.tail_cmd", "print the change stream of a source (console consumer)"),
    "decrypt": ("cdc.transforms.decrypt_cmd", "key holders: the clear text of values `mask: encrypt` wrote"),
    "stream": ("cdc.publish.stream_cmd", "the change stream: `cdc stream reset` starts a source's stream afresh"),
}

SOURCE_COMMANDS: dict[str, dict[str, str]] = {  # source kind -> the commands it supports -> main(args, config, src)
    "mysql": {"source skip": "readers.mysql.skip_cmd:main",  # cdc/runtime/source_cmd.py
              "snapshot": "readers.mysql.snapshot_cmd:main",  # cdc/runtime/snapshot_cmd.py
              "snapshot status": "readers.mysql.snapshot_status:main"},
    "oracle": {"source skip": "readers.oracle.skip_cmd:main"},
    "shadow": {},
}

APPLY_HOOKS: dict[str, str] = {  # what the operations API (cdc/ops) calls of the apply side
    "open_apply_target": "streaming.apply.schema_cmd:open_apply_target",
    "list_decisions": "streaming.apply.schema_cmd:list_decisions",
    "record_decision": "streaming.apply.schema_cmd:record_decision",
    "dead_letter_count": "streaming.apply.ops_state:dead_letter_count",
    "target_modes": "streaming.apply.target_modes:TargetModes",  # `cdc compare` of a soft-delete/history target
    "deleted_column": "streaming.apply.target_modes:DELETED",
}

STAND_INS: dict[str, str] = {  # DSN scheme -> the tool module; importing it registers its connection factory
    "simulator": "readers.oracle.sim.simulator",  # the LogMiner simulator (docs/sources-oracle.md)
}


def _load(entry: str):
    module, _, name = entry.partition(":")
    return getattr(importlib.import_module(module), name)


def dialect(builtins: dict[str, Any], attr: str, name: str) -> Any:
    """The dialect called ``name``: the core's (``builtins``), else the object a target package declares in
    ``attr`` ("SQL_DIALECT" or "COMPARE_DIALECT", streaming.targets.dialect_spec); ConfigError naming the
    known ones otherwise."""
    if name in builtins:
        return builtins[name]
    from streaming.targets import dialect_spec

    spec = dialect_spec(attr, name)
    if spec is None:
        raise ConfigError(f"no SQL dialect {name!r} (known: {sorted(builtins)} and the target packages')",
                          dialect=name)
    return _load(":".join(spec))


def apply_hook(name: str):
    """The apply-side function ``name`` of APPLY_HOOKS (the operations API's way to the apply side)."""
    return _load(APPLY_HOOKS[name])


def load_stand_ins(source: Any) -> None:
    """Import the tool behind each DSN of source config ``source`` (``dsn``, ``standby_dsn``) whose scheme is in
    STAND_INS: the tool registers itself with its reader on import (readers/oracle/session.py
    register_stand_in). A DSN of any other scheme is the reader's own business."""
    for dsn in (getattr(source, "dsn", None), getattr(source, "standby_dsn", None)):
        if isinstance(dsn, str) and (module := STAND_INS.get(dsn.partition(":")[0])):
            importlib.import_module(module)


def open_source(config: Any, context: Any):
    """The reader of ``config.kind``, constructed (not started)."""
    load_stand_ins(config)
    return _load(READERS[config.kind])(config, context)


def current_host(config: Any) -> str | None:
    """The host a one-shot tool reads ``config``'s source from now (the primary among its ``hosts``);
    None for a kind with no choice of hosts."""
    if config.kind not in LOCATORS:
        return None
    module, _, fn = LOCATORS[config.kind].partition(":")
    return getattr(importlib.import_module(module), fn)(config)


def checker(kind: str):
    """The ``checks(config, key) -> list[cdc.checks.Check]`` function of a source kind or of "target"."""
    checks = _load(CHECKS[kind])
    if kind not in SOURCE_CONFIGS:
        return checks

    def source_checks(config: Any, key: str) -> list:
        load_stand_ins(config)
        return checks(config, key)

    return source_checks


def source_command(command: str, source: Any, file: str | None = None):
    """The ``main(args, config, src) -> int`` of ``command`` ("source skip", "snapshot", "snapshot status") for
    source config ``source``, from SOURCE_COMMANDS; ConfigError naming the source, its kind, the command and
    the kinds that have it when its kind has none."""
    entry = SOURCE_COMMANDS.get(source.kind, {}).get(command)
    if entry is None:
        kinds = [k for k, commands in SOURCE_COMMANDS.items() if command in commands]
        raise ConfigError(f"source {source.name} is kind {source.kind}, which does not support `cdc {command}` "
                          f"(kinds that do: {', '.join(kinds)})", key="sources", file=file)
    load_stand_ins(source)
    return _load(entry)


def _attr(table: dict[str, str], kind: str, what: str) -> Any:
    spec = table.get(kind)
    if spec is None:
        raise KeyError(f"source kind {kind!r} declares no {what}; known kinds: {sorted(table)} (cdc/registry.py)")
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def type_parser(kind: str) -> Callable[[str], LogicalType]:
    """The source kind's ``logical_type(type_text)``; KeyError naming the kind for an unknown one."""
    return _attr(TYPE_PARSERS, kind, "type parser")


def logical_of(column: Any, kind: str | None = None) -> LogicalType:
    """``column.logical``, or the one the source kind's parser reads from ``column.type`` when the column came
    without it (cdc.stream.events.Column); ``kind`` None: :func:`guess_logical`."""
    if column.logical is not None:
        return column.logical
    if kind is None:
        return guess_logical(column.type)
    return type_parser(kind)(column.type)


GUESS_ORDER = ("mysql", "oracle")


def guess_logical(type_text: str) -> LogicalType:
    """The logical type of a type text whose source kind is unknown (a column written without its logical type
    and no kind at hand, a hand-written type): the first of GUESS_ORDER's parsers that knows the spelling, else
    ``other``. MySQL's first: where both read a spelling (``date``, ``timestamp(3)``) it is the reading the type
    maps gave every text before logical types existed."""
    for kind in GUESS_ORDER:
        found = type_parser(kind)(type_text)
        if found.family != "other":
            return found
    return LogicalType("other")


def debezium_column_type(kind: str) -> Callable[[str], dict[str, Any]]:
    """The source kind's reading of its type text into a Debezium schema-change Column's type fields."""
    return _attr(DEBEZIUM_COLUMNS, kind, "Debezium column types")


def debezium_source_fields(kind: str) -> list[dict[str, Any]]:
    """The Connect field schemas the source kind declares for its Debezium ``source`` block."""
    return _attr(DEBEZIUM_SOURCES, kind, "Debezium source block")
