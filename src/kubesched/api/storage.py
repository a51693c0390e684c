"""Storage kinds the volume plugins read: PersistentVolume(Claim), StorageClass and the CSI objects."""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.meta import Int32, KubeStruct, LabelSelector, NodeSelector, ObjectMeta
from kubesched.api.objects import ResourceRequirements


class PersistentVolumeSpec(KubeStruct, frozen=True):
    capacity: dict[str, str | int | float] = {}
    access_modes: list[str] = []
    storage_class_name: str = ""
    node_affinity: dict[str, NodeSelector] | None = None
    claim_ref: dict[str, str] | None = None
    csi: dict[str, Any] | None = None
    volume_mode: str | None = None
    # In-tree sources that CSI migration counts against the CSI driver's attach limit.
    gce_persistent_disk: dict[str, Any] | None = None
    aws_elastic_block_store: dict[str, Any] | None = msgspec.field(default=None, name="awsElasticBlockStore")


class PersistentVolumeStatus(KubeStruct, frozen=True):
    phase: str = ""


class PersistentVolume(KubeStruct, frozen=True):
    api_version: str = "v1"
    kind: str = "PersistentVolume"
    metadata: ObjectMeta = ObjectMeta()
    spec: PersistentVolumeSpec = PersistentVolumeSpec()
    status: PersistentVolumeStatus = PersistentVolumeStatus()


class PersistentVolumeClaimSpec(KubeStruct, frozen=True):
    access_modes: list[str] = []
    resources: ResourceRequirements = ResourceRequirements()
    storage_class_name: str | None = None
    volume_name: str = ""
    volume_mode: str | None = None
    selector: LabelSelector | None = None


class PersistentVolumeClaimStatus(KubeStruct, frozen=True):
    phase: str = ""


class PersistentVolumeClaim(KubeStruct, frozen=True):
    api_version: str = "v1"
    kind: str = "PersistentVolumeClaim"
    metadata: ObjectMeta = ObjectMeta()
    spec: PersistentVolumeClaimSpec = PersistentVolumeClaimSpec()
    status: PersistentVolumeClaimStatus = PersistentVolumeClaimStatus()


class StorageClass(KubeStruct, frozen=True):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "StorageClass"
    metadata: ObjectMeta = ObjectMeta()
    provisioner: str = ""
    volume_binding_mode: str | None = None
    allowed_topologies: list[dict[str, Any]] = []


class VolumeNodeResources(KubeStruct, frozen=True):
    count: Int32 | None = None


class CSINodeDriver(KubeStruct, frozen=True):
    name: str
    node_id: str = msgspec.field(default="", name="nodeID")
    allocatable: VolumeNodeResources | None = None
    topology_keys: list[str] = []


class CSINodeSpec(KubeStruct, frozen=True):
    drivers: list[CSINodeDriver] = []


class CSINode(KubeStruct, frozen=True):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSINode"
    metadata: ObjectMeta = ObjectMeta()
    spec: CSINodeSpec = CSINodeSpec()


class CSIDriverSpec(KubeStruct, frozen=True):
    #: The driver publishes CSIStorageCapacity objects: VolumeBinding checks (and scores) capacity.
    storage_capacity: bool | None = None
    #: NodeVolumeLimits (v1.37, VolumeLimitScaling): refuse nodes whose CSINode lacks the driver.
    prevent_pod_scheduling_if_missing: bool | None = None


class CSIDriver(KubeStruct, frozen=True):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSIDriver"
    metadata: ObjectMeta = ObjectMeta()
    spec: CSIDriverSpec = CSIDriverSpec()


class CSIStorageCapacity(KubeStruct, frozen=True):
    """Free capacity a CSI driver reports for a StorageClass on the nodes `nodeTopology` selects."""

    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSIStorageCapacity"
    metadata: ObjectMeta = ObjectMeta()
    storage_class_name: str = ""
    #: None selects no node (upstream: "unavailable").
    node_topology: LabelSelector | None = None
    capacity: str | int | float | None = None
    maximum_volume_size: str | int | float | None = None
