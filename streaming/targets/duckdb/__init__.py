"""The duckdb target: ``config.py`` (its ``targets[i]`` model), ``target.py`` (the class). Registered by
``TARGET`` and ``CONFIG`` here (streaming/targets/__init__.py finds every package); importing the package
imports no driver."""

TARGET = "streaming.targets.duckdb.target:DuckDbTarget"
CONFIG = "streaming.targets.duckdb.config:DuckDbTargetConfig"
TYPE_MAP = "streaming.targets.duckdb.typemap:TYPE_MAP"
