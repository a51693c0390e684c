"""VolumeZone: a pod whose bound volumes live in a zone/region may only run on nodes there.

For every claim of the pod bound to a PersistentVolume, the PV's labels `topology.kubernetes.io/zone`,
`topology.kubernetes.io/region` and their deprecated `failure-domain.beta.kubernetes.io/*` forms give the
allowed values; a value may list several zones separated by `__` (a regional disk). A node that carries none
of these four labels passes (a single-zone cluster often does not label nodes); otherwise it must carry each
PV label key — a beta key on the volume is also satisfied by the node's GA key — with one of the allowed
values, else `node(s) had no available volume zone` (UnschedulableAndUnresolvable; upstream
`pkg/scheduler/framework/plugins/volumezone/volume_zone.go`).

PreFilter resolves the claims. Errors are UnschedulableAndUnresolvable: a missing claim, PV or
StorageClass (the API server's NotFound text), `PersistentVolumeClaim had no name`, `PersistentVolume
had no name` (an unbound claim whose class binds immediately: the PV controller has not bound it
yet), `PersistentVolumeClaim had no pv name and storageClass name` and `VolumeBindingMode not set for
StorageClass "x"`. Unbound claims of WaitForFirstConsumer classes are skipped: VolumeBinding picks
their volume for the node. PreFilter returns Skip when no bound volume has topology labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.storage import PersistentVolume, StorageClass
from kubesched.framework.cycle_state import CycleState, pre_filter_state
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interfaces import (
    BatchFilterPlugin,
    EnqueueExtensions,
    FilterPlugin,
    PreFilterPlugin,
)
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import BatchFilterResult, NodeSet
from kubesched.framework.signature import SignFragment, volumes_fragment
from kubesched.framework.status import Code, Status
from kubesched.plugins._volumes import (
    VOLUME_KINDS,
    WAIT_FOR_FIRST_CONSUMER,
    RepeatsFailuresWithoutClaims,
    VolumeHandle,
    VolumeObjects,
    binding_mode,
    binding_mode_not_set,
    claim_class,
    pod_claims,
    pv_not_found,
    pvc_not_found,
    storage_class_not_found,
)

__all__ = [
    "ERR_REASON_CONFLICT",
    "TOPOLOGY_LABELS",
    "VolumeZone",
    "pv_topologies",
]

ERR_REASON_CONFLICT = "node(s) had no available volume zone"
ERR_CLAIM_NO_NAME = "PersistentVolumeClaim had no name"
ERR_PV_NO_NAME = "PersistentVolume had no name"
ERR_NO_PV_NO_CLASS = "PersistentVolumeClaim had no pv name and storageClass name"
PRE_FILTER_STATE_KEY = "PreFilterVolumeZone"

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
#: The labels compared, in upstream's order.
TOPOLOGY_LABELS = (ZONE, REGION, BETA_ZONE, BETA_REGION)
_GA_OF_BETA = {BETA_ZONE: ZONE, BETA_REGION: REGION}
MULTI_ZONE_DELIMITER = "__"


@dataclass(frozen=True, slots=True)
class PVTopology:
    """One topology label of one volume: the node's `key` label must be one of `values`."""

    pv_name: str
    key: str
    values: frozenset[str]


def _zone_set(value: str) -> frozenset[str] | None:
    """`a__b` -> {a, b}; None when a part is empty (upstream ignores such a label)."""
    parts = [p.strip() for p in value.split(MULTI_ZONE_DELIMITER)]
    if any(not p for p in parts):
        return None
    return frozenset(parts)


def pv_topologies(pv: PersistentVolume) -> list[PVTopology]:
    """The topology constraints a volume's labels express."""
    out: list[PVTopology] = []
    for key in TOPOLOGY_LABELS:
        value = pv.metadata.labels.get(key)
        if value is None:
            continue
        values = _zone_set(value)
        if values is not None:
            out.append(PVTopology(pv.metadata.name, key, values))
    return out


def _node_fits(topologies: tuple[PVTopology, ...], labels: Mapping[str, str]) -> bool:
    if not any(key in labels for key in TOPOLOGY_LABELS):
        return True  # the node states no topology: nothing to compare against
    for t in topologies:
        value = labels.get(t.key)
        if value is None and t.key in _GA_OF_BETA:
            value = labels.get(_GA_OF_BETA[t.key])
        if value is None or value not in t.values:
            return False
    return True


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    topologies: tuple[PVTopology, ...]

    def clone(self) -> _PreFilterState:
        return self


class VolumeZone(
    PreFilterPlugin, FilterPlugin, BatchFilterPlugin, EnqueueExtensions, RepeatsFailuresWithoutClaims
):
    """Keep pods on nodes in the zones/regions of their bound volumes."""

    name: ClassVar[str] = "VolumeZone"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = VOLUME_KINDS

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """KEP-5598: the parts of the pod this plugin's answers depend on."""
        return [volumes_fragment(pod)]

    def __init__(self, handle: VolumeHandle | None = None) -> None:
        self._handle = handle

    # -- PreFilter
    def pre_filter(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        topologies = self._topologies(pod)
        if isinstance(topologies, Status):
            return topologies
        if not topologies:
            return Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(topologies))
        return None

    def _topologies(self, pod: Pod) -> tuple[PVTopology, ...] | Status:
        """The pod's volumes' topology constraints, or the status that stops the pod."""
        out: list[PVTopology] = []
        objects: VolumeObjects | None = None
        namespace = pod.metadata.namespace
        for _, claim_name, _ephemeral in pod_claims(pod):
            if not claim_name:
                return _unresolvable(ERR_CLAIM_NO_NAME)
            objects = objects or VolumeObjects(self._handle)
            pvc = objects.pvc(namespace, claim_name)
            if pvc is None:
                return _unresolvable(pvc_not_found(claim_name))
            pv_name = pvc.spec.volume_name
            if not pv_name:
                class_name = claim_class(pvc)
                if not class_name:
                    return _unresolvable(ERR_NO_PV_NO_CLASS)
                sc: StorageClass | None = objects.storage_class(class_name)
                if sc is None:
                    return _unresolvable(storage_class_not_found(class_name))
                mode = binding_mode(sc)
                if mode is None:
                    return _unresolvable(binding_mode_not_set(class_name))
                if mode == WAIT_FOR_FIRST_CONSUMER:
                    continue  # VolumeBinding chooses its volume per node
                return _unresolvable(ERR_PV_NO_NAME)
            pv = objects.pv(pv_name)
            if pv is None:
                return _unresolvable(pv_not_found(pv_name))
            out.extend(pv_topologies(pv))
        return tuple(out)

    def _state(self, state: CycleState, pod: Pod) -> tuple[PVTopology, ...] | Status:
        data = pre_filter_state(
            state, PRE_FILTER_STATE_KEY, _PreFilterState, lambda: self._made(pod), keep=False
        )
        return data.topologies if isinstance(data, _PreFilterState) else data

    def _made(self, pod: Pod) -> _PreFilterState | Status:
        """The PreFilter state, worked out here when PreFilter is disabled."""
        topologies = self._topologies(pod)
        return topologies if isinstance(topologies, Status) else _PreFilterState(topologies)

    # -- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.spec.volumes:
            return None
        topologies = self._state(state, pod)
        if isinstance(topologies, Status):
            return topologies
        if _node_fits(topologies, node_info.labels):
            return None
        return _unresolvable(ERR_REASON_CONFLICT)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        """One label-column lookup per constraint, whatever the number of nodes."""
        n = len(nodes)
        if not pod.spec.volumes or n == 0:
            return BatchFilterResult.all_pass(n)
        topologies = self._state(state, pod)
        if isinstance(topologies, Status):
            return BatchFilterResult.all_fail(n, topologies)
        table, rows = nodes.table, nodes.rows
        constrained = np.zeros(n, dtype=np.bool_)
        for key in TOPOLOGY_LABELS:
            constrained |= table.label_column(key).present()[rows]
        fits = np.ones(n, dtype=np.bool_)
        for t in topologies:
            col = table.label_column(t.key)
            ok = col.value_in(sorted(t.values))[rows]
            ga = _GA_OF_BETA.get(t.key)
            if ga is not None:
                ga_col = table.label_column(ga)
                ok = np.where(col.present()[rows], ok, ga_col.value_in(sorted(t.values))[rows])
            fits &= ok
        return BatchFilterResult.from_mask(~constrained | fits, _unresolvable(ERR_REASON_CONFLICT))

    # -- requeueing
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """New WaitForFirstConsumer classes, node labels, claims getting bound and PV labels matter."""
        return [
            ClusterEventWithHint(ClusterEvent(Resource.STORAGE_CLASS, ActionType.ADD), _after_class_added),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                _after_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
                _after_volume_change,
            ),
        ]


def _unresolvable(reason: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)


def _after_class_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Only a WaitForFirstConsumer class turns an unbound claim from an error into "skip it"."""
    if isinstance(new, StorageClass) and binding_mode(new) != WAIT_FOR_FIRST_CONSUMER:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def _after_claim_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    meta = getattr(new, "metadata", None)
    if meta is None:
        return QueueingHint.QUEUE
    if meta.namespace != pod.metadata.namespace:
        return QueueingHint.SKIP
    names = {name for _, name, _ in pod_claims(pod)}
    return QueueingHint.QUEUE if meta.name in names else QueueingHint.SKIP


def _after_volume_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A new volume may be the missing one; an updated one matters only if its topology changed."""
    if not isinstance(old, PersistentVolume) or not isinstance(new, PersistentVolume):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE if pv_topologies(old) != pv_topologies(new) else QueueingHint.SKIP
