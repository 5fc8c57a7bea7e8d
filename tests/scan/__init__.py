"""Tests of the scan package."""
