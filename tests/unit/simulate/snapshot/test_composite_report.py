"""The report's `podGroups[]` with CompositePodGroups: a row per composite (no condition of its own,
its result read from its children as its gang counts them) before the PodGroups, each PodGroup
naming its parent."""

from __future__ import annotations

from kubesched.api.meta import ObjectMeta
from kubesched.api.resource import Condition
from kubesched.api.scheduling_groups import (
    POD_GROUP_INITIALLY_SCHEDULED,
    CompositeGangSchedulingPolicy,
    CompositePodGroup,
    CompositePodGroupSchedulingPolicy,
    CompositePodGroupSpec,
    PodGroup,
    PodGroupSpec,
    PodGroupStatus,
    WorkloadReference,
)
from kubesched.framework.pod_groups import SchedulingGroups
from kubesched.simulate.snapshot.pod_groups import pod_group_results
from kubesched.testing.builders import make_pod


def _child(name: str, status: str | None) -> PodGroup:
    conditions = [] if status is None else [Condition(type=POD_GROUP_INITIALLY_SCHEDULED, status=status)]
    return PodGroup(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=PodGroupSpec(parent_composite_pod_group_name="job", workload_ref=WorkloadReference("w", name)),
        status=PodGroupStatus(conditions=conditions),
    )


def _job(min_groups: int) -> CompositePodGroup:
    policy = CompositePodGroupSchedulingPolicy(gang=CompositeGangSchedulingPolicy(min_group_count=min_groups))
    return CompositePodGroup(
        metadata=ObjectMeta(name="job", namespace="default"),
        spec=CompositePodGroupSpec(workload_ref=WorkloadReference("w", "job"), scheduling_policy=policy),
    )


def test_a_composite_row_comes_first_and_counts_its_children() -> None:
    pods = [
        make_pod("a-0", node_name="n0", spec={"schedulingGroup": {"podGroupName": "a"}}),  # type: ignore[arg-type]
        make_pod("b-0", spec={"schedulingGroup": {"podGroupName": "b"}}),  # type: ignore[arg-type]
    ]
    for min_groups, expected in ((1, "Scheduled"), (2, "Unschedulable")):
        groups = SchedulingGroups([_job(min_groups), _child("a", "True"), _child("b", "False")], pods)
        job, a, b = pod_group_results(groups)
        assert (job.kind, job.name, job.result, job.message) == ("CompositePodGroup", "job", expected, None)
        assert (job.min_count, job.pods, job.placement, job.members) == (
            min_groups,
            2,
            {"a-0": "n0"},
            ["a-0", "b-0"],
        )
        assert (a.kind, a.parent, a.result, b.result) == (
            "PodGroup",
            "default/job",
            "Scheduled",
            "Unschedulable",
        )
    groups = SchedulingGroups([_job(1), _child("a", None), _child("b", None)], pods)
    assert pod_group_results(groups)[0].result == "Pending"
