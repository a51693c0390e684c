"""Jobs and CronJobs: the pods a Job runs at once, and one run of a CronJob.

A Job keeps `min(parallelism, completions)` pods active (just `parallelism` without completions);
nothing completes in a snapshot simulation, so that is the number it creates. In a scenario
replay, pods that complete (`runFor`) count as succeeded and the Job creates the next ones until
`completions` have succeeded; lowering `parallelism` or suspending the Job deletes the surplus.
Failed pods (of the input, or evicted in a replay) count against `backoffLimit` (default 6):
past it the Job has failed, deletes its active pods and creates no more.
Pods carry the labels the API server adds to a Job's template (`batch.kubernetes.io/controller-uid`,
`batch.kubernetes.io/job-name` and their legacy short forms) unless the Job has a manual selector.
An Indexed Job's pods are `<job>-<index>-<random>` with the `batch.kubernetes.io/job-completion-index`
annotation and label, lowest indexes first. A suspended Job creates nothing.

With WorkloadWithJob on, a Job gets the Workload and PodGroup the v1.37 Job controller makes for it
and its pods join that PodGroup (`job_scheduling`).

A CronJob is run once: the controller's Job `<cronjob>-<scheduled minute>` is created from the job
template (whatever the schedule and concurrency policy say), then runs as any Job. A suspended
CronJob creates nothing.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Final

import msgspec

from kubesched.api.controllers import CronJob, Job, JobSpec
from kubesched.api.meta import ObjectMeta, OwnerReference, is_controlled_by
from kubesched.api.objects import PodSpec
from kubesched.api.scheduling_groups import PodGroup, Workload
from kubesched.config.features import DEFAULT_GATES, FeatureGates
from kubesched.simulate.workloads.context import ControllerContext, OwnerKey, WorkloadStatus
from kubesched.simulate.workloads.job_scheduling import WORKLOAD_WITH_JOB, JobGroup, in_group
from kubesched.simulate.workloads.naming import controller_reference, object_uid
from kubesched.simulate.workloads.ranking import deletion_order

__all__ = ["CronJobController", "JobController"]

COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"
CONTROLLER_UID: Final = "batch.kubernetes.io/controller-uid"
JOB_NAME: Final = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID: Final = "controller-uid"
LEGACY_JOB_NAME: Final = "job-name"
SCHEDULED_TIMESTAMP: Final = "batch.kubernetes.io/cronjob-scheduled-timestamp"


#: `backoffLimit` when the Job does not set it, as the API server defaults it.
DEFAULT_BACKOFF_LIMIT: Final = 6


def has_failed(spec: JobSpec, failed: int) -> bool:
    """Whether `failed` pods exceed the Job's backoffLimit: the Job has failed and runs nothing."""
    return failed > (DEFAULT_BACKOFF_LIMIT if spec.backoff_limit is None else spec.backoff_limit)


def active_target(spec: JobSpec, succeeded: int = 0, failed: int = 0) -> int:
    """How many pods the Job runs at once, `succeeded` pods having completed and `failed` failed."""
    if spec.suspend or has_failed(spec, failed):
        return 0
    parallelism = 1 if spec.parallelism is None else spec.parallelism
    if spec.completions is None:
        return 0 if succeeded else parallelism  # without completions, one success ends the Job
    return max(0, min(parallelism, spec.completions - succeeded))


def _succeeded(ctx: ControllerContext, key: OwnerKey) -> int:
    return sum(1 for p in ctx.finished_of(key) if p.status.phase == "Succeeded")


def _failed(ctx: ControllerContext, key: OwnerKey) -> int:
    return sum(1 for p in ctx.finished_of(key) if p.status.phase == "Failed")


@dataclass
class JobController:
    key: OwnerKey
    job: Job
    uid: str
    #: With WorkloadWithJob on, the Job gets a Workload and a PodGroup and its pods join it.
    gates: FeatureGates = DEFAULT_GATES
    group: JobGroup | None = field(default=None, init=False)

    def _pod_spec(self, ctx: ControllerContext) -> PodSpec | None:
        """The spec of the pods to create: the template's, in the Job's PodGroup if it has one
        (None: the template's as it is; see `group.failed` first)."""
        if not self.gates.enabled(WORKLOAD_WITH_JOB):
            return None
        if self.group is None:
            self.group = JobGroup(self.job, self.uid, self.key[1], self.gates)
        self.group.job = self.job
        has_pods = bool(ctx.pods_of(self.key) or ctx.finished_of(self.key))
        for obj in self.group.sync(ctx.cluster.groups, has_pods):
            ctx.cluster.write_group(obj)
        pod_group = self.group.pod_group
        template = self.job.spec.template
        assert template is not None
        return None if pod_group is None else in_group(template.spec, pod_group.metadata.name)

    def scheduling_objects(self) -> list[Workload | PodGroup]:
        """The Workload and PodGroup the Job controls (the garbage collector deletes them with it)."""
        if self.group is None:
            return []
        found = [self.group.workload, self.group.pod_group]
        return [o for o in found if o is not None and is_controlled_by(o.metadata, self.uid)]

    def reconcile(self, ctx: ControllerContext) -> None:
        spec = self.job.spec
        template = spec.template
        assert template is not None  # checked when the object was loaded
        _, _, name = self.key
        pod_spec = self._pod_spec(ctx)
        if self.group is not None and self.group.failed:
            return  # the sync fails before it manages pods
        reference = controller_reference("batch/v1", "Job", name, self.uid)
        labels = {}
        if not spec.manual_selector:
            labels = {
                CONTROLLER_UID: self.uid,
                JOB_NAME: name,
                LEGACY_CONTROLLER_UID: self.uid,
                LEGACY_JOB_NAME: name,
            }
        active = ctx.pods_of(self.key)
        succeeded, failed = _succeeded(ctx, self.key), _failed(ctx, self.key)
        missing = active_target(spec, succeeded, failed) - len(active)
        if spec.completions is None and succeeded and not spec.suspend and not has_failed(spec, failed):
            missing = max(missing, 0)  # a work queue: once one succeeded, the others finish their work
        if missing < 0:  # parallelism lowered or the Job suspended: the surplus goes, as ranked
            for pod in deletion_order(active, active, ctx.times, ctx.now())[:-missing]:
                ctx.delete_pod(self.key, pod, f"Job {name}: {len(active) + missing} pods wanted")
        if missing <= 0:
            return
        if spec.completion_mode != "Indexed":
            for _ in range(missing):
                ctx.create_pod(
                    self.key, reference, template, generate_name=f"{name}-", labels=labels, spec=pod_spec
                )
            return
        taken = {
            p.metadata.annotations.get(COMPLETION_INDEX)
            for p in [*active, *ctx.finished_of(self.key)]
            if p.status.phase != "Failed"
        }
        free = (i for i in range(spec.completions or 0) if str(i) not in taken)
        for index, _ in zip(free, range(missing), strict=False):
            ctx.create_pod(
                self.key,
                reference,
                template,
                generate_name=f"{name}-{index}-",
                labels={**labels, COMPLETION_INDEX: str(index)},
                annotations={COMPLETION_INDEX: str(index)},
                spec=pod_spec,
            )

    def scale(self, pods: int) -> None:
        """Run `pods` pods at once (parallelism; completions no longer cap it)."""
        completions = (
            None if self.job.spec.completion_mode != "Indexed" else max(pods, self.job.spec.completions or 0)
        )
        spec = msgspec.structs.replace(self.job.spec, parallelism=pods, completions=completions)
        self.job = msgspec.structs.replace(self.job, spec=spec)

    def status(self, ctx: ControllerContext) -> WorkloadStatus:
        kind, namespace, name = self.key
        spec, succeeded, failed = self.job.spec, _succeeded(ctx, self.key), _failed(ctx, self.key)
        if has_failed(spec, failed):
            waiting = f"the Job failed: {failed} pods failed, more than its backoffLimit"
            return WorkloadStatus(
                kind, namespace, name, active_target(spec, succeeded), [], waiting_for=waiting
            )
        desired = active_target(spec, succeeded, failed)
        blocked = None
        if self.group is not None and self.group.failed:
            blocked = f"the Job controller cannot create its scheduling objects: {self.group.failed}"
        return WorkloadStatus(kind, namespace, name, desired, ctx.pods_of(self.key), waiting_for=blocked)


@dataclass
class CronJobController:
    key: OwnerKey
    cron_job: CronJob
    uid: str
    #: When the run is scheduled, in Unix minutes (names the Job, as the CronJob controller does).
    scheduled_minute: int
    #: Passed to its Job (which, owned by the CronJob, gets a PodGroup only if its template delegates one).
    gates: FeatureGates = DEFAULT_GATES
    job: JobController | None = field(default=None, init=False)

    def reconcile(self, ctx: ControllerContext) -> None:
        if self.cron_job.spec.suspend:
            return
        if self.job is None:
            self.job = self._make_job()
        self.job.reconcile(ctx)

    def scale(self, pods: int) -> None:
        if self.job is None:
            self.job = self._make_job()
        self.job.scale(pods)

    def _make_job(self) -> JobController:
        _, namespace, name = self.key
        job_name = f"{name}-{self.scheduled_minute}"
        uid = object_uid("Job", namespace, job_name)
        template = self.cron_job.spec.job_template
        owner: OwnerReference = controller_reference("batch/v1", "CronJob", name, self.uid)
        meta = ObjectMeta(
            name=job_name,
            namespace=namespace,
            uid=uid,
            labels=dict(template.metadata.labels),
            annotations={
                **template.metadata.annotations,
                SCHEDULED_TIMESTAMP: _rfc3339(self.scheduled_minute),
            },
            owner_references=[owner],
        )
        job = Job(metadata=meta, spec=template.spec)
        return JobController(("Job", namespace, job_name), job, uid, self.gates)

    def status(self, ctx: ControllerContext) -> WorkloadStatus:
        kind, namespace, name = self.key
        if self.job is None:
            waiting = "the CronJob is suspended" if self.cron_job.spec.suspend else None
            return WorkloadStatus(kind, namespace, name, 0, [], waiting_for=waiting)
        job = self.job.status(ctx)
        return WorkloadStatus(kind, namespace, name, job.desired, job.current)


def _rfc3339(minute: int) -> str:
    return dt.datetime.fromtimestamp(minute * 60, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
