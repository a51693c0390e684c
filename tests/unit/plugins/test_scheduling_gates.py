"""SchedulingGates PreEnqueue (upstream
`pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go`)."""

from __future__ import annotations

import pytest

from kubesched.framework.events import ActionType, ClusterEvent, QueueingHint, Resource
from kubesched.framework.interfaces import extension_points_of
from kubesched.framework.status import Code
from kubesched.plugins.scheduling_gates import SchedulingGates
from kubesched.testing.builders import make_pod


@pytest.mark.parametrize(
    ("gates", "message"),
    [
        ([], None),
        (["gate-a"], "waiting for scheduling gates: [gate-a]"),
        (["gate-a", "gate-b"], "waiting for scheduling gates: [gate-a gate-b]"),
        (["example.com/b", "example.com/a"], "waiting for scheduling gates: [example.com/b example.com/a]"),
    ],
)
def test_pre_enqueue(gates: list[str], message: str | None) -> None:
    pod = make_pod("p", spec={"schedulingGates": [{"name": g} for g in gates]})
    status = SchedulingGates().pre_enqueue(pod)
    if message is None:
        assert status is None
    else:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.message() == message


def test_registers_gates_eliminated_event() -> None:
    """v1.37.2: the pending pod's last gate removed, with a hint that always queues."""
    (reg,) = SchedulingGates().events_to_register()
    assert reg.event == ClusterEvent(Resource.TARGET_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    assert reg.event.label == "TargetPodUpdatePodSchedulingGatesEliminated"
    assert reg.hint is not None
    assert reg.hint(make_pod("p"), make_pod("p"), make_pod("p")) is QueueingHint.QUEUE


def test_only_pre_enqueue_extension_point() -> None:
    assert SchedulingGates.name == "SchedulingGates"
    assert extension_points_of(SchedulingGates) == ["preEnqueue"]
