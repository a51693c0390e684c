"""What the four volume plugins share: object lookups, claim naming, classes and upstream's messages.

Upstream reads PersistentVolumes, claims, StorageClasses and CSINodes from informer listers; here
they come from `Handle.lister(kind)`. `VolumeObjects` indexes those lists on first use and is
built once per scheduling cycle (a pod without volumes never builds one), so a Filter over many
nodes looks objects up in dicts instead of scanning lists.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from kubesched.api.meta import is_controlled_by
from kubesched.api.objects import Pod, Volume
from kubesched.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from kubesched.framework.interfaces import RepeatsFailures

if TYPE_CHECKING:
    from kubesched.framework.cycle_state import CycleState
    from kubesched.framework.node_table import NodeTable

#: The kinds the volume plugins read through the listers.
VOLUME_KINDS = ("PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode")

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_SELECTED_NODE",
    "ANN_STORAGE_CLASS",
    "IMMEDIATE",
    "NOT_SUPPORTED_PROVISIONER",
    "VOLUME_KINDS",
    "WAIT_FOR_FIRST_CONSUMER",
    "ListerSource",
    "RepeatsFailuresWithoutClaims",
    "VolumeHandle",
    "VolumeObjects",
    "binding_mode",
    "binding_mode_not_set",
    "claim_class",
    "claim_key",
    "ephemeral_claim_name",
    "ephemeral_owner_error",
    "pod_claims",
    "pv_not_found",
    "pvc_not_found",
    "storage_class_not_found",
    "volume_class",
]

#: Legacy annotation that still wins over `spec.storageClassName` (claims and volumes).
ANN_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
#: Set by the PV controller once a claim's binding is complete.
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
#: Set by the scheduler on a claim it wants provisioned for a node (WaitForFirstConsumer).
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"

IMMEDIATE = "Immediate"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
#: A StorageClass provisioner that means "static volumes only".
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"


class ListerSource(Protocol):
    """The part of the framework Handle the volume plugins read objects through."""

    def lister(self, kind: str) -> Sequence[Any]: ...


class VolumeHandle(ListerSource, Protocol):
    """What the volume plugins use of the framework Handle: the listers and the node snapshot."""

    @property
    def snapshot(self) -> NodeTable: ...


def pvc_not_found(name: str) -> str:
    """The API server's NotFound text for a claim, which upstream passes through as the reason."""
    return f'persistentvolumeclaim "{name}" not found'


def pv_not_found(name: str) -> str:
    return f'persistentvolume "{name}" not found'


def storage_class_not_found(name: str) -> str:
    return f'storageclass.storage.k8s.io "{name}" not found'


def claim_key(namespace: str, name: str) -> str:
    """`namespace/name`, the key NodeInfo.pvc_ref_counts and the snapshot's used-claim set use."""
    return f"{namespace}/{name}"


def claim_class(pvc: PersistentVolumeClaim) -> str:
    """The claim's StorageClass name: the beta annotation if present, else `spec.storageClassName`."""
    annotated = pvc.metadata.annotations.get(ANN_STORAGE_CLASS)
    if annotated is not None:
        return annotated
    return pvc.spec.storage_class_name or ""


def volume_class(pv: PersistentVolume) -> str:
    """The volume's StorageClass name, read the same way as a claim's."""
    annotated = pv.metadata.annotations.get(ANN_STORAGE_CLASS)
    if annotated is not None:
        return annotated
    return pv.spec.storage_class_name


def ephemeral_claim_name(pod: Pod, volume: Volume) -> str:
    """The claim the ephemeral volume controller creates for a generic ephemeral volume."""
    return f"{pod.metadata.name}-{volume.name}"


def ephemeral_owner_error(pod: Pod, pvc: PersistentVolumeClaim) -> str | None:
    """Why `pvc` may not back the pod's ephemeral volume (it is not controlled by the pod), or None.

    A claim with the right name but another owner was made for some other pod; using it would
    share (or steal) that pod's data.
    """
    if is_controlled_by(pvc.metadata, pod.metadata.uid):
        return None
    return (
        f"PVC {pvc.metadata.namespace}/{pvc.metadata.name} was not created for pod "
        f"{pod.metadata.namespace}/{pod.metadata.name} (pod is not owner)"
    )


def pod_claims(pod: Pod) -> Iterator[tuple[Volume, str, bool]]:
    """(volume, claim name, is_ephemeral) for every volume of the pod backed by a claim."""
    for volume in pod.spec.volumes:
        if volume.persistent_volume_claim is not None:
            yield volume, volume.persistent_volume_claim.claim_name, False
        elif volume.ephemeral is not None:
            yield volume, ephemeral_claim_name(pod, volume), True


class RepeatsFailuresWithoutClaims(RepeatsFailures):
    """`RepeatableFailurePlugin` for the volume plugins. A pod without claims they answer from its
    content and the cluster alone; a pod with claims depends on claims named after it (ephemeral
    volumes) and on bindings in flight, so its failures are not repeated."""

    def failure_repeats(self, state: CycleState, pod: Pod) -> bool:
        # `pod_claims` finds none, without a generator: four plugins ask for every repeat.
        for volume in pod.spec.volumes:
            if volume.persistent_volume_claim is not None or volume.ephemeral is not None:
                return False
        return True

    def failure_survives_pod_changes(self, state: CycleState, pod: Pod, table: NodeTable) -> bool:
        # Without claims their Filters read only the node's own pods (inline volumes, attach counts).
        return self.failure_repeats(state, pod)


class VolumeObjects:
    """Claims, volumes, classes and CSI objects from the listers, indexed by name on first use."""

    __slots__ = ("_capacities", "_csi_drivers", "_csi_nodes", "_pvcs", "_pvs", "_source", "_storage_classes")

    def __init__(self, source: ListerSource | None) -> None:
        self._source = source
        self._pvcs: dict[tuple[str, str], PersistentVolumeClaim] | None = None
        self._pvs: dict[str, PersistentVolume] | None = None
        self._storage_classes: dict[str, StorageClass] | None = None
        self._csi_nodes: dict[str, CSINode] | None = None
        self._csi_drivers: dict[str, CSIDriver] | None = None
        self._capacities: list[CSIStorageCapacity] | None = None

    def _list(self, kind: str) -> Sequence[Any]:
        return self._source.lister(kind) if self._source is not None else ()

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        if self._pvcs is None:
            self._pvcs = {
                (c.metadata.namespace or "default", c.metadata.name): c
                for c in self._list("PersistentVolumeClaim")
            }
        return self._pvcs.get((namespace, name))

    def pv(self, name: str) -> PersistentVolume | None:
        return self._pv_index().get(name)

    def pvs(self) -> list[PersistentVolume]:
        """Every PersistentVolume, in name order (so choices between equal volumes are stable)."""
        index = self._pv_index()
        return [index[name] for name in sorted(index)]

    def _pv_index(self) -> dict[str, PersistentVolume]:
        if self._pvs is None:
            self._pvs = {v.metadata.name: v for v in self._list("PersistentVolume")}
        return self._pvs

    def storage_class(self, name: str) -> StorageClass | None:
        if self._storage_classes is None:
            self._storage_classes = {s.metadata.name: s for s in self._list("StorageClass")}
        return self._storage_classes.get(name)

    def csi_node(self, name: str) -> CSINode | None:
        return self._csi_node_index().get(name)

    def csi_nodes(self) -> list[CSINode]:
        return list(self._csi_node_index().values())

    def _csi_node_index(self) -> dict[str, CSINode]:
        if self._csi_nodes is None:
            self._csi_nodes = {c.metadata.name: c for c in self._list("CSINode")}
        return self._csi_nodes

    def csi_driver(self, name: str) -> CSIDriver | None:
        if self._csi_drivers is None:
            self._csi_drivers = {d.metadata.name: d for d in self._list("CSIDriver")}
        return self._csi_drivers.get(name)

    def storage_capacities(self, class_name: str) -> list[CSIStorageCapacity]:
        """The CSIStorageCapacity objects of a StorageClass, by namespace and name.

        Upstream scans its lister in map order and takes the first object that fits; when several
        fit the same node, which one it takes is not defined. The name order here is one of those.
        """
        if self._capacities is None:
            self._capacities = sorted(
                self._list("CSIStorageCapacity"), key=lambda c: (c.metadata.namespace, c.metadata.name)
            )
        return [c for c in self._capacities if c.storage_class_name == class_name]


def binding_mode(sc: StorageClass) -> str | None:
    """The class's `volumeBindingMode`; None when it is explicitly empty ("not set").

    An absent field reads as Immediate, the API server's default, so hand-written classes behave
    as they would once applied; only an explicit empty string reaches upstream's "not set" error.
    """
    if sc.volume_binding_mode is None:
        return IMMEDIATE
    return sc.volume_binding_mode or None


def binding_mode_not_set(class_name: str) -> str:
    return f'VolumeBindingMode not set for StorageClass "{class_name}"'
