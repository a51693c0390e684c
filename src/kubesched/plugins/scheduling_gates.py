"""SchedulingGates: keep a pod out of the scheduling queue while it has scheduling gates."""

from __future__ import annotations

from typing import ClassVar

from kubesched.api.objects import Pod
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, Resource, always_queue
from kubesched.framework.interfaces import EnqueueExtensions, PreEnqueuePlugin
from kubesched.framework.status import Status

__all__ = ["SchedulingGates"]


class SchedulingGates(PreEnqueuePlugin, EnqueueExtensions):
    """PreEnqueue: reject a pod whose `spec.schedulingGates` is non-empty.

    A gated pod waits in the unschedulable pool (counted as `gated`) until the controller that owns
    the gates removes the last one; that pod update is the event that lets it be queued again.
    """

    name: ClassVar[str] = "SchedulingGates"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()

    def pre_enqueue(self, pod: Pod) -> Status | None:
        gates = pod.spec.scheduling_gates
        if not gates:
            return None
        names = " ".join(gate.name for gate in gates)
        return Status.unschedulable_and_unresolvable(f"waiting for scheduling gates: [{names}]")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As v1.37.2: the pending pod's last scheduling gate removed."""
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.TARGET_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                always_queue,
            )
        ]
