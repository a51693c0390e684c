"""Cache: the scheduler's view of nodes and the pods on them, including pods it has assumed.

An assumed pod is placed on its node as soon as the scheduling cycle picks it, before the bind
completes, so the next cycle sees the capacity as used and a pod is never placed twice. The
snapshot handed to plugins is the NodeTable, kept current incrementally; it is rebuilt only when
the set of nodes, their labels or their taints change, from the rows of the table it replaces.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kubesched.api.objects import Node
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import NodeTable

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
BETA_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"


class CacheError(Exception):
    """An impossible cache transition (assuming a pod twice, forgetting an unknown pod)."""


def zone_key(node: Node) -> str:
    """Region and zone of a node, the way the node tree groups nodes ("" when unlabelled)."""
    labels = node.metadata.labels
    region = labels.get(REGION_LABEL, labels.get(BETA_REGION_LABEL, ""))
    zone = labels.get(ZONE_LABEL, labels.get(BETA_ZONE_LABEL, ""))
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def interleave_zones(nodes: Iterable[Node]) -> list[Node]:
    """Round-robin over zones (first node of each zone, then the second, ...), as the node tree does."""
    zones: dict[str, list[Node]] = {}
    for node in nodes:
        zones.setdefault(zone_key(node), []).append(node)
    ordered: list[Node] = []
    columns = list(zones.values())
    depth = max((len(c) for c in columns), default=0)
    for i in range(depth):
        ordered.extend(c[i] for c in columns if i < len(c))
    return ordered


@dataclass(frozen=True, slots=True)
class Lifted:
    """A pod `Cache.lift` took off its node, with what `Cache.put_back` needs to restore it."""

    pod_info: PodInfo
    node_name: str
    assumed: bool
    binding_finished: bool


class Cache:
    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        self._infos: dict[str, NodeInfo] = {}
        self._pods: dict[str, tuple[str, PodInfo]] = {}
        #: Node name -> the keys of its pods, in `_pods`' order (every change to `_pods` is made
        #: here too): a node that comes (back) finds its pods without a scan of every pod.
        self._on_node: dict[str, dict[str, None]] = {}
        self._assumed: set[str] = set()
        self._binding_finished: set[str] = set()
        self._table: NodeTable | None = None
        #: The last table built, for the next one to copy rows from; its rows of `_stale` nodes
        #: (whose NodeInfo changed while no table was kept current) are not copied.
        self._previous: NodeTable | None = None
        self._stale: set[str] = set()

    # ------------------------------------------------------------------ nodes
    def add_node(self, node: Node) -> None:
        name = node.metadata.name
        if name in self._nodes:
            self.update_node(node)
            return
        self._nodes[name] = node
        info = NodeInfo(node)
        for key in self._on_node.get(name, ()):
            info.add_pod(self._pods[key][1])
        self._infos[name] = info
        self._table = None

    def update_node(self, node: Node) -> None:
        name = node.metadata.name
        if name not in self._nodes:
            self.add_node(node)
            return
        self._nodes[name] = node
        if self._table is not None and self._table.update_node(node):
            return
        self._infos[name].set_node(node)
        self._stale.add(name)
        self._table = None

    def remove_node(self, name: str) -> None:
        """Forget a node; its pods stay known and reappear if the node comes back."""
        if self._nodes.pop(name, None) is not None:
            del self._infos[name]
            self._table = None

    def node(self, name: str) -> Node | None:
        return self._nodes.get(name)

    def node_info(self, name: str) -> NodeInfo | None:
        return self._infos.get(name)

    @property
    def node_count(self) -> int:
        return len(self._nodes)

    # ------------------------------------------------------------------ pods
    def _place(self, pi: PodInfo, node_name: str) -> None:
        self._pods[pi.key] = (node_name, pi)
        self._on_node.setdefault(node_name, {})[pi.key] = None
        if node_name not in self._infos:
            return
        if self._table is not None:
            self._table.add_pod(self._table.index[node_name], pi)
        else:
            self._infos[node_name].add_pod(pi)
            self._stale.add(node_name)

    def _unplace(self, key: str) -> tuple[str, PodInfo]:
        node_name, pi = self._pods.pop(key)
        keys = self._on_node[node_name]
        del keys[key]
        if not keys:
            del self._on_node[node_name]
        if node_name in self._infos:
            if self._table is not None:
                self._table.remove_pod(self._table.index[node_name], key)
            else:
                self._infos[node_name].remove_pod(key)
                self._stale.add(node_name)
        return node_name, pi

    def assume_pod(self, pi: PodInfo, node_name: str) -> None:
        if pi.key in self._pods:
            raise CacheError(f"pod {pi.pod.key} is in the cache, so can't be assumed")
        self._place(pi, node_name)
        self._assumed.add(pi.key)

    def finish_binding(self, key: str) -> None:
        if key in self._assumed:
            self._binding_finished.add(key)

    def forget_pod(self, key: str) -> None:
        """Undo an assume (bind or reserve failed); only assumed pods can be forgotten."""
        if key not in self._assumed:
            raise CacheError(f"pod {key} wasn't assumed so cannot be forgotten")
        self._unplace(key)
        self._assumed.discard(key)
        self._binding_finished.discard(key)

    def add_pod(self, pi: PodInfo) -> None:
        """A bound pod seen from the cluster; confirms an assumed pod (moving it if needed)."""
        node_name = pi.pod.spec.node_name
        current = self._pods.get(pi.key)
        self._assumed.discard(pi.key)
        self._binding_finished.discard(pi.key)
        if current is not None:
            table = self._table
            if table is not None and current[0] == node_name and current[1].same_facts(pi):
                # Typically the bound copy of the pod assumed there: nothing to recount.
                row = table.index.get(node_name)
                if row is not None:
                    del self._pods[pi.key]
                    self._pods[pi.key] = (node_name, pi)
                    keys = self._on_node[node_name]
                    del keys[pi.key]
                    keys[pi.key] = None
                    table.replace_pod(row, pi)
                    return
            self._unplace(pi.key)
        self._place(pi, node_name)

    def update_pod(self, pi: PodInfo) -> None:
        self.add_pod(pi)

    def remove_pod(self, key: str) -> PodInfo | None:
        if key not in self._pods:
            return None
        self._assumed.discard(key)
        self._binding_finished.discard(key)
        return self._unplace(key)[1]

    def lift(self, key: str) -> Lifted:
        """Take a pod off its node for a while (a pod-group preemption's trial of its victims);
        `put_back` restores it as it was, assumed or bound."""
        node_name, pi = self._unplace(key)
        lifted = Lifted(pi, node_name, key in self._assumed, key in self._binding_finished)
        self._assumed.discard(key)
        self._binding_finished.discard(key)
        return lifted

    def put_back(self, lifted: Lifted) -> None:
        """Undo `lift` (the pod returns at the end of its node's pods)."""
        self._place(lifted.pod_info, lifted.node_name)
        if lifted.assumed:
            self._assumed.add(lifted.pod_info.key)
        if lifted.binding_finished:
            self._binding_finished.add(lifted.pod_info.key)

    def is_assumed(self, key: str) -> bool:
        return key in self._assumed

    def has_pod(self, key: str) -> bool:
        return key in self._pods

    def pod_info(self, key: str) -> PodInfo | None:
        """The PodInfo the cache holds for a pod (bound or assumed), if any."""
        entry = self._pods.get(key)
        return entry[1] if entry else None

    def pod_node(self, key: str) -> str | None:
        entry = self._pods.get(key)
        return entry[0] if entry else None

    @property
    def pod_count(self) -> int:
        return len(self._pods)

    @property
    def assumed_count(self) -> int:
        return len(self._assumed)

    def pods(self) -> Iterator[PodInfo]:
        return (pi for _, pi in self._pods.values())

    # ------------------------------------------------------------------ snapshot
    def snapshot(self) -> NodeTable:
        """The NodeTable for the next cycle (zone-interleaved node order)."""
        if self._table is None:
            order = interleave_zones(self._nodes.values())
            infos = [self._infos[n.metadata.name] for n in order]
            self._table = NodeTable(infos, previous=self._previous, stale=self._stale)
            self._previous = self._table
            self._stale = set()
        return self._table
