"""What the extender knows about the cluster: nothing, a fixed snapshot, or a live informer cache.

kube-scheduler sends an extender either the full `Nodes` of every candidate (stateless: enough for
plugins that look only at the pod and the node) or, with `nodeCacheCapable: true`, only their
names, and then the extender must know the nodes itself. Plugins that weigh cluster state (resource
fit, affinity, spreading) also need the pods already on each node. A `ClusterState` provides both:

* `ClusterState()` - no cache: only `Nodes` requests can be served;
* `ClusterState.from_objects(objects)` - a fixed snapshot (files from `kubectl get -o yaml`), for
  what-if runs, tests and benchmarks;
* `LiveClusterState(client)` - Node and Pod informers (plus the kinds plugins list) feeding the same
  scheduler `Cache` the live scheduler uses, so its `NodeTable` is kept current incrementally and a
  5,000-node `NodeNames` request costs a dictionary lookup per name, not a rebuild.

All reads and writes go through `lock`: informer threads update under it, request handlers evaluate
under it, so a request never sees a half-applied change.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod
from kubesched.config.features import DEFAULT_GATES, FeatureGates
from kubesched.errors import InputError
from kubesched.framework.node_info import PodInfo, pod_key
from kubesched.framework.node_table import NodeTable
from kubesched.framework.pod_groups import SchedulingGroups
from kubesched.scheduler.cache import Cache

if TYPE_CHECKING:
    from kubesched.cluster.kube.client import KubeClient
    from kubesched.cluster.kube.informer import Informer

__all__ = ["ClusterState", "LiveClusterState"]

log = logging.getLogger(__name__)

#: `LoadedObjects` attribute holding each kind, for `lister(kind)` on a fixed snapshot.
_LISTED = {
    "Namespace": "namespaces",
    "PriorityClass": "priority_classes",
    "PersistentVolume": "persistent_volumes",
    "PersistentVolumeClaim": "persistent_volume_claims",
    "StorageClass": "storage_classes",
    "CSINode": "csi_nodes",
    "CSIDriver": "csi_drivers",
    "CSIStorageCapacity": "csi_storage_capacities",
    "PodDisruptionBudget": "pod_disruption_budgets",
    "Service": "services",
    "ReplicationController": "replication_controllers",
    "ReplicaSet": "replica_sets",
    "StatefulSet": "stateful_sets",
}


class ClusterState:
    """Nodes and the pods on them, as a scheduler `Cache`; `has_node_cache` False means no cache."""

    def __init__(self, *, has_node_cache: bool = False) -> None:
        self.lock = threading.RLock()
        self.cache = Cache()
        self.has_node_cache = has_node_cache
        self._objects: LoadedObjects | None = None
        self._pods_by_name: dict[str, Pod] = {}
        #: The scheduling.k8s.io groups (PodGroups, ...) and their pods.
        self.groups = SchedulingGroups()
        #: Node objects seen in recent stateless (`Nodes`) requests, for preempt (see `remember_nodes`).
        self._recent_nodes: dict[str, Node] = {}

    @classmethod
    def from_objects(cls, objects: LoadedObjects) -> ClusterState:
        """A fixed snapshot: the objects' nodes and the pods bound to them (invalid pods are skipped;
        finished pods too, as kube-scheduler's informer never lists them)."""
        state = cls(has_node_cache=True)
        state._objects = objects
        for node in objects.nodes:
            state.cache.add_node(node)
        for pod in objects.pods:
            if pod.finished:
                continue
            state._pods_by_name[pod.key] = pod
            if pod.spec.node_name:
                state._add_bound_pod(pod)
        state.groups = SchedulingGroups(
            [*objects.workloads, *objects.scheduling_pod_groups, *objects.composite_pod_groups],
            state._pods_by_name.values(),
        )
        return state

    # ------------------------------------------------------------------ reads (hold `lock`)

    def snapshot(self) -> NodeTable:
        return self.cache.snapshot()

    def lister(self, kind: str) -> Sequence[Any]:
        if self._objects is None:
            return []
        if kind == "Pod":
            return list(self._pods_by_name.values())
        if kind == "Node":
            return self._objects.nodes
        groups = self.groups.lister(kind)
        if groups is not None:
            return groups
        attr = _LISTED.get(kind)
        return getattr(self._objects, attr) if attr else []

    def pod(self, namespace: str, name: str) -> Pod | None:
        return self._pods_by_name.get(f"{namespace}/{name}")

    def not_ready(self) -> str | None:
        """Why `NodeNames` requests cannot be answered yet (None: they can)."""
        if not self.has_node_cache:
            return (
                "this extender keeps no node cache, so it needs full Nodes (nodeCacheCapable: false) "
                "or must be started with --kubeconfig"
            )
        return None

    def remember_nodes(self, nodes: Sequence[Node], limit: int = 20_000) -> None:
        """Keep the Node objects of a stateless request: preempt requests carry no nodes.

        kube-scheduler calls preempt right after filter failed for the same pod, so the nodes it
        names were in a recent filter request. Bounded: the oldest entries go first.
        """
        recent = self._recent_nodes
        for node in nodes:
            recent.pop(node.metadata.name, None)
            recent[node.metadata.name] = node
        while len(recent) > limit:
            del recent[next(iter(recent))]

    def recent_node(self, name: str) -> Node | None:
        return self._recent_nodes.get(name)

    # ------------------------------------------------------------------ writes (hold `lock`)

    def _add_bound_pod(self, pod: Pod) -> None:
        try:
            self.cache.add_pod(PodInfo(pod))
        except InputError as exc:  # one bad quantity must not take the cache down
            log.warning("ignoring pod %s: %s", pod.key, exc)

    def assume_bound(self, pod: Pod, node_name: str) -> None:
        """Account a pod we just bound, before its watch event arrives (the event then confirms it)."""
        bound = msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node_name))
        self._add_bound_pod(bound)

    def start(self) -> None:
        """Start feeding the cache (nothing to do for a fixed snapshot)."""

    def stop(self) -> None:
        """Stop feeding the cache."""


class LiveClusterState(ClusterState):
    """The cluster as informers see it: Nodes, the pods on them, and the kinds plugins list.

    Only pods that are bound count on nodes. Pods kube-scheduler has assumed but not bound yet are
    invisible here until their Binding lands (upstream extenders share this lag), except the ones
    this extender binds itself (`assume_bound`).
    """

    def __init__(
        self, client: KubeClient, *, kinds: Sequence[str] | None = None, gates: FeatureGates = DEFAULT_GATES
    ) -> None:
        super().__init__(has_node_cache=True)
        self.client = client
        self._kinds = kinds
        self._gates = gates
        self.informers: dict[str, Informer] = {}

    def start(self) -> None:
        from kubesched.cluster.kube.informer import KINDS, ApiListWatch, CallbackHandlers, Informer

        source = ApiListWatch(self.client)
        wanted = self._kinds if self._kinds is not None else tuple(KINDS)
        names = list(dict.fromkeys(["Node", "Pod", *wanted]))
        served: dict[str, set[str] | None] = {}
        for name in names:
            rk = KINDS[name]
            if rk.gate and not self._gates.enabled(rk.gate):
                continue  # kube-scheduler does not watch it either; never listed
            if rk.group_version not in served:
                served[rk.group_version] = self.client.served_resources(rk.group_version)
            resources = served[rk.group_version]
            if resources is None or rk.plural not in resources:
                log.info("not watching %s: the server does not serve %s", name, rk.path)
                continue
            handlers = None
            if name == "Node":
                handlers = CallbackHandlers(self._node_add, self._node_update, self._node_delete)
            elif name == "Pod":
                handlers = CallbackHandlers(self._pod_add, self._pod_update, self._pod_delete)
            elif self.groups.lister(name) is not None:
                handlers = CallbackHandlers(self.groups.put, self.groups.update, self.groups.remove)
            self.informers[name] = Informer(rk, source, handlers, dispatch=self._dispatch)
        for informer in self.informers.values():
            informer.start()

    def stop(self) -> None:
        for informer in self.informers.values():
            informer.stop()

    def _dispatch(self, fn: Callable[[], None]) -> None:
        with self.lock:
            fn()

    # ------------------------------------------------------------------ reads

    def not_ready(self) -> str | None:
        pending = [kind for kind in ("Node", "Pod") if kind not in self.informers]
        pending += [kind for kind, inf in self.informers.items() if not inf.has_synced]
        if pending:
            return f"the node cache is not synced yet ({', '.join(sorted(set(pending)))})"
        return None

    def lister(self, kind: str) -> Sequence[Any]:
        informer = self.informers.get(kind)
        return informer.objects() if informer is not None else []

    def pod(self, namespace: str, name: str) -> Pod | None:
        informer = self.informers.get("Pod")
        found = informer.get(f"{namespace}/{name}") if informer is not None else None
        return found if isinstance(found, Pod) else None

    # ------------------------------------------------------------------ informer callbacks (under lock)

    def _node_add(self, node: Node) -> None:
        try:
            self.cache.add_node(node)
        except InputError as exc:
            log.warning("ignoring node %s: %s", node.metadata.name, exc)

    def _node_update(self, old: Node, new: Node) -> None:
        try:
            self.cache.update_node(new)
        except InputError as exc:
            log.warning("ignoring node %s: %s", new.metadata.name, exc)

    def _node_delete(self, node: Node) -> None:
        self.cache.remove_node(node.metadata.name)

    def _pod_add(self, pod: Pod) -> None:
        self.groups.on_pod_add(pod)
        if pod.spec.node_name:
            self._add_bound_pod(pod)

    def _pod_update(self, old: Pod, new: Pod) -> None:
        self.groups.on_pod_update(old, new)
        if new.spec.node_name:
            self._add_bound_pod(new)
        elif self.cache.has_pod(pod_key(new)):
            self.cache.remove_pod(pod_key(new))

    def _pod_delete(self, pod: Pod) -> None:
        self.groups.on_pod_delete(pod)
        self.cache.remove_pod(pod_key(pod))
