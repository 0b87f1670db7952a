"""The ``--config`` option every command takes, described one way.

Its default is the ``CDC_CONFIG`` environment variable when set, else ``./cdc.yaml``; a file that
does not exist is one error naming both ways to give it (cdc.config.loader.load_config). Kept apart from
cdc.config.models so building the parser does not import pydantic.
"""

from __future__ import annotations

import argparse
import os

CONFIG_ENV = "CDC_CONFIG"
DEFAULT_CONFIG = "cdc.yaml"
CONFIG_HELP = f"the service YAML file (default: ${CONFIG_ENV} when set, else ./{DEFAULT_CONFIG})"


def default_config(env: os._Environ[str] | dict[str, str] | None = None) -> str:
    """``$CDC_CONFIG`` when set and not empty, else ``cdc.yaml`` (in the working directory)."""
    return (os.environ if env is None else env).get(CONFIG_ENV) or DEFAULT_CONFIG


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default=default_config(), metavar="FILE", help=CONFIG_HELP)
