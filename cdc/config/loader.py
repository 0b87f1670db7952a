"""Loading the service configuration: one YAML file, every key overridable by env var.

Override rule: ``CDC_`` + the key path in upper case joined by ``__``; list
items by index. Examples::

    CDC_KAFKA__BOOTSTRAP_SERVERS=127.0.0.1:9092
    CDC_SOURCES__0__PASSWORD=secret

The value of a string field (``str``, ``SecretStr``, a ``Literal`` of strings)
is taken verbatim: a password ``123456``, ``#s3cret`` or ``*Xk9!pq`` is that
text. Only where the field expects a structured value (a list, mapping,
number, boolean, model) is it parsed as a YAML flow value (``[a, b]`` gives a
list, ``5`` a number); a field that takes either (``str | list[str]``) keeps
the parsed value only when it is a list or mapping. Validation errors name
the key, the file and, for overridden keys, the environment variable; they
never show the value of a secret (``***``) nor a DSN's password.
"""

from __future__ import annotations

import difflib
import os
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Union

import yaml
from pydantic import BaseModel, SecretStr, ValidationError

from cdc.config.dsn import mask
from cdc.config.models import Config
from cdc.config.options import CONFIG_ENV, DEFAULT_CONFIG
from cdc.errors import ConfigError
from cdc.registry import SOURCE_CONFIGS, TARGET_CONFIGS

ENV_PREFIX = "CDC_"


def load_config(path: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> Config:
    """Read, override from the environment, validate. Raises ConfigError."""
    path = Path(path)
    env = os.environ if env is None else env
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist: give the file with --config FILE or the "
                          f"{CONFIG_ENV} environment variable (default: ./{DEFAULT_CONFIG})", file=str(path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"config file {path} is not valid YAML{where}: {exc}", file=str(path)) from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must hold a mapping at the top level", file=str(path))
    overridden = _apply_env(raw, env)
    return parse_config(raw, str(path), overridden)


def parse_config(raw: dict[str, Any], origin: str = "<dict>", overridden: dict[str, str] | None = None) -> Config:
    overridden = overridden or {}
    try:
        config = Config.model_validate(raw)
    except ValidationError as exc:
        problems = []
        # an unknown key first: a typo also makes the key it misspells "Field required" further down
        errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
        for err in errors:
            key = _dotted(err["loc"])
            where = f"env {overridden[key]}" if key in overridden else origin
            if err["type"] == "extra_forbidden":
                problems.append(f"key '{key}' in {where}: unknown key{_did_you_mean(err['loc'])}")
                continue
            if err["type"] in ("union_tag_invalid", "union_tag_not_found"):  # the kind of a source or target
                key, tags = f"{key}.kind", _kinds(err["loc"])
                said = f"got {err['ctx']['tag']!r}" if err["type"] == "union_tag_invalid" else "missing"
                problems.append(f"key '{key}' in {where}: the kind must be one of {tags} ({said})")
                continue
            value = f" (got {_shown(err)})" if err.get("input") is not None and not isinstance(err["input"], dict) else ""
            problems.append(f"key '{key}' in {where}: {err['msg']}{value}{_login_origins(err, key, origin, overridden)}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems), file=origin,
                          key=_dotted(errors[0]["loc"])) from None
    _check_references(config, origin, overridden)
    return config


def _kinds(loc: tuple[Any, ...]) -> str:
    """The kinds a ``sources[i]`` or ``targets[i]`` takes (for an error at ``loc``)."""
    return ", ".join(repr(k) for k in sorted(SOURCE_CONFIGS if loc[0] == "sources" else TARGET_CONFIGS))


def _did_you_mean(loc: tuple[Any, ...]) -> str:
    """For an unknown key at ``loc``: the closest valid key of the same model (difflib), else the valid keys."""
    path, root = list(loc[:-1]), Config
    if len(path) > 2 and path[0] == "sources" and path[2] in SOURCE_CONFIGS:  # only the keys of that source kind
        path, root = path[3:], SOURCE_CONFIGS[path[2]]
    elif len(path) > 2 and path[0] == "targets" and path[2] in TARGET_CONFIGS:  # only the keys of that target kind
        path, root = path[3:], TARGET_CONFIGS[path[2]]
    models = [t for t in _field_types(path, root) or [] if isinstance(t, type) and issubclass(t, BaseModel)]
    valid = sorted({f.alias or n for m in models for n, f in m.model_fields.items()})
    if not valid:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), valid, n=1, cutoff=0.6)
    parent = _dotted(loc[:-1])
    if close:
        return f"; did you mean '{parent + '.' if parent else ''}{close[0]}'?"
    return f"; valid keys here: {', '.join(valid)}"


def _login_origins(err: Any, key: str, origin: str, overridden: dict[str, str]) -> str:
    """For a login error (cdc.config.credentials) whose other login keys an environment variable set: where each
    of them came from, so "password and password_file each give a password" names the variable and the file
    key (a password from CDC_SOURCES__0__PASSWORD is not in the YAML the user reads)."""
    if err.get("type") != "login":
        return ""
    parent = key.rpartition(".")[0]
    prefix = f"{parent}." if parent else ""
    named = [leaf for leaf in ("password", "password_file", "passwordless") if leaf in err["msg"]]
    if not any(f"{prefix}{leaf}" in overridden for leaf in named):
        return ""
    said = [f"{prefix}{leaf} from env {overridden[prefix + leaf]}" if prefix + leaf in overridden
            else f"{prefix}{leaf} from {origin}" for leaf in named]
    return f" ({'; '.join(said)})"


def _check_references(config: Config, origin: str, overridden: dict[str, str]) -> None:
    """``apply[i].target`` must name a configured target; ``apply[i].source`` a configured source
    when the file configures sources (a config without ``sources:`` is an apply-only config: the
    source names a stream a daemon configured elsewhere writes)."""
    targets, sources = [t.name for t in config.targets], [s.name for s in config.sources]
    problems: list[tuple[str, str]] = []
    for i, job in enumerate(config.apply):
        if job.target not in targets:
            problems.append((f"apply[{i}].target", f"no target named {job.target!r} (targets: {targets})"))
        if sources and job.source not in sources:
            problems.append((f"apply[{i}].source", f"no source named {job.source!r} (sources: {sources})"))
    if problems:
        lines = [f"key '{key}' in {'env ' + overridden[key] if key in overridden else origin}: {msg}"
                 for key, msg in problems]
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines), file=origin, key=problems[0][0])


def _dotted(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif (item in SOURCE_CONFIGS or item in TARGET_CONFIGS) and parts and (parts[-1].endswith("]")
                                                                              or parts[-1] == ".tls"):
            continue  # discriminator tag pydantic inserts for unions (sources[i], targets[i], targets[i].tls)
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts)


def _apply_env(raw: dict[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    """Apply CDC_* overrides in place; return {dotted key: env var name}."""
    overridden: dict[str, str] = {}
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or "__" not in name and name.count("_") < 2:
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX):].split("__")]
        if path[0] not in Config.model_fields:
            continue  # CDC_TEST_KAFKA and friends are not config keys
        node: Any = raw
        loc: list[Any] = []
        for part in path[:-1]:
            key: Any = int(part) if part.isdigit() else part
            if isinstance(node, list):
                if not isinstance(key, int) or key >= len(node):
                    raise ConfigError(f"env {name}: no list item {part} to override", key=name)
                node = node[key]
            else:
                node = node.setdefault(key, {})
            loc.append(key)
        leaf: Any = int(path[-1]) if path[-1].isdigit() else path[-1]
        key = _dotted(tuple(loc + [leaf]))
        node[leaf] = _env_value(env[name], _field_types(loc + [leaf]), name, key)
        overridden[key] = name
    return overridden


def _env_value(text: str, alternatives: list[Any] | None, name: str, key: str) -> Any:
    """The value an environment variable gives a field whose type ``alternatives`` lists (module
    docstring: verbatim for text, YAML for structured values). The value is never echoed."""
    takes_text = alternatives is None or any(_is_text(t) for t in alternatives)
    if takes_text and alternatives and all(_is_text(t) for t in alternatives):
        return text
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        if takes_text:
            return text
        mark = getattr(exc, "problem_mark", None)
        where = f" at column {mark.column + 1}" if mark else ""
        raise ConfigError(f"env {name}: the value of key '{key}' is not a valid YAML value{where}",
                          key=key, env=name) from None
    return parsed if not takes_text or isinstance(parsed, (list, dict)) else text


def _is_text(tp: Any) -> bool:
    if typing.get_origin(tp) is Literal:
        return all(isinstance(a, str) for a in typing.get_args(tp))
    return isinstance(tp, type) and issubclass(tp, (str, SecretStr, os.PathLike))


def _members(tp: Any) -> list[Any]:
    """The alternatives of a type annotation: Annotated unwrapped, unions flattened, None dropped."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return _members(typing.get_args(tp)[0])
    if origin in (Union, types.UnionType):
        return [m for arg in typing.get_args(tp) for m in _members(arg)]
    return [] if tp is type(None) else [tp]


def _field_types(path: list[Any], root: Any = None) -> list[Any] | None:
    """The type alternatives of the field at ``path`` (keys and list indexes from ``root``, else ``Config``, down),
    found by walking the models; None where any value is possible (``Any``, a path off the models).

    A union of models (the ``sources`` kinds, a target's ``tls``) contributes the field from every
    member that has it; a path item naming no field of such a union is a discriminator tag of a
    validation error's location and is passed over.
    """
    current: list[Any] = [root or Config]
    for part in path:
        found: list[Any] = []
        for tp in current:
            origin = typing.get_origin(tp)
            if isinstance(tp, type) and issubclass(tp, BaseModel):
                field = next((f for n, f in tp.model_fields.items() if part in (n, f.alias)), None)
                found += _members(field.annotation) if field is not None else []
            elif origin is list and isinstance(part, int):
                found += _members(typing.get_args(tp)[0])
            elif origin is dict and isinstance(part, str):
                found += _members(typing.get_args(tp)[1])
        if not found:
            if isinstance(part, str) and all(isinstance(t, type) and issubclass(t, BaseModel) for t in current):
                continue
            return None
        if any(t is Any for t in found):
            return None
        current = found
    return current


def _shown(err: Mapping[str, Any]) -> str:
    """The rejected value as a config error shows it: ``***`` for a secret, a DSN masked."""
    alternatives = _field_types(list(err["loc"])) or []
    if any(isinstance(t, type) and issubclass(t, SecretStr) for t in alternatives):
        return "***"
    value = err["input"]
    return repr(mask(value) if isinstance(value, str) else value)
