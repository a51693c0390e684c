"""The differential tests start their own control plane, upstream kube-scheduler and `kubesched run`,
so they get their own xdist group: with `--dist loadgroup` one worker runs them while the other runs
the integration group. The session fixture lets every test of the group share one of each."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesched.harness.differential.run import Harnesses, harnesses

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.xdist_group("differential"))


@pytest.fixture(scope="session")
def differential() -> Iterator[Harnesses]:
    """A control plane with kube-scheduler v1.37.2 and `kubesched run` on it."""
    with harnesses(live=True) as h:
        yield h
