"""Configuration: the pydantic models, option helpers, credentials, TLS, Kafka settings and DSNs."""
