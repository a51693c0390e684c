"""The documentation's commands, run as written.

The kubectl walkthroughs start `make cluster`'s control plane themselves (`python -m
kubesched.harness.controlplane`), so they get their own xdist group: with `--dist loadgroup` one
worker runs them while the other runs the integration group. The commands that need no cluster
are spread over both workers, one doc per test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

WALKTHROUGHS = Path(__file__).with_name("test_kubectl_walkthroughs.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path == WALKTHROUGHS:
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.xdist_group("docs"))
