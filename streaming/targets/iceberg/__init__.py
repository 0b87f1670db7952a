"""The iceberg target: ``target.py`` (the class). Registered by this package's ``TARGET`` (streaming/targets/__init__.py
finds every package here); importing the package imports no driver."""

TARGET = "streaming.targets.iceberg.target:IcebergTarget"
