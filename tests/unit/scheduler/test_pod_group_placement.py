"""The pod-group cycle with TopologyAwareWorkloadScheduling on: a group asking for one rack is tried
in each rack alone and placed in the best one, or not at all, with the binary's texts.

Four 4-CPU nodes: n0 and n2 in rack a, n1 and n3 in rack b (a node's rack is its index's parity).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

import msgspec

from kubesched.api.loader import LoadedObjects
from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import (
    GangSchedulingPolicy,
    Marker,
    PodGroup,
    PodGroupSchedulingConstraints,
    PodGroupSchedulingPolicy,
    PodGroupSpec,
    TopologyConstraint,
)
from kubesched.cluster.memory import MemoryCluster
from kubesched.config import FeatureGates, decode_config
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.node_table import NodeSet
from kubesched.framework.placement import Placement
from kubesched.plugins import default_registry
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.pod_group_cycle import PodGroupOutcome
from kubesched.scheduler.profiles import options_from_config, profiles_from_config
from kubesched.scheduler.scheduler import Scheduler
from kubesched.simulate.virtual_time import drain
from kubesched.testing.builders import make_node, make_pod

TOPOLOGY = FeatureGates(explicit={"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True})
CONFIG = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
NO_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"


def gang(name: str, min_count: int, key: str | None = "rack") -> PodGroup:
    constraints = (
        None if key is None else PodGroupSchedulingConstraints(topology=[TopologyConstraint(key=key)])
    )
    return PodGroup(
        metadata=ObjectMeta(name=name, namespace="default", generation=1),
        spec=PodGroupSpec(
            scheduling_policy=PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=min_count)),
            scheduling_constraints=constraints,
        ),
    )


def member(name: str, group: str, cpu: str) -> Pod:
    return make_pod(name, cpu=cpu, spec={"schedulingGroup": {"podGroupName": group}})  # type: ignore[arg-type]


def rack(i: int) -> str:
    return "ab"[i % 2]


class Bed:
    def __init__(
        self,
        groups: Iterable[PodGroup],
        *,
        features: FeatureGates = TOPOLOGY,
        config: str = CONFIG,
        running: Sequence[Pod] = (),
    ) -> None:
        registry = default_registry(entry_points=False, features=features)
        registry.register(Thirds)
        cfg = decode_config(config, "sched.yaml", registry, features)
        self.clock = VirtualClock()
        nodes = [make_node(f"n{i}", cpu="4", memory="8Gi", labels={"rack": rack(i)}) for i in range(4)]
        self.cluster = MemoryCluster(
            LoadedObjects(nodes=nodes, pods=list(running), scheduling_pod_groups=list(groups)), self.clock.now
        )
        self.outcomes: list[PodGroupOutcome] = []
        self.scheduler = Scheduler(
            profiles_from_config(cfg, registry),
            registry,
            self.cluster,
            self.clock,
            options_from_config(cfg, seed=0),
            on_pod_group=self.outcomes.append,
        )
        self.cluster.subscribe(self.scheduler)

    def create(self, *pods: Pod) -> None:
        for pod in pods:
            self.cluster.create_pod(pod)
        drain(self.scheduler)

    def bound(self, prefix: str) -> dict[str, str]:
        return {
            p.metadata.name: p.spec.node_name
            for p in self.cluster.pods.values()
            if p.metadata.name.startswith(prefix) and p.spec.node_name
        }

    def first_messages(self, prefix: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for e in self.cluster.events:
            if e.reason == "FailedScheduling" and e.regarding.startswith(f"default/{prefix}"):
                out.setdefault(e.regarding.removeprefix("default/"), e.note)
        return out


def racks_of(bound: dict[str, str]) -> set[str]:
    return {rack(int(node[1:])) for node in bound.values()}


def test_a_gang_asking_for_one_rack_lands_in_one_rack() -> None:
    bed = Bed([gang("g", 2)])
    bed.create(*(member(f"p{i}", "g", "3") for i in range(2)))
    assert len(bed.bound("p")) == 2 and len(racks_of(bed.bound("p"))) == 1
    assert bed.outcomes[-1].result == "Scheduled"


def test_of_two_racks_that_fit_the_fuller_one_wins() -> None:
    # Rack b already runs 1 CPU on each node: both racks hold the gang (PodGroupPodsCount 100 each),
    # NodeResourcesFit's placement score (MostAllocated over the rack) prefers b: 6 of 8 CPU vs 4.
    running = [make_pod(f"r{i}", cpu="1", spec={"nodeName": f"n{i}"}) for i in (1, 3)]  # type: ignore[arg-type]
    bed = Bed([gang("g", 2)], running=running)
    bed.create(*(member(f"p{i}", "g", "2") for i in range(2)))
    assert racks_of(bed.bound("p")) == {"b"}


def test_the_rack_that_holds_more_of_a_basic_group_wins() -> None:
    # docs/plugins/PodGroupPodsCount.md: rack a holds four 2-CPU pods (100), rack b two (50).
    running = [make_pod(f"r{i}", cpu="1", spec={"nodeName": f"n{i}"}) for i in (1, 3)]  # type: ignore[arg-type]
    basic = PodGroup(
        metadata=ObjectMeta(name="g", namespace="default", generation=1),
        spec=PodGroupSpec(
            scheduling_policy=PodGroupSchedulingPolicy(basic=Marker()),
            scheduling_constraints=PodGroupSchedulingConstraints(topology=[TopologyConstraint(key="rack")]),
        ),
    )
    bed = Bed([basic], running=running)
    bed.create(*(member(f"p{i}", "g", "2") for i in range(4)))
    assert len(bed.bound("p")) == 4 and racks_of(bed.bound("p")) == {"a"}


def test_a_gang_that_fits_the_cluster_but_no_rack_binds_nothing_with_the_binarys_texts() -> None:
    bed = Bed([gang("g", 3)])
    bed.create(*(member(f"p{i}", "g", "3") for i in range(3)))
    assert bed.bound("p") == {}
    placements = "0/2 placements are available, first placement status: "
    group = (
        f"pod group is unschedulable, {placements}minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"
    )
    # The first placement's trial: two members fit its two nodes, the third fits none of them; the
    # two that fitted fail with the group's reason (upstream writes its prefix twice).
    fitted = f"pod group is unschedulable, {group}, {NO_VICTIMS}"
    assert sorted(bed.first_messages("p").values()) == [
        "0/2 nodes are available: 2 Insufficient cpu.",
        fitted,
        fitted,
    ]
    assert bed.outcomes[-1].message == f"{group}, {NO_VICTIMS}"


def test_a_cycle_holding_fewer_members_than_min_count_tries_none_in_any_placement() -> None:
    """The binary's texts of differential seed 1002 wave 2, where its first cycle held one of the
    gang's two pods (the other was still being moved to the active queue): PlacementFeasible says
    minCount cannot be met before any member is tried, so every placement fails with the bare
    "pod group is unschedulable", and the member gets the group's status as it was before the
    PodGroupPostFilter (one prefix, no preemption text). Here the other member is held back by
    being deleted, which upstream's cycle skips the same way."""
    bed = Bed([gang("g", 2)])
    p0 = member("p0", "g", "3")
    deleting = msgspec.structs.replace(
        p0, metadata=msgspec.structs.replace(p0.metadata, deletion_timestamp="2026-12-05T00:00:00Z")
    )
    bed.create(deleting, member("p1", "g", "3"))
    group = (
        "pod group is unschedulable, 0/2 placements are available, "
        "first placement status: pod group is unschedulable"
    )
    assert bed.first_messages("p1") == {"p1": group}
    assert bed.outcomes[-1].message == f"{group}, {NO_VICTIMS}"


def test_without_the_gate_the_constraint_is_not_read() -> None:
    bed = Bed([gang("g", 3)], features=FeatureGates(explicit={"GenericWorkload": True}))
    bed.create(*(member(f"p{i}", "g", "3") for i in range(3)))
    assert len(bed.bound("p")) == 3 and racks_of(bed.bound("p")) == {"a", "b"}


class Thirds:
    """A user's PlacementGenerate plugin: placements of nodes n0..n2 and n3 alone."""

    name: ClassVar[str] = "Thirds"
    calls: ClassVar[list[str]] = []

    def generate_placements(
        self, state: CycleState, pod_group: PodGroup, parent: Placement
    ) -> Sequence[Placement]:
        Thirds.calls.append(pod_group.metadata.name)
        nodes = parent.nodes
        wide = [i for i, name in enumerate(nodes.names) if name != "n3"]
        return [
            Placement("wide", NodeSet(nodes.table, nodes.rows[wide])),
            Placement("n3", NodeSet(nodes.table, nodes.rows[[nodes.names.index("n3")]])),
        ]


def test_a_profile_may_enable_its_own_placement_generator() -> None:
    config = CONFIG + (
        "profiles:\n- schedulerName: default-scheduler\n  plugins:\n"
        "    multiPoint: {disabled: [{name: TopologyPlacementGenerator}]}\n"
        "    placementGenerate: {enabled: [{name: Thirds}]}\n"
    )
    bed = Bed([gang("g", 3, key=None)], config=config)
    bed.create(*(member(f"p{i}", "g", "3") for i in range(3)))
    assert Thirds.calls == ["g"]
    assert sorted(bed.bound("p").values()) == ["n0", "n1", "n2"]
