"""WorkloadWithJob: the Workload and PodGroup the v1.37 Job controller makes for a Job.

With the gate on (it needs GenericWorkload), kube-controller-manager's Job controller gives every
Job it manages one Workload and one PodGroup before it creates a pod, and its pods name that
PodGroup in `spec.schedulingGroup`. Which Jobs, and what the objects hold, as v1.37.2 does it:

* a Job whose pod template names a PodGroup already is left alone (the user brought the group);
* a Job with no controller owner gets both objects; a Job owned by another controller (a CronJob's)
  gets none, unless the `scheduling.k8s.io/group-template-name` annotation delegates its PodGroup:
  then it gets only a PodGroup, made from that template of its owner's Workload;
* only a Job that has not started (no pods, no startTime, no succeeded or failed count, no Suspended
  condition) gets new objects; one that has started reuses the objects it controls, if any. A Job
  created suspended gets them at once (before it is marked Suspended), its pods when resumed;
* the Workload is `<job>-<hash of the Job's uid>` with one template `<job>-pgt-0`: basic, or the
  `spec.scheduling` policy, constraints, disruption mode and claims; a gang without minCount gets
  the Job's parallelism (at least 1); its priorityClassName is the pod template's. The Workload's
  controller is the Job (`spec.controllerRef` names it too);
* the PodGroup is `<workload>-<template>-<hash of both>`, a copy of the template whose controller is
  the Job, also owned (not as controller) by the Workload (not for a delegated one);
* a changed parallelism (or gang minCount) moves the gang's minCount on both objects;
* the API server drops a template's fields whose gate is off (topology constraints without
  TopologyAwareWorkloadScheduling, claims without DRAWorkloadResourceClaims), so they are dropped here.

The pods carry only the Job's ownerReference: upstream adds one to the PodGroup on its pod template,
which the pod factory does not copy onto the pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec

from kubesched.api.controllers import Job, JobSchedulingConfiguration, JobSpec
from kubesched.api.meta import ObjectMeta, OwnerReference, controller_of, is_controlled_by
from kubesched.api.objects import PodSchedulingGroup, PodSpec
from kubesched.api.scheduling_groups import (
    V1BETA1,
    DisruptionMode,
    GangSchedulingPolicy,
    Marker,
    PodGroup,
    PodGroupSchedulingPolicy,
    PodGroupSpec,
    PodGroupTemplate,
    TypedLocalObjectReference,
    Workload,
    WorkloadReference,
    WorkloadSpec,
)
from kubesched.config.features import DEFAULT_GATES, FeatureGates
from kubesched.framework.pod_groups import SchedulingGroups
from kubesched.simulate.workloads.naming import controller_reference, fnv32a, object_uid, safe_encode

__all__ = [
    "GROUP_TEMPLATE_ANNOTATION",
    "WORKLOAD_WITH_JOB",
    "JobGroup",
    "as_stored",
    "compile_template",
    "gang_min_count",
    "in_group",
    "pod_group_name",
    "template_name",
    "workload_name",
]

#: The feature gate (kube-controller-manager's; it needs GenericWorkload).
WORKLOAD_WITH_JOB: Final = "WorkloadWithJob"
#: On a Job owned by another controller: the PodGroupTemplate of its owner's Workload it runs as.
GROUP_TEMPLATE_ANNOTATION: Final = "scheduling.k8s.io/group-template-name"
#: An object name's longest length (a DNS subdomain).
_MAX_NAME: Final = 253


def _hash(data: bytes) -> str:
    return safe_encode(str(fnv32a(data)))


def workload_name(job_name: str, job_uid: str) -> str:
    """`<job>-<hash>`, the hash of the Job's uid as Go's deep-hash printer writes a `types.UID`."""
    digest = _hash(f"(types.UID){job_uid}".encode())
    return f"{job_name[: _MAX_NAME - len(digest) - 1]}-{digest}"


def template_name(job_name: str) -> str:
    """The one PodGroupTemplate of a Job's Workload."""
    return f"{job_name}-pgt-0"


def pod_group_name(workload: str, template: str) -> str:
    """`<workload>-<template>-<hash of both>`; when too long, the longer part is cut first, each
    keeping at least half of the room."""
    digest = _hash(workload.encode() + template.encode())
    room = _MAX_NAME - len(digest) - 2
    if len(workload) + len(template) > room:
        half = room // 2
        if len(workload) <= half:
            template = template[: room - len(workload)]
        elif len(template) <= half:
            workload = workload[: room - len(template)]
        else:
            workload, template = workload[: room - half], template[:half]
    return f"{workload}-{template}-{digest}"


def gang_min_count(spec: JobSpec) -> int | None:
    """The gang's minCount the Job asks for (None for a basic group): its own, or its parallelism."""
    policy = spec.scheduling.scheduling_policy if spec.scheduling is not None else None
    if policy is None or policy.basic is not None or policy.gang is None:
        return None
    if policy.gang.min_count is not None:
        return policy.gang.min_count
    return max(1, 1 if spec.parallelism is None else spec.parallelism)


def compile_template(spec: JobSpec, name: str) -> PodGroupTemplate:
    """The Workload's one PodGroupTemplate for a Job with `spec` (basic unless `spec.scheduling` says)."""
    config = spec.scheduling or JobSchedulingConfiguration()
    minimum = gang_min_count(spec)
    policy = (
        PodGroupSchedulingPolicy(basic=Marker())
        if minimum is None
        else PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=minimum))
    )
    constraints = config.scheduling_constraints
    given = config.disruption_mode
    mode = None
    if given is not None and given.single is not None:
        mode = DisruptionMode(single=Marker())
    elif given is not None and given.all is not None:
        mode = DisruptionMode(all=Marker())
    assert spec.template is not None  # checked when the Job was loaded
    return PodGroupTemplate(
        name=name,
        scheduling_policy=policy,
        scheduling_constraints=constraints if constraints is not None and constraints.topology else None,
        resource_claims=list(config.resource_claims),
        disruption_mode=mode,
        priority_class_name=spec.template.spec.priority_class_name,
    )


#: Fields of a PodGroupTemplate (and of a PodGroup's spec) the API server drops on create when their
#: feature gate is off.
_GATED_FIELDS: Final = {
    "scheduling_constraints": "TopologyAwareWorkloadScheduling",
    "resource_claims": "DRAWorkloadResourceClaims",
    "preemption_policy": "PodGroupPreemptionPolicy",
}


def as_stored(template: PodGroupTemplate, gates: FeatureGates) -> PodGroupTemplate:
    """`template` as the API server stores it under `gates`: the fields of a gate that is off are
    dropped (the Workload's, and so its PodGroup's: the scheduler then never sees them)."""
    empty = PodGroupTemplate()
    dropped = {name: getattr(empty, name) for name, gate in _GATED_FIELDS.items() if not gates.enabled(gate)}
    return msgspec.structs.replace(template, **dropped) if dropped else template


def in_group(spec: PodSpec, pod_group: str) -> PodSpec:
    """The pod template's spec with `schedulingGroup` naming the Job's PodGroup."""
    return msgspec.structs.replace(spec, scheduling_group=PodSchedulingGroup(pod_group_name=pod_group))


def _job_reference(job: Job, uid: str) -> OwnerReference:
    return controller_reference("batch/v1", "Job", job.metadata.name, uid)


class JobGroup:
    """The Workload and PodGroup of one Job, found or made as the Job controller does on each sync."""

    def __init__(self, job: Job, uid: str, namespace: str, gates: FeatureGates = DEFAULT_GATES) -> None:
        self.job, self.uid, self.namespace, self.gates = job, uid, namespace, gates
        self.workload: Workload | None = None
        self.pod_group: PodGroup | None = None
        #: Why the last sync failed (a name taken by an object the Job does not control): upstream's
        #: sync then returns the create's error and makes no pod; it retries.
        self.failed: str | None = None

    # ------------------------------------------------------------------ which Jobs

    def mode(self) -> str:
        """What the controller manages for the Job: `none`, `both` (a Job without a controller
        owner) or `pod-group` (a Job whose owner delegates its PodGroup)."""
        template = self.job.spec.template
        if template is not None and template.spec.scheduling_group is not None:
            return "none"
        if controller_of(self.job.metadata) is None:
            return "both"
        return "pod-group" if GROUP_TEMPLATE_ANNOTATION in self.job.metadata.annotations else "none"

    def is_new(self, has_pods: bool) -> bool:
        """Whether the Job has never started, the only kind for which objects are created."""
        status = self.job.status
        if has_pods or status.start_time is not None or status.succeeded or status.failed:
            return False
        return not any(c.type == "Suspended" for c in status.conditions)

    # ------------------------------------------------------------------ each sync

    def sync(self, groups: SchedulingGroups, has_pods: bool) -> list[Workload | PodGroup]:
        """Find or make the objects; returns those to create or replace (a changed minCount).
        `self.pod_group` is then the group the Job's new pods join (None: scheduled one by one)."""
        self.failed = None
        mode = self.mode()
        if mode == "none":
            self.workload = self.pod_group = None
            return []
        new = self.is_new(has_pods)
        if mode == "pod-group":
            return self._sync_delegated(groups, new)
        return self._sync_root(groups, new)

    def _sync_root(self, groups: SchedulingGroups, new: bool) -> list[Workload | PodGroup]:
        writes: list[Workload | PodGroup] = []
        if self.workload is None:
            self.workload = self._find_workload(groups)
            if self.workload is None:
                if not new:
                    return []
                compiled = self._compile_workload()
                if self._taken(groups.workloads, compiled):
                    return []
                self.workload = compiled
                writes.append(self.workload)
        if len(self.workload.spec.pod_group_templates) != 1:
            return writes  # upstream requeues the Job with an error and makes no PodGroup
        template = self.workload.spec.pod_group_templates[0]
        if self.pod_group is None:
            self.pod_group = self._find_pod_group(groups, self.workload.metadata.name)
            if self.pod_group is None:
                if not new:
                    return writes
                made = self._materialize(template, link_workload=True)
                if self._taken(groups.pod_groups, made):
                    return writes
                self.pod_group = made
                writes.append(self.pod_group)
        return writes + self._follow_min_count(gang_min_count(self.job.spec))

    def _sync_delegated(self, groups: SchedulingGroups, new: bool) -> list[Workload | PodGroup]:
        parent = self._parent_workload(groups)
        wanted = self.job.metadata.annotations[GROUP_TEMPLATE_ANNOTATION]
        template = None if parent is None else _template_named(parent, wanted)
        if parent is None or template is None:
            return []
        self.workload = parent
        writes: list[Workload | PodGroup] = []
        if self.pod_group is None:
            self.pod_group = self._find_pod_group(groups, parent.metadata.name)
            made = self._materialize(template, link_workload=False)
            if self.pod_group is None and new and not self._taken(groups.pod_groups, made):
                self.pod_group = made
                writes.append(self.pod_group)
        gang = template.scheduling_policy.gang
        return writes + self._follow_min_count(None if gang is None else gang.min_count, workload=False)

    def _follow_min_count(self, wanted: int | None, *, workload: bool = True) -> list[Workload | PodGroup]:
        """The gang's minCount moved to `wanted` on the objects that have a gang (none for basic)."""
        if wanted is None:
            return []
        writes: list[Workload | PodGroup] = []
        wl = self.workload
        if workload and wl is not None and len(wl.spec.pod_group_templates) == 1:
            template = wl.spec.pod_group_templates[0]
            gang = template.scheduling_policy.gang
            if gang is not None and gang.min_count != wanted:
                moved = _with_min_count(template.scheduling_policy, wanted)
                templates = [msgspec.structs.replace(template, scheduling_policy=moved)]
                spec = msgspec.structs.replace(wl.spec, pod_group_templates=templates)
                self.workload = msgspec.structs.replace(wl, spec=spec)
                writes.append(self.workload)
        pg = self.pod_group
        gang = None if pg is None else pg.spec.scheduling_policy.gang
        if pg is not None and gang is not None and gang.min_count != wanted:
            moved = _with_min_count(pg.spec.scheduling_policy, wanted)
            self.pod_group = msgspec.structs.replace(
                pg, spec=msgspec.structs.replace(pg.spec, scheduling_policy=moved)
            )
            writes.append(self.pod_group)
        return writes

    # ------------------------------------------------------------------ the objects

    def _compile_workload(self) -> Workload:
        name = workload_name(self.job.metadata.name, self.uid)
        template = as_stored(
            compile_template(self.job.spec, template_name(self.job.metadata.name)), self.gates
        )
        meta = ObjectMeta(
            name=name,
            namespace=self.namespace,
            uid=object_uid("Workload", self.namespace, name),
            owner_references=[_job_reference(self.job, self.uid)],
        )
        ref = TypedLocalObjectReference(api_group="batch", kind="Job", name=self.job.metadata.name)
        return Workload(metadata=meta, spec=WorkloadSpec(controller_ref=ref, pod_group_templates=[template]))

    def _materialize(self, template: PodGroupTemplate, *, link_workload: bool) -> PodGroup:
        assert self.workload is not None
        wl = self.workload.metadata
        name = pod_group_name(wl.name, template.name)
        owners = [_job_reference(self.job, self.uid)]
        if link_workload:
            owners.append(OwnerReference(api_version=V1BETA1, kind="Workload", name=wl.name, uid=wl.uid))
        meta = ObjectMeta(
            name=name,
            namespace=self.namespace,
            uid=object_uid("PodGroup", self.namespace, name),
            owner_references=owners,
        )
        spec = PodGroupSpec(
            workload_ref=WorkloadReference(workload_name=wl.name, template_name=template.name),
            scheduling_policy=template.scheduling_policy,
            scheduling_constraints=template.scheduling_constraints,
            resource_claims=list(template.resource_claims),
            disruption_mode=template.disruption_mode,
            priority_class_name=template.priority_class_name,
            priority=template.priority,
        )
        return PodGroup(metadata=meta, spec=spec)

    def _taken(self, table: Mapping[tuple[str, str], Workload | PodGroup], obj: Workload | PodGroup) -> bool:
        """Whether `obj`'s name is in use (the create fails: `failed` says so)."""
        if (self.namespace, obj.metadata.name) not in table:
            return False
        resource = "workloads" if isinstance(obj, Workload) else "podgroups"
        self.failed = f'{resource}.scheduling.k8s.io "{obj.metadata.name}" already exists'
        return True

    def _find_workload(self, groups: SchedulingGroups) -> Workload | None:
        """The one Workload this Job controls whose controllerRef names it (None for none or several)."""
        name = self.job.metadata.name
        found = [
            w
            for (ns, _), w in groups.workloads.items()
            if ns == self.namespace
            and (ref := w.spec.controller_ref) is not None
            and (ref.api_group, ref.kind, ref.name) == ("batch", "Job", name)
            and is_controlled_by(w.metadata, self.uid)
        ]
        return found[0] if len(found) == 1 else None

    def _find_pod_group(self, groups: SchedulingGroups, workload: str) -> PodGroup | None:
        """The one PodGroup of `workload` this Job controls (None for none or several)."""
        found = [
            g
            for (ns, _), g in groups.pod_groups.items()
            if ns == self.namespace
            and g.spec.workload_ref is not None
            and g.spec.workload_ref.workload_name == workload
            and is_controlled_by(g.metadata, self.uid)
        ]
        return found[0] if len(found) == 1 else None

    def _parent_workload(self, groups: SchedulingGroups) -> Workload | None:
        """The Workload whose controllerRef names the Job's own controller."""
        parent = controller_of(self.job.metadata)
        assert parent is not None
        group = parent.api_version.rpartition("/")[0] if "/" in parent.api_version else ""
        for (ns, _), w in groups.workloads.items():
            ref = w.spec.controller_ref
            if (
                ns == self.namespace
                and ref is not None
                and (ref.api_group, ref.kind, ref.name)
                == (
                    group,
                    parent.kind,
                    parent.name,
                )
            ):
                return w
        return None


def _template_named(workload: Workload, name: str) -> PodGroupTemplate | None:
    return next((t for t in workload.spec.pod_group_templates if t.name == name), None)


def _with_min_count(policy: PodGroupSchedulingPolicy, count: int) -> PodGroupSchedulingPolicy:
    return msgspec.structs.replace(policy, gang=GangSchedulingPolicy(min_count=count))
