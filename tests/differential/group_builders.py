"""Hand-made objects for the gated differential tests: 4-CPU nodes, gang pods, PodGroups.

The scenarios checked by hand (the issue's three gangs, a gang in one rack, a composite tree, a
group's preemption policy) are all built from these, so a change to what a node or a member pod
looks like is made once.
"""

from __future__ import annotations

from typing import Any

from kubesched.harness.differential.group_scenario import POD_GROUP_API, RACK, GroupScenario, Wave
from kubesched.harness.differential.scenario import HOSTNAME

Obj = dict[str, Any]

#: What a pod group's condition ends with when the binary's pod-group preemption found nothing.
NO_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"
#: The part of a group's spec that keeps it in one rack.
IN_ONE_RACK: Obj = {"schedulingConstraints": {"topology": [{"key": RACK}]}}


def node(s: GroupScenario, i: int, rack: str | None = None) -> Obj:
    """Node `<s>-n<i>`, 4 CPU, labelled with its hostname (and `rack`, if given)."""
    name = f"{s.name}-n{i}"
    labels = {HOSTNAME: name} | ({RACK: rack} if rack is not None else {})
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "capacity": allocatable,
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def member_pods(group: str, size: int, cpu: str, priority: str | None = None) -> list[Obj]:
    """`size` pods `<group>-p<j>` of PodGroup `group`, each asking for `cpu`."""
    extra: Obj = {"priorityClassName": priority} if priority is not None else {}
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{group}-p{j}", "namespace": "default"},
            "spec": {
                "schedulingGroup": {"podGroupName": group},
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
            }
            | extra,
        }
        for j in range(size)
    ]


def pod_group(name: str, spec: Obj) -> Obj:
    """PodGroup `name` in the default namespace."""
    return {
        "apiVersion": POD_GROUP_API,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def gang(
    s: GroupScenario,
    i: int,
    size: int,
    cpu: str,
    min_count: int,
    *,
    priority: str | None = None,
    spec: Obj | None = None,
) -> Wave:
    """Wave `<s>-w<i>`: a gang of `size` pods asking for `cpu` each, minCount `min_count`, its
    PodGroup's spec extended by `spec` (a priority class, a policy, a topology constraint)."""
    name = f"{s.name}-w{i}"
    group = {"schedulingPolicy": {"gang": {"minCount": min_count}}} | (spec or {})
    return Wave(member_pods(name, size, cpu, priority), [pod_group(name, group)])


def plain_pod(name: str, cpu: str, priority: str | None = None, node_name: str | None = None) -> Obj:
    """An ordinary pod `name` asking for `cpu` (running on `node_name`, if given)."""
    spec: Obj = {
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
    }
    if priority is not None:
        spec["priorityClassName"] = priority
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "plain"}},
        "spec": spec,
    }
    if node_name is not None:
        spec["nodeName"] = node_name
        pod["status"] = {"phase": "Running"}
    return pod
