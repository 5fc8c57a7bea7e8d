"""Many sources -> failure events and request tallies -> summary (polars)."""
