"""Extension-point semantics of the Framework runtime, each with a plugin that makes it observable."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pytest

from kubesched.framework import (
    BatchFilterResult,
    Code,
    CycleState,
    NodeInfo,
    NodeSet,
    PreFilterResult,
    QueuedPodInfo,
    Resource,
    Status,
)
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import Framework, FrameworkError
from kubesched.framework.sampling import num_feasible_nodes_to_find
from kubesched.framework.types import MAX_PERMIT_TIMEOUT
from kubesched.testing.builders import make_node, make_pod, make_table

CALLS: list[str] = []


class Sort:
    name = "Sort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return a.timestamp < b.timestamp


class Binder:
    name = "Binder"

    def bind(self, state: CycleState, pod: Any, node_name: str) -> Status | None:
        CALLS.append(f"bind:{node_name}")
        return None


def make_plugin(name: str, **methods: Any) -> type:
    """A plugin class named `name` whose methods are the given callables (self is ignored)."""
    body: dict[str, Any] = {"name": name}
    for method, fn in methods.items():
        body[method] = (lambda f: lambda self, *a: f(*a))(fn)
    return type(name, (), body)


def build(
    points: dict[str, list[str]], plugins: list[type], weights: dict[str, int] | None = None
) -> Framework:
    registry = Registry([Sort, Binder, *plugins])
    spec = {"queueSort": [("Sort", 1)], "bind": [("Binder", 1)]}
    for point, names in points.items():
        spec[point] = [(n, (weights or {}).get(n, 1)) for n in names]
    return Framework("test", spec, {}, registry, handle=None)  # type: ignore[arg-type]


NODES = [make_node(f"n{i}", cpu=str(i + 1)) for i in range(4)]
POD = make_pod("p", cpu="100m")


def all_nodes() -> NodeSet:
    return make_table(NODES).all()


def reject_on(names: set[str], reason: str, code: Code = Code.UNSCHEDULABLE) -> Any:
    return lambda state, pod, ni: Status(code, reason) if ni.name in names else None


# ------------------------------------------------------------------ construction


def test_profile_needs_exactly_one_queue_sort_and_a_binder() -> None:
    registry = Registry([Sort, Binder])
    with pytest.raises(FrameworkError, match="exactly one queueSort"):
        Framework("p", {"bind": [("Binder", 1)]}, {}, registry, handle=None)  # type: ignore[arg-type]
    with pytest.raises(FrameworkError, match="at least one bind"):
        Framework("p", {"queueSort": [("Sort", 1)]}, {}, registry, handle=None)  # type: ignore[arg-type]


def test_the_plugins_that_observe_other_objects_are_found_once() -> None:
    seen: list[tuple[Any, ...]] = []
    observer = make_plugin("Observer", filter=lambda *a: None, on_cluster_object=lambda *a: seen.append(a))
    plain = make_plugin("Plain", filter=lambda *a: None)
    fwk = build({"filter": ["Plain", "Observer"]}, [observer, plain])
    assert [type(p).__name__ for p in fwk.object_observers] == ["Observer"]
    fwk.object_observers[0].on_cluster_object(Resource.PERSISTENT_VOLUME, None, "pv")
    assert seen == [(Resource.PERSISTENT_VOLUME, None, "pv")]


def test_plugin_at_a_point_it_does_not_implement_is_refused() -> None:
    with pytest.raises(FrameworkError, match="does not extend filter"):
        build({"filter": ["Sort"]}, [])


def test_one_instance_per_plugin_across_points() -> None:
    P = make_plugin("P", filter=lambda *a: None, score=lambda *a: 1)
    fwk = build({"filter": ["P"], "score": ["P"]}, [P])
    assert len([n for n in fwk.plugins if n == "P"]) == 1
    assert fwk.plugins_at("filter") == ["P"] and fwk.plugins_at("score") == ["P"]


# ------------------------------------------------------------------ PreFilter


def test_prefilter_skip_removes_the_coupled_filter() -> None:
    P = make_plugin(
        "P", pre_filter=lambda *a: (None, Status.skip()), filter=lambda *a: Status.unschedulable("no")
    )
    fwk = build({"preFilter": ["P"], "filter": ["P"]}, [P])
    state = CycleState()
    _, status, _ = fwk.run_pre_filter(state, POD, all_nodes())
    assert status is None and state.skip_filter_plugins == {"P"}
    outcome = fwk.run_filter(state, POD, all_nodes())
    assert outcome.feasible.all()


def test_prefilter_unresolvable_short_circuits_but_unschedulable_keeps_running() -> None:
    seen: list[str] = []
    A = make_plugin("A", pre_filter=lambda *a: seen.append("A") or Status.unschedulable("a says no"))
    B = make_plugin("B", pre_filter=lambda *a: seen.append("B") or None)
    C = make_plugin("C", pre_filter=lambda *a: seen.append("C") or Status.unschedulable_and_unresolvable("c"))
    fwk = build({"preFilter": ["A", "B"]}, [A, B])
    _, status, rejected = fwk.run_pre_filter(CycleState(), POD, all_nodes())
    assert seen == ["A", "B"] and status is not None and status.message() == "a says no"
    assert rejected == {"A"}
    seen.clear()
    fwk = build({"preFilter": ["C", "A", "B"]}, [A, B, C])
    _, status, _ = fwk.run_pre_filter(CycleState(), POD, all_nodes())
    assert seen == ["C"] and status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_prefilter_error_names_the_plugin() -> None:
    A = make_plugin("A", pre_filter=lambda *a: Status.as_error("boom"))
    fwk = build({"preFilter": ["A"]}, [A])
    _, status, _ = fwk.run_pre_filter(CycleState(), POD, all_nodes())
    assert status is not None and status.code == Code.ERROR
    assert status.message() == 'running PreFilter plugin "A": boom'


@pytest.mark.parametrize(
    ("sets", "expected_names", "message"),
    [
        ([{"n0", "n1"}, {"n1", "n2"}], {"n1"}, None),
        ([{"n0"}, {"n2"}], None, "node(s) didn't satisfy plugin(s) [A B] simultaneously"),
        ([set()], None, "node(s) didn't satisfy plugin A"),
        ([None, {"n3"}], {"n3"}, None),
    ],
)
def test_prefilter_results_intersect(sets: list[Any], expected_names: Any, message: str | None) -> None:
    plugins = []
    for name, names in zip("AB", sets, strict=False):
        result = PreFilterResult(None if names is None else frozenset(names))
        plugins.append(make_plugin(name, pre_filter=lambda *a, r=result: (r, None)))
    fwk = build({"preFilter": [p.name for p in plugins]}, plugins)
    result, status, _ = fwk.run_pre_filter(CycleState(), POD, all_nodes())
    if message is None:
        assert status is None and result is not None and result.node_names == expected_names
    else:
        assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.message() == message


# ------------------------------------------------------------------ Filter


def test_filter_keeps_the_first_rejecting_plugin_per_node_across_batch_and_per_node_forms() -> None:
    per_node_calls: list[str] = []

    def b_filter(state: Any, pod: Any, ni: NodeInfo) -> Status | None:
        per_node_calls.append(ni.name)
        return Status.unschedulable("B rejects") if ni.name in {"n1", "n2"} else None

    class Batch:
        name = "A"

        def filter_nodes(self, state: Any, pod: Any, nodes: NodeSet) -> BatchFilterResult:
            mask = np.array([n != "n1" for n in nodes.names])
            return BatchFilterResult.from_mask(mask, Status.unschedulable("A rejects"))

    B = make_plugin("B", filter=b_filter)
    C = make_plugin("C", filter=reject_on({"n0", "n1", "n2", "n3"}, "C rejects"))
    fwk = build({"filter": ["A", "B", "C"]}, [Batch, B, C])
    outcome = fwk.run_filter(CycleState(), POD, all_nodes())
    statuses = outcome.node_to_status()
    assert {n: (s.plugin, s.message()) for n, s in statuses.items()} == {
        "n0": ("C", "C rejects"),
        "n1": ("A", "A rejects"),
        "n2": ("B", "B rejects"),
        "n3": ("C", "C rejects"),
    }
    assert per_node_calls == ["n0", "n2", "n3"]  # per-node plugin only sees nodes still feasible


def test_filter_reads_any_negative_batch_code_as_a_pass_and_keeps_the_plugins_own_codes() -> None:
    """The first plugin to reject anyone hands its codes over as the outcome's: passes (any
    negative code) become -1, rejections keep their index into its statuses."""

    class Batch:
        name = "A"

        def filter_nodes(self, state: Any, pod: Any, nodes: NodeSet) -> BatchFilterResult:
            codes = np.array([-7, 1, -1, 0][: len(nodes)], dtype=np.int32)
            return BatchFilterResult(codes, [Status.unschedulable("zero"), Status.unschedulable("one")])

    outcome = build({"filter": ["A"]}, [Batch]).run_filter(CycleState(), POD, all_nodes())
    assert outcome.status_idx.tolist() == [-1, 1, -1, 0]
    assert {n: s.message() for n, s in outcome.node_to_status().items()} == {"n1": "one", "n3": "zero"}


def test_filter_error_aborts_the_evaluation() -> None:
    A = make_plugin("A", filter=lambda s, p, ni: Status.as_error("disk on fire") if ni.name == "n2" else None)
    fwk = build({"filter": ["A"]}, [A])
    outcome = fwk.run_filter(CycleState(), POD, all_nodes())
    assert outcome.error is not None and outcome.error.message() == 'running "A" filter plugin: disk on fire'


def test_filter_exception_becomes_an_error_status() -> None:
    A = make_plugin("A", filter=lambda *a: 1 / 0)
    outcome = build({"filter": ["A"]}, [A]).run_filter(CycleState(), POD, all_nodes())
    assert outcome.error is not None and "division by zero" in outcome.error.message()


# ------------------------------------------------------------------ PostFilter


def test_postfilter_runs_until_success_and_concatenates_unschedulable_reasons() -> None:
    A = make_plugin("A", post_filter=lambda *a: (None, Status.unschedulable("a: nothing")))
    B = make_plugin("B", post_filter=lambda *a: (None, Status.unschedulable("b: nothing")))
    fwk = build({"postFilter": ["A", "B"]}, [A, B])
    _, status = fwk.run_post_filter(CycleState(), POD, {})
    assert status.code == Code.UNSCHEDULABLE and status.message() == "a: nothing, b: nothing"

    from kubesched.framework.types import PostFilterResult

    C = make_plugin("C", post_filter=lambda *a: (PostFilterResult("n1"), None))
    fwk = build({"postFilter": ["A", "C", "B"]}, [A, B, C])
    result, status = fwk.run_post_filter(CycleState(), POD, {})
    assert status.is_success() and status.plugin == "C" and result is not None
    assert result.nominated_node_name == "n1"


def test_postfilter_unresolvable_stops() -> None:
    A = make_plugin("A", post_filter=lambda *a: (None, Status.unschedulable_and_unresolvable("stop")))
    B = make_plugin("B", post_filter=lambda *a: CALLS.append("B-called") or (None, None))
    CALLS.clear()
    _, status = build({"postFilter": ["A", "B"]}, [A, B]).run_post_filter(CycleState(), POD, {})
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and "B-called" not in CALLS


# ------------------------------------------------------------------ PreScore / Score


def test_prescore_skip_skips_the_score_and_weights_multiply() -> None:
    A = make_plugin("A", pre_score=lambda *a: Status.skip(), score=lambda s, p, ni: 100)
    B = make_plugin("B", score=lambda s, p, ni: int(ni.name[1]) * 10)
    fwk = build({"preScore": ["A"], "score": ["A", "B"]}, [A, B], weights={"B": 3})
    state = CycleState()
    assert fwk.run_pre_score(state, POD, all_nodes()) is None
    outcome = fwk.run_score(state, POD, all_nodes())
    assert outcome.error is None and "A" not in outcome.by_plugin
    assert outcome.totals.tolist() == [0, 30, 60, 90]


def test_normalize_score_runs_before_weights() -> None:
    def normalize(state: Any, pod: Any, nodes: NodeSet, scores: Any) -> None:
        scores[:] = scores * 100 // scores.max()

    A = make_plugin("A", score=lambda s, p, ni: int(ni.name[1]) + 1, normalize_score=normalize)
    outcome = build({"score": ["A"]}, [A], weights={"A": 2}).run_score(CycleState(), POD, all_nodes())
    assert outcome.by_plugin["A"].tolist() == [25, 50, 75, 100]
    assert outcome.totals.tolist() == [50, 100, 150, 200]


def test_score_out_of_range_after_normalize_is_an_error() -> None:
    A = make_plugin("A", score=lambda s, p, ni: 101)
    outcome = build({"score": ["A"]}, [A]).run_score(CycleState(), POD, all_nodes())
    assert outcome.error is not None
    assert outcome.error.message() == (
        'plugin "A" returns an invalid score 101, it should in the range of [0, 100] after normalizing'
    )


def test_batch_score_must_return_one_score_per_node() -> None:
    class Bad:
        name = "Bad"

        def score_nodes(self, state: Any, pod: Any, nodes: NodeSet) -> Any:
            return np.zeros(1, dtype=np.int64)

    outcome = build({"score": ["Bad"]}, [Bad]).run_score(CycleState(), POD, all_nodes())
    assert outcome.error is not None and "1 scores for 4 nodes" in outcome.error.message()


def _halve(state: Any, pod: Any, nodes: NodeSet, scores: Any) -> None:
    scores //= 2


def test_batch_scores_a_plugin_keeps_are_copied_before_normalize_writes() -> None:
    class Keeps:
        name = "Keeps"
        kept = np.array([10, 20, 30, 40], dtype=np.int64)
        view = kept[:]

        def score_nodes(self, state: Any, pod: Any, nodes: NodeSet) -> Any:
            return self.kept

        normalize_score = staticmethod(_halve)

    class KeepsAView(Keeps):
        name = "KeepsAView"
        kept = np.array([10, 20, 30, 40], dtype=np.int64)
        view = kept[1:]

        def score_nodes(self, state: Any, pod: Any, nodes: NodeSet) -> Any:
            return np.array(self.view.base, copy=False)

    outcome = build({"score": ["Keeps", "KeepsAView"]}, [Keeps, KeepsAView]).run_score(
        CycleState(), POD, all_nodes()
    )
    assert outcome.error is None
    assert outcome.by_plugin["Keeps"].tolist() == outcome.by_plugin["KeepsAView"].tolist() == [5, 10, 15, 20]
    assert Keeps.kept.tolist() == KeepsAView.kept.tolist() == [10, 20, 30, 40]


def test_batch_scores_nobody_else_holds_are_taken_without_a_copy() -> None:
    returned: list[weakref.ref[Any]] = []

    class Fresh:
        name = "Fresh"

        def score_nodes(self, state: Any, pod: Any, nodes: NodeSet) -> Any:
            scores = np.full(len(nodes), 40, dtype=np.int64)
            returned.append(weakref.ref(scores))  # a weak reference: the plugin does not hold it
            return scores

        normalize_score = staticmethod(_halve)

    outcome = build({"score": ["Fresh"]}, [Fresh]).run_score(CycleState(), POD, all_nodes())
    assert outcome.by_plugin["Fresh"] is returned[0]()
    assert outcome.by_plugin["Fresh"].tolist() == [20] * 4


def test_batch_scores_of_a_plugin_without_normalize_are_read_where_they_are() -> None:
    kept = np.array([10, 20, 30, 40], dtype=np.int64)

    class ReadOnly:
        name = "ReadOnly"

        def score_nodes(self, state: Any, pod: Any, nodes: NodeSet) -> Any:
            view = kept.view()
            view.flags.writeable = False
            return view

    outcome = build({"score": ["ReadOnly"]}, [ReadOnly], weights={"ReadOnly": 2}).run_score(
        CycleState(), POD, all_nodes()
    )
    assert outcome.by_plugin["ReadOnly"].base is kept
    assert outcome.totals.tolist() == [20, 40, 60, 80] and kept.tolist() == [10, 20, 30, 40]


@pytest.mark.parametrize("bad", [-1, 101, np.iinfo(np.int64).min, np.iinfo(np.int64).max])
def test_batch_scores_out_of_range_are_named(bad: int) -> None:
    class Out:
        name = "Out"

        def score_nodes(self, state: Any, pod: Any, nodes: NodeSet) -> Any:
            return np.array([0, 100, bad, 50], dtype=np.int64)

    outcome = build({"score": ["Out"]}, [Out]).run_score(CycleState(), POD, all_nodes())
    assert outcome.error is not None and f"invalid score {bad}," in outcome.error.message()


# ------------------------------------------------------------------ Reserve / Permit / Bind


def test_unreserve_runs_in_reverse_order_of_every_reserve_plugin() -> None:
    order: list[str] = []
    plugins = [
        make_plugin(
            n,
            reserve=(lambda *a, n=n: Status.unschedulable("full") if n == "B" else None),
            unreserve=(lambda *a, n=n: order.append(n)),
        )
        for n in "ABC"
    ]
    fwk = build({"reserve": ["A", "B", "C"]}, plugins)
    status = fwk.run_reserve(CycleState(), POD, "n0")
    assert status is not None and status.plugin == "B"
    fwk.run_unreserve(CycleState(), POD, "n0")
    assert order == ["C", "B", "A"]


def test_permit_wait_collects_capped_timeouts_and_rejection_wins() -> None:
    A = make_plugin("A", permit=lambda *a: (Status.wait(), 30.0))
    B = make_plugin("B", permit=lambda *a: (Status.wait(), 10_000.0))
    R = make_plugin("R", permit=lambda *a: Status.unschedulable("not now"))
    outcome = build({"permit": ["A", "B"]}, [A, B]).run_permit(CycleState(), POD, "n0")
    assert outcome.status is not None and outcome.status.code == Code.WAIT
    assert outcome.waits == {"A": 30.0, "B": MAX_PERMIT_TIMEOUT}
    assert outcome.status.message() == 'one or more plugins asked to wait and no plugin rejected pod "p"'
    outcome = build({"permit": ["A", "R"]}, [A, R]).run_permit(CycleState(), POD, "n0")
    assert outcome.status is not None and outcome.status.code == Code.UNSCHEDULABLE and outcome.waits == {}


def test_bind_chain_skips_until_a_plugin_decides() -> None:
    CALLS.clear()
    S = make_plugin("S", bind=lambda *a: CALLS.append("S") or Status.skip())
    registry = Registry([Sort, Binder, S])
    points = {"queueSort": [("Sort", 1)], "bind": [("S", 1), ("Binder", 1)]}
    fwk = Framework("t", points, {}, registry, handle=None)  # type: ignore[arg-type]
    assert fwk.run_bind(CycleState(), POD, "n2") is None
    assert CALLS == ["S", "bind:n2"]
    only_skip = Framework("t", {"queueSort": [("Sort", 1)], "bind": [("S", 1)]}, {}, registry, None)  # type: ignore[arg-type]
    status = only_skip.run_bind(CycleState(), POD, "n2")
    assert status is not None and status.code == Code.SKIP


# ------------------------------------------------------------------ sampling


@pytest.mark.parametrize(
    ("nodes", "pct", "expected"),
    [
        (50, 0, 50),
        (99, 10, 99),
        (500, 0, 230),
        (1000, 0, 420),
        (5000, 0, 500),
        (6000, 0, 300),
        (10000, 0, 500),
        (1000, 100, 1000),
        (1000, 5, 100),
        (300, 50, 150),
    ],
)
def test_num_feasible_nodes_to_find(nodes: int, pct: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(None, pct, nodes) == expected


def test_profile_percentage_overrides_global() -> None:
    assert num_feasible_nodes_to_find(100, 0, 5000) == 5000
    assert num_feasible_nodes_to_find(0, 100, 5000) == 500  # 0 at profile level means adaptive


def test_preenqueue_reports_the_gating_plugin() -> None:
    G = make_plugin("G", pre_enqueue=lambda pod: Status.unschedulable_and_unresolvable("gated"))
    name, status = build({"preEnqueue": ["G"]}, [G]).run_pre_enqueue(POD)
    assert name == "G" and status is not None and status.is_rejected()
