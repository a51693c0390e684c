"""DefaultBinder: binds through the handle; failures become Error statuses."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.registry import instantiate
from kubesched.framework.status import Code
from kubesched.plugins.default_binder import DefaultBinder
from kubesched.testing.builders import make_pod


class FakeHandle:
    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error
        self.bound: list[tuple[str, str]] = []

    def bind(self, pod: Pod, node_name: str) -> None:
        if self.error is not None:
            raise self.error
        self.bound.append((pod.key, node_name))


def _binder(handle: Any) -> DefaultBinder:
    return instantiate(DefaultBinder, handle=handle)  # type: ignore[no-any-return]


def test_bind_calls_handle() -> None:
    handle = FakeHandle()
    status = _binder(handle).bind(CycleState(), make_pod("p", namespace="ns"), "node-1")
    assert status is None
    assert handle.bound == [("ns/p", "node-1")]


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (
            RuntimeError('pods "p" is already assigned to node "node-2"'),
            'pods "p" is already assigned to node "node-2"',
        ),
        (ConnectionError("connection refused"), "connection refused"),
        (TimeoutError(), "binding pod default/p to node node-1: TimeoutError"),
    ],
)
def test_bind_failure_is_error(error: BaseException, message: str) -> None:
    status = _binder(FakeHandle(error)).bind(CycleState(), make_pod("p"), "node-1")
    assert status is not None
    assert status.code == Code.ERROR
    assert status.message() == message
    assert status.error is error or (status.error is not None and status.error.__cause__ is error)


def test_bind_without_handle_is_error() -> None:
    status = DefaultBinder().bind(CycleState(), make_pod("p"), "node-1")
    assert status is not None
    assert status.code == Code.ERROR
    assert "DefaultBinder" in status.message()
