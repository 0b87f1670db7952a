"""A transaction-aware consumer of the ordered change stream (filled in by the next commits)."""
