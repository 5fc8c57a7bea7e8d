"""Judgements on a token stream: diagnose, recover, repro, render, grammar and its check."""
