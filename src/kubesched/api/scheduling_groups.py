"""Workload-aware scheduling objects of `scheduling.k8s.io`: Workload and PodGroup (v1beta1, also
served as v1alpha3) and CompositePodGroup (v1alpha3 only), with every field of Kubernetes v1.37.2.

A Workload describes a job's groups as templates; a PodGroup is one group at run time (its pods name
it in `spec.schedulingGroup.podGroupName`); a CompositePodGroup gathers PodGroups (and other
composites) that must be placed together. The scheduler reads PodGroups and CompositePodGroups and
writes their status conditions; Workloads are read by the controllers that create the groups.

Every field is kept, so a manifest the API server accepts decodes whole and the pod-group cycle has
what it needs; the API server's own checks (exactly one policy, minCount >= 1) are left to it. Empty
policy objects (`basic: {}`, `disruptionMode.single: {}`) are `Marker`s: only their presence counts.

The native PodGroup shares its kind name with scheduler-plugins' `scheduling.x-k8s.io` PodGroup
(`api.scheduler_plugins.PodGroup`, for Coscheduling): the loader tells them apart by `apiVersion`,
and clusters list the native kinds under the group-qualified keys below (upstream's event resource
names).
"""

from __future__ import annotations

from typing import Final

import msgspec

from kubesched.api.meta import Int32, KubeStruct, ObjectMeta
from kubesched.api.resource import Condition

__all__ = [
    "COMPOSITE_POD_GROUP_KEY",
    "GATE_OF",
    "POD_GROUP_INITIALLY_SCHEDULED",
    "POD_GROUP_KEY",
    "SCHEDULING_GROUP",
    "SCHEDULING_KINDS",
    "V1ALPHA3",
    "V1BETA1",
    "WORKLOAD_KEY",
    "CompositeDisruptionMode",
    "CompositeGangSchedulingPolicy",
    "CompositePodGroup",
    "CompositePodGroupSchedulingPolicy",
    "CompositePodGroupSpec",
    "CompositePodGroupStatus",
    "CompositePodGroupTemplate",
    "DisruptionMode",
    "GangSchedulingPolicy",
    "Marker",
    "PodGroup",
    "PodGroupResourceClaim",
    "PodGroupResourceClaimStatus",
    "PodGroupSchedulingConstraints",
    "PodGroupSchedulingPolicy",
    "PodGroupSpec",
    "PodGroupStatus",
    "PodGroupTemplate",
    "TopologyConstraint",
    "TypedLocalObjectReference",
    "Workload",
    "WorkloadReference",
    "WorkloadSpec",
]

SCHEDULING_GROUP: Final = "scheduling.k8s.io"
V1BETA1: Final = "scheduling.k8s.io/v1beta1"
V1ALPHA3: Final = "scheduling.k8s.io/v1alpha3"

#: `Handle.lister` / informer keys. Qualified by group, as upstream names these event resources:
#: the bare "PodGroup" is scheduler-plugins' kind.
WORKLOAD_KEY: Final = "scheduling.k8s.io/Workload"
POD_GROUP_KEY: Final = "scheduling.k8s.io/PodGroup"
COMPOSITE_POD_GROUP_KEY: Final = "scheduling.k8s.io/CompositePodGroup"
#: The feature gate with which kube-scheduler reads each kind, by key (Workloads: see the informers).
GATE_OF: Final = {
    POD_GROUP_KEY: "GenericWorkload",
    WORKLOAD_KEY: "GenericWorkload",
    COMPOSITE_POD_GROUP_KEY: "CompositePodGroup",
}

#: The condition the scheduler sets on a PodGroup once it has been placed (or found unschedulable).
POD_GROUP_INITIALLY_SCHEDULED: Final = "PodGroupInitiallyScheduled"


class Marker(KubeStruct, frozen=True):
    """An API object without fields (`basic: {}`, `all: {}`): set or not, nothing more."""


# --------------------------------------------------------------------------- shared pieces


class GangSchedulingPolicy(KubeStruct, frozen=True):
    #: Pods that must be placed together before any of them binds.
    min_count: Int32 = 0


class PodGroupSchedulingPolicy(KubeStruct, frozen=True):
    """Exactly one of `basic` (pods scheduled one by one) or `gang` (all or nothing)."""

    basic: Marker | None = None
    gang: GangSchedulingPolicy | None = None


class TopologyConstraint(KubeStruct, frozen=True):
    #: A node label: the group's pods must all land in nodes sharing one value of it.
    key: str = ""


class PodGroupSchedulingConstraints(KubeStruct, frozen=True):
    topology: list[TopologyConstraint] = []


class PodGroupResourceClaim(KubeStruct, frozen=True):
    """A claim shared by the group's pods: by name, or a template made into one claim per group."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class DisruptionMode(KubeStruct, frozen=True):
    """Whether one pod may be disrupted alone (`single`) or the group only as a whole (`all`)."""

    single: Marker | None = None
    all: Marker | None = None


class WorkloadReference(KubeStruct, frozen=True):
    workload_name: str = ""
    template_name: str = ""


class CompositeGangSchedulingPolicy(KubeStruct, frozen=True):
    #: Child groups that must be placed together.
    min_group_count: Int32 = 0


class CompositePodGroupSchedulingPolicy(KubeStruct, frozen=True):
    basic: Marker | None = None
    gang: CompositeGangSchedulingPolicy | None = None


class CompositeDisruptionMode(KubeStruct, frozen=True):
    single: Marker | None = None
    all: Marker | None = None


# --------------------------------------------------------------------------- Workload


class TypedLocalObjectReference(KubeStruct, frozen=True):
    """The object (a Job, ...) that manages the Workload."""

    api_group: str = ""
    kind: str = ""
    name: str = ""


class PodGroupTemplate(KubeStruct, frozen=True):
    name: str = ""
    scheduling_policy: PodGroupSchedulingPolicy = PodGroupSchedulingPolicy()
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    resource_claims: list[PodGroupResourceClaim] = []
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None
    preemption_policy: str | None = None


class CompositePodGroupTemplate(KubeStruct, frozen=True):
    name: str = ""
    scheduling_policy: CompositePodGroupSchedulingPolicy = CompositePodGroupSchedulingPolicy()
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    disruption_mode: CompositeDisruptionMode | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None
    preemption_policy: str | None = None
    pod_group_templates: list[PodGroupTemplate] = []
    composite_pod_group_templates: list[CompositePodGroupTemplate] = []


class WorkloadSpec(KubeStruct, frozen=True):
    controller_ref: TypedLocalObjectReference | None = None
    pod_group_templates: list[PodGroupTemplate] = []
    composite_pod_group_templates: list[CompositePodGroupTemplate] = []


class Workload(KubeStruct, frozen=True):
    api_version: str = V1BETA1
    kind: str = "Workload"
    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadSpec = WorkloadSpec()


# --------------------------------------------------------------------------- PodGroup


class PodGroupSpec(KubeStruct, frozen=True):
    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadReference | None = None
    scheduling_policy: PodGroupSchedulingPolicy = PodGroupSchedulingPolicy()
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    resource_claims: list[PodGroupResourceClaim] = []
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None
    preemption_policy: str | None = None


class PodGroupResourceClaimStatus(KubeStruct, frozen=True):
    """The claim made from a template entry of `spec.resourceClaims` (None: none needed)."""

    name: str = ""
    resource_claim_name: str | None = None


class PodGroupStatus(KubeStruct, frozen=True):
    conditions: list[Condition] = []
    resource_claim_statuses: list[PodGroupResourceClaimStatus] = []


class PodGroup(KubeStruct, frozen=True):
    """A group of pods at run time; its pods set `spec.schedulingGroup.podGroupName` to its name."""

    api_version: str = V1BETA1
    kind: str = "PodGroup"
    metadata: ObjectMeta = ObjectMeta()
    spec: PodGroupSpec = PodGroupSpec()
    status: PodGroupStatus = PodGroupStatus()


# --------------------------------------------------------------------------- CompositePodGroup


class CompositePodGroupSpec(KubeStruct, frozen=True):
    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadReference | None = None
    scheduling_policy: CompositePodGroupSchedulingPolicy = CompositePodGroupSchedulingPolicy()
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    disruption_mode: CompositeDisruptionMode | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None
    preemption_policy: str | None = None


class CompositePodGroupStatus(KubeStruct, frozen=True):
    conditions: list[Condition] = []


class CompositePodGroup(KubeStruct, frozen=True):
    """PodGroups (named by their `parentCompositePodGroupName`) and composites placed as one."""

    api_version: str = V1ALPHA3
    kind: str = "CompositePodGroup"
    metadata: ObjectMeta = ObjectMeta()
    spec: CompositePodGroupSpec = CompositePodGroupSpec()
    status: CompositePodGroupStatus = CompositePodGroupStatus()


#: The kinds of this module by `kind`; "PodGroup" only with a `scheduling.k8s.io` apiVersion.
SCHEDULING_KINDS: dict[str, type[msgspec.Struct]] = {
    "Workload": Workload,
    "PodGroup": PodGroup,
    "CompositePodGroup": CompositePodGroup,
}
