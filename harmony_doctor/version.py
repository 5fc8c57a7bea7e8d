"""The package version and the command's name, in one place below every other module."""

__version__ = "0.1.0"
PROGRAM = "harmony-doctor"  # the command's name, in every line it writes to stderr
