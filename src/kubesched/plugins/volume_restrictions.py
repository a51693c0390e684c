"""VolumeRestrictions: volumes that only one pod (or one node) may use at a time.

Two rules (upstream `pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go`):

* **Disk conflicts** — some in-tree volume types cannot be attached read-write to two pods on the
  same node. A node is rejected (`node(s) had no available disk`, Unschedulable) when a pod on it
  already uses: the same GCE PD `pdName` (unless both mounts are read-only), the same AWS EBS
  `volumeID` (always), the same RBD image — an overlapping Ceph monitor, the same pool and the same
  image — (unless both read-only), or the same iSCSI `iqn` (unless both read-only).
* **ReadWriteOncePod** — a claim with that access mode may be used by one pod in the whole
  cluster. If any scheduled (or assumed) pod already uses such a claim of the incoming pod, every
  node is rejected with `node has pod using PersistentVolumeClaim with the same name and
  ReadWriteOncePod access mode` (Unschedulable, so preemption can evict the user).

PreFilter looks the pod's claims up (a missing claim is UnschedulableAndUnresolvable with the API
server's NotFound text), counts how many uses of its RWOP claims exist, and returns Skip when the
pod has neither conflict-prone volumes nor RWOP claims in use. The count is kept current through
AddPod/RemovePod, so preemption dry runs see a victim's claim freed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Pod, Volume
from kubesched.framework.cycle_state import CycleState, missing_state_error, pre_filter_state
from kubesched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from kubesched.framework.interfaces import (
    BatchFilterPlugin,
    EnqueueExtensions,
    FilterPlugin,
    PreFilterExtensions,
    PreFilterPlugin,
)
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import BatchFilterResult, BoolArray, NodeSet, NodeTable, PodRowCounts
from kubesched.framework.signature import SignFragment, volumes_fragment
from kubesched.framework.status import Code, Status
from kubesched.plugins._volumes import (
    VOLUME_KINDS,
    RepeatsFailuresWithoutClaims,
    VolumeHandle,
    VolumeObjects,
    claim_key,
    pvc_not_found,
)

__all__ = [
    "ERR_REASON_DISK_CONFLICT",
    "ERR_REASON_RWOP_CONFLICT",
    "READ_WRITE_ONCE_POD",
    "VolumeRestrictions",
    "volumes_conflict",
]

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
PRE_FILTER_STATE_KEY = "PreFilterVolumeRestrictions"


def _source(volume: Volume) -> tuple[str, Mapping[str, Any]] | None:
    """The conflict-prone source of a volume as (type, fields), or None for every other type."""
    if volume.gce_persistent_disk is not None:
        return "gce", volume.gce_persistent_disk
    if volume.aws_elastic_block_store is not None:
        return "ebs", volume.aws_elastic_block_store
    if volume.rbd is not None:
        return "rbd", volume.rbd
    if volume.iscsi is not None:
        return "iscsi", volume.iscsi
    return None


def _restricted(pod: Pod) -> tuple[Volume, ...]:
    """The pod's volumes that conflict with other pods' use of the same disk."""
    return tuple(v for v in pod.spec.volumes if _source(v) is not None)


def _read_only(source: Mapping[str, Any]) -> bool:
    return bool(source.get("readOnly", False))


def _conflict(kind: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two sources of the same type name the same disk and may not be shared."""
    both_read_only = _read_only(a) and _read_only(b)
    if kind == "gce":
        return a.get("pdName") == b.get("pdName") and not both_read_only
    if kind == "ebs":
        # EBS volumes attach to one instance at a time, whatever the mount mode.
        return a.get("volumeID") == b.get("volumeID")
    if kind == "iscsi":
        return a.get("iqn") == b.get("iqn") and not both_read_only
    # rbd: the same image is any shared monitor + same pool (API default "rbd") + same image name.
    monitors_a, monitors_b = set(a.get("monitors") or ()), set(b.get("monitors") or ())
    return (
        bool(monitors_a & monitors_b)
        and (a.get("pool") or "rbd") == (b.get("pool") or "rbd")
        and a.get("image") == b.get("image")
        and not both_read_only
    )


def volumes_conflict(wanted: Sequence[Volume], existing: Pod) -> bool:
    """Whether one of `wanted` is a disk that `existing` already uses in a conflicting way."""
    for volume in wanted:
        mine = _source(volume)
        if mine is None:
            continue
        for other in existing.spec.volumes:
            theirs = _source(other)
            if theirs is not None and theirs[0] == mine[0] and _conflict(mine[0], mine[1], theirs[1]):
                return True
    return False


def _has_restricted_volume(pod: Pod) -> bool:
    return any(_source(v) is not None for v in pod.spec.volumes)


@dataclass(slots=True)
class _PreFilterState:
    #: The pod's volumes of the conflict-prone types (empty: no disk check needed).
    restricted: tuple[Volume, ...]
    #: `namespace/claim` of the pod's ReadWriteOncePod claims.
    rwop_claims: frozenset[str]
    #: How many uses of those claims scheduled pods hold; > 0 rejects every node.
    conflicting_refs: int

    def clone(self) -> _PreFilterState:
        return _PreFilterState(self.restricted, self.rwop_claims, self.conflicting_refs)

    def refs_of(self, pod: Pod) -> int:
        namespace = pod.metadata.namespace
        return sum(
            1
            for v in pod.spec.volumes
            if v.persistent_volume_claim is not None
            and claim_key(namespace, v.persistent_volume_claim.claim_name) in self.rwop_claims
        )


class VolumeRestrictions(
    PreFilterPlugin,
    PreFilterExtensions,
    FilterPlugin,
    BatchFilterPlugin,
    EnqueueExtensions,
    RepeatsFailuresWithoutClaims,
):
    """Reject nodes where the pod's disks are already used, and any node while its RWOP claim is."""

    name: ClassVar[str] = "VolumeRestrictions"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = VOLUME_KINDS

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """KEP-5598: the parts of the pod this plugin's answers depend on."""
        return [volumes_fragment(pod)]

    def __init__(self, handle: VolumeHandle | None = None) -> None:
        self._handle = handle
        #: Pods with a conflict-prone volume per node, kept current from the table's pod change log.
        self._restricted_counts: PodRowCounts | None = None
        self._used_claims: tuple[NodeTable, int, frozenset[str]] | None = None

    # -- PreFilter
    def pre_filter(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        data, status = self._compute(pod, nodes.table)
        if status is not None:
            return status
        assert data is not None
        if not data.restricted and data.conflicting_refs == 0:
            return Status.skip()
        state.write(PRE_FILTER_STATE_KEY, data)
        return None

    def _compute(self, pod: Pod, table: NodeTable) -> tuple[_PreFilterState | None, Status | None]:
        restricted = _restricted(pod)
        namespace = pod.metadata.namespace
        rwop: set[str] = set()
        objects: VolumeObjects | None = None
        for volume in pod.spec.volumes:
            source = volume.persistent_volume_claim
            if source is None:
                continue
            objects = objects or VolumeObjects(self._handle)
            pvc = objects.pvc(namespace, source.claim_name)
            if pvc is None:
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, pvc_not_found(source.claim_name))
            if READ_WRITE_ONCE_POD in pvc.spec.access_modes:
                rwop.add(claim_key(namespace, source.claim_name))
        used = self._claims_in_use(table) if rwop else frozenset()
        return _PreFilterState(restricted, frozenset(rwop), len(rwop & used)), None

    def _claims_in_use(self, table: NodeTable) -> frozenset[str]:
        """`namespace/claim` of every claim a scheduled or assumed pod uses (upstream's usedPVCSet)."""
        cached = self._used_claims
        if cached is not None and cached[0] is table and cached[1] == table.generation:
            return cached[2]
        used = frozenset(ref for ni in table.infos for ref in ni.pvc_ref_counts)
        self._used_claims = (table, table.generation, used)
        return used

    def _state(self, state: CycleState) -> _PreFilterState | Status:
        """What PreFilter wrote; without it an error, as upstream's Filter (after its disk conflict
        check, which needs no state) and AddPod/RemovePod return (it is never worked out here)."""
        return pre_filter_state(
            state,
            PRE_FILTER_STATE_KEY,
            _PreFilterState,
            missing_state_error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState'),
            keep=False,
        )

    # -- PreFilter extensions: a pod added/removed changes who holds the RWOP claims
    def add_pod(
        self, state: CycleState, pod: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        data = self._state(state)
        if isinstance(data, Status):
            return data
        data.conflicting_refs += data.refs_of(pod_info_to_add.pod)
        return None

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        data = self._state(state)
        if isinstance(data, Status):
            return data
        data.conflicting_refs -= data.refs_of(pod_info_to_remove.pod)
        return None

    # -- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        data = self._state(state)
        restricted = data.restricted if isinstance(data, _PreFilterState) else _restricted(pod)
        if restricted and any(volumes_conflict(restricted, pi.pod) for pi in node_info.pods.values()):
            return Status.unschedulable(ERR_REASON_DISK_CONFLICT)
        if isinstance(data, Status):
            return data
        if data.conflicting_refs > 0:
            return Status.unschedulable(ERR_REASON_RWOP_CONFLICT)
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        """Disk conflicts are looked for only on nodes running a pod with a conflict-prone volume."""
        n = len(nodes)
        data = self._state(state)
        restricted = data.restricted if isinstance(data, _PreFilterState) else _restricted(pod)
        codes = np.full(n, -1, dtype=np.int32)
        statuses: list[Status] = []
        if restricted and n:
            infos = nodes.table.infos
            conflicted = np.zeros(n, dtype=np.bool_)
            for pos in np.flatnonzero(self._rows_with_restricted(nodes.table)[nodes.rows]):
                pods = infos[nodes.rows[pos]].pods.values()
                conflicted[pos] = any(volumes_conflict(restricted, pi.pod) for pi in pods)
            if conflicted.any():
                codes[conflicted] = len(statuses)
                statuses.append(Status.unschedulable(ERR_REASON_DISK_CONFLICT))
        if isinstance(data, Status) or data.conflicting_refs > 0:
            codes[codes < 0] = len(statuses)
            statuses.append(
                data if isinstance(data, Status) else Status.unschedulable(ERR_REASON_RWOP_CONFLICT)
            )
        return BatchFilterResult(codes, statuses)

    def _rows_with_restricted(self, table: NodeTable) -> BoolArray:
        """Rows running a pod with a conflict-prone volume; recomputed only when the table changed."""
        counts = self._restricted_counts
        if counts is None or counts.table is not table:
            counts = PodRowCounts(
                table, lambda ni: sum(1 for pi in ni.pods.values() if _has_restricted_volume(pi.pod))
            )
            self._restricted_counts = counts
        return counts.current() > 0

    # -- requeueing
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As v1.37.2: a deleted bound pod frees its disks and claims; a new node has none in use;
        a missing claim may appear. Pod volumes are immutable, so pod updates never help."""
        return [
            ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE), _after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD), _after_claim_added
            ),
        ]


def _after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the deleted pod, of the pod's namespace (upstream looks no further), held one of
    the pod's disks or one of its claims."""
    if not isinstance(old, Pod):
        return QueueingHint.QUEUE
    if old.metadata.namespace != pod.metadata.namespace:
        return QueueingHint.SKIP
    if volumes_conflict([v for v in pod.spec.volumes if _source(v) is not None], old):
        return QueueingHint.QUEUE
    mine = {v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim}
    theirs = {v.persistent_volume_claim.claim_name for v in old.spec.volumes if v.persistent_volume_claim}
    return QueueingHint.QUEUE if mine & theirs else QueueingHint.SKIP


def _after_claim_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the new claim is one the pod references."""
    meta = getattr(new, "metadata", None)
    if meta is None:
        return QueueingHint.QUEUE
    if meta.namespace != pod.metadata.namespace:
        return QueueingHint.SKIP
    for v in pod.spec.volumes:
        if v.persistent_volume_claim is not None and v.persistent_volume_claim.claim_name == meta.name:
            return QueueingHint.QUEUE
    return QueueingHint.SKIP
