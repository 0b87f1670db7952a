"""The delta target: ``config.py`` (its ``targets[i]`` model), ``target.py`` (the class). Registered by
``TARGET`` and ``CONFIG`` here (streaming/targets/__init__.py finds every package); importing the package
imports no driver."""

TARGET = "streaming.targets.delta.target:DeltaTarget"
CONFIG = "streaming.targets.delta.config:DeltaTargetConfig"
ARROW_TYPE = "streaming.targets.delta.typemap:arrow_type"
