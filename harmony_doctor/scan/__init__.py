"""Scanning: the byte-level core and what interprets its results."""
