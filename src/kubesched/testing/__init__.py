"""Helpers for tests, benchmarks and examples: object builders, the local control plane, fake nodes."""
