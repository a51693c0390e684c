"""PodGroupPodsCount: prefer the placement that holds more of a pod group's pods
(TopologyAwareWorkloadScheduling, v1.37).

A placement's raw score is the group's pods already scheduled (assumed or bound) plus the members
the trial placed in it. Normalization scales by the best placement's count, not by minCount, so a
placement one pod short scores close to the best rather than far below it.
"""

from __future__ import annotations

from typing import ClassVar

from kubesched.api.scheduling_groups import CompositePodGroup, PodGroup
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.group_forest import ForestLookup, group_key
from kubesched.framework.interfaces import Handle, PlacementScoreExtensions, PlacementScorePlugin
from kubesched.framework.placement import PlacementScore, PodGroupAssignments
from kubesched.framework.pod_groups import PodGroupLookup
from kubesched.framework.status import Status
from kubesched.framework.types import MAX_NODE_SCORE, MIN_NODE_SCORE

__all__ = ["PodGroupPodsCount"]


class PodGroupPodsCount(PlacementScorePlugin, PlacementScoreExtensions):
    """PlacementScore: the group's pods a placement would hold, scaled to the best placement."""

    name: ClassVar[str] = "PodGroupPodsCount"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle
        lookup: object = handle
        self._groups: PodGroupLookup | None = lookup if isinstance(lookup, PodGroupLookup) else None
        self._forest: ForestLookup | None = lookup if isinstance(lookup, ForestLookup) else None

    def score_placement(
        self, state: CycleState, pod_group: PodGroup | CompositePodGroup, assignments: PodGroupAssignments
    ) -> int | tuple[int, Status | None]:
        """Scheduled pods of the group (of every PodGroup under a composite) plus the members
        proposed in this placement."""
        forest = None if self._forest is None else self._forest.group_forest()
        if forest is not None:
            scheduled = sum(s.scheduled_count() for s in forest.states_under(group_key(pod_group)))
            return scheduled + len(assignments.proposed)
        namespace, name = pod_group.metadata.namespace or "default", pod_group.metadata.name
        group = None if self._groups is None else self._groups.pod_group_state(namespace, name)
        if group is None:
            return 0, Status.as_error(f"pod group state not found for pod group {namespace}/{name}")
        return group.scheduled_count() + len(assignments.proposed)

    def normalize_placement_score(
        self, state: CycleState, pod_group: PodGroup | CompositePodGroup, scores: list[PlacementScore]
    ) -> Status | None:
        """Each count times 100 over the highest count (an Error when every count is 0)."""
        best = max((s.score for s in scores), default=0)
        if best == 0:
            return Status.as_error("no pods from pod group are assigned to any of the candidate placements")
        for s in scores:
            s.score = MIN_NODE_SCORE + s.score * (MAX_NODE_SCORE - MIN_NODE_SCORE) // best
        return None
