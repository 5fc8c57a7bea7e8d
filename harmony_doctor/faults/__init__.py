"""Failure forms and diagnosis codes: the one catalogue, its rules, and classification."""
