"""The oracle target: ``config.py`` (its ``targets[i]`` model), ``target.py`` (the class). Registered by
``TARGET`` and ``CONFIG`` here (streaming/targets/__init__.py finds every package); importing the package
imports no driver."""

TARGET = "streaming.targets.oracle.target:OracleTarget"
CONFIG = "streaming.targets.oracle.config:OracleTargetConfig"
TYPE_MAP = "streaming.targets.oracle.typemap:TYPE_MAP"
