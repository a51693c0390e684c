"""The controllers' objects: ReplicationController, ReplicaSet, Deployment, StatefulSet, DaemonSet,
Job and CronJob.

They keep what the simulator needs to create their pods as the controllers would
(`kubesched.simulate.workloads`), and the selectors the spreading plugins read. The API server's
checks on them are in `kubesched.api.workloads`.
"""

from __future__ import annotations

from kubesched.api.meta import Int32, KubeStruct, LabelSelector, ObjectMeta
from kubesched.api.objects import PodSpec
from kubesched.api.scheduling_groups import (
    DisruptionMode,
    Marker,
    PodGroupResourceClaim,
    PodGroupSchedulingConstraints,
)
from kubesched.api.storage import PersistentVolumeClaim


class PodTemplateSpec(KubeStruct, frozen=True):
    metadata: ObjectMeta = ObjectMeta()
    spec: PodSpec = PodSpec()


class ReplicationControllerSpec(KubeStruct, frozen=True):
    selector: dict[str, str] = {}
    replicas: int | None = None
    template: PodTemplateSpec | None = None


class ReplicationController(KubeStruct, frozen=True):
    api_version: str = "v1"
    kind: str = "ReplicationController"
    metadata: ObjectMeta = ObjectMeta()
    spec: ReplicationControllerSpec = ReplicationControllerSpec()


class WorkloadSpec(KubeStruct, frozen=True):
    """The part of a ReplicaSet spec the scheduler and the simulated controllers read."""

    selector: LabelSelector | None = None
    replicas: int | None = None
    template: PodTemplateSpec | None = None


class ReplicaSet(KubeStruct, frozen=True):
    api_version: str = "apps/v1"
    kind: str = "ReplicaSet"
    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadSpec = WorkloadSpec()


class RollingUpdateDeployment(KubeStruct, frozen=True):
    #: An int or a percentage string ("25%"), as in the API.
    max_surge: int | str | None = None
    max_unavailable: int | str | None = None


class DeploymentStrategy(KubeStruct, frozen=True):
    type: str = "RollingUpdate"
    rolling_update: RollingUpdateDeployment | None = None


class DeploymentSpec(WorkloadSpec, frozen=True):
    strategy: DeploymentStrategy = DeploymentStrategy()
    paused: bool = False


class Deployment(KubeStruct, frozen=True):
    api_version: str = "apps/v1"
    kind: str = "Deployment"
    metadata: ObjectMeta = ObjectMeta()
    spec: DeploymentSpec = DeploymentSpec()


class StatefulSetOrdinals(KubeStruct, frozen=True):
    start: int = 0


class RollingUpdateStatefulSetStrategy(KubeStruct, frozen=True):
    #: Ordinals below it keep their revision.
    partition: int = 0


class StatefulSetUpdateStrategy(KubeStruct, frozen=True):
    type: str = "RollingUpdate"
    rolling_update: RollingUpdateStatefulSetStrategy | None = None


class StatefulSetSpec(WorkloadSpec, frozen=True):
    service_name: str = ""
    pod_management_policy: str = "OrderedReady"
    volume_claim_templates: list[PersistentVolumeClaim] = []
    ordinals: StatefulSetOrdinals | None = None
    update_strategy: StatefulSetUpdateStrategy = StatefulSetUpdateStrategy()


class StatefulSet(KubeStruct, frozen=True):
    api_version: str = "apps/v1"
    kind: str = "StatefulSet"
    metadata: ObjectMeta = ObjectMeta()
    spec: StatefulSetSpec = StatefulSetSpec()


class RollingUpdateDaemonSet(KubeStruct, frozen=True):
    #: An int or a percentage string ("25%"), as in the API.
    max_unavailable: int | str | None = None
    max_surge: int | str | None = None


class DaemonSetUpdateStrategy(KubeStruct, frozen=True):
    type: str = "RollingUpdate"
    rolling_update: RollingUpdateDaemonSet | None = None


class DaemonSetSpec(KubeStruct, frozen=True):
    selector: LabelSelector | None = None
    template: PodTemplateSpec | None = None
    update_strategy: DaemonSetUpdateStrategy = DaemonSetUpdateStrategy()


class DaemonSet(KubeStruct, frozen=True):
    api_version: str = "apps/v1"
    kind: str = "DaemonSet"
    metadata: ObjectMeta = ObjectMeta()
    spec: DaemonSetSpec = DaemonSetSpec()


class JobGangSchedulingPolicy(KubeStruct, frozen=True):
    #: None: the Job controller uses the Job's parallelism (at least 1).
    min_count: Int32 | None = None


class JobSchedulingPolicy(KubeStruct, frozen=True):
    """scheduling.k8s.io/v1alpha3 WorkloadPodGroupSchedulingPolicy: `basic` or `gang`."""

    basic: Marker | None = None
    gang: JobGangSchedulingPolicy | None = None


class JobSchedulingConfiguration(KubeStruct, frozen=True):
    """`spec.scheduling` (WorkloadWithJob): what the Job controller compiles into the Job's Workload
    and PodGroup; unset, the Job's group is a basic one."""

    scheduling_policy: JobSchedulingPolicy | None = None
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    resource_claims: list[PodGroupResourceClaim] = []


class JobSpec(KubeStruct, frozen=True):
    parallelism: int | None = None
    completions: int | None = None
    #: Failed pods the Job tolerates before it fails (the API's default is 6).
    backoff_limit: int | None = None
    completion_mode: str = "NonIndexed"
    suspend: bool = False
    selector: LabelSelector | None = None
    manual_selector: bool = False
    template: PodTemplateSpec | None = None
    scheduling: JobSchedulingConfiguration | None = None


class JobCondition(KubeStruct, frozen=True):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_probe_time: str | None = None
    last_transition_time: str | None = None


class JobStatus(KubeStruct, frozen=True):
    """What tells a Job that has started (the Job controller makes a Workload only for one that has not)."""

    start_time: str | None = None
    succeeded: int = 0
    failed: int = 0
    conditions: list[JobCondition] = []


class Job(KubeStruct, frozen=True):
    api_version: str = "batch/v1"
    kind: str = "Job"
    metadata: ObjectMeta = ObjectMeta()
    spec: JobSpec = JobSpec()
    status: JobStatus = JobStatus()


class JobTemplateSpec(KubeStruct, frozen=True):
    metadata: ObjectMeta = ObjectMeta()
    spec: JobSpec = JobSpec()


class CronJobSpec(KubeStruct, frozen=True):
    schedule: str = ""
    suspend: bool = False
    job_template: JobTemplateSpec = JobTemplateSpec()


class CronJob(KubeStruct, frozen=True):
    api_version: str = "batch/v1"
    kind: str = "CronJob"
    metadata: ObjectMeta = ObjectMeta()
    spec: CronJobSpec = CronJobSpec()
