"""The one reader for every command: files, stdin, pipes, compression; token-id shapes."""
