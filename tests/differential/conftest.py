"""The differential tests start their own control plane and upstream kube-scheduler, so they get their
own xdist group: with `--dist loadgroup` one worker runs them while the other runs the integration
group."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.xdist_group("differential"))
