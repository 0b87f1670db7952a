"""The postgres target: ``config.py`` (its ``targets[i]`` model), ``target.py`` (the class). Registered by
``TARGET`` and ``CONFIG`` here (streaming/targets/__init__.py finds every package); importing the package
imports no driver."""

TARGET = "streaming.targets.postgres.target:PostgresTarget"
CONFIG = "streaming.targets.postgres.config:PostgresTargetConfig"
TYPE_MAP = "streaming.targets.postgres.typemap:TYPE_MAP"
