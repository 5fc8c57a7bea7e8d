"""The package version, in one place below every other module."""

__version__ = "0.1.0"
