"""One module per subcommand; each registers itself on cli.app."""
