"""The pod-group cycle with GenericWorkload on: a PodGroup's pods are placed all or nothing.

The three gangs are the issue's, checked on the v1.37.2 binary: four 4-CPU nodes, then gangs of
4 x 3 CPU (minCount 4), 2 x 2 CPU (minCount 2) and 5 x 1 CPU (minCount 5), created in turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest

from kubesched.api.loader import LoadedObjects
from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import (
    POD_GROUP_INITIALLY_SCHEDULED,
    GangSchedulingPolicy,
    Marker,
    PodGroup,
    PodGroupSchedulingPolicy,
    PodGroupSpec,
)
from kubesched.cluster.memory import MemoryCluster
from kubesched.config import DEFAULT_GATES, FeatureGates, decode_config
from kubesched.plugins import default_registry
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.pod_group_cycle import PodGroupOutcome
from kubesched.scheduler.profiles import options_from_config, profiles_from_config
from kubesched.scheduler.scheduler import Scheduler
from kubesched.simulate.virtual_time import drain
from kubesched.testing.builders import make_node, make_pod

GATES = FeatureGates(explicit={"GenericWorkload": True})
CONFIG = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
INSUFFICIENT = "0/4 nodes are available: 4 Insufficient cpu."
ZONE = "topology.kubernetes.io/zone"
NO_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"


def gang(
    name: str, min_count: int | None, namespace: str = "default", priority: int | None = None
) -> PodGroup:
    policy = (
        PodGroupSchedulingPolicy(basic=Marker())
        if min_count is None
        else PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=min_count))
    )
    return PodGroup(
        metadata=ObjectMeta(name=name, namespace=namespace, generation=1),
        spec=PodGroupSpec(scheduling_policy=policy, priority=priority),
    )


def member(name: str, group: str, cpu: str, **kw: object) -> Pod:
    return make_pod(name, cpu=cpu, spec={"schedulingGroup": {"podGroupName": group}}, **kw)  # type: ignore[arg-type]


class Bed:
    def __init__(
        self,
        *,
        nodes: int = 4,
        features: FeatureGates = GATES,
        groups: Iterable[PodGroup] = (),
        zones: Sequence[str] = (),
    ) -> None:
        """`nodes` 4-CPU nodes `n<i>`; the first ones labelled with `zones` (topology.kubernetes.io/zone)."""
        registry = default_registry(entry_points=False, features=features)
        cfg = decode_config(CONFIG, "sched.yaml", registry, features)
        self.clock = VirtualClock()
        labels = [{ZONE: z} for z in zones] + [{}] * (nodes - len(zones))
        node_list = [make_node(f"n{i}", cpu="4", memory="8Gi", labels=labels[i]) for i in range(nodes)]
        self.cluster = MemoryCluster(
            LoadedObjects(nodes=node_list, scheduling_pod_groups=list(groups)), self.clock.now
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

    def node_of(self, name: str) -> str:
        return next(p.spec.node_name for p in self.cluster.pods.values() if p.metadata.name == name)

    def bound(self, prefix: str) -> dict[str, str]:
        return {
            p.metadata.name: p.spec.node_name
            for p in self.cluster.pods.values()
            if p.metadata.name.startswith(prefix) and p.spec.node_name
        }

    def messages(self, prefix: str) -> list[str]:
        return [
            e.note
            for e in self.cluster.events
            if e.reason == "FailedScheduling" and e.regarding.startswith(f"default/{prefix}")
        ]

    def condition(self, name: str) -> tuple[str, str, str]:
        pg = self.cluster.groups.pod_group("default", name)
        assert pg is not None
        (cond,) = [c for c in pg.status.conditions if c.type == POD_GROUP_INITIALLY_SCHEDULED]
        return cond.status, cond.reason, cond.message


def three_gangs() -> Bed:
    bed = Bed(groups=[gang("g1", 4), gang("g2", 2), gang("g3", 5)])
    bed.create(*(member(f"a{i}", "g1", "3") for i in range(4)))
    bed.create(*(member(f"b{i}", "g2", "2") for i in range(2)))
    bed.create(*(member(f"c{i}", "g3", "1") for i in range(5)))
    return bed


def test_a_gang_that_fits_binds_whole_one_pod_per_node() -> None:
    bed = three_gangs()
    assert sorted(bed.bound("a").values()) == ["n0", "n1", "n2", "n3"]
    assert bed.condition("g1") == ("True", "Scheduled", "")
    assert bed.outcomes[0].result == "Scheduled"
    assert bed.outcomes[0].placement == bed.bound("a")


def test_a_gang_whose_first_pod_fits_nowhere_stops_there_with_the_binarys_texts() -> None:
    bed = three_gangs()
    assert bed.bound("b") == {}
    msg = "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"
    assert bed.messages("b")[:2] == [INSUFFICIENT, msg]
    assert bed.condition("g2") == ("False", "Unschedulable", f"{msg}, {NO_VICTIMS}")


def test_a_gang_one_pod_short_binds_nothing() -> None:
    bed = three_gangs()
    assert bed.bound("c") == {}
    msg = "minCount (5) cannot be satisfied: 4 scheduled, 0 remaining"
    assert bed.condition("g3") == ("False", "Unschedulable", f"{msg}, {NO_VICTIMS}")
    first = bed.messages("c")[:5]
    # the four that fitted share the group's rejection; the fifth has its own FitError
    assert first[:4] == [f"pod group is unschedulable, {msg}, {NO_VICTIMS}"] * 4
    assert first[4] == INSUFFICIENT
    # and nothing of the trial is left assumed: a 1-CPU pod of no group still fits every node
    bed.create(make_pod("free", cpu="1"))
    assert bed.node_of("free")


def test_members_wait_for_min_count_pods_before_any_is_tried() -> None:
    bed = Bed(groups=[gang("g", 3)])
    bed.create(member("p0", "g", "1"), member("p1", "g", "1"))
    assert bed.bound("p") == {} and bed.outcomes == []
    assert bed.scheduler.queue.pending_counts()["gated"] == 2
    bed.create(member("p2", "g", "1"))
    assert len(bed.bound("p")) == 3
    assert [o.result for o in bed.outcomes] == ["Scheduled"]


def test_members_wait_for_their_pod_group_to_exist() -> None:
    bed = Bed()
    bed.create(member("p0", "late", "1"))
    assert bed.bound("p") == {}
    assert bed.scheduler.queue.pending_counts()["gated"] == 1


def test_a_basic_group_places_what_fits() -> None:
    bed = Bed(groups=[gang("g", None)])
    bed.create(*(member(f"p{i}", "g", "3") for i in range(5)))
    assert len(bed.bound("p")) == 4
    assert bed.condition("g") == ("True", "Scheduled", "")


def test_a_member_whose_priority_differs_from_the_groups_fails_the_group_as_an_error() -> None:
    bed = Bed(groups=[gang("g", 2)])
    bed.create(member("p0", "g", "1"), member("p1", "g", "1", priority=5))
    assert bed.bound("p") == {}
    status, reason, message = bed.condition("g")
    assert (status, reason) == ("False", "SchedulerError")
    same = "all pods in a single pod group should have the same priority as the pod group's priority"
    assert message == f"{same}, got 5 and 0"


@pytest.mark.parametrize("features", [DEFAULT_GATES])
def test_with_the_gate_off_members_schedule_one_by_one(features: FeatureGates) -> None:
    bed = Bed(features=features, groups=[gang("g", 5)])
    bed.create(*(member(f"p{i}", "g", "1") for i in range(2)))
    assert len(bed.bound("p")) == 2
    assert bed.outcomes == []


def test_a_late_member_that_fits_nowhere_leaves_a_scheduled_groups_condition_true() -> None:
    bed = Bed(groups=[gang("g", 2)])
    bed.create(member("p0", "g", "3"), member("p1", "g", "3"))
    assert len(bed.bound("p")) == 2
    bed.create(member("p2", "g", "8"))
    assert bed.bound("p2") == {}
    assert bed.messages("p2") == [INSUFFICIENT]
    # the group met minCount already, but no pod was placed in this cycle: a rejection, not written
    assert bed.outcomes[-1].result == "Unschedulable"
    assert bed.outcomes[-1].message == f"pod group is unschedulable, {NO_VICTIMS}"
    assert bed.condition("g") == ("True", "Scheduled", "")


def test_simulate_reports_each_pod_group_with_the_condition_text() -> None:
    from kubesched.simulate.snapshot.run import simulate_cluster

    registry = default_registry(entry_points=False, features=GATES)
    cfg = decode_config(CONFIG, "sched.yaml", registry, GATES)
    pods = [member(f"a{i}", "g1", "3") for i in range(4)]
    pods += [member(f"b{i}", "g2", "2") for i in range(2)]
    pods += [member(f"c{i}", "g3", "1") for i in range(5)]
    objects = LoadedObjects(
        nodes=[make_node(f"n{i}", cpu="4", memory="8Gi") for i in range(4)],
        pods=pods,
        scheduling_pod_groups=[gang("g1", 4), gang("g2", 2), gang("g3", 5), gang("idle", 2)],
    )
    report, _ = simulate_cluster(objects, cfg, registry)
    got = {
        g.name: (g.result, g.min_count, g.pods, g.message, sorted(g.placement.values()))
        for g in report.pod_groups
    }
    assert got == {
        "g1": ("Scheduled", 4, 4, "", ["n0", "n1", "n2", "n3"]),
        "g2": (
            "Unschedulable",
            2,
            2,
            f"minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, {NO_VICTIMS}",
            [],
        ),
        "g3": (
            "Unschedulable",
            5,
            5,
            f"minCount (5) cannot be satisfied: 4 scheduled, 0 remaining, {NO_VICTIMS}",
            [],
        ),
        "idle": ("Pending", 2, 0, None, []),
    }
    assert {p.name: p.result for p in report.pods if p.name.startswith("c")} == dict.fromkeys(
        [f"c{i}" for i in range(5)], "Unschedulable"
    )
