"""The mysql target: ``config.py`` (its ``targets[i]`` model), ``target.py`` (the class). Registered by
``TARGET`` and ``CONFIG`` here (streaming/targets/__init__.py finds every package); importing the package
imports no driver."""

TARGET = "streaming.targets.mysql.target:MySqlTarget"
CONFIG = "streaming.targets.mysql.config:MySqlTargetConfig"
TYPE_MAP = "streaming.targets.mysql.typemap:TYPE_MAP"
