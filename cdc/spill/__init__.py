"""Spilling big transactions to disk: the spill store, its directories and its chunk codec."""
