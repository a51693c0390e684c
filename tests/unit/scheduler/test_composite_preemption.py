"""Pod-group preemption over CompositePodGroup trees: a running pod of a tree is weighed at the
tree's root's priority, and evicted with the whole tree when the highest group above it with
`disruptionMode: all` is the root (upstream's GetPodPriority and getHighestAllAncestor).

Four 4-CPU nodes. The tree `job` (root priority 10) holds `lead` (one 2-CPU pod) and `work` (two
3-CPU pods): each pod takes a node of its own, and an ordinary pod of priority 1000 takes the fourth.
"""

from __future__ import annotations

import msgspec
import pytest
from tests.unit.scheduler.test_composite_pod_group import Bed, child, composite
from tests.unit.scheduler.test_pod_group_cycle import gang

from kubesched.api.scheduling_groups import (
    CompositeDisruptionMode,
    CompositePodGroup,
    Marker,
    PodGroup,
)
from kubesched.framework.group_forest import EntityKey, GroupForest
from kubesched.framework.pod_groups import SchedulingGroups
from kubesched.simulate.virtual_time import drain
from kubesched.testing.builders import make_pod

ROOT, HIGH, OTHER = 10, 500, 1000


def prioritised(group: PodGroup, priority: int) -> PodGroup:
    return msgspec.structs.replace(group, spec=msgspec.structs.replace(group.spec, priority=priority))


def root(*, disrupted_whole: bool = False) -> CompositePodGroup:
    job = composite("job", 2)
    mode = CompositeDisruptionMode(all=Marker()) if disrupted_whole else None
    spec = msgspec.structs.replace(job.spec, priority=ROOT, disruption_mode=mode)
    return msgspec.structs.replace(job, spec=spec)


def settle(bed: Bed) -> None:
    for _ in range(5):
        bed.clock.advance(30)
        bed.scheduler.queue.flush_backoff_completed()
        drain(bed.scheduler)


def running_tree(job: CompositePodGroup, lead: PodGroup, work: PodGroup, high_size: int) -> Bed:
    """The tree bound on three nodes, the fourth full, then a gang `high` of `high_size` 3-CPU pods."""
    bed = Bed([job, lead, work, gang("high", high_size, priority=HIGH)])
    tree = {"lead-0": ("lead", "2"), "work-0": ("work", "3"), "work-1": ("work", "3")}
    bed.create(
        *(
            make_pod(name, cpu=cpu, priority=ROOT, spec={"schedulingGroup": {"podGroupName": group}})  # type: ignore[arg-type]
            for name, (group, cpu) in tree.items()
        )
    )
    assert len(set(bed.bound().values())) == 3
    bed.create(make_pod("other", cpu="4", priority=OTHER))
    assert "other" in bed.bound()
    bed.create(
        *(
            make_pod(f"h{i}", cpu="3", priority=HIGH, spec={"schedulingGroup": {"podGroupName": "high"}})  # type: ignore[arg-type]
            for i in range(high_size)
        )
    )
    settle(bed)
    return bed


def test_a_tree_pod_weighs_at_its_roots_priority_not_its_pod_groups() -> None:
    # The children say 1000, above the gang's 500; the root says 10, and the root's counts.
    bed = running_tree(
        root(), prioritised(child("lead", 1), OTHER), prioritised(child("work", 2), OTHER), high_size=3
    )
    bound = bed.bound()
    assert sorted(n for n in bound if n.startswith("h")) == ["h0", "h1", "h2"]
    assert not {"lead-0", "work-0", "work-1"} & set(bound)


def test_a_tree_disrupted_whole_from_its_root_loses_every_pod() -> None:
    # One node is enough for the gang; the root's `disruptionMode: all` takes the whole tree along.
    bed = running_tree(root(disrupted_whole=True), child("lead", 1), child("work", 2), high_size=1)
    bound = bed.bound()
    assert "h0" in bound
    assert not {"lead-0", "work-0", "work-1"} & set(bound)


def test_the_walk_up_stops_at_a_missing_parent_and_after_four_groups() -> None:
    chain = [composite(f"c{i}", 1, parent=f"c{i + 1}" if i < 4 else None) for i in range(5)]
    groups = SchedulingGroups([child("leaf", 1, parent="c0"), *chain, child("orphan", 1, parent="gone")])
    forest = GroupForest(groups, lambda _: False)
    walked = forest.ancestry(EntityKey(False, "default", "leaf"))
    assert [k.name for k, _ in walked] == ["leaf", "c0", "c1", "c2"]
    assert [k.name for k, _ in forest.ancestry(EntityKey(False, "default", "orphan"))] == ["orphan"]


@pytest.mark.parametrize("seed", range(6))
def test_the_dry_run_tries_the_children_in_upstreams_order_and_may_find_nothing(seed: int) -> None:
    # Composite seed 209 wave 2 in small: four ordinary pods of priority 0 leave 1 CPU per node.
    # With them all taken away, `a` (four 2-CPU pods, one per node) goes before `b` (one 3-CPU pod)
    # by name, leaves no node 3 CPU, and the dry run finds no placement: nothing is evicted. Tried
    # `b` first, the tree would fit and take all four nodes' pods.
    a, b = child("a", 4), child("b", 1)
    bed = Bed([root(), a, b], seed=seed)
    bed.create(*(make_pod(f"low{i}", cpu="3") for i in range(4)))
    assert len(set(bed.bound().values())) == 4
    members = [
        make_pod(f"{g}-{i}", cpu=cpu, priority=ROOT, spec={"schedulingGroup": {"podGroupName": g}})  # type: ignore[arg-type]
        for g, n, cpu in (("a", 4, "2"), ("b", 1, "3"))
        for i in range(n)
    ]
    bed.create(*members)
    settle(bed)
    assert set(bed.bound()) == {f"low{i}" for i in range(4)}
    dry_run = (
        "pod group preemption: pod group is unschedulable, 0/1 placements are available, "
        "first placement status: minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"
    )
    status, reason, message = bed.condition("b")
    assert (status, reason) == ("False", "Unschedulable")
    assert message.endswith(dry_run)
