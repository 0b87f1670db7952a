"""The iceberg target: ``config.py`` (its ``targets[i]`` model), ``target.py`` (the class). Registered by
``TARGET`` and ``CONFIG`` here (streaming/targets/__init__.py finds every package); importing the package
imports no driver."""

TARGET = "streaming.targets.iceberg.target:IcebergTarget"
CONFIG = "streaming.targets.iceberg.config:IcebergTargetConfig"
ARROW_TYPE = "streaming.targets.iceberg.typemap:arrow_type"
