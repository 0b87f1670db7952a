"""The change-stream contract: events, record envelope, serde, sequence rule, stream structure, snapshot marks, resync ranges."""
