"""The simulate report's `podGroups[]`: each scheduling.k8s.io PodGroup as the run left it, and
each CompositePodGroup over them.

A PodGroup's result and message are read from its `PodGroupInitiallyScheduled` condition, which the
pod-group cycle writes as kube-scheduler does, so the message is the binary's text. A composite
has no condition of its own (the binary writes none): its result is read from its children's, as
its gang counts them (`minGroupCount` of them placed), and its message is null.
"""

from __future__ import annotations

from kubesched.api.scheduling_groups import POD_GROUP_INITIALLY_SCHEDULED, CompositePodGroup
from kubesched.framework.group_forest import EntityKey, GroupForest, GroupNode
from kubesched.framework.pod_groups import SchedulingGroups, min_count
from kubesched.simulate.snapshot.model import PodGroupResult

__all__ = ["pod_group_results"]


def pod_group_results(groups: SchedulingGroups) -> list[PodGroupResult]:
    """Every CompositePodGroup of `groups`, then every PodGroup, each in the order loaded."""
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
        parent = pod_group.spec.parent_composite_pod_group_name
        results.append(
            PodGroupResult(
                namespace=namespace,
                name=name,
                parent=None if parent is None else f"{namespace}/{parent}",
                result=result,
                min_count=min_count(pod_group),
                pods=len(pods),
                message=None if condition is None else condition.message,
                placement={p.metadata.name: p.spec.node_name for p in pods if p.spec.node_name},
                members=[p.metadata.name for p in pods],
            )
        )
    if not groups.composite_pod_groups:
        return results
    forest = GroupForest(groups, lambda _key: False)
    by_key = {(r.namespace, r.name): r for r in results}
    composites = [
        _composite(forest, (namespace, name), composite, by_key)
        for (namespace, name), composite in groups.composite_pod_groups.items()
    ]
    return [*composites, *results]


def _composite(
    forest: GroupForest,
    key: tuple[str, str],
    composite: CompositePodGroup,
    pod_groups: dict[tuple[str, str], PodGroupResult],
) -> PodGroupResult:
    namespace, name = key
    tree = forest.tree(EntityKey(True, namespace, name))
    leaves = [pod_groups[(n.key.namespace, n.key.name)] for n in (tree.leaves() if tree else [])]
    gang = composite.spec.scheduling_policy.gang
    parent = composite.spec.parent_composite_pod_group_name
    return PodGroupResult(
        namespace=namespace,
        name=name,
        kind="CompositePodGroup",
        parent=None if parent is None else f"{namespace}/{parent}",
        result=_result(tree, pod_groups) if tree is not None else "Pending",
        min_count=1 if gang is None else gang.min_group_count,
        pods=sum(r.pods for r in leaves),
        placement={pod: node for r in leaves for pod, node in r.placement.items()},
        members=[m for r in leaves for m in r.members],
    )


def _result(node: GroupNode, pod_groups: dict[tuple[str, str], PodGroupResult]) -> str:
    """A PodGroup's own result; a composite's from its children: Scheduled once minGroupCount of
    them are, Error if one is, Pending while none has a result, else Unschedulable."""
    if node.pod_group is not None:
        return pod_groups[(node.key.namespace, node.key.name)].result
    assert node.composite is not None
    children = [_result(child, pod_groups) for child in node.children]
    gang = node.composite.spec.scheduling_policy.gang
    if children.count("Scheduled") >= (1 if gang is None else gang.min_group_count):
        return "Scheduled"
    if "Error" in children:
        return "Error"
    if all(r == "Pending" for r in children):
        return "Pending"
    return "Unschedulable"
