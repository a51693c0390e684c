"""TopologyPlacementGenerator, PodGroupPodsCount and NodeResourcesFit's PlacementScore, each alone
against hand-computed answers (upstream's topology_placement.go, podgroup_pods_count.go and the Fit
plugin's placement scorer, v1.37.2)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import Node, Pod
from kubesched.api.scheduling_groups import (
    GangSchedulingPolicy,
    PodGroup,
    PodGroupSchedulingConstraints,
    PodGroupSchedulingPolicy,
    PodGroupSpec,
    TopologyConstraint,
)
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.node_info import NodeInfo, PodInfo, pod_key
from kubesched.framework.node_table import NodeTable
from kubesched.framework.placement import Placement, PlacementScore, PodGroupAssignments, ProposedAssignment
from kubesched.framework.pod_groups import PodGroupState, SchedulingGroups
from kubesched.framework.status import Code, Status
from kubesched.plugins.node_resources_fit import NodeResourcesFit
from kubesched.plugins.node_resources_fit_args import NodeResourcesFitArgs
from kubesched.plugins.pod_group_pods_count import PodGroupPodsCount
from kubesched.plugins.topology_placement import TopologyPlacementGenerator
from kubesched.testing.builders import make_node, make_pod


def group(name: str = "g", key: str | None = "rack") -> PodGroup:
    constraints = (
        None if key is None else PodGroupSchedulingConstraints(topology=[TopologyConstraint(key=key)])
    )
    return PodGroup(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=PodGroupSpec(
            scheduling_policy=PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=2)),
            scheduling_constraints=constraints,
        ),
    )


def member(name: str, node: str = "", cpu: str = "1") -> Pod:
    spec: dict[str, object] = {"schedulingGroup": {"podGroupName": "g"}}
    if node:
        spec["nodeName"] = node
    return make_pod(name, cpu=cpu, spec=spec)  # type: ignore[arg-type]


class Handle:
    """Just the PodGroupLookup part of a scheduler's Handle."""

    def __init__(self, pods: Sequence[Pod] = (), assumed: Sequence[str] = ()) -> None:
        self.groups = SchedulingGroups([group()], pods)
        self.assumed = set(assumed)

    def pod_group_state(self, namespace: str, name: str) -> PodGroupState | None:
        return self.groups.state(namespace, name, self.assumed.__contains__)


def table(nodes: Sequence[Node], pods: Sequence[tuple[Pod, str]] = ()) -> NodeTable:
    infos = {n.metadata.name: NodeInfo(n) for n in nodes}
    for pod, node in pods:
        infos[node].add_pod(PodInfo(pod))
    return NodeTable(list(infos.values()))


RACKS = [make_node(f"n{i}", labels={"rack": "ab"[i % 2]} if i < 4 else {}) for i in range(5)]


def generate(plugin: TopologyPlacementGenerator, pg: PodGroup, t: NodeTable) -> Sequence[Placement] | Status:
    return plugin.generate_placements(CycleState(), pg, Placement("", t.all()))


def test_one_placement_per_domain_in_node_order_without_the_unlabelled_nodes() -> None:
    out = generate(TopologyPlacementGenerator(Handle()), group(), table(RACKS))  # type: ignore[arg-type]
    assert not isinstance(out, Status)
    assert [(p.name, p.nodes.names) for p in out] == [("a", ["n0", "n2"]), ("b", ["n1", "n3"])]


def test_a_group_without_a_constraint_gets_the_nodes_it_was_given() -> None:
    t = table(RACKS)
    parent = Placement("", t.all())
    plugin = TopologyPlacementGenerator(Handle())  # type: ignore[arg-type]
    assert plugin.generate_placements(CycleState(), group(key=None), parent) == [parent]


def test_scheduled_members_bound_or_assumed_pin_the_group_to_their_domain() -> None:
    bound = Handle([member("p0", node="n1"), member("p1")])
    out = generate(TopologyPlacementGenerator(bound), group(), table(RACKS))  # type: ignore[arg-type]
    assert not isinstance(out, Status)
    assert [p.name for p in out] == ["b"]
    p0 = member("p0")
    assumed = Handle([p0, member("p1")], assumed=[pod_key(p0)])
    t = table(RACKS, [(p0, "n2")])  # in the scheduler's cache, on n2; its nodeName still empty
    out = generate(TopologyPlacementGenerator(assumed), group(), t)  # type: ignore[arg-type]
    assert not isinstance(out, Status)
    assert [p.name for p in out] == ["a"]


class CacheHandle(Handle):
    """A Handle that also tells which node the cache holds an assumed pod on, as the scheduler's does."""

    def __init__(self, pods: Sequence[Pod], assumed: dict[str, str]) -> None:
        super().__init__(pods, list(assumed))
        self.nodes = assumed
        self.asked: list[str] = []

    def assumed_node(self, pod_key: str) -> str | None:
        self.asked.append(pod_key)
        return self.nodes.get(pod_key)


def test_an_assumed_members_node_comes_from_the_cache_not_a_scan_of_the_nodes() -> None:
    p0 = member("p0")
    handle = CacheHandle([p0, member("p1")], {pod_key(p0): "n3"})
    # The table does not hold p0 at all: only the cache's answer can put the group in rack b.
    out = generate(TopologyPlacementGenerator(handle), group(), table(RACKS))  # type: ignore[arg-type]
    assert not isinstance(out, Status)
    assert [p.name for p in out] == ["b"] and handle.asked == [pod_key(p0)]


@pytest.mark.parametrize(
    ("nodes", "reason"),
    [
        (["n0", "n1"], "more than 1 domain found for pod group: a, b"),
        (["n4"], "no topology domain found for pod default/p0"),
        (["gone"], 'getting node for pod default/p0: nodeinfo not found for node name "gone"'),
    ],
)
def test_scheduled_members_whose_domain_cannot_be_told_are_an_error(nodes: list[str], reason: str) -> None:
    handle = Handle([member(f"p{i}", node=n) for i, n in enumerate(nodes)])
    out = generate(TopologyPlacementGenerator(handle), group(), table(RACKS))  # type: ignore[arg-type]
    assert isinstance(out, Status) and out.code == Code.ERROR
    assert out.message() == f"cannot determine domain for already scheduled pods: {reason}"


def assignments(t: NodeTable, rows: Sequence[str], pods: Sequence[tuple[Pod, str]]) -> PodGroupAssignments:
    placement = Placement("x", t.subset(rows))
    return PodGroupAssignments(placement, tuple(ProposedAssignment(p, n, CycleState()) for p, n in pods))


def test_pods_count_is_scheduled_plus_proposed_then_scaled_to_the_best() -> None:
    handle = Handle([member("p0", node="n0"), member("p1"), member("p2"), member("p3")])
    plugin = PodGroupPodsCount(handle)  # type: ignore[arg-type]
    t = table(RACKS)
    one = assignments(t, ["n0", "n2"], [(member("p1"), "n2")])
    three = assignments(t, ["n0", "n2"], [(member(f"p{i}"), "n2") for i in (1, 2, 3)])
    raw = [plugin.score_placement(CycleState(), group(), a) for a in (one, three)]
    assert raw == [2, 4]
    scores = [PlacementScore(one.placement, 2), PlacementScore(three.placement, 4)]
    assert plugin.normalize_placement_score(CycleState(), group(), scores) is None
    assert [s.score for s in scores] == [50, 100]  # 2 * 100 // 4


def test_pods_count_refuses_to_normalize_when_no_placement_holds_a_pod() -> None:
    plugin = PodGroupPodsCount(Handle())  # type: ignore[arg-type]
    status = plugin.normalize_placement_score(CycleState(), group(), [PlacementScore(None, 0)])  # type: ignore[arg-type]
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "no pods from pod group are assigned to any of the candidate placements"


def test_fit_scores_a_placement_most_allocated_over_its_nodes_as_one() -> None:
    # Two 4-CPU / 32Gi nodes; n0 already runs 2 CPU and 8Gi; the proposal adds 3 CPU and a pod
    # without requests (counted as 100m and 200Mi). cpu: (2000 + 3000 + 100) / 8000 -> 63;
    # memory: (8Gi + 1Gi + 200Mi) / 64Gi -> 14; (63 + 14) // 2 = 38, whatever the node strategy.
    nodes = [make_node("n0"), make_node("n1")]
    t = table(nodes, [(make_pod("old", cpu="2", memory="8Gi"), "n0")])
    proposed = [(make_pod("a", cpu="3", memory="1Gi"), "n0"), (make_pod("b"), "n1")]
    least = NodeResourcesFit(NodeResourcesFitArgs())
    assert least.score_placement(CycleState(), group(), assignments(t, ["n0", "n1"], proposed)) == 38
    gi = 1024**3
    assert (2000 + 3000 + 100) * 100 // 8000 == 63
    assert (8 * gi + gi + 200 * 1024**2) * 100 // (64 * gi) == 14
