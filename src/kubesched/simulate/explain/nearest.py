"""The nodes a pending pod came closest to, and what is missing on each.

A FailedScheduling message counts reasons; it does not say that `worker-7` only lacks 500m of cpu
while `gpu-2` lacks a toleration *and* memory. Here every Filter plugin runs on every node, not
stopping at the first rejection (`Framework.run_each_filter`), so each node gets the full list of
plugins that refuse it. The nearest nodes are those with the fewest obstacles (then the smallest
resource shortfall), and each obstacle is put in words from the node and the pod: "needs 500m more
cpu", "untolerated taint dedicated=gpu:NoSchedule", "2 pod(s) on it match the pod's anti-affinity".
A plugin this module does not know is described by its own reasons.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kubesched.api.cluster_objects import Namespace
from kubesched.api.objects import Pod
from kubesched.api.quantity import QuantityError, format_quantity
from kubesched.api.resources import pod_requests
from kubesched.api.taints import DEFAULT_FILTER_EFFECTS, toleration_tolerates
from kubesched.cluster.memory import MemoryCluster
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.node_info import NodeInfo, pod_host_ports, ports_conflict
from kubesched.framework.node_table import NodeTable
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.plugins.inter_pod_affinity import (
    ERR_REASON_AFFINITY,
    ERR_REASON_ANTI_AFFINITY,
    ERR_REASON_EXISTING_ANTI_AFFINITY,
    AffinityTerm,
    compile_pod_terms,
)
from kubesched.simulate.explain.model import NearNode

__all__ = ["NEAREST", "find_obstacles", "nearest_in_cluster", "nearest_nodes"]

HOSTNAME = "kubernetes.io/hostname"
#: Nearest nodes shown for a pod (`kubesched explain`, the HTML report's pod panel).
NEAREST = 5


@dataclass(slots=True)
class Obstacles:
    """Per node, every Filter plugin's rejection (in profile order)."""

    by_node: dict[str, list[Status]] = field(default_factory=dict)
    #: Set when PreFilter already refused the pod: no node was filtered.
    pre_filter: Status | None = None


def find_obstacles(fwk: Framework, pod: Pod, table: NodeTable) -> Obstacles:
    """Run PreFilter, then every Filter plugin on every node it allows (a fresh cycle state)."""
    state = CycleState()
    nodes = table.all()
    result, status, plugins = fwk.run_pre_filter(state, pod, nodes)
    if status is not None and not status.is_success():
        return Obstacles(pre_filter=status)
    out = Obstacles()
    if result is not None and result.node_names is not None:
        outside = Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]",
            plugin=sorted(plugins)[0] if plugins else "",
        )
        for name in table.names:
            if name not in result.node_names:
                out.by_node[name] = [outside]
        nodes = table.subset(sorted(n for n in result.node_names if n in table.index))
    names = nodes.names
    for outcome in fwk.run_each_filter(state, pod, nodes).values():
        if outcome.error is not None:
            continue
        for i in np.flatnonzero(outcome.status_idx >= 0).tolist():
            out.by_node.setdefault(names[i], []).append(outcome.statuses[int(outcome.status_idx[i])])
    return out


def nearest_nodes(
    obstacles: Obstacles,
    pod: Pod,
    table: NodeTable,
    *,
    namespace_labels: Mapping[str, Mapping[str, str]],
    limit: int = NEAREST,
) -> list[NearNode]:
    """The `limit` rejected nodes with the fewest obstacles, each with what is missing on it."""
    try:
        requests = pod_requests(pod)
    except QuantityError:
        requests = {}
    infos = {i.name: i for i in table.infos}

    def distance(item: tuple[str, list[Status]]) -> tuple[int, int, float, str]:
        name, statuses = item
        unresolvable = sum(1 for s in statuses if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        return (len(statuses), unresolvable, _shortfall(requests, infos[name], statuses), name)

    nearest = heapq.nsmallest(limit, obstacles.by_node.items(), key=distance)
    context = _Context(pod, requests, table, namespace_labels)
    return [
        NearNode(
            node=name,
            plugins=list(dict.fromkeys(s.plugin for s in statuses)),
            missing=[text for s in statuses for text in context.describe(infos[name], s)],
        )
        for name, statuses in nearest
    ]


def nearest_in_cluster(
    fwk: Framework, pod: Pod, table: NodeTable, cluster: MemoryCluster, *, limit: int = NEAREST
) -> list[NearNode]:
    """`find_obstacles` then `nearest_nodes` for a pod of `cluster` (its namespaces' labels feed
    the affinity descriptions): `kubesched explain` before its cycle, the HTML report after a run."""
    namespaces = {
        ns.metadata.name: dict(ns.metadata.labels)
        for ns in cluster.lister("Namespace")
        if isinstance(ns, Namespace)
    }
    obstacles = find_obstacles(fwk, pod, table)
    return nearest_nodes(obstacles, pod, table, namespace_labels=namespaces, limit=limit)


def _shortfall(requests: Mapping[str, int], info: NodeInfo, statuses: Sequence[Status]) -> float:
    """How far the node is from fitting the pod's requests: Σ missing / allocatable."""
    if not any(s.plugin == "NodeResourcesFit" for s in statuses):
        return 0.0
    total = 0.0
    for resource, need in requests.items():
        alloc = info.allocatable.get(resource, 0)
        free = alloc - info.requested.get(resource, 0)
        if need > free:
            total += (need - free) / alloc if alloc else 1.0
    return total


class _Context:
    """What describing an obstacle needs: the pod, its requests, the nodes, namespace labels."""

    def __init__(
        self,
        pod: Pod,
        requests: Mapping[str, int],
        table: NodeTable,
        namespace_labels: Mapping[str, Mapping[str, str]],
    ) -> None:
        self.pod = pod
        self.requests = requests
        self.table = table
        self.namespace_labels = namespace_labels
        self._describers: dict[str, Callable[[NodeInfo, Status], list[str]]] = {
            "NodeResourcesFit": self._fit,
            "TaintToleration": self._taints,
            "NodeUnschedulable": lambda info, st: ["cordoned (spec.unschedulable is true)"],
            "NodePorts": self._ports,
            "NodeAffinity": self._node_affinity,
            "InterPodAffinity": self._pod_affinity,
        }

    def describe(self, info: NodeInfo, status: Status) -> list[str]:
        describer = self._describers.get(status.plugin)
        described = describer(info, status) if describer is not None else []
        return described or [f"{status.plugin}: {reason}" for reason in status.all_reasons()]

    # ------------------------------------------------------------------ per plugin

    def _fit(self, info: NodeInfo, status: Status) -> list[str]:
        out: list[str] = []
        for reason in status.all_reasons():
            if reason == "Too many pods":
                out.append(f"already runs {len(info.pods)} pods, its maximum")
                continue
            resource = reason.removeprefix("Insufficient ")
            need = self.requests.get(resource, 0)
            if resource == reason or need <= 0:
                out.append(reason)
                continue
            alloc = info.allocatable.get(resource, 0)
            free = alloc - info.requested.get(resource, 0)
            if need > alloc:
                out.append(
                    f"needs {format_quantity(need, resource)} {resource}, the node has "
                    f"{format_quantity(alloc, resource)} in all"
                )
            else:
                out.append(
                    f"needs {format_quantity(need - free, resource)} more {resource} "
                    f"({format_quantity(max(free, 0), resource)} free of {format_quantity(alloc, resource)})"
                )
        return out

    def _taints(self, info: NodeInfo, status: Status) -> list[str]:
        tolerations = self.pod.spec.tolerations
        return [
            f"untolerated taint {t.key}{'=' + t.value if t.value else ''}:{t.effect}"
            for t in info.node.spec.taints
            if t.effect in DEFAULT_FILTER_EFFECTS and not any(toleration_tolerates(x, t) for x in tolerations)
        ]

    def _ports(self, info: NodeInfo, status: Status) -> list[str]:
        return [
            f"host port {port}/{proto or 'TCP'} already in use"
            for ip, proto, port in pod_host_ports(self.pod)
            if ports_conflict(info.used_ports, [(ip, proto, port)])
        ]

    def _node_affinity(self, info: NodeInfo, status: Status) -> list[str]:
        labels = info.labels
        return [
            f"label {key}={labels[key]}, the pod's nodeSelector wants {value}"
            if key in labels
            else f"no label {key}, the pod's nodeSelector wants {key}={value}"
            for key, value in self.pod.spec.node_selector.items()
            if labels.get(key) != value
        ]

    def _pod_affinity(self, info: NodeInfo, status: Status) -> list[str]:
        terms = compile_pod_terms(self.pod)
        out: list[str] = []
        for reason in status.all_reasons():
            if reason == ERR_REASON_ANTI_AFFINITY:
                for term in terms.required_anti_affinity:
                    count = sum(
                        1 for p in self._domain_pods(info, term.topology_key) if self._matches(term, p)
                    )
                    if count:
                        out.append(
                            f"{count} pod(s) {_where(term.topology_key)} match the pod's anti-affinity"
                        )
            elif reason == ERR_REASON_EXISTING_ANTI_AFFINITY:
                against = 0
                for other in self._domain_pods(info, None):
                    other_terms = compile_pod_terms(other).required_anti_affinity
                    against += any(
                        self._same_domain(info, other, t.topology_key)
                        and t.matches(self.pod, self.namespace_labels.get(self.pod.metadata.namespace, {}))
                        for t in other_terms
                    )
                out.append(f"{against} pod(s) nearby have anti-affinity against this pod")
            elif reason == ERR_REASON_AFFINITY:
                for term in terms.required_affinity:
                    if not any(self._matches(term, p) for p in self._domain_pods(info, term.topology_key)):
                        out.append(f"no pod {_where(term.topology_key)} matches the pod's affinity")
            else:
                out.append(reason)
        return out

    # ------------------------------------------------------------------ helpers

    def _matches(self, term: AffinityTerm, pod: Pod) -> bool:
        return term.matches(pod, self.namespace_labels.get(pod.metadata.namespace, {}))

    def _domain_pods(self, info: NodeInfo, key: str | None) -> list[Pod]:
        """Pods on the nodes sharing `info`'s value of topology `key` (all nodes with the key when
        None: existing pods' terms each have their own key, checked by `_same_domain`)."""
        if key is None:
            return [pi.pod for other in self.table.infos for pi in other.pods.values()]
        value = info.labels.get(key)
        if value is None:
            return []
        return [
            pi.pod
            for other in self.table.infos
            if other.labels.get(key) == value
            for pi in other.pods.values()
        ]

    def _same_domain(self, info: NodeInfo, other: Pod, key: str) -> bool:
        value = info.labels.get(key)
        host = self.table.index.get(other.spec.node_name)
        return value is not None and host is not None and self.table.infos[host].labels.get(key) == value


def _where(topology_key: str) -> str:
    return "on it" if topology_key == HOSTNAME else f"in its {topology_key} domain"
