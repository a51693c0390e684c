"""PodInfo and NodeInfo: a pod with its precomputed scheduling facts, and a node with its pods."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubesched.api.objects import Node, Pod
from kubesched.api.quantity import resource_amount
from kubesched.api.resources import pod_non_zero_requests, pod_requests

#: The (ip, protocol, port) triple of a host port; ip "" is stored as "0.0.0.0", protocol "" as "TCP".
HostPort = tuple[str, str, int]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"


def pod_host_ports(pod: Pod) -> tuple[HostPort, ...]:
    """The (ip, protocol, port) host ports the pod holds while it runs: those of its sidecars
    (init containers with `restartPolicy: Always`, which run for the pod's whole life) and of its
    regular containers, as upstream's `GetHostPorts`. ip "" means 0.0.0.0, protocol "" TCP."""
    containers = [c for c in pod.spec.init_containers if c.restart_policy == "Always"]
    containers += pod.spec.containers
    return tuple(
        (port.host_ip or "0.0.0.0", port.protocol or "TCP", port.host_port)
        for c in containers
        for port in c.ports
        if port.host_port > 0
    )


def pod_key(pod: Pod) -> str:
    """The identity of a pod in caches: its UID, or `namespace/name` when it has none."""
    return pod.metadata.uid or f"{pod.metadata.namespace}/{pod.metadata.name}"


class PodInfo:
    """A pod plus what every cycle would otherwise recompute: requests, ports, affinity flags.

    Raises `QuantityError` (an InputError) when one of the pod's quantities is invalid.
    """

    __slots__ = (
        "has_affinity",
        "has_required_anti_affinity",
        "host_ports",
        "key",
        "non_zero_cpu",
        "non_zero_memory",
        "pod",
        "priority",
        "pvc_names",
        "requests",
    )

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.key = pod_key(pod)
        self.requests: dict[str, int] = pod_requests(pod)
        self.non_zero_cpu, self.non_zero_memory = pod_non_zero_requests(pod)
        self.priority = pod.spec.priority or 0
        self.host_ports = pod_host_ports(pod)
        aff = pod.spec.affinity
        self.has_affinity = aff is not None and (
            aff.pod_affinity is not None or aff.pod_anti_affinity is not None
        )
        self.has_required_anti_affinity = bool(
            aff is not None
            and aff.pod_anti_affinity is not None
            and aff.pod_anti_affinity.required_during_scheduling_ignored_during_execution
        )
        self.pvc_names = [
            v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim
        ]

    def with_pod(self, pod: Pod) -> PodInfo:
        """This PodInfo for another version of the same pod with the same `spec` apart from
        `nodeName` (the assumed or the bound copy): the precomputed facts are shared, not redone."""
        copy = PodInfo.__new__(PodInfo)
        copy.pod = pod
        copy.key = pod_key(pod)
        copy.requests = self.requests
        copy.non_zero_cpu = self.non_zero_cpu
        copy.non_zero_memory = self.non_zero_memory
        copy.priority = self.priority
        copy.host_ports = self.host_ports
        copy.has_affinity = self.has_affinity
        copy.has_required_anti_affinity = self.has_required_anti_affinity
        copy.pvc_names = self.pvc_names
        return copy

    def same_facts(self, other: PodInfo) -> bool:
        """Whether a node's totals count `other` exactly as this (requests, ports, affinity flags,
        priority, claims); true at once for a `with_pod` copy, which shares the facts."""
        return (
            self.requests == other.requests
            and self.non_zero_cpu == other.non_zero_cpu
            and self.non_zero_memory == other.non_zero_memory
            and self.priority == other.priority
            and self.host_ports == other.host_ports
            and self.has_affinity == other.has_affinity
            and self.has_required_anti_affinity == other.has_required_anti_affinity
            and self.pvc_names == other.pvc_names
            and self.namespace == other.namespace
        )

    @property
    def name(self) -> str:
        return self.pod.metadata.name

    @property
    def namespace(self) -> str:
        return self.pod.metadata.namespace

    def __repr__(self) -> str:
        return f"PodInfo({self.pod.key})"


def node_allocatable(node: Node) -> dict[str, int]:
    """The node's allocatable resources in scheduler units (cpu in milli)."""
    return {name: resource_amount(name, value) for name, value in node.effective_allocatable().items()}


def ports_conflict(used: Iterable[HostPort], wanted: Iterable[HostPort]) -> bool:
    """Same protocol and port, and either address is the wildcard or they are equal."""
    by_port: dict[tuple[str, int], set[str]] = {}
    for ip, proto, port in used:
        by_port.setdefault((proto, port), set()).add(ip)
    for ip, proto, port in wanted:
        ips = by_port.get((proto, port))
        if ips and (ip == "0.0.0.0" or "0.0.0.0" in ips or ip in ips):
            return True
    return False


class NodeInfo:
    """A node and the pods on it (bound and assumed), with running totals of their requests."""

    __slots__ = (
        "_lowest_priority",
        "allocatable",
        "generation",
        "node",
        "non_zero_cpu",
        "non_zero_memory",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "pvc_ref_counts",
        "requested",
        "used_ports",
    )

    def __init__(self, node: Node, pods: Iterable[PodInfo] = ()) -> None:
        self.node = node
        self.allocatable: dict[str, int] = node_allocatable(node)
        self.pods: dict[str, PodInfo] = {}
        self.requested: dict[str, int] = {}
        self.non_zero_cpu = 0
        self.non_zero_memory = 0
        #: Host ports in use, as a set like upstream's HostPortInfo: two pods on one port count once,
        #: and removing either frees it (matters in preemption dry runs; upstream's quirk, kept).
        self.used_ports: set[HostPort] = set()
        self.pods_with_affinity = 0
        self.pods_with_required_anti_affinity = 0
        self.pvc_ref_counts: dict[str, int] = {}
        self.generation = 0
        #: (generation, lowest priority) once computed; see `lowest_priority`.
        self._lowest_priority: tuple[int, int | None] = (-1, None)
        for pi in pods:
            self.add_pod(pi)

    # -- the node's identity, as plugin authors expect to reach it
    @property
    def name(self) -> str:
        return self.node.metadata.name

    @property
    def labels(self) -> Mapping[str, str]:
        return self.node.metadata.labels

    @property
    def allowed_pod_number(self) -> int:
        return self.allocatable.get(PODS, 0)

    def lowest_priority(self) -> int | None:
        """The lowest priority among the node's pods (None without pods), computed once per change.

        Preemption asks this of every node on every failed attempt ("is there anyone to evict?");
        a scan of every pod each time made preemption the bulk of a long replay's work.
        """
        generation, lowest = self._lowest_priority
        if generation != self.generation:
            lowest = min((pi.priority for pi in self.pods.values()), default=None)
            self._lowest_priority = (self.generation, lowest)
        return lowest

    def set_node(self, node: Node) -> None:
        self.node = node
        self.allocatable = node_allocatable(node)
        self.generation += 1

    def add_pod(self, pi: PodInfo) -> None:
        if pi.key in self.pods:
            raise ValueError(f"pod {pi.pod.key} is already on node {self.name}")
        self.pods[pi.key] = pi
        self._account(pi, +1)

    def remove_pod(self, key: str) -> PodInfo:
        pi = self.pods.pop(key)
        self._account(pi, -1)
        return pi

    def replace_pod(self, pi: PodInfo) -> PodInfo:
        """`remove_pod` then `add_pod` of a version with the same facts (`PodInfo.same_facts`):
        the pod moves last, as there, and the totals it would subtract and add back stay."""
        old = self.pods.pop(pi.key)
        self.pods[pi.key] = pi
        self.generation += 2
        return old

    def _account(self, pi: PodInfo, sign: int) -> None:
        for name, amount in pi.requests.items():
            self.requested[name] = self.requested.get(name, 0) + sign * amount
        self.non_zero_cpu += sign * pi.non_zero_cpu
        self.non_zero_memory += sign * pi.non_zero_memory
        if pi.host_ports:  # most pods hold none: no set operation for them
            if sign > 0:
                self.used_ports.update(pi.host_ports)
            else:
                self.used_ports.difference_update(pi.host_ports)
        self.pods_with_affinity += sign * pi.has_affinity
        self.pods_with_required_anti_affinity += sign * pi.has_required_anti_affinity
        for claim in pi.pvc_names:
            ref = f"{pi.namespace}/{claim}"
            self.pvc_ref_counts[ref] = self.pvc_ref_counts.get(ref, 0) + sign
            if self.pvc_ref_counts[ref] <= 0:
                del self.pvc_ref_counts[ref]
        self.generation += 1

    def clone(self) -> NodeInfo:
        """A copy whose pod set can change without touching this one (preemption dry runs)."""
        copy = NodeInfo.__new__(NodeInfo)
        copy.node = self.node
        copy.allocatable = self.allocatable
        copy.pods = dict(self.pods)
        copy.requested = dict(self.requested)
        copy.non_zero_cpu = self.non_zero_cpu
        copy.non_zero_memory = self.non_zero_memory
        copy.used_ports = set(self.used_ports)
        copy.pods_with_affinity = self.pods_with_affinity
        copy.pods_with_required_anti_affinity = self.pods_with_required_anti_affinity
        copy.pvc_ref_counts = dict(self.pvc_ref_counts)
        copy.generation = self.generation
        copy._lowest_priority = self._lowest_priority
        return copy

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"
