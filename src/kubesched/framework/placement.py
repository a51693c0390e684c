"""Placements of a pod group (TopologyAwareWorkloadScheduling): the types and the two extension
points that make and rank them, run with upstream's semantics.

A **placement** is a set of nodes a pod group may be placed within (all of a rack, a zone). With the
gate on, the pod-group cycle asks the profile's PlacementGenerate plugin for placements inside the
whole cluster, tries the group in each one alone (all or nothing), then has the PlacementScore
plugins rank the placements where it fitted and keeps the best. Upstream's framework runs only the
first PlacementGenerate plugin; with none, the one placement is every node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import CompositePodGroup, PodGroup
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.node_table import NodeSet
from kubesched.framework.plugin_calls import PluginReturnError, checked_status, shown
from kubesched.framework.status import Code, Status
from kubesched.framework.types import MAX_NODE_SCORE, MIN_NODE_SCORE

__all__ = [
    "NO_FEASIBLE_PLACEMENTS",
    "Placement",
    "PlacementPoints",
    "PlacementScore",
    "PodGroupAssignments",
    "ProposedAssignment",
]

#: What the framework says when the PlacementGenerate plugin proposes nothing.
NO_FEASIBLE_PLACEMENTS = "no feasible placements found"


@dataclass(frozen=True, slots=True)
class Placement:
    """A candidate set of nodes for a pod group; `name` is for messages (a topology domain's value,
    "" for the whole cluster)."""

    name: str
    nodes: NodeSet


@dataclass(frozen=True, slots=True)
class ProposedAssignment:
    """A member of the group and the node the trial in one placement found for it."""

    pod: Pod
    node_name: str
    #: The member's CycleState from that trial.
    state: CycleState


@dataclass(frozen=True, slots=True)
class PodGroupAssignments:
    """One feasible placement and the members placed in it (the pods already scheduled excluded)."""

    placement: Placement
    proposed: tuple[ProposedAssignment, ...]


@dataclass(slots=True)
class PlacementScore:
    """One plugin's score of one placement; NormalizePlacementScore rewrites `score` in place."""

    placement: Placement
    score: int


class PlacementPoints:
    """A profile's PlacementGenerate and PlacementScore plugins, with their weights."""

    def __init__(
        self,
        generators: Sequence[tuple[str, Any]],
        scorers: Sequence[tuple[str, Any]],
        weights: dict[str, int],
    ) -> None:
        self._generators = list(generators)
        self._scorers = list(scorers)
        self._weights = weights

    def generate(
        self, state: CycleState, pod_group: PodGroup | CompositePodGroup, nodes: NodeSet
    ) -> tuple[list[Placement], Status | None]:
        """upstream's RunPlacementGeneratePlugins: the first plugin's placements inside `nodes`
        (only the first runs), or `nodes` as the one placement when the profile has none."""
        parent = Placement("", nodes)
        if not self._generators:
            return [parent], None
        name, plugin = self._generators[0]
        try:
            out = plugin.generate_placements(state, pod_group, parent)
            if isinstance(out, Status) or out is None:
                status = checked_status(out, "PlacementGenerate")
                if status is None or status.is_success():
                    raise PluginReturnError("returned success without placements from PlacementGenerate")
                return [], status.with_plugin(name)
            placements = list(cast(Sequence[Placement], out))
            if not all(isinstance(p, Placement) for p in placements):
                raise PluginReturnError(
                    f"returned {shown(out)} from PlacementGenerate; expected a list of Placement or a Status"
                )
        except Exception as exc:  # a plugin's bug fails the group, never the scheduler
            return [], Status.as_error(f'running PlacementGenerate plugin "{name}": {exc}').with_plugin(name)
        if not placements:
            return [], Status(Code.UNSCHEDULABLE, NO_FEASIBLE_PLACEMENTS).with_plugin(name)
        return placements, None

    def score(
        self,
        state: CycleState,
        pod_group: PodGroup | CompositePodGroup,
        assignments: Sequence[PodGroupAssignments],
        states: Sequence[CycleState],
    ) -> tuple[list[int], Status | None]:
        """upstream's RunPlacementScorePlugins: each feasible placement's weighted total over the
        plugins (score, normalize, weight), aligned with `assignments`; `states[i]` is the
        placement's own CycleState. An Error status names the plugin that failed."""
        per_plugin: list[tuple[str, Any, list[PlacementScore]]] = []
        for name, plugin in self._scorers:
            scores = []
            for i, pga in enumerate(assignments):
                try:
                    value, status = _score_result(plugin.score_placement(states[i], pod_group, pga))
                except Exception as exc:
                    return [], _failed("running PlacementScore plugins", name, str(exc))
                if status is not None and not status.is_success():
                    return [], _failed("running PlacementScore plugins", name, status.message())
                scores.append(PlacementScore(pga.placement, value))
            per_plugin.append((name, plugin, scores))
        normalizing = "running NormalizePlacementScore on PlacementScore plugins"
        for name, plugin, scores in per_plugin:
            normalize = getattr(plugin, "normalize_placement_score", None)
            if normalize is None:
                continue
            try:
                status = checked_status(normalize(state, pod_group, scores), "NormalizePlacementScore")
            except Exception as exc:
                return [], _failed(normalizing, name, str(exc))
            if status is not None and not status.is_success():
                return [], _failed(normalizing, name, status.message())
        totals = [0] * len(assignments)
        for name, _plugin, scores in per_plugin:
            weight = self._weights.get(name, 1)
            for i, s in enumerate(scores):
                if s.score > MAX_NODE_SCORE or s.score < MIN_NODE_SCORE:
                    return [], _failed(
                        "applying score defaultWeights on PlacementScore plugins",
                        name,
                        f"returns an invalid score {s.score}, it should in the range of "
                        f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                        failed_with=False,
                    )
                totals[i] += s.score * weight
        return totals, None


def _score_result(out: object) -> tuple[int, Status | None]:
    """ScorePlacement returns an int, or (int, Status or None)."""
    if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], int):
        return out[0], checked_status(out[1], "PlacementScore")
    if isinstance(out, int) and not isinstance(out, bool):
        return out, None
    raise PluginReturnError(
        f"returned {shown(out)} from PlacementScore; expected an int or (int, Status or None)"
    )


def _failed(running: str, plugin: str, detail: str, *, failed_with: bool = True) -> Status:
    """upstream's texts: `<running>: plugin "X" failed with: <detail>` (or `plugin "X" <detail>`)."""
    joint = "failed with: " if failed_with else ""
    return Status.as_error(f'{running}: plugin "{plugin}" {joint}{detail}').with_plugin(plugin)
