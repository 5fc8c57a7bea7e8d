"""Tests of examples/: the Ray and Dask recipes, run as a user runs them."""
