"""The PlacementGenerate and PlacementScore extension points as upstream's framework runs them:
only the first generator, the whole cluster without one, weights, normalization, and the texts of
what goes wrong."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kubesched.api.meta import ObjectMeta
from kubesched.api.scheduling_groups import PodGroup
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.placement import (
    NO_FEASIBLE_PLACEMENTS,
    Placement,
    PlacementPoints,
    PlacementScore,
    PodGroupAssignments,
)
from kubesched.framework.status import Code, Status
from kubesched.testing.builders import make_node

GROUP = PodGroup(metadata=ObjectMeta(name="g", namespace="default"))
TABLE = NodeTable([NodeInfo(make_node(f"n{i}")) for i in range(4)])


class Halves:
    """Two placements: the first two nodes and the last two."""

    def generate_placements(
        self, state: CycleState, pod_group: PodGroup, parent: Placement
    ) -> list[Placement]:
        rows = parent.nodes.rows
        return [Placement("low", NodeSet(TABLE, rows[:2])), Placement("high", NodeSet(TABLE, rows[2:]))]


class Answer:
    """A generator that answers what it is given."""

    def __init__(self, answer: object) -> None:
        self.answer = answer

    def generate_placements(self, state: CycleState, pod_group: PodGroup, parent: Placement) -> object:
        return self.answer


class Fixed:
    """Scores each placement by a table of its name; optionally normalizes by halving."""

    def __init__(self, scores: dict[str, object], halve: bool = False) -> None:
        self.scores = scores
        if halve:
            self.normalize_placement_score = self._halve

    def score_placement(
        self, state: CycleState, pod_group: PodGroup, assignments: PodGroupAssignments
    ) -> object:
        return self.scores[assignments.placement.name]

    def _halve(self, state: CycleState, pod_group: PodGroup, scores: list[PlacementScore]) -> Status | None:
        for s in scores:
            s.score //= 2
        return None


def assignments(*names: str) -> list[PodGroupAssignments]:
    return [PodGroupAssignments(Placement(n, TABLE.all()), ()) for n in names]


def score(points: PlacementPoints, *names: str) -> tuple[list[int], Status | None]:
    return points.score(CycleState(), GROUP, assignments(*names), [CycleState() for _ in names])


def test_without_a_generator_the_one_placement_is_every_node() -> None:
    (only,), status = PlacementPoints([], [], {}).generate(CycleState(), GROUP, TABLE.all())
    assert status is None and only.name == "" and only.nodes.names == TABLE.names


def test_only_the_first_generator_runs() -> None:
    points = PlacementPoints([("A", Halves()), ("B", Answer(Status.as_error("never")))], [], {})
    placements, status = points.generate(CycleState(), GROUP, TABLE.all())
    assert status is None
    assert [(p.name, p.nodes.names) for p in placements] == [("low", ["n0", "n1"]), ("high", ["n2", "n3"])]


@pytest.mark.parametrize(
    ("answer", "code", "message"),
    [
        ([], Code.UNSCHEDULABLE, NO_FEASIBLE_PLACEMENTS),
        (Status.unschedulable("not here"), Code.UNSCHEDULABLE, "not here"),
        ([1], Code.ERROR, 'running PlacementGenerate plugin "A": returned list ([1]) from PlacementGenerate'),
    ],
)
def test_a_generator_that_proposes_nothing_fails_the_group_naming_itself(
    answer: object, code: Code, message: str
) -> None:
    placements, status = PlacementPoints([("A", Answer(answer))], [], {}).generate(
        CycleState(), GROUP, TABLE.all()
    )
    assert placements == [] and status is not None
    assert status.code == code and status.plugin == "A"
    assert status.message().startswith(message)


def test_totals_are_normalized_scores_times_weights() -> None:
    points = PlacementPoints(
        [], [("A", Fixed({"x": 80, "y": 40}, halve=True)), ("B", Fixed({"x": 10, "y": 70}))], {"A": 3, "B": 1}
    )
    assert score(points, "x", "y") == ([40 * 3 + 10, 20 * 3 + 70], None)


@pytest.mark.parametrize(
    ("scorer", "message"),
    [
        (
            Fixed({"x": (0, Status.as_error("boom"))}),
            'running PlacementScore plugins: plugin "A" failed with: boom',
        ),
        (
            Fixed({"x": 101}),
            'applying score defaultWeights on PlacementScore plugins: plugin "A" returns an invalid '
            "score 101, it should in the range of [0, 100] after normalizing",
        ),
        (Fixed({"x": "7"}), 'running PlacementScore plugins: plugin "A" failed with: returned str'),
    ],
)
def test_a_scorer_that_fails_or_scores_out_of_range_is_an_error(scorer: Fixed, message: str) -> None:
    totals, status = score(PlacementPoints([], [("A", scorer)], {"A": 1}), "x")
    assert totals == [] and status is not None and status.code == Code.ERROR
    assert status.message().startswith(message)


def test_a_normalizer_that_fails_is_an_error_naming_the_plugin() -> None:
    def refuse(state: CycleState, pod_group: PodGroup, scores: Sequence[PlacementScore]) -> Status:
        return Status.as_error("no")

    scorer = Fixed({"x": 1})
    scorer.normalize_placement_score = refuse  # type: ignore[assignment]
    _, status = score(PlacementPoints([], [("A", scorer)], {}), "x")
    assert status is not None
    assert (
        status.message()
        == 'running NormalizePlacementScore on PlacementScore plugins: plugin "A" failed with: no'
    )
