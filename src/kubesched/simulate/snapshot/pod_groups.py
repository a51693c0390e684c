"""The simulate report's `podGroups[]`: each scheduling.k8s.io PodGroup as the run left it.

The result and message are read from the PodGroup's `PodGroupInitiallyScheduled` condition, which
the pod-group cycle writes as kube-scheduler does, so the message is the binary's text.
"""

from __future__ import annotations

from kubesched.api.scheduling_groups import POD_GROUP_INITIALLY_SCHEDULED
from kubesched.framework.pod_groups import SchedulingGroups, min_count
from kubesched.simulate.snapshot.model import PodGroupResult

__all__ = ["pod_group_results"]


def pod_group_results(groups: SchedulingGroups) -> list[PodGroupResult]:
    """Every PodGroup of `groups`, in the order they were loaded."""
    results: list[PodGroupResult] = []
    for (namespace, name), pod_group in groups.pod_groups.items():
        pods = groups.pods_of(namespace, name)
        condition = next(
            (c for c in pod_group.status.conditions if c.type == POD_GROUP_INITIALLY_SCHEDULED), None
        )
        if condition is None:
            result = "Pending"
        elif condition.status == "True":
            result = "Scheduled"
        else:
            result = "Error" if condition.reason == "SchedulerError" else "Unschedulable"
        results.append(
            PodGroupResult(
                namespace=namespace,
                name=name,
                result=result,
                min_count=min_count(pod_group),
                pods=len(pods),
                message=None if condition is None else condition.message,
                placement={p.metadata.name: p.spec.node_name for p in pods if p.spec.node_name},
                members=[p.metadata.name for p in pods],
            )
        )
    return results
