"""Benchmarks: scripts that start servers, run a load and print figures (not tests)."""
