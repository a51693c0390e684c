"""Helpers for tests, benchmarks and examples: object builders (and later the local control plane)."""
