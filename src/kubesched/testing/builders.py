"""Concise builders for Pods and Nodes, so tests and benchmarks read like the scenario they set up."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from kubesched.api.objects import Node, Pod, Taint, Toleration


def make_node(
    name: str,
    *,
    cpu: str | int = "4",
    memory: str = "32Gi",
    pods: int = 110,
    extra: Mapping[str, str | int] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
    unschedulable: bool = False,
    images: Sequence[tuple[Sequence[str], int]] = (),
) -> Node:
    """A Ready node whose allocatable equals capacity (as scheduler_perf's fake nodes)."""
    resources: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    return msgspec.convert(
        {
            "metadata": {
                "name": name,
                "uid": f"node-{name}",
                "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            },
            "spec": {"unschedulable": unschedulable, "taints": [msgspec.to_builtins(t) for t in taints]},
            "status": {
                "capacity": resources,
                "allocatable": resources,
                "conditions": [{"type": "Ready", "status": "True"}],
                "images": [{"names": list(n), "sizeBytes": s} for n, s in images],
            },
        },
        Node,
    )


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = None,
    memory: str | None = None,
    extra: Mapping[str, str | int] | None = None,
    node_name: str = "",
    scheduler_name: str = "default-scheduler",
    priority: int | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Iterable[Toleration] = (),
    host_ports: Iterable[int] = (),
    image: str = "registry.k8s.io/pause:3.10",
    spec: Mapping[str, Any] | None = None,
) -> Pod:
    """A single-container pod; `spec` entries (camelCase) are merged over the generated spec."""
    requests: dict[str, Any] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    requests.update(extra or {})
    container: dict[str, Any] = {"name": "c", "image": image, "resources": {"requests": requests}}
    if host_ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
    body: dict[str, Any] = {
        "nodeName": node_name,
        "schedulerName": scheduler_name,
        "containers": [container],
        "tolerations": [msgspec.to_builtins(t) for t in tolerations],
        "nodeSelector": dict(node_selector or {}),
    }
    if priority is not None:
        body["priority"] = priority
    body.update(spec or {})
    return msgspec.convert(
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"{namespace}-{name}",
                "labels": dict(labels or {}),
                "annotations": dict(annotations or {}),
            },
            "spec": body,
        },
        Pod,
    )


def make_table(nodes: Sequence[Node], pods: Sequence[Pod] = ()) -> Any:
    """A NodeTable of `nodes` with the pods that name a node already placed on it."""
    from kubesched.framework.node_info import NodeInfo, PodInfo
    from kubesched.framework.node_table import NodeTable

    infos = {n.metadata.name: NodeInfo(n) for n in nodes}
    for p in pods:
        if p.spec.node_name in infos:
            infos[p.spec.node_name].add_pod(PodInfo(p))
    return NodeTable(list(infos.values()))
