"""The scheduler's view of Kubernetes objects.

Lean msgspec Structs holding only the fields scheduling needs; everything else in a manifest is
ignored while decoding. Field names are the Kubernetes JSON names (camelCase) so objects decode
straight from `kubectl get -o yaml|json` output and from API server streams.

Quantities stay as the strings the user wrote: they are parsed where they are used
(`kubesched.api.resources`), so one bad quantity makes one pod fail, not the whole file.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

#: Kubernetes' fixed-width integers: a value out of range is refused with its field path while
#: decoding, as the API server refuses it, instead of surfacing later as an overflow.
Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class _Base(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel", frozen=True):
    """Common options: keyword construction, camelCase wire names, defaults omitted, immutable."""


# --------------------------------------------------------------------------- metadata


class OwnerReference(_Base, frozen=True):
    kind: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


def controller_reference(
    api_version: str, kind: str, name: str, uid: str, *, block_owner_deletion: bool | None = True
) -> OwnerReference:
    """The ownerReference a controller puts on what it creates (`controller: true`; upstream's
    controllers also set `blockOwnerDeletion`, the scheduler's extended-resource claim does not)."""
    return OwnerReference(
        api_version=api_version,
        kind=kind,
        name=name,
        uid=uid,
        controller=True,
        block_owner_deletion=block_owner_deletion,
    )


class ObjectMeta(_Base, frozen=True):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    owner_references: list[OwnerReference] = []
    finalizers: list[str] = []
    generation: int = 0


def controller_of(meta: ObjectMeta) -> OwnerReference | None:
    """The ownerReference marked `controller: true` (the API server allows one at most), or None:
    upstream's `metav1.GetControllerOf`, the one answer to "which workload owns this object"."""
    for ref in meta.owner_references:
        if ref.controller:
            return ref
    return None


def is_controlled_by(meta: ObjectMeta, uid: str) -> bool:
    """The object's controller is the object with `uid` (upstream's `metav1.IsControlledBy`)."""
    ref = controller_of(meta)
    return ref is not None and ref.uid == uid


# --------------------------------------------------------------------------- selectors


class LabelSelectorRequirement(_Base, frozen=True):
    key: str
    operator: str
    values: list[str] = []


class LabelSelector(_Base, frozen=True):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class NodeSelectorRequirement(_Base, frozen=True):
    key: str
    operator: str
    values: list[str] = []


class NodeSelectorTerm(_Base, frozen=True):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(_Base, frozen=True):
    node_selector_terms: list[NodeSelectorTerm] = []


class PreferredSchedulingTerm(_Base, frozen=True):
    weight: Int32
    preference: NodeSelectorTerm


class NodeAffinity(_Base, frozen=True):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class PodAffinityTerm(_Base, frozen=True):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = []
    mismatch_label_keys: list[str] = []


class WeightedPodAffinityTerm(_Base, frozen=True):
    weight: Int32
    pod_affinity_term: PodAffinityTerm


class PodAffinity(_Base, frozen=True):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(_Base, frozen=True):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


# --------------------------------------------------------------------------- taints


class Taint(_Base, frozen=True):
    key: str
    value: str = ""
    effect: str = ""


class Toleration(_Base, frozen=True):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: Int64 | None = None


# --------------------------------------------------------------------------- pods


class ResourceClaimReference(_Base, frozen=True):
    """A container's use of one of the pod's resource claims (`resources.claims[]`)."""

    name: str = ""
    request: str = ""


class ResourceRequirements(_Base, frozen=True):
    requests: dict[str, str | int | float] = {}
    limits: dict[str, str | int | float] = {}
    claims: list[ResourceClaimReference] = []


class ContainerPort(_Base, frozen=True):
    container_port: Int32 = 0
    host_port: Int32 = 0
    host_ip: str = msgspec.field(default="", name="hostIP")
    protocol: str = ""
    name: str = ""


class VolumeMount(_Base, frozen=True):
    """Only what NodeDeclaredFeatures reads: whether bind-mount options are asked for."""

    name: str = ""
    bind_mount_options: Any = None


class ContainerRestartRule(_Base, frozen=True):
    action: str = ""
    exit_codes: Any = None


class Container(_Base, frozen=True):
    name: str = ""
    image: str = ""
    resources: ResourceRequirements = ResourceRequirements()
    ports: list[ContainerPort] = []
    restart_policy: str | None = None
    restart_policy_rules: list[ContainerRestartRule] = []
    volume_mounts: list[VolumeMount] = []


class PodSchedulingGate(_Base, frozen=True):
    name: str


class PodSchedulingGroup(_Base, frozen=True):
    """`spec.schedulingGroup`: the scheduling.k8s.io PodGroup the pod belongs to (GenericWorkload)."""

    pod_group_name: str | None = None


class TopologySpreadConstraint(_Base, frozen=True):
    max_skew: Int32
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: Int32 | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


class PersistentVolumeClaimVolumeSource(_Base, frozen=True):
    claim_name: str
    read_only: bool = False


class Volume(_Base, frozen=True):
    """A pod volume; only the sources that scheduling plugins inspect are kept."""

    name: str = ""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: dict[str, Any] | None = None
    gce_persistent_disk: dict[str, Any] | None = None
    aws_elastic_block_store: dict[str, Any] | None = msgspec.field(default=None, name="awsElasticBlockStore")
    rbd: dict[str, Any] | None = None
    iscsi: dict[str, Any] | None = None
    csi: dict[str, Any] | None = None


class PodResourceClaim(_Base, frozen=True):
    """`spec.resourceClaims[]`: a claim by name, or a template the resourceclaim controller instantiates."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodSpec(_Base, frozen=True):
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


class PodCondition(_Base, frozen=True):
    type: str
    status: str
    reason: str = ""
    message: str = ""


class PodResourceClaimStatus(_Base, frozen=True):
    """The claim generated for a template entry of `spec.resourceClaims` (nil name: none needed)."""

    name: str = ""
    resource_claim_name: str | None = None


class ContainerExtendedResourceRequest(_Base, frozen=True):
    container_name: str = ""
    resource_name: str = ""
    request_name: str = ""


class PodExtendedResourceClaimStatus(_Base, frozen=True):
    """The claim the scheduler created for DRA-backed extended resources, and its request names."""

    request_mappings: list[ContainerExtendedResourceRequest] = []
    resource_claim_name: str = ""


#: Pod phases after which nothing of the pod runs any more.
TERMINAL_POD_PHASES = frozenset({"Succeeded", "Failed"})


class PodStatus(_Base, frozen=True):
    phase: str = ""
    nominated_node_name: str = ""
    start_time: str | None = None
    conditions: list[PodCondition] = []
    resource_claim_statuses: list[PodResourceClaimStatus] = []
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None


class Pod(_Base, frozen=True):
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


class ContainerImage(_Base, frozen=True):
    names: list[str] = []
    size_bytes: Int64 = 0


class NodeCondition(_Base, frozen=True):
    type: str
    status: str


class NodeSpec(_Base, frozen=True):
    unschedulable: bool = False
    taints: list[Taint] = []


class NodeStatus(_Base, frozen=True):
    capacity: dict[str, str | int | float] = {}
    allocatable: dict[str, str | int | float] = {}
    images: list[ContainerImage] = []
    conditions: list[NodeCondition] = []
    #: Features the kubelet declares (NodeDeclaredFeatures).
    declared_features: list[str] = []


class Node(_Base, frozen=True):
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


# --------------------------------------------------------------------------- other kinds


class Namespace(_Base, frozen=True):
    api_version: str = "v1"
    kind: str = "Namespace"
    metadata: ObjectMeta = ObjectMeta()


class PriorityClass(_Base, frozen=True):
    api_version: str = "scheduling.k8s.io/v1"
    kind: str = "PriorityClass"
    metadata: ObjectMeta = ObjectMeta()
    value: Int32 = 0
    global_default: bool = False
    preemption_policy: str | None = None


class PersistentVolumeSpec(_Base, frozen=True):
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


class PersistentVolumeStatus(_Base, frozen=True):
    phase: str = ""


class PersistentVolume(_Base, frozen=True):
    api_version: str = "v1"
    kind: str = "PersistentVolume"
    metadata: ObjectMeta = ObjectMeta()
    spec: PersistentVolumeSpec = PersistentVolumeSpec()
    status: PersistentVolumeStatus = PersistentVolumeStatus()


class PersistentVolumeClaimSpec(_Base, frozen=True):
    access_modes: list[str] = []
    resources: ResourceRequirements = ResourceRequirements()
    storage_class_name: str | None = None
    volume_name: str = ""
    volume_mode: str | None = None
    selector: LabelSelector | None = None


class PersistentVolumeClaimStatus(_Base, frozen=True):
    phase: str = ""


class PersistentVolumeClaim(_Base, frozen=True):
    api_version: str = "v1"
    kind: str = "PersistentVolumeClaim"
    metadata: ObjectMeta = ObjectMeta()
    spec: PersistentVolumeClaimSpec = PersistentVolumeClaimSpec()
    status: PersistentVolumeClaimStatus = PersistentVolumeClaimStatus()


class StorageClass(_Base, frozen=True):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "StorageClass"
    metadata: ObjectMeta = ObjectMeta()
    provisioner: str = ""
    volume_binding_mode: str | None = None
    allowed_topologies: list[dict[str, Any]] = []


class VolumeNodeResources(_Base, frozen=True):
    count: Int32 | None = None


class CSINodeDriver(_Base, frozen=True):
    name: str
    node_id: str = msgspec.field(default="", name="nodeID")
    allocatable: VolumeNodeResources | None = None
    topology_keys: list[str] = []


class CSINodeSpec(_Base, frozen=True):
    drivers: list[CSINodeDriver] = []


class CSINode(_Base, frozen=True):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSINode"
    metadata: ObjectMeta = ObjectMeta()
    spec: CSINodeSpec = CSINodeSpec()


class CSIDriverSpec(_Base, frozen=True):
    #: The driver publishes CSIStorageCapacity objects: VolumeBinding checks (and scores) capacity.
    storage_capacity: bool | None = None
    #: NodeVolumeLimits (v1.37, VolumeLimitScaling): refuse nodes whose CSINode lacks the driver.
    prevent_pod_scheduling_if_missing: bool | None = None


class CSIDriver(_Base, frozen=True):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSIDriver"
    metadata: ObjectMeta = ObjectMeta()
    spec: CSIDriverSpec = CSIDriverSpec()


class CSIStorageCapacity(_Base, frozen=True):
    """Free capacity a CSI driver reports for a StorageClass on the nodes `nodeTopology` selects."""

    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSIStorageCapacity"
    metadata: ObjectMeta = ObjectMeta()
    storage_class_name: str = ""
    #: None selects no node (upstream: "unavailable").
    node_topology: LabelSelector | None = None
    capacity: str | int | float | None = None
    maximum_volume_size: str | int | float | None = None


class PodDisruptionBudgetSpec(_Base, frozen=True):
    selector: LabelSelector | None = None
    min_available: Int32 | str | None = None
    max_unavailable: Int32 | str | None = None


class PodDisruptionBudgetStatus(_Base, frozen=True):
    disruptions_allowed: Int32 = 0
    current_healthy: Int32 = 0
    desired_healthy: Int32 = 0
    expected_pods: Int32 = 0


class PodDisruptionBudget(_Base, frozen=True):
    api_version: str = "policy/v1"
    kind: str = "PodDisruptionBudget"
    metadata: ObjectMeta = ObjectMeta()
    spec: PodDisruptionBudgetSpec = PodDisruptionBudgetSpec()
    status: PodDisruptionBudgetStatus = PodDisruptionBudgetStatus()


class ServiceSpec(_Base, frozen=True):
    selector: dict[str, str] = {}


class Service(_Base, frozen=True):
    """Only its selector matters: PodTopologySpread's system default constraints spread by it."""

    api_version: str = "v1"
    kind: str = "Service"
    metadata: ObjectMeta = ObjectMeta()
    spec: ServiceSpec = ServiceSpec()


# --------------------------------------------------------------------------- workloads
#
# The controllers' objects keep what the simulator needs to create their pods as the controllers
# would (`kubesched.simulate.workloads`), and the selectors the spreading plugins read.


class PodTemplateSpec(_Base, frozen=True):
    metadata: ObjectMeta = ObjectMeta()
    spec: PodSpec = PodSpec()


class ReplicationControllerSpec(_Base, frozen=True):
    selector: dict[str, str] = {}
    replicas: int | None = None
    template: PodTemplateSpec | None = None


class ReplicationController(_Base, frozen=True):
    api_version: str = "v1"
    kind: str = "ReplicationController"
    metadata: ObjectMeta = ObjectMeta()
    spec: ReplicationControllerSpec = ReplicationControllerSpec()


class WorkloadSpec(_Base, frozen=True):
    """The part of a ReplicaSet spec the scheduler and the simulated controllers read."""

    selector: LabelSelector | None = None
    replicas: int | None = None
    template: PodTemplateSpec | None = None


class ReplicaSet(_Base, frozen=True):
    api_version: str = "apps/v1"
    kind: str = "ReplicaSet"
    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadSpec = WorkloadSpec()


class RollingUpdateDeployment(_Base, frozen=True):
    #: An int or a percentage string ("25%"), as in the API.
    max_surge: int | str | None = None
    max_unavailable: int | str | None = None


class DeploymentStrategy(_Base, frozen=True):
    type: str = "RollingUpdate"
    rolling_update: RollingUpdateDeployment | None = None


class DeploymentSpec(WorkloadSpec, frozen=True):
    strategy: DeploymentStrategy = DeploymentStrategy()
    paused: bool = False


class Deployment(_Base, frozen=True):
    api_version: str = "apps/v1"
    kind: str = "Deployment"
    metadata: ObjectMeta = ObjectMeta()
    spec: DeploymentSpec = DeploymentSpec()


class StatefulSetOrdinals(_Base, frozen=True):
    start: int = 0


class RollingUpdateStatefulSetStrategy(_Base, frozen=True):
    #: Ordinals below it keep their revision.
    partition: int = 0


class StatefulSetUpdateStrategy(_Base, frozen=True):
    type: str = "RollingUpdate"
    rolling_update: RollingUpdateStatefulSetStrategy | None = None


class StatefulSetSpec(WorkloadSpec, frozen=True):
    service_name: str = ""
    pod_management_policy: str = "OrderedReady"
    volume_claim_templates: list[PersistentVolumeClaim] = []
    ordinals: StatefulSetOrdinals | None = None
    update_strategy: StatefulSetUpdateStrategy = StatefulSetUpdateStrategy()


class StatefulSet(_Base, frozen=True):
    api_version: str = "apps/v1"
    kind: str = "StatefulSet"
    metadata: ObjectMeta = ObjectMeta()
    spec: StatefulSetSpec = StatefulSetSpec()


class RollingUpdateDaemonSet(_Base, frozen=True):
    #: An int or a percentage string ("25%"), as in the API.
    max_unavailable: int | str | None = None
    max_surge: int | str | None = None


class DaemonSetUpdateStrategy(_Base, frozen=True):
    type: str = "RollingUpdate"
    rolling_update: RollingUpdateDaemonSet | None = None


class DaemonSetSpec(_Base, frozen=True):
    selector: LabelSelector | None = None
    template: PodTemplateSpec | None = None
    update_strategy: DaemonSetUpdateStrategy = DaemonSetUpdateStrategy()


class DaemonSet(_Base, frozen=True):
    api_version: str = "apps/v1"
    kind: str = "DaemonSet"
    metadata: ObjectMeta = ObjectMeta()
    spec: DaemonSetSpec = DaemonSetSpec()


class JobSpec(_Base, frozen=True):
    parallelism: int | None = None
    completions: int | None = None
    #: Failed pods the Job tolerates before it fails (the API's default is 6).
    backoff_limit: int | None = None
    completion_mode: str = "NonIndexed"
    suspend: bool = False
    selector: LabelSelector | None = None
    manual_selector: bool = False
    template: PodTemplateSpec | None = None


class Job(_Base, frozen=True):
    api_version: str = "batch/v1"
    kind: str = "Job"
    metadata: ObjectMeta = ObjectMeta()
    spec: JobSpec = JobSpec()


class JobTemplateSpec(_Base, frozen=True):
    metadata: ObjectMeta = ObjectMeta()
    spec: JobSpec = JobSpec()


class CronJobSpec(_Base, frozen=True):
    schedule: str = ""
    suspend: bool = False
    job_template: JobTemplateSpec = JobTemplateSpec()


class CronJob(_Base, frozen=True):
    api_version: str = "batch/v1"
    kind: str = "CronJob"
    metadata: ObjectMeta = ObjectMeta()
    spec: CronJobSpec = CronJobSpec()


class PodGroupSpec(_Base, frozen=True):
    """What a gang needs before any member may bind (scheduler-plugins' PodGroup spec).

    `minMember`: members that must be placed together; `minResources`: resources the cluster must have
    free for the group; `scheduleTimeoutSeconds`: how long placed members wait at Permit for the rest.
    """

    min_member: Int32 = 0
    min_resources: dict[str, str | int | float] = {}
    schedule_timeout_seconds: Int32 | None = None


class PodGroup(_Base, frozen=True):
    """A `scheduling.x-k8s.io/v1alpha1` PodGroup; pods join it with the label `scheduling.x-k8s.io/pod-group`.

    The kind name is shared with Kubernetes' native `scheduling.k8s.io` PodGroup, so `apiVersion` is
    kept: the Coscheduling plugin reads only objects of the scheduler-plugins group.
    """

    api_version: str = "scheduling.x-k8s.io/v1alpha1"
    kind: str = "PodGroup"
    metadata: ObjectMeta = ObjectMeta()
    spec: PodGroupSpec = PodGroupSpec()


#: Every kind the object model knows, by `kind`.
KINDS: dict[str, type[msgspec.Struct]] = {
    "Pod": Pod,
    "Node": Node,
    "Namespace": Namespace,
    "PriorityClass": PriorityClass,
    "PersistentVolume": PersistentVolume,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    "StorageClass": StorageClass,
    "CSINode": CSINode,
    "CSIDriver": CSIDriver,
    "CSIStorageCapacity": CSIStorageCapacity,
    "PodDisruptionBudget": PodDisruptionBudget,
    "Service": Service,
    "ReplicationController": ReplicationController,
    "ReplicaSet": ReplicaSet,
    "StatefulSet": StatefulSet,
    "Deployment": Deployment,
    "DaemonSet": DaemonSet,
    "Job": Job,
    "CronJob": CronJob,
    "PodGroup": PodGroup,
}

KubeObject = (
    Pod
    | Node
    | Namespace
    | PriorityClass
    | PersistentVolume
    | PersistentVolumeClaim
    | StorageClass
    | CSINode
    | CSIDriver
    | CSIStorageCapacity
    | PodDisruptionBudget
    | Service
    | ReplicationController
    | ReplicaSet
    | StatefulSet
    | Deployment
    | DaemonSet
    | Job
    | CronJob
    | PodGroup
)
