"""The command line: the typer app, shared options, one error funnel, one module per command."""
