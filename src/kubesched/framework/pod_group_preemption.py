"""What a PodGroupPostFilter plugin (pod-group preemption) is given and returns (GenericWorkload on).

Upstream's PodGroupPostFilter runs once a pod group's cycle failed as Unschedulable. The plugin
may change the node snapshot while it looks for victims (upstream's MutableSnapshotSharedLister)
and may run the group's scheduling algorithm again on it; the scheduler gives it both here, so a
plugin never reaches into the scheduler's cache.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import CompositePodGroup, PodGroup
from kubesched.framework.cycle_state import PodGroupCycleState
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.placement import ProposedAssignment
from kubesched.framework.status import Status

__all__ = [
    "GroupPreemptor",
    "MutableSnapshot",
    "PodGroupPostFilterResult",
    "PodGroupSchedulingFunc",
]


#: Runs the group's algorithm on the snapshot as it is now and undoes what it assumed: the members
#: it placed, in order (each with the cycle state it was placed with: PreFilter ran with the members
#: before it assumed), and the group's status (None: the group fits).
PodGroupSchedulingFunc = Callable[[], tuple[list[ProposedAssignment], Status | None]]


class MutableSnapshot(Protocol):
    """The node snapshot of this cycle, which a pod-group preemption may change and must restore."""

    def node_info(self, name: str) -> NodeInfo | None: ...

    def remove_pod(self, pi: PodInfo) -> None:
        """Take a pod (a possible victim) off its node."""
        ...

    def add_pod(self, pi: PodInfo) -> None:
        """Put a pod taken off by `remove_pod` back on its node."""
        ...

    def assume(self, assignment: ProposedAssignment) -> Status | None:
        """Place a member on its node and run Reserve for it (a reprieve's trial)."""
        ...

    def forget(self, assignment: ProposedAssignment) -> None:
        """Undo `assume`: Unreserve, then take the member off its node."""
        ...


@dataclass(frozen=True, slots=True)
class GroupPreemptor:
    """The pod group whose cycle failed: its PodGroup (with CompositePodGroup, the root of a tree, a
    composite maybe), its unscheduled members, their nominations, and the failed cycle's shared
    state (what DynamicResources' PodGroupPostFilter reads)."""

    pod_group: PodGroup | CompositePodGroup
    members: list[Pod]
    #: Member pod key -> the node it is nominated to (members without a nomination are absent).
    nominated: dict[str, str] = field(default_factory=dict)
    #: PodGroupPreemptionPolicy on: the PodGroup's `preemptionPolicy` decides, not the pods'.
    group_policy: bool = False
    #: The failed cycle's PodGroupCycleState (None: not kept, as for a composite tree).
    cycle: PodGroupCycleState | None = None


@dataclass(slots=True)
class PodGroupPostFilterResult:
    """Pod-group preemption's outcome: member pod key -> node it is nominated to, and the victims
    (`namespace/name`, for reports)."""

    nominations: dict[str, str] = field(default_factory=dict)
    victims: list[str] = field(default_factory=list)
