"""How many more of a pod (or replicas of a workload) fit, where they go, and why the next one does not.

The cluster is first simulated as `kubesched simulate` would (its pending pods and workloads are
placed first: they are ahead in the queue). Then copies of the shape are added and scheduled by
the same scheduler and profile, in growing batches, until one stays unschedulable; its
FailedScheduling message is the answer to "why not one more". Copies never preempt
(`preemptionPolicy: Never`): capacity is room that is free, not room that could be taken.

A workload shape (Deployment, ReplicaSet, StatefulSet, ReplicationController, Job, CronJob) grows
through its simulated controller, so its pods carry the labels that spreading and affinity see
(`pod-template-hash`, ...); when the input already runs that workload, the count starts from its
replicas there. A DaemonSet shape is placed once: it wants one pod per node, not more replicas.

Within a batch, pods are scheduled one at a time; an unschedulable copy leaves the cluster as it
was, so the identical copies after it fail too and the count equals scheduling one at a time.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import get_args

import msgspec

from kubesched.api.controllers import (
    CronJob,
    DaemonSet,
    Deployment,
    Job,
    PodTemplateSpec,
    ReplicaSet,
    ReplicationController,
    StatefulSet,
)
from kubesched.api.kinds import KubeObject
from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod
from kubesched.api.quantity import QuantityError, format_quantity
from kubesched.api.resources import default_requests_from_limits, pod_requests
from kubesched.api.workloads import pod_template_of
from kubesched.config.types import DEFAULT_SCHEDULER_NAME, KubeSchedulerConfiguration
from kubesched.errors import InputError
from kubesched.framework.node_info import pod_key
from kubesched.framework.registry import Registry
from kubesched.scheduler.cache import ZONE_LABEL
from kubesched.simulate.capacity.gang import DEFAULT_NODE_LIMIT, Gang, gang_capacity
from kubesched.simulate.capacity.input_run import InputRun, never_preempt
from kubesched.simulate.capacity.model import CapacityReport, ShapeCapacity
from kubesched.simulate.held import held_pods
from kubesched.simulate.node_quantities import check_node_quantities
from kubesched.simulate.virtual_time import run_until_settled
from kubesched.simulate.workloads import (
    PodChanges,
)

__all__ = ["DEFAULT_LIMIT", "capacity", "shapes_of"]

#: Copies tried per shape unless told otherwise: the answer is then "at least this many".
DEFAULT_LIMIT = 10_000
#: The largest batch of copies added before the scheduler runs.
_MAX_BATCH = 256

Workload = Deployment | ReplicaSet | StatefulSet | DaemonSet | Job | CronJob | ReplicationController
#: The workload kinds, in the order their shapes are counted.
_WORKLOAD_TYPES: tuple[type[Workload], ...] = get_args(Workload)


def capacity(
    objects: LoadedObjects,
    shapes: Sequence[KubeObject],
    config: KubeSchedulerConfiguration,
    registry: Registry,
    *,
    seed: int = 0,
    limit: int = DEFAULT_LIMIT,
    progress: Callable[[int, int], None] | None = None,
    gangs: Sequence[Gang] = (),
    node_shape: Node | None = None,
    node_limit: int = DEFAULT_NODE_LIMIT,
) -> CapacityReport:
    """For each of `shapes` (pods or workloads) independently: how many more fit on `objects`' cluster;
    for each of `gangs`: how many copies of `node_shape` (at most `node_limit`) until it fits."""
    if limit < 1:
        raise InputError("must be at least 1", path="--max")
    for node in objects.nodes:
        check_node_quantities(node)
    started = time.perf_counter()
    answers = []
    for shape in shapes:
        if not isinstance(shape, Pod | Workload):
            raise InputError(f"a {type(shape).__name__} is not a pod or a workload", path=_name(shape))
        template = shape.spec if isinstance(shape, Pod) else _template(shape).spec
        try:
            pod_requests(Pod(spec=template))
        except QuantityError as err:
            raise InputError(err.message, path=_name(shape)) from None
        answers.append(_ShapeRun(objects, shape, config, registry, seed=seed).count(limit, progress))
    gang_answers = []
    for gang in gangs:
        for pod in gang.pods:
            try:
                pod_requests(pod)
            except QuantityError as err:
                raise InputError(err.message, path=_name(pod)) from None
        answer = gang_capacity(
            objects, gang, node_shape, config, registry, seed=seed, limit=node_limit, progress=progress
        )
        gang_answers.append(answer)
    return CapacityReport(
        shapes=answers,
        gangs=gang_answers,
        nodes=len(objects.nodes),
        seconds=round(time.perf_counter() - started, 6),
        held_by_another_scheduler=held_pods(objects.pods, config),
    )


def shapes_of(objects: LoadedObjects) -> list[Pod | Workload]:
    """The pods and workloads of `objects`, each a shape to count."""
    shapes: list[Pod | Workload] = [*objects.pods]
    for cls in _WORKLOAD_TYPES:
        shapes += objects.of_type(cls)
    return shapes


def _name(obj: KubeObject) -> str:
    meta = obj.metadata
    return f"{obj.kind} {meta.namespace or 'default'}/{meta.name}"


def _template(shape: Workload) -> PodTemplateSpec:
    template = pod_template_of(shape)
    assert template is not None  # checked when the object was loaded
    return template


def _without_preemption(shape: Workload) -> Workload:
    """The workload whose pods never preempt (their template's preemptionPolicy is Never)."""
    template = _template(shape)
    template = msgspec.structs.replace(template, spec=never_preempt(template.spec))
    if isinstance(shape, CronJob):
        job = msgspec.structs.replace(shape.spec.job_template.spec, template=template)
        job_template = msgspec.structs.replace(shape.spec.job_template, spec=job)
        return msgspec.structs.replace(
            shape, spec=msgspec.structs.replace(shape.spec, job_template=job_template)
        )
    return msgspec.structs.replace(shape, spec=msgspec.structs.replace(shape.spec, template=template))


class _ShapeRun(InputRun):
    """One shape on a fresh simulation of the input."""

    def __init__(
        self,
        objects: LoadedObjects,
        shape: Pod | Workload,
        config: KubeSchedulerConfiguration,
        registry: Registry,
        *,
        seed: int,
    ) -> None:
        self.shape = shape
        if isinstance(shape, Pod):
            self.template = PodTemplateSpec(metadata=shape.metadata, spec=never_preempt(shape.spec))
        else:
            shape = _without_preemption(shape)
            objects = objects.with_added(shape)  # the input stays as given: other shapes start from it too
            self.template = _template(shape)
        super().__init__(objects, config, registry, seed=seed)
        self.served = {p.scheduler_name or DEFAULT_SCHEDULER_NAME for p in config.profiles}
        self.base = self.base_scheduled = 0

    def count(self, limit: int, progress: Callable[[int, int], None] | None) -> ShapeCapacity:
        try:
            self.start()
            return self._grow(limit, progress)
        finally:
            self.close()

    def _grow(self, limit: int, progress: Callable[[int, int], None] | None) -> ShapeCapacity:
        shape = self.shape
        copies: list[str] = []  # pod keys, in creation order
        if isinstance(shape, DaemonSet):
            assert self.controllers is not None
            status = self.controllers.status_of("DaemonSet", shape.metadata.namespace, shape.metadata.name)
            assert status is not None
            return self._answer([pod_key(p) for p in status.current], limited=False)
        base = 0
        if not isinstance(shape, Pod) and self.controllers is not None:
            # The workload's own pods (replicas, a Job's parallel pods), placed while settling the input.
            status = self.controllers.status_of(shape.kind, shape.metadata.namespace, shape.metadata.name)
            if status is not None:
                base = status.desired
                self.base_scheduled = sum(1 for p in status.current if p.spec.node_name)
        self.base = base
        batch = 1
        while len(copies) < limit:
            size = min(batch, limit - len(copies))
            copies += self._add(size, base + len(copies) + size)
            run_until_settled(self.scheduler, self.clock, self.cluster)
            if progress is not None:
                progress(len(copies), limit)
            if any(not self.bound(key) for key in copies):
                return self._answer(copies, limited=False)
            batch = min(batch * 2, _MAX_BATCH)
        return self._answer(copies, limited=True)

    def _add(self, size: int, total: int) -> list[str]:
        """`size` more copies: pods cloned from the shape, or the workload scaled to `total`."""
        if isinstance(self.shape, Pod):
            return [pod_key(self._clone()) for _ in range(size)]
        assert self.controllers is not None
        meta = self.shape.metadata
        controller = self.controllers.find(self.shape.kind, meta.namespace, meta.name)
        assert controller is not None
        controller.scale(total)
        changes: PodChanges = self.controllers.reconcile()
        return [pod_key(p) for p in changes.created]

    def _clone(self) -> Pod:
        meta = self.template.metadata
        namespace = meta.namespace or "default"
        index = 0
        while self.cluster.has_pod_named(namespace, f"{meta.name}-{index}"):
            index += 1
        clone_meta = msgspec.structs.replace(meta, name=f"{meta.name}-{index}", namespace=namespace, uid="")
        return self.cluster.create_pod(Pod(metadata=clone_meta, spec=self.template.spec))

    def _never_tried(self, pod: Pod) -> str:
        """Why a copy the scheduler never tried stays pending: the cases a user can act on named."""
        name = pod.spec.scheduler_name or DEFAULT_SCHEDULER_NAME
        if name not in self.served:
            served = ", ".join(sorted(self.served))
            return (
                f"not scheduled: schedulerName {name!r} names no profile of the configuration "
                f"(profiles: {served})"
            )
        gates = [g.name for g in pod.spec.scheduling_gates]
        if gates:
            return f"not scheduled: waiting for scheduling gates: [{' '.join(gates)}]"
        return "not scheduled (no attempt was made)"

    def _answer(self, copies: list[str], *, limited: bool) -> ShapeCapacity:
        pods = self.cluster.pods
        bound = [pods[k] for k in copies if self.bound(k)]
        pending = [k for k in copies if not self.bound(k)]
        per_node = Counter(p.spec.node_name for p in bound)
        per_zone: Counter[str] = Counter()
        for name, n in per_node.items():
            zone = self.cluster.nodes[name].labels.get(ZONE_LABEL)
            if zone:
                per_zone[zone] += n
        reason = None
        if pending:
            reason = self.messages.get(pending[0]) or self._never_tried(pods[pending[0]])
        # limits-only resources (GPUs) request their limits, as the API server and the cluster default them
        requests = pod_requests(Pod(spec=default_requests_from_limits(self.template.spec)))
        return ShapeCapacity(
            shape=_name(self.shape),
            requests={r: format_quantity(v, r) for r, v in sorted(requests.items())},
            replicas=self.base,
            replicas_scheduled=self.base_scheduled,
            fits=len(bound),
            limited=limited,
            reason=reason,
            nodes=dict(sorted(per_node.items())),
            zones=dict(sorted(per_zone.items())),
        )
