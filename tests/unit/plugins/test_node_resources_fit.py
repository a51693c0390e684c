"""NodeResourcesFit (upstream `pkg/scheduler/framework/plugins/noderesources/`): filter reasons and codes, the
three scoring strategies with hand-computed numbers, args defaults and validation, and the batch forms
agreeing exactly with the per-node forms."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Node, Pod
from kubesched.api.resource import DeviceClass
from kubesched.errors import FieldErrors, InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, QueueingHint, QueueingHintFn, Resource
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.registry import decode_args
from kubesched.framework.status import Code, Status
from kubesched.plugins.node_resources_fit import (
    NodeResourcesFit,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
)
from kubesched.testing.builders import make_node, make_pod, make_table

GI = 1024**3
MI = 1024**2
U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
FOO = "example.com/foo"

Verdict = tuple[Code, tuple[str, ...]] | None


def _verdict(status: Status | None) -> Verdict:
    return None if status is None else (status.code, tuple(status.all_reasons()))


def _filter_both(plugin: NodeResourcesFit, pod: Pod, nodes: NodeSet) -> list[Verdict]:
    """Run the per-node and the batch Filter; they must agree; return the verdicts."""
    state = CycleState()
    assert plugin.pre_filter(state, pod, nodes) is None
    per_node = [_verdict(plugin.filter(state, pod, ni)) for ni in nodes]
    res = plugin.filter_nodes(state, pod, nodes)
    assert res.codes.dtype == np.int32
    assert len(res.codes) == len(nodes)
    batch = [None if c < 0 else _verdict(res.statuses[c]) for c in res.codes]
    assert batch == per_node
    return per_node


def _score_both(plugin: NodeResourcesFit, pod: Pod, nodes: NodeSet) -> list[int]:
    state = CycleState()
    assert plugin.pre_score(state, pod, nodes) is None
    per_node = [plugin.score(state, pod, ni) for ni in nodes]
    batch = plugin.score_nodes(state, pod, nodes)
    assert batch.dtype == np.int64
    assert batch.tolist() == per_node
    return per_node


def _args(**raw: Any) -> NodeResourcesFitArgs:
    return msgspec.convert(raw, NodeResourcesFitArgs)


def _one(node: Node, existing: Sequence[Pod] = ()) -> NodeSet:
    """A one-node table with `existing` placed on the node."""
    placed = [
        msgspec.structs.replace(p, spec=msgspec.structs.replace(p.spec, node_name=node.name))
        for p in existing
    ]
    table: NodeTable = make_table([node], placed)
    return table.all()


def _pod(name: str = "p", **kw: Any) -> Pod:
    return make_pod(name, **kw)


# --------------------------------------------------------------------------- Filter


FILTER_CASES: list[tuple[str, Node, list[Pod], Pod, Mapping[str, Any], Verdict]] = [
    ("fits", make_node("n"), [], _pod(cpu="1", memory="1Gi"), {}, None),
    (
        "too many pods",
        make_node("n", pods=1),
        [_pod("e")],
        _pod(cpu="100m"),
        {},
        (U, ("Too many pods",)),
    ),
    (
        "node with allowed pods 0",
        make_node("n", pods=0),
        [],
        _pod(),
        {},
        (U, ("Too many pods",)),
    ),
    (
        "insufficient cpu",
        make_node("n", cpu="2"),
        [_pod("e", cpu="1500m")],
        _pod(cpu="1"),
        {},
        (U, ("Insufficient cpu",)),
    ),
    (
        "cpu exactly fits",
        make_node("n", cpu="2"),
        [_pod("e", cpu="1500m")],
        _pod(cpu="500m"),
        {},
        None,
    ),
    (
        "insufficient memory",
        make_node("n", memory="4Gi"),
        [_pod("e", memory="3Gi")],
        _pod(memory="2Gi"),
        {},
        (U, ("Insufficient memory",)),
    ),
    (
        "insufficient ephemeral-storage",
        make_node("n", extra={"ephemeral-storage": "10Gi"}),
        [_pod("e", extra={"ephemeral-storage": "8Gi"})],
        _pod(extra={"ephemeral-storage": "4Gi"}),
        {},
        (U, ("Insufficient ephemeral-storage",)),
    ),
    (
        "insufficient extended resource",
        make_node("n", extra={FOO: 2}),
        [_pod("e", extra={FOO: 1})],
        _pod(extra={FOO: 2}),
        {},
        (U, (f"Insufficient {FOO}",)),
    ),
    (
        "insufficient hugepages",
        make_node("n", extra={"hugepages-2Mi": "10Mi"}),
        [_pod("e", extra={"hugepages-2Mi": "8Mi"})],
        _pod(extra={"hugepages-2Mi": "4Mi"}),
        {},
        (U, ("Insufficient hugepages-2Mi",)),
    ),
    (
        "several reasons at once, in upstream order",
        make_node("n", cpu="2", memory="2Gi", pods=1, extra={FOO: 2, "ephemeral-storage": "1Gi"}),
        [_pod("e", cpu="2", memory="2Gi", extra={FOO: 2, "ephemeral-storage": "1Gi"})],
        _pod(cpu="1", memory="1Gi", extra={FOO: 1, "ephemeral-storage": "1Gi"}),
        {},
        (
            U,
            (
                "Too many pods",
                "Insufficient cpu",
                "Insufficient memory",
                "Insufficient ephemeral-storage",
                f"Insufficient {FOO}",
            ),
        ),
    ),
    (
        "scalar reasons sorted by name",
        make_node("n", extra={"b.example/x": 1, "a.example/y": 1}),
        [],
        _pod(extra={"b.example/x": 2, "a.example/y": 2}),
        {},
        (UU, ("Insufficient a.example/y", "Insufficient b.example/x")),
    ),
    (
        "request above total allocatable never fits",
        make_node("n", cpu="4"),
        [],
        _pod(cpu="5"),
        {},
        (UU, ("Insufficient cpu",)),
    ),
    (
        "one never-fitting resource makes the whole status unresolvable",
        make_node("n", cpu="4", memory="4Gi"),
        [_pod("e", memory="3Gi")],
        _pod(cpu="5", memory="2Gi"),
        {},
        (UU, ("Insufficient cpu", "Insufficient memory")),
    ),
    (
        "too many pods alone stays resolvable",
        make_node("n", pods=2),
        [_pod("e1"), _pod("e2")],
        _pod(cpu="1"),
        {},
        (U, ("Too many pods",)),
    ),
    (
        "extended resource missing from the node",
        make_node("n"),
        [],
        _pod(extra={FOO: 1}),
        {},
        (UU, (f"Insufficient {FOO}",)),
    ),
    (
        "ignored resource",
        make_node("n"),
        [],
        _pod(extra={FOO: 1}),
        {"ignoredResources": [FOO]},
        None,
    ),
    (
        "ignored resource group",
        make_node("n"),
        [],
        _pod(extra={FOO: 1}),
        {"ignoredResourceGroups": ["example.com"]},
        None,
    ),
    (
        "ignored group covers only its own domain",
        make_node("n"),
        [],
        _pod(extra={FOO: 1, "other.io/bar": 1}),
        {"ignoredResourceGroups": ["example.com"]},
        (UU, ("Insufficient other.io/bar",)),
    ),
    (
        "hugepages cannot be ignored (not an extended resource)",
        make_node("n"),
        [],
        _pod(extra={"hugepages-1Gi": "1Gi"}),
        {"ignoredResources": ["hugepages-1Gi"], "ignoredResourceGroups": ["hugepages-1Gi"]},
        (UU, ("Insufficient hugepages-1Gi",)),
    ),
    (
        "explicit zero extended request is not checked",
        make_node("n"),
        [],
        _pod(extra={FOO: 0}),
        {},
        None,
    ),
    (
        "pod requesting nothing fits a full node",
        make_node("n", cpu="1", memory="1Gi"),
        [_pod("e", cpu="1", memory="1Gi")],
        _pod(),
        {},
        None,
    ),
    (
        "pod requesting nothing still checks the pod count",
        make_node("n", cpu="1", pods=1),
        [_pod("e", cpu="1")],
        _pod(),
        {},
        (U, ("Too many pods",)),
    ),
    (
        "filter counts real requests, not the 100m/200Mi defaults",
        make_node("n", cpu="1", memory="1Gi"),
        [_pod(f"e{i}") for i in range(20)],
        _pod(cpu="1", memory="1Gi"),
        {},
        None,
    ),
    (
        "overcommitted node (requested above allocatable) fails resolvable",
        make_node("n", cpu="1"),
        [_pod("e", cpu="3")],
        _pod(cpu="1"),
        {},
        (U, ("Insufficient cpu",)),
    ),
]


@pytest.mark.parametrize(
    ("node", "existing", "pod", "raw_args", "expected"),
    [case[1:] for case in FILTER_CASES],
    ids=[case[0] for case in FILTER_CASES],
)
def test_filter(
    node: Node, existing: list[Pod], pod: Pod, raw_args: Mapping[str, Any], expected: Verdict
) -> None:
    plugin = NodeResourcesFit(_args(**raw_args))
    assert _filter_both(plugin, pod, _one(node, existing)) == [expected]


def test_filter_groups_nodes_by_reason_combination() -> None:
    nodes = [
        make_node("fits"),
        make_node("cpu", cpu="500m"),
        make_node("cpu2", cpu="500m"),
        make_node("mem", memory="512Mi"),
        make_node("both", cpu="500m", memory="512Mi"),
        make_node("never", cpu="100m"),
    ]
    existing = [_pod("e", cpu="400m", node_name="never")]
    table = make_table(nodes, existing)
    pod = _pod(cpu="200m", memory="1Gi")
    plugin = NodeResourcesFit()
    got = _filter_both(plugin, pod, table.all())
    assert got == [
        None,
        None,
        None,
        (UU, ("Insufficient memory",)),
        (UU, ("Insufficient memory",)),
        (UU, ("Insufficient cpu",)),
    ]
    pod = _pod(cpu="800m", memory="1Gi")
    res = plugin.filter_nodes(_prefiltered(plugin, pod, table), pod, table.all())
    # Nodes with the same reasons share one Status object.
    assert res.codes[1] == res.codes[2]
    assert len(res.statuses) == 3
    assert [_verdict(res.statuses[c]) for c in res.codes[1:]] == [
        (UU, ("Insufficient cpu",)),
        (UU, ("Insufficient cpu",)),
        (UU, ("Insufficient memory",)),
        (UU, ("Insufficient cpu", "Insufficient memory")),
        (UU, ("Insufficient cpu",)),
    ]
    assert res.codes[0] == -1


def _prefiltered(plugin: NodeResourcesFit, pod: Pod, table: NodeTable) -> CycleState:
    state = CycleState()
    plugin.pre_filter(state, pod, table.all())
    return state


def test_filter_on_a_subset_of_rows() -> None:
    table = make_table([make_node("a", cpu="1"), make_node("b", cpu="4"), make_node("c", cpu="1")])
    subset = NodeSet(table, np.array([0, 2], dtype=np.intp))
    got = _filter_both(NodeResourcesFit(), _pod(cpu="2"), subset)
    assert got == [(UU, ("Insufficient cpu",))] * 2


def test_filter_with_more_reasons_than_fit_in_a_bitmask() -> None:
    extra = {f"r{i:02d}.example.com/x": 1 for i in range(70)}
    pod = _pod(extra=extra)
    table = make_table([make_node("a", extra=dict(list(extra.items())[:35])), make_node("b")])
    got = _filter_both(NodeResourcesFit(), pod, table.all())
    assert got[0] == (UU, tuple(f"Insufficient {r}" for r in sorted(extra)[35:]))
    assert got[1] == (UU, tuple(f"Insufficient {r}" for r in sorted(extra)))


def test_pre_filter_state_and_clone() -> None:
    plugin = NodeResourcesFit()
    state = CycleState()
    pod = _pod(cpu="1")
    plugin.pre_filter(state, pod, make_table([make_node("a")]).all())
    data = state.read("PreFilterNodeResourcesFit")
    assert data.clone() is data
    assert plugin.filter(state.clone(), pod, make_table([make_node("a", cpu="500m")]).infos[0]) == Status(
        UU, "Insufficient cpu"
    )


def test_filter_without_pre_filter_computes_the_request() -> None:
    plugin = NodeResourcesFit()
    table = make_table([make_node("a", cpu="500m")])
    pod = _pod(cpu="1")
    assert _verdict(plugin.filter(CycleState(), pod, table.infos[0])) == (UU, ("Insufficient cpu",))
    assert plugin.filter_nodes(CycleState(), pod, table.all()).codes.tolist() == [0]


def _fit_hint(event: ClusterEvent) -> QueueingHintFn:
    (hint,) = [r.hint for r in NodeResourcesFit().events_to_register() if r.event == event]
    assert hint is not None
    return hint


# The cases of v1.37.2's Test_isSchedulableAfterAssignedPodScaleDown (container requests).
@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        ("not-a-pod", make_pod("o", cpu="1", node_name="n"), QueueingHint.QUEUE),
        (make_pod("o", cpu="2"), make_pod("o", cpu="1"), QueueingHint.SKIP),  # not bound
        (
            make_pod("o", memory="2", node_name="n"),
            make_pod("o", memory="1", node_name="n"),
            QueueingHint.SKIP,
        ),
        (make_pod("o", cpu="2", node_name="n"), make_pod("o", cpu="1", node_name="n"), QueueingHint.QUEUE),
        (make_pod("o", cpu="1", node_name="n"), make_pod("o", cpu="2", node_name="n"), QueueingHint.SKIP),
    ],
)
def test_a_bound_pod_scaled_down_requeues_if_it_freed_what_the_pod_wants(
    old: object, new: Pod, hint: QueueingHint
) -> None:
    on_scale_down = _fit_hint(ClusterEvent(Resource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN))
    assert on_scale_down(make_pod("p", cpu="1"), old, new) is hint


def test_the_pending_pod_scaled_down_always_requeues() -> None:
    on_own = _fit_hint(ClusterEvent(Resource.TARGET_POD, ActionType.UPDATE_POD_SCALE_DOWN))
    assert (
        on_own(make_pod("p", cpu="1"), make_pod("p", cpu="2"), make_pod("p", cpu="1")) is QueueingHint.QUEUE
    )


def _device_class(name: str, extended: str | None = None) -> DeviceClass:
    return msgspec.convert(
        {"metadata": {"name": name}, "spec": {"extendedResourceName": extended}}, DeviceClass
    )


# The cases of v1.37.2's Test_isSchedulableAfterDeviceClassChange.
@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (None, "not-a-class", QueueingHint.QUEUE),
        (None, _device_class("gpu"), QueueingHint.QUEUE),  # requested by its class name
        (None, _device_class("other"), QueueingHint.SKIP),
        (None, _device_class("other", "example.com/gpu"), QueueingHint.QUEUE),
        (None, _device_class("other", "example.com/fpga"), QueueingHint.SKIP),
        (_device_class("other"), _device_class("other", "example.com/gpu"), QueueingHint.QUEUE),
        (
            _device_class("other", "example.com/gpu"),
            _device_class("other", "example.com/gpu"),
            QueueingHint.SKIP,
        ),
        (_device_class("other", "example.com/gpu"), _device_class("other"), QueueingHint.SKIP),
    ],
)
def test_a_device_class_change_requeues_for_what_the_pod_requests(
    old: DeviceClass | None, new: object, hint: QueueingHint
) -> None:
    pod = make_pod("p", extra={"deviceclass.resource.kubernetes.io/gpu": 1, "example.com/gpu": 1})
    on_class = _fit_hint(ClusterEvent(Resource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE))
    assert on_class(pod, old, new) is hint


@pytest.mark.parametrize(
    ("deleted", "hint"),
    [
        (make_pod("bound", cpu="1", node_name="n"), QueueingHint.QUEUE),
        (make_pod("tiny-bound", cpu="1m", node_name="n"), QueueingHint.QUEUE),  # v1.37.2: any bound pod
        (make_pod("pending", cpu="1"), QueueingHint.SKIP),
        (msgspec.convert({"metadata": {"name": "nominated"}, "status": {"nominatedNodeName": "n"}}, Pod),
         QueueingHint.QUEUE),
    ],
)  # fmt: skip
def test_a_deleted_pod_requeues_only_if_it_held_room(deleted: Pod, hint: QueueingHint) -> None:
    register = NodeResourcesFit().events_to_register()[0]
    assert register.hint is not None
    assert register.hint(_pod(cpu="2"), deleted, None) is hint


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (None, make_node("n", cpu="4"), QueueingHint.QUEUE),  # added, big enough
        (None, make_node("n", cpu="1"), QueueingHint.SKIP),  # added, too small even empty
        (make_node("n", cpu="2"), make_node("n", cpu="4"), QueueingHint.QUEUE),  # grew in cpu
        (make_node("n", cpu="4", memory="8Gi"), make_node("n", cpu="4", memory="16Gi"), QueueingHint.SKIP),
        (make_node("n", cpu="4", pods=10), make_node("n", cpu="4", pods=20), QueueingHint.QUEUE),
        (make_node("n", cpu="8"), make_node("n", cpu="1"), QueueingHint.SKIP),  # shrank below the pod
    ],
)
def test_a_node_change_requeues_only_if_the_pod_could_fit(
    old: Node | None, new: Node, hint: QueueingHint
) -> None:
    register = NodeResourcesFit().events_to_register()[1]
    assert register.hint is not None
    assert register.hint(_pod(cpu="2"), old, new) is hint


# --------------------------------------------------------------------------- Score


def _strategy(
    kind: str, resources: Sequence[tuple[str, int]] = (), shape: Sequence[tuple[int, int]] = ()
) -> dict[str, Any]:
    raw: dict[str, Any] = {"type": kind, "resources": [{"name": n, "weight": w} for n, w in resources]}
    if shape:
        raw["requestedToCapacityRatio"] = {"shape": [{"utilization": u, "score": s} for u, s in shape]}
    return {"scoringStrategy": raw}


# Node: 3 cpu, 10Gi; already requested 500m / 1Gi; the pod asks 1 cpu / 2Gi.
# cpu: 1500/3000 (50%), memory: 3Gi/10Gi (30%).
_NODE = make_node("n", cpu="3", memory="10Gi")
_EXISTING = [_pod("e", cpu="500m", memory="1Gi")]
_POD = _pod(cpu="1", memory="2Gi")

SCORE_CASES: list[tuple[str, dict[str, Any], Node, list[Pod], Pod, int]] = [
    # LeastAllocated: cpu (3000-1500)*100//3000 = 50, memory 70 -> (50+70)//2 = 60
    ("least allocated default", {}, _NODE, _EXISTING, _POD, 60),
    # weights cpu 3, memory 1: (150 + 70) // 4 = 55
    (
        "least allocated weighted",
        _strategy("LeastAllocated", [("cpu", 3), ("memory", 1)]),
        _NODE,
        _EXISTING,
        _POD,
        55,
    ),
    # cpu only: (3000-1000)*100//3000 = 66 (truncated)
    (
        "least allocated truncates",
        _strategy("LeastAllocated", [("cpu", 1)]),
        make_node("n", cpu="3"),
        [],
        _pod(cpu="1"),
        66,
    ),
    # over capacity counts 0: cpu 0, memory (10-2)/10 = 80 -> 40
    (
        "least allocated over capacity",
        {},
        make_node("n", cpu="1", memory="10Gi"),
        [],
        _pod(cpu="2", memory="2Gi"),
        40,
    ),
    # MostAllocated: cpu 50, memory 30 -> 40
    ("most allocated", _strategy("MostAllocated"), _NODE, _EXISTING, _POD, 40),
    # over capacity is clamped to 100: cpu 100, memory 20 -> 60
    (
        "most allocated clamps",
        _strategy("MostAllocated"),
        make_node("n", cpu="1", memory="10Gi"),
        [],
        _pod(cpu="2", memory="2Gi"),
        60,
    ),
    # A pod without requests counts 100m / 200Mi: node 1 cpu / 1000Mi -> cpu 90, memory 80 -> 85
    ("non-zero defaults for the pod", {}, make_node("n", cpu="1", memory="1000Mi"), [], _pod(), 85),
    # ...and the node side counts existing best-effort pods the same way: 300m / 600Mi -> 70, 40 -> 55
    (
        "non-zero defaults for existing pods",
        {},
        make_node("n", cpu="1", memory="1000Mi"),
        [_pod("e1"), _pod("e2")],
        _pod(),
        55,
    ),
    # An explicit zero request stays zero (no default): cpu 100, memory (1000-200)/1000 = 80 -> 90
    ("explicit zero is not defaulted", {}, make_node("n", cpu="1", memory="1000Mi"), [], _pod(cpu="0"), 90),
    # Extended resource the pod does not request is skipped: only cpu (2/4 free) counts -> 50
    (
        "unrequested extended resource skipped",
        _strategy("LeastAllocated", [("cpu", 1), (FOO, 5)]),
        make_node("n", cpu="4", extra={FOO: 4}),
        [],
        _pod(cpu="2"),
        50,
    ),
    # ... and counts when requested, with real requests: foo 3 of 4 -> 25 (w5); cpu counts the existing
    # best-effort pod as 100m: 2100 of 4000 -> 47 (w1) -> 172 // 6
    (
        "requested extended resource scored with real requests",
        _strategy("LeastAllocated", [("cpu", 1), (FOO, 5)]),
        make_node("n", cpu="4", extra={FOO: 4}),
        [_pod("e", extra={FOO: 2})],
        _pod(cpu="2", extra={FOO: 1}),
        28,
    ),
    # A resource the node does not have (allocatable 0) is skipped: only memory counts -> 80
    (
        "resource with zero allocatable skipped",
        _strategy("LeastAllocated", [("ephemeral-storage", 1), ("memory", 1)]),
        make_node("n", memory="10Gi"),
        [],
        _pod(memory="2Gi", extra={"ephemeral-storage": "1Gi"}),
        80,
    ),
    # Nothing scorable -> 0
    ("no scorable resource", _strategy("LeastAllocated", [(FOO, 1)]), make_node("n"), [], _pod(), 0),
    # v1.37.2 quirk: the scorer ignores the incoming pod's pod-level `spec.resources` and counts its
    # containers with the 100m / 200Mi defaults: cpu (4000-100)*100//4000 = 97, memory 97 -> 97
    # (scoring the pod-level 2 cpu / 4Gi would give 50).
    (
        "pod-level requests of the incoming pod are not scored",
        {},
        make_node("n", cpu="4", memory="8Gi"),
        [],
        _pod(spec={"resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}),
        97,
    ),
    # ... while a pod already on the node counts with its pod-level requests: 2 + 1 of 4 cpu -> 25,
    # 4Gi + 2Gi of 8Gi -> 25
    (
        "pod-level requests of existing pods are counted",
        {},
        make_node("n", cpu="4", memory="8Gi"),
        [_pod("e", spec={"resources": {"requests": {"cpu": "2", "memory": "4Gi"}}})],
        _pod(cpu="1", memory="2Gi"),
        25,
    ),
    # RequestedToCapacityRatio, shape score == utilization: cpu 50 (w2), memory 30 (w1) -> round(130/3) = 43
    (
        "requested to capacity ratio",
        _strategy("RequestedToCapacityRatio", [("cpu", 2), ("memory", 1)], [(0, 0), (100, 10)]),
        _NODE,
        _EXISTING,
        _POD,
        43,
    ),
    # halves round away from zero (Go math.Round): cpu 50, memory 31 -> 40.5 -> 41
    (
        "requested to capacity ratio rounds half up",
        _strategy("RequestedToCapacityRatio", [("cpu", 1), ("memory", 1)], [(0, 0), (100, 10)]),
        make_node("n", cpu="2", memory="100Mi"),
        [],
        _pod(cpu="1", memory="31Mi"),
        41,
    ),
    # decreasing segment truncates toward zero: u=50 on (0,100)-(60,30): 100 + trunc(-70*50/60) = 42
    (
        "broken-linear interpolation truncates toward zero",
        _strategy("RequestedToCapacityRatio", [("cpu", 1)], [(0, 10), (60, 3), (100, 0)]),
        make_node("n", cpu="2"),
        [],
        _pod(cpu="1"),
        42,
    ),
    # below the first point: that point's score (50); beyond the last point: the last score (100)
    (
        "before the first shape point",
        _strategy("RequestedToCapacityRatio", [("cpu", 1)], [(60, 5), (100, 10)]),
        make_node("n", cpu="2"),
        [],
        _pod(cpu="1"),
        50,
    ),
    (
        "after the last shape point",
        _strategy("RequestedToCapacityRatio", [("cpu", 1)], [(0, 0), (40, 10)]),
        make_node("n", cpu="2"),
        [],
        _pod(cpu="1"),
        100,
    ),
    # over capacity is utilization 100 -> last score 0 on a decreasing shape; only memory (u=20 -> 80) counts
    (
        "over capacity is full utilization; zero scores leave the average",
        _strategy("RequestedToCapacityRatio", [("cpu", 1), ("memory", 1)], [(0, 10), (100, 0)]),
        make_node("n", cpu="1", memory="10Gi"),
        [],
        _pod(cpu="2", memory="2Gi"),
        80,
    ),
]


@pytest.mark.parametrize(
    ("raw_args", "node", "existing", "pod", "expected"),
    [case[1:] for case in SCORE_CASES],
    ids=[case[0] for case in SCORE_CASES],
)
def test_score(raw_args: dict[str, Any], node: Node, existing: list[Pod], pod: Pod, expected: int) -> None:
    assert _score_both(NodeResourcesFit(_args(**raw_args)), pod, _one(node, existing)) == [expected]


def test_score_over_several_nodes_and_state() -> None:
    table = make_table(
        [
            make_node("a", cpu="2", memory="2Gi"),
            make_node("b", cpu="4", memory="8Gi"),
            make_node("c", cpu="1"),
        ],
    )
    plugin = NodeResourcesFit()
    pod = _pod(cpu="1", memory="1Gi")
    # a: 50, 50 -> 50; b: 75, 87 -> 81; c: cpu 0 (1000 of 1000 -> 0), memory (32-1)/32 -> 96 -> 48
    assert _score_both(plugin, pod, table.all()) == [50, 81, 48]
    state = CycleState()
    plugin.pre_score(state, pod, table.all())
    data = state.read("PreScoreNodeResourcesFit")
    assert data.clone() is data
    # Score without PreScore computes the request itself.
    assert plugin.score(CycleState(), pod, table.infos[1]) == 81
    assert plugin.score_nodes(CycleState(), pod, table.all()).tolist() == [50, 81, 48]


# --------------------------------------------------------------------------- args


def test_args_defaults() -> None:
    args = NodeResourcesFitArgs()
    assert args.ignored_resources == []
    assert args.ignored_resource_groups == []
    assert args.scoring_strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [("cpu", 1), ("memory", 1)]
    assert args.scoring_strategy.requested_to_capacity_ratio is None
    assert args.validate() == []
    decoded = _args(scoringStrategy={"type": "MostAllocated"})
    assert [(r.name, r.weight) for r in decoded.scoring_strategy.resources] == [("cpu", 1), ("memory", 1)]


def test_args_defaulting_of_weights_and_empty_resources() -> None:
    args = _args(scoringStrategy={"resources": [{"name": "cpu"}, {"name": "memory", "weight": 0}]})
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [("cpu", 1), ("memory", 1)]
    args = _args(scoringStrategy={"type": "MostAllocated", "resources": []})
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [("cpu", 1), ("memory", 1)]
    assert ResourceSpec(name="x", weight=0).weight == 1
    assert ScoringStrategy(resources=[]).resources == [ResourceSpec(name="cpu"), ResourceSpec(name="memory")]


def test_args_decode_camel_case() -> None:
    args = _args(
        ignoredResources=[FOO],
        ignoredResourceGroups=["example.org"],
        scoringStrategy={
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": 3}],
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
            },
        },
    )
    assert args.ignored_resources == [FOO]
    assert args.ignored_resource_groups == ["example.org"]
    ratio = args.scoring_strategy.requested_to_capacity_ratio
    assert ratio is not None
    assert [(p.utilization, p.score) for p in ratio.shape] == [(0, 0), (100, 10)]
    assert args.validate() == []
    assert msgspec.to_builtins(args)["scoringStrategy"]["requestedToCapacityRatio"]["shape"][1] == {
        "utilization": 100,
        "score": 10,
    }


ARG_ERRORS: list[tuple[dict[str, Any], list[str]]] = [
    ({"ignoredResources": ["bad name!"]}, ["ignoredResources[0]"]),
    ({"ignoredResources": [FOO, "a/b/c"]}, ["ignoredResources[1]"]),
    ({"ignoredResourceGroups": ["example.com/foo"]}, ["ignoredResourceGroups[0]"]),
    ({"ignoredResourceGroups": ["ok.io", "Bad_Group!"]}, ["ignoredResourceGroups[1]"]),
    ({"scoringStrategy": {"type": "Spread"}}, ["scoringStrategy.type"]),
    ({"scoringStrategy": {"type": ""}}, ["scoringStrategy.type"]),
    (
        {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 101}]}},
        ["scoringStrategy.resources[0].weight"],
    ),
    (
        {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": -1}]}},
        ["scoringStrategy.resources[1].weight"],
    ),
    ({"scoringStrategy": {"resources": [{"name": "", "weight": 1}]}}, ["scoringStrategy.resources[0].name"]),
    (
        {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
        ["scoringStrategy.requestedToCapacityRatio.shape"],
    ),
    (
        {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}},
        ["scoringStrategy.requestedToCapacityRatio.shape"],
    ),
    (
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]
                },
            }
        },
        ["scoringStrategy.requestedToCapacityRatio.shape[1].utilization"],
    ),
    (
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": -1, "score": 0}, {"utilization": 101, "score": 11}]
                },
            }
        },
        [
            "scoringStrategy.requestedToCapacityRatio.shape[0].utilization",
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
            "scoringStrategy.requestedToCapacityRatio.shape[1].score",
        ],
    ),
    (
        {"scoringStrategy": {"requestedToCapacityRatio": {"shape": [{"utilization": 10, "score": -1}]}}},
        ["scoringStrategy.requestedToCapacityRatio.shape[0].score"],
    ),
]


@pytest.mark.parametrize(("raw", "paths"), ARG_ERRORS)
def test_args_validation_paths(raw: dict[str, Any], paths: list[str]) -> None:
    errors = _args(**raw).validate()
    assert [e.path for e in errors] == paths
    assert all(isinstance(e, InputError) and e.message for e in errors)


def test_args_validation_messages() -> None:
    [err] = _args(scoringStrategy={"resources": [{"name": "cpu", "weight": 101}]}).validate()
    assert str(err) == "scoringStrategy.resources[0].weight: must be in the range [1, 100]"
    [err] = _args(ignoredResourceGroups=["example.com/foo"]).validate()
    assert "can't contain '/'" in err.message
    [err] = _args(scoringStrategy={"type": "Spread"}).validate()
    assert err.message == (
        'unsupported value "Spread": supported values: '
        '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
    )
    [err] = _args(scoringStrategy={"type": "RequestedToCapacityRatio"}).validate()
    assert err.message == "at least one point must be specified"


def test_registry_decodes_and_locates_errors() -> None:
    args = decode_args(NodeResourcesFit, {"scoringStrategy": {"type": "MostAllocated"}})
    assert isinstance(args, NodeResourcesFitArgs)
    assert args.scoring_strategy.type == "MostAllocated"
    with pytest.raises(InputError) as exc:
        decode_args(NodeResourcesFit, {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 500}]}})
    assert exc.value.path == "args.scoringStrategy.resources[0].weight"


def test_constructor_rejects_invalid_args() -> None:
    with pytest.raises(FieldErrors, match=r"scoringStrategy\.type"):
        NodeResourcesFit(_args(scoringStrategy={"type": "Nope"}))


# --------------------------------------------------------------------------- batch == per node

_RESOURCE_POOL = ("cpu", "memory", "ephemeral-storage", FOO, "hugepages-2Mi")


@st.composite
def _requests(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if draw(st.booleans()):
        out["cpu"] = f"{draw(st.integers(0, 3000))}m"
    if draw(st.booleans()):
        out["memory"] = str(draw(st.integers(0, 3000)) * MI)
    if draw(st.booleans()):
        out["ephemeral-storage"] = str(draw(st.integers(0, 20)) * GI)
    if draw(st.booleans()):
        out[FOO] = draw(st.integers(0, 4))
    if draw(st.integers(0, 4)) == 0:
        out["other.io/bar"] = draw(st.integers(0, 2))
    return out


@st.composite
def _cluster(draw: st.DrawFn) -> tuple[NodeTable, NodeSet, Pod]:
    n = draw(st.integers(1, 6))
    nodes = []
    for i in range(n):
        extra: dict[str, str | int] = {}
        if draw(st.booleans()):
            extra["ephemeral-storage"] = str(draw(st.integers(0, 40)) * GI)
        if draw(st.booleans()):
            extra[FOO] = draw(st.integers(0, 6))
        if draw(st.integers(0, 3)) == 0:
            extra["hugepages-2Mi"] = f"{draw(st.integers(0, 8)) * 2}Mi"
        nodes.append(
            make_node(
                f"n{i}",
                cpu=f"{draw(st.integers(0, 4000))}m",
                memory=str(draw(st.integers(0, 4000)) * MI),
                pods=draw(st.integers(0, 4)),
                extra=extra,
            )
        )
    existing = []
    for j in range(draw(st.integers(0, 8))):
        reqs = draw(_requests())
        extra = {k: v for k, v in reqs.items() if k not in ("cpu", "memory")}
        existing.append(
            make_pod(
                f"e{j}",
                cpu=reqs.get("cpu"),
                memory=reqs.get("memory"),
                extra=extra,
                node_name=f"n{draw(st.integers(0, n - 1))}",
            )
        )
    table = make_table(nodes, existing)
    rows = draw(st.lists(st.integers(0, n - 1), unique=True).map(sorted))
    reqs = draw(_requests())
    if draw(st.booleans()):
        reqs["hugepages-2Mi"] = f"{draw(st.integers(0, 4)) * 2}Mi"
    pod = make_pod(
        "p",
        cpu=reqs.get("cpu"),
        memory=reqs.get("memory"),
        extra={k: v for k, v in reqs.items() if k not in ("cpu", "memory")},
    )
    return table, NodeSet(table, np.asarray(rows, dtype=np.intp)), pod


@st.composite
def _fit_args(draw: st.DrawFn) -> NodeResourcesFitArgs:
    kind = draw(st.sampled_from(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]))
    names = draw(st.lists(st.sampled_from(_RESOURCE_POOL), unique=True, max_size=4))
    resources = [(name, draw(st.integers(1, 100))) for name in names]
    shape: list[tuple[int, int]] = []
    if kind == "RequestedToCapacityRatio":
        utils = draw(st.lists(st.integers(0, 100), unique=True, min_size=1, max_size=4).map(sorted))
        shape = [(u, draw(st.integers(0, 10))) for u in utils]
    raw = _strategy(kind, resources, shape)
    raw["ignoredResources"] = draw(st.sampled_from([[], [FOO]]))
    raw["ignoredResourceGroups"] = draw(st.sampled_from([[], ["other.io"]]))
    return _args(**raw)


@settings(max_examples=200, deadline=None)
@given(_cluster(), _fit_args())
def test_batch_agrees_with_per_node(
    cluster: tuple[NodeTable, NodeSet, Pod], args: NodeResourcesFitArgs
) -> None:
    _, nodes, pod = cluster
    plugin = NodeResourcesFit(args)
    _filter_both(plugin, pod, nodes)
    _score_both(plugin, pod, nodes)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 16), st.integers(0, 40), st.integers(0, 2**32 - 1))
def test_reason_sets_are_grouped_as_a_sort_would(width: int, rows: int, seed: int) -> None:
    from kubesched.plugins.node_resources_fit import _unique_rows

    rng = np.random.default_rng(seed)
    matrix = rng.random((rows, width)) < 0.3
    combos, inverse = _unique_rows(matrix)
    # The sort it replaces: distinct rows ordered by their bits read with column 0 lowest.
    keys = [sum(1 << b for b in range(width) if row[b]) for row in matrix.tolist()]
    distinct = sorted(set(keys))
    assert combos == [[bool(key >> b & 1) for b in range(width)] for key in distinct]
    assert inverse.tolist() == [distinct.index(key) for key in keys]
