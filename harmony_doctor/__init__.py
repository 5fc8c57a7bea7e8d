"""harmony-doctor: an offline doctor for gpt-oss Harmony format failures."""

__version__ = "0.1.0"
