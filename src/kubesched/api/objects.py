"""Pods and nodes as the scheduler sees them: `Pod`, `Node` and the structs they are made of.

Lean msgspec Structs holding only the fields scheduling needs; everything else in a manifest is
ignored while decoding. Field names are the Kubernetes JSON names (camelCase) so objects decode
straight from `kubectl get -o yaml|json` output and from API server streams.

Quantities stay as the strings the user wrote: they are parsed where they are used
(`kubesched.api.resources`), so one bad quantity makes one pod fail, not the whole file.
The other kinds live beside this module: `meta` (metadata, selectors), `storage`, `cluster_objects`,
`controllers`, `scheduler_plugins`, and `kinds` (the registry of them all).
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.meta import (
    Int32,
    Int64,
    KubeStruct,
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    ObjectMeta,
)

# --------------------------------------------------------------------------- affinity


class PreferredSchedulingTerm(KubeStruct, frozen=True):
    weight: Int32
    preference: NodeSelectorTerm


class NodeAffinity(KubeStruct, frozen=True):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class PodAffinityTerm(KubeStruct, frozen=True):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = []
    mismatch_label_keys: list[str] = []


class WeightedPodAffinityTerm(KubeStruct, frozen=True):
    weight: Int32
    pod_affinity_term: PodAffinityTerm


class PodAffinity(KubeStruct, frozen=True):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(KubeStruct, frozen=True):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


# --------------------------------------------------------------------------- taints


class Taint(KubeStruct, frozen=True):
    key: str
    value: str = ""
    effect: str = ""


class Toleration(KubeStruct, frozen=True):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: Int64 | None = None


# --------------------------------------------------------------------------- pods


class ResourceClaimReference(KubeStruct, frozen=True):
    """A container's use of one of the pod's resource claims (`resources.claims[]`)."""

    name: str = ""
    request: str = ""


class ResourceRequirements(KubeStruct, frozen=True):
    requests: dict[str, str | int | float] = {}
    limits: dict[str, str | int | float] = {}
    claims: list[ResourceClaimReference] = []


class ContainerPort(KubeStruct, frozen=True):
    container_port: Int32 = 0
    host_port: Int32 = 0
    host_ip: str = msgspec.field(default="", name="hostIP")
    protocol: str = ""
    name: str = ""


class VolumeMount(KubeStruct, frozen=True):
    """Only what NodeDeclaredFeatures reads: whether bind-mount options are asked for."""

    name: str = ""
    bind_mount_options: Any = None


class ContainerRestartRule(KubeStruct, frozen=True):
    action: str = ""
    exit_codes: Any = None


class Container(KubeStruct, frozen=True):
    name: str = ""
    image: str = ""
    resources: ResourceRequirements = ResourceRequirements()
    ports: list[ContainerPort] = []
    restart_policy: str | None = None
    restart_policy_rules: list[ContainerRestartRule] = []
    volume_mounts: list[VolumeMount] = []


class PodSchedulingGate(KubeStruct, frozen=True):
    name: str


class PodSchedulingGroup(KubeStruct, frozen=True):
    """`spec.schedulingGroup`: the scheduling.k8s.io PodGroup the pod belongs to (GenericWorkload)."""

    pod_group_name: str | None = None


class TopologySpreadConstraint(KubeStruct, frozen=True):
    max_skew: Int32
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: Int32 | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


class PersistentVolumeClaimVolumeSource(KubeStruct, frozen=True):
    claim_name: str
    read_only: bool = False


class Volume(KubeStruct, frozen=True):
    """A pod volume; only the sources that scheduling plugins inspect are kept."""

    name: str = ""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: dict[str, Any] | None = None
    gce_persistent_disk: dict[str, Any] | None = None
    aws_elastic_block_store: dict[str, Any] | None = msgspec.field(default=None, name="awsElasticBlockStore")
    rbd: dict[str, Any] | None = None
    iscsi: dict[str, Any] | None = None
    csi: dict[str, Any] | None = None


class PodResourceClaim(KubeStruct, frozen=True):
    """`spec.resourceClaims[]`: a claim by name, or a template the resourceclaim controller instantiates."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodSpec(KubeStruct, frozen=True):
    node_name: str = ""
    scheduler_name: str = "default-scheduler"
    priority: Int32 | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    node_selector: dict[str, str] = {}
    affinity: Affinity | None = None
    tolerations: list[Toleration] = []
    scheduling_gates: list[PodSchedulingGate] = []
    containers: list[Container] = []
    init_containers: list[Container] = []
    overhead: dict[str, str | int | float] = {}
    resources: ResourceRequirements | None = None
    volumes: list[Volume] = []
    topology_spread_constraints: list[TopologySpreadConstraint] = []
    host_network: bool = False
    host_users: bool | None = None
    resource_claims: list[PodResourceClaim] = []
    scheduling_group: PodSchedulingGroup | None = None


class PodCondition(KubeStruct, frozen=True):
    type: str
    status: str
    reason: str = ""
    message: str = ""


class PodResourceClaimStatus(KubeStruct, frozen=True):
    """The claim generated for a template entry of `spec.resourceClaims` (nil name: none needed)."""

    name: str = ""
    resource_claim_name: str | None = None


class ContainerExtendedResourceRequest(KubeStruct, frozen=True):
    container_name: str = ""
    resource_name: str = ""
    request_name: str = ""


class PodExtendedResourceClaimStatus(KubeStruct, frozen=True):
    """The claim the scheduler created for DRA-backed extended resources, and its request names."""

    request_mappings: list[ContainerExtendedResourceRequest] = []
    resource_claim_name: str = ""


#: Pod phases after which nothing of the pod runs any more.
TERMINAL_POD_PHASES = frozenset({"Succeeded", "Failed"})


class PodStatus(KubeStruct, frozen=True):
    phase: str = ""
    nominated_node_name: str = ""
    start_time: str | None = None
    conditions: list[PodCondition] = []
    resource_claim_statuses: list[PodResourceClaimStatus] = []
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None


class Pod(KubeStruct, frozen=True):
    api_version: str = "v1"
    kind: str = "Pod"
    metadata: ObjectMeta = ObjectMeta()
    spec: PodSpec = PodSpec()
    status: PodStatus = PodStatus()

    @property
    def key(self) -> str:
        """`namespace/name`, the way kubectl and the scheduler's messages name a pod."""
        return f"{self.metadata.namespace}/{self.metadata.name}"

    @property
    def finished(self) -> bool:
        """Phase Succeeded or Failed: its containers are gone, so it holds nothing on its node.

        kube-scheduler never lists such pods (its informer selects
        `status.phase!=Succeeded,status.phase!=Failed`), so they neither use capacity nor get scheduled.
        """
        return self.status.phase in TERMINAL_POD_PHASES


# --------------------------------------------------------------------------- nodes


class ContainerImage(KubeStruct, frozen=True):
    names: list[str] = []
    size_bytes: Int64 = 0


class NodeCondition(KubeStruct, frozen=True):
    type: str
    status: str


class NodeSpec(KubeStruct, frozen=True):
    unschedulable: bool = False
    taints: list[Taint] = []


class NodeStatus(KubeStruct, frozen=True):
    capacity: dict[str, str | int | float] = {}
    allocatable: dict[str, str | int | float] = {}
    images: list[ContainerImage] = []
    conditions: list[NodeCondition] = []
    #: Features the kubelet declares (NodeDeclaredFeatures).
    declared_features: list[str] = []


class Node(KubeStruct, frozen=True):
    api_version: str = "v1"
    kind: str = "Node"
    metadata: ObjectMeta = ObjectMeta()
    spec: NodeSpec = NodeSpec()
    status: NodeStatus = NodeStatus()

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels

    def effective_allocatable(self) -> dict[str, str | int | float]:
        """`status.allocatable`, falling back to capacity as the API server's defaulting does."""
        return self.status.allocatable or self.status.capacity
