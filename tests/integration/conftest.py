"""Fixtures for tests against a real kube-apiserver + etcd (see kubesched.harness.controlplane).

One control plane per test session (per xdist worker): starting it costs seconds, and tests stay
independent by using their own namespace and uniquely named nodes. Every test in this directory is
marked ``integration`` (deselect with ``-m "not integration"``) and put in one xdist group, so with
``--dist loadgroup`` a parallel run starts one control plane, not one per worker.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import ApiClient, create_fake_nodes, create_namespace

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.integration)
            if item.get_closest_marker("xdist_group") is None:  # a module may name a group of its own
                item.add_marker(pytest.mark.xdist_group("control-plane"))


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """etcd + kube-apiserver, started once; builds the binaries first if the cache is cold."""
    with ControlPlane() as cp:
        yield cp


@pytest.fixture(scope="session")
def api(control_plane: ControlPlane) -> Iterator[ApiClient]:
    with ApiClient.for_control_plane(control_plane) as client:
        yield client


@pytest.fixture(scope="session")
def fake_node_names(api: ApiClient) -> list[str]:
    """50 Ready fake nodes shared by the session (nodes are cluster-scoped; tests only read them)."""
    return create_fake_nodes(api, 50, prefix="it-node-", labels={"kubesched.test/fake": "true"})


@pytest.fixture
def namespace(api: ApiClient) -> str:
    """A fresh namespace per test, so tests never see each other's pods or events."""
    name = f"it-{uuid.uuid4().hex[:10]}"
    create_namespace(api, name)
    return name
