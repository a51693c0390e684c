"""The simulated controller manager: every workload of the input, reconciled round by round.

Between rounds the scheduler runs until nothing moves; a round lets each controller act once on
what it sees (Deployments first, so their ReplicaSets act in the same round, then the other kinds).
The simulation ends after a round that changes nothing: every workload has its pods, or waits for
something the scheduler cannot give (an unschedulable pod holding a rollout or an OrderedReady
StatefulSet back).

When the input holds the same workload twice (a snapshot and an edited manifest), the later one
wins, as `kubectl apply` of the manifest over the snapshot would.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from kubesched.api.controllers import (
    CronJob,
    DaemonSet,
    Deployment,
    Job,
    ReplicaSet,
    ReplicationController,
    StatefulSet,
)
from kubesched.api.kinds import KINDS
from kubesched.api.loader import LoadedObjects
from kubesched.api.meta import ObjectMeta, controller_of
from kubesched.api.objects import Pod
from kubesched.api.workloads import WorkloadObject, replicas_of
from kubesched.cluster.memory import MemoryCluster
from kubesched.config.features import DEFAULT_GATES, FeatureGates
from kubesched.simulate.workloads.context import Controller, ControllerContext, PodChanges, WorkloadStatus
from kubesched.simulate.workloads.daemon_set import DaemonSetController
from kubesched.simulate.workloads.deployment import DeploymentController
from kubesched.simulate.workloads.job import CronJobController, JobController
from kubesched.simulate.workloads.naming import controller_reference, object_uid
from kubesched.simulate.workloads.replica_set import ReplicaSetController
from kubesched.simulate.workloads.stateful_set import StatefulSetController

__all__ = ["WorkloadControllers", "has_workloads", "with_room_for_controllers"]

_Obj = TypeVar("_Obj", Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, ReplicationController)


def has_workloads(objects: LoadedObjects) -> bool:
    """Whether the input holds any object a controller creates pods for."""
    return any(
        (
            objects.deployments,
            objects.daemon_sets,
            objects.jobs,
            objects.cron_jobs,
            any(rs.spec.template is not None for rs in objects.replica_sets),
            any(s.spec.template is not None for s in objects.stateful_sets),
            any(rc.spec.template is not None for rc in objects.replication_controllers),
        )
    )


def with_room_for_controllers(objects: LoadedObjects) -> LoadedObjects:
    """A shallow copy whose lists the controllers may extend (ReplicaSets, claims), leaving the input as is.

    The same `LoadedObjects` is simulated under several configurations (compare, sweep).
    """
    return dataclasses.replace(
        objects,
        replica_sets=list(objects.replica_sets),
        persistent_volume_claims=list(objects.persistent_volume_claims),
    )


def _namespace(meta: ObjectMeta) -> str:
    return meta.namespace or "default"


def _uid(kind: str, meta: ObjectMeta) -> str:
    return meta.uid or object_uid(kind, _namespace(meta), meta.name)


def _latest(objects: Sequence[_Obj]) -> list[_Obj]:
    """One object per namespace/name, the last given, in first-seen order."""
    by_name: dict[tuple[str, str], _Obj] = {}
    for obj in objects:
        by_name[(_namespace(obj.metadata), obj.metadata.name)] = obj
    return list(by_name.values())


def _snapshot_minute(objects: LoadedObjects) -> int:
    """The newest creationTimestamp of the input's pods and nodes, in Unix minutes (0 without any).

    It stands for "now" when a CronJob is run once, so its Job's name does not depend on the host clock.
    """
    newest = 0.0
    for meta in [p.metadata for p in objects.pods] + [n.metadata for n in objects.nodes]:
        stamp = meta.creation_timestamp
        if not stamp:
            continue
        try:
            when = dt.datetime.fromisoformat(stamp)
        except ValueError:
            continue
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        newest = max(newest, when.timestamp())
    return int(newest // 60)


def _deployment_owner(rs: ReplicaSet) -> tuple[str, str] | None:
    """(namespace, name) of the Deployment that controls `rs`, if one does."""
    owner = controller_of(rs.metadata)
    return (_namespace(rs.metadata), owner.name) if owner and owner.kind == "Deployment" else None


def _deployment_controller(d: Deployment) -> DeploymentController:
    key = ("Deployment", _namespace(d.metadata), d.metadata.name)
    return DeploymentController(key, d, _uid("Deployment", d.metadata))


def _replica_set_controller(
    rs: ReplicaSet, age: int, deployment: DeploymentController | None
) -> ReplicaSetController:
    assert rs.spec.template is not None  # the caller skips selector-only ReplicaSets
    name = rs.metadata.name
    return ReplicaSetController(
        key=("ReplicaSet", _namespace(rs.metadata), name),
        reference=controller_reference("apps/v1", "ReplicaSet", name, _uid("ReplicaSet", rs.metadata)),
        template=rs.spec.template,
        replicas=replicas_of(rs),
        deployment=deployment.key[2] if deployment else None,
        age=age,
    )


def _replication_controller(rc: ReplicationController) -> ReplicaSetController:
    assert rc.spec.template is not None  # the caller skips those without a template
    ns, name = _namespace(rc.metadata), rc.metadata.name
    ref = controller_reference(
        "v1", "ReplicationController", name, _uid("ReplicationController", rc.metadata)
    )
    return ReplicaSetController(("ReplicationController", ns, name), ref, rc.spec.template, replicas_of(rc))


def _stateful_set_controller(s: StatefulSet) -> StatefulSetController:
    ns, name = _namespace(s.metadata), s.metadata.name
    ref = controller_reference("apps/v1", "StatefulSet", name, _uid("StatefulSet", s.metadata))
    return StatefulSetController(("StatefulSet", ns, name), s, ref)


def _daemon_set_controller(ds: DaemonSet) -> DaemonSetController:
    ns, name = _namespace(ds.metadata), ds.metadata.name
    ref = controller_reference("apps/v1", "DaemonSet", name, _uid("DaemonSet", ds.metadata))
    return DaemonSetController(("DaemonSet", ns, name), ds, ref)


def _job_controller(job: Job, gates: FeatureGates) -> JobController:
    key = ("Job", _namespace(job.metadata), job.metadata.name)
    return JobController(key, job, _uid("Job", job.metadata), gates)


class WorkloadControllers:
    def __init__(
        self,
        cluster: MemoryCluster,
        *,
        seed: int = 0,
        now: Callable[[], float] = lambda: 0.0,
        gates: FeatureGates = DEFAULT_GATES,
    ) -> None:
        """`gates`: the feature gates, of which the controllers read WorkloadWithJob (a Job gets a
        Workload and a PodGroup) and those of the fields the API server keeps on them."""
        self._ctx = ControllerContext(cluster, seed=seed, now=now)
        self._gates = gates
        objects: LoadedObjects = cluster.objects
        self._objects = objects
        self._deployments: list[DeploymentController] = []
        self._replica_sets: list[ReplicaSetController] = []
        self._others: list[Controller] = []
        #: What the report shows, in input order (ReplicaSets of a simulated Deployment are not shown).
        self._reported: list[Controller] = []
        self._build(objects)

    # ------------------------------------------------------------------ building
    def _build(self, objects: LoadedObjects) -> None:
        deployments = {
            (_namespace(d.metadata), d.metadata.name): _deployment_controller(d)
            for d in _latest(objects.deployments)
        }
        for index, rs in enumerate(_latest(objects.replica_sets)):
            if rs.spec.template is None:  # a selector-only object (spreading); nothing to create
                continue
            deployment = deployments.get(_deployment_owner(rs) or ("", ""))
            controller = _replica_set_controller(rs, index, deployment)
            if deployment is not None:
                deployment.replica_sets.append(controller)
            else:
                self._replica_sets.append(controller)
                self._reported.append(controller)
        for d in deployments.values():
            d.find_new()
            self._deployments.append(d)
            self._reported.append(d)
        self._add_replication_controllers(objects.replication_controllers)
        for s in _latest(objects.stateful_sets):
            if s.spec.template is not None:
                self._add(_stateful_set_controller(s))
        for ds in _latest(objects.daemon_sets):
            self._add(_daemon_set_controller(ds))
        for job in _latest(objects.jobs):
            self._add(_job_controller(job, self._gates))
        minute = _snapshot_minute(objects) if objects.cron_jobs else 0
        for cj in _latest(objects.cron_jobs):
            key = ("CronJob", _namespace(cj.metadata), cj.metadata.name)
            uid = _uid("CronJob", cj.metadata)
            self._add(CronJobController(key, cj, uid, minute, self._gates))

    def _add_replication_controllers(self, rcs: Iterable[ReplicationController]) -> None:
        for rc in _latest(list(rcs)):
            if rc.spec.template is None:
                continue
            controller = _replication_controller(rc)
            self._replica_sets.append(controller)
            self._reported.append(controller)

    def _add(self, controller: Controller) -> None:
        self._others.append(controller)
        self._reported.append(controller)

    # ------------------------------------------------------------------ changes over time
    def apply(self, obj: WorkloadObject) -> None:
        """A workload created or changed (a scenario's event): its controller acts on the next round.

        A changed Deployment template starts a rollout to a new ReplicaSet; changed replicas scale;
        the object itself replaces the listed one, so the spreading plugins see what is current.
        """
        if isinstance(obj, CronJob):
            raise ValueError("a CronJob has no schedule in virtual time")  # refused by the scenario
        key = (str(obj.kind), _namespace(obj.metadata), obj.metadata.name)
        self._list_object(obj)
        controller = self.lookup(*key)
        if controller is None:
            self._create(obj)
        elif isinstance(controller, DeploymentController) and isinstance(obj, Deployment):
            controller.deployment = obj
            controller.new = None
            controller.find_new()
        elif isinstance(controller, ReplicaSetController) and isinstance(
            obj, ReplicaSet | ReplicationController
        ):
            assert obj.spec.template is not None
            controller.template, controller.replicas = obj.spec.template, replicas_of(obj)
        elif isinstance(controller, StatefulSetController) and isinstance(obj, StatefulSet):
            controller.stateful_set = obj
        elif isinstance(controller, DaemonSetController) and isinstance(obj, DaemonSet):
            controller.daemon_set = obj
            controller.derive()
        elif isinstance(controller, JobController) and isinstance(obj, Job):
            controller.job = obj

    def lookup(self, kind: str, namespace: str, name: str) -> Controller | None:
        """Like `find`, and also the ReplicaSets of Deployments (one controller per workload, ever)."""
        found = self.find(kind, namespace, name)
        if found is None and kind == "ReplicaSet":
            key = (kind, namespace, name)
            found = next((rs for d in self._deployments for rs in d.replica_sets if rs.key == key), None)
        return found

    def _create(self, obj: WorkloadObject) -> None:
        if isinstance(obj, Deployment):
            d = _deployment_controller(obj)
            # ReplicaSets given earlier that name it as their controller are its revisions.
            ns = d.key[1]
            for rs in [rs for rs in self._replica_sets if rs.key[0] == "ReplicaSet"]:
                listed = next(
                    (
                        o
                        for o in self._objects.replica_sets
                        if (_namespace(o.metadata), o.metadata.name) == rs.key[1:]
                    ),
                    None,
                )
                if listed is not None and _deployment_owner(listed) == (ns, d.key[2]):
                    self._replica_sets.remove(rs)
                    self._reported.remove(rs)
                    rs.deployment, rs.age = d.key[2], len(d.replica_sets)
                    d.replica_sets.append(rs)
            d.find_new()
            self._deployments.append(d)
            self._reported.append(d)
        elif isinstance(obj, ReplicaSet):
            assert obj.spec.template is not None
            owner = self.find("Deployment", *_deployment_owner(obj) or ("", ""))
            if isinstance(owner, DeploymentController):
                owner.replica_sets.append(_replica_set_controller(obj, len(owner.replica_sets), owner))
                owner.find_new()
            else:
                self._replica_sets.append(_replica_set_controller(obj, len(self._replica_sets), None))
                self._reported.append(self._replica_sets[-1])
        elif isinstance(obj, ReplicationController):
            self._add_replication_controllers([obj])
        elif isinstance(obj, StatefulSet):
            self._add(_stateful_set_controller(obj))
        elif isinstance(obj, DaemonSet):
            self._add(_daemon_set_controller(obj))
        elif isinstance(obj, Job):
            self._add(_job_controller(obj, self._gates))

    def remove(self, kind: str, namespace: str, name: str) -> None:
        """A workload deleted: its pods go (a Deployment's through its ReplicaSets).

        A Deployment's ReplicaSet loses its pods, and its Deployment makes them again (upstream
        makes the ReplicaSet again first).
        """
        controller = self.lookup(kind, namespace, name)
        if controller is None:
            return
        why = f"{kind} {name} deleted"
        if controller not in self._reported:  # a Deployment's ReplicaSet
            for pod in self._ctx.pods_of(controller.key):
                self._ctx.delete_pod(controller.key, pod, why)
            return
        self._reported.remove(controller)
        owners = [controller.key]
        if isinstance(controller, DeploymentController):
            self._deployments.remove(controller)
            owners = [rs.key for rs in controller.replica_sets]
            made = {rs.key[2] for rs in controller.replica_sets}
            self._objects.replica_sets[:] = [
                rs
                for rs in self._objects.replica_sets
                if not (_namespace(rs.metadata) == namespace and rs.metadata.name in made)
            ]
        elif isinstance(controller, ReplicaSetController):
            self._replica_sets.remove(controller)
        else:
            self._others.remove(controller)
            if isinstance(controller, JobController):  # the garbage collector takes what it owns
                for obj in controller.scheduling_objects():
                    self._ctx.cluster.delete_group(obj)
        self._unlist_object(kind, namespace, name)
        for owner in owners:
            for pod in self._ctx.pods_of(owner):
                self._ctx.delete_pod(owner, pod, why)
            self._ctx.forget(owner)

    def adopt(self, pod: Pod) -> None:
        """A pod created by the scenario itself that names a workload as its controller."""
        self._ctx.adopt(pod)

    def record_finished(self, pod: Pod) -> None:
        """A workload's pod ended (a Job's pod completed its run)."""
        self._ctx.record_finished(pod)

    def _list_object(self, obj: WorkloadObject) -> None:
        """Put `obj` in the cluster's object lists, replacing an earlier version of it."""
        self._unlist_object(str(obj.kind), _namespace(obj.metadata), obj.metadata.name)
        self._objects.of_type(KINDS[str(obj.kind)]).append(obj)

    def _unlist_object(self, kind: str, namespace: str, name: str) -> None:
        listed = self._objects.of_type(KINDS[kind])
        listed[:] = [o for o in listed if (_namespace(o.metadata), o.metadata.name) != (namespace, name)]

    # ------------------------------------------------------------------ running
    def reconcile(self) -> PodChanges:
        """One round: every controller acts once. Returns the pods created and deleted."""
        ctx = self._ctx
        for d in self._deployments:
            d.reconcile(ctx)
            self._objects.replica_sets.extend(d.made)
            d.made.clear()
            related = [p for rs in d.replica_sets for p in ctx.pods_of(rs.key)]
            for rs in d.replica_sets:
                rs.reconcile(ctx, related)
        for rs in self._replica_sets:
            rs.reconcile(ctx)
        for other in self._others:
            other.reconcile(ctx)
        return ctx.take_changes()

    def find(self, kind: str, namespace: str, name: str) -> Controller | None:
        """The controller of a workload of the input, by kind, namespace (default: "default") and name."""
        key = (kind, namespace or "default", name)
        return next((c for c in self._reported if c.key == key), None)

    def status_of(self, kind: str, namespace: str, name: str) -> WorkloadStatus | None:
        controller = self.find(kind, namespace, name)
        return controller.status(self._ctx) if controller is not None else None

    def statuses(self) -> list[WorkloadStatus]:
        """Every workload of the input, in input order by kind, as it stands now."""
        return [c.status(self._ctx) for c in self._reported]

    def created(self, status: WorkloadStatus) -> int:
        return self._count(self._ctx.created_by, status)

    def deleted(self, status: WorkloadStatus) -> int:
        return self._count(self._ctx.deleted_by, status)

    def _count(self, counter: dict[tuple[str, str, str], int], status: WorkloadStatus) -> int:
        key = (status.kind, status.namespace, status.name)
        if status.kind == "Deployment":
            d = next(d for d in self._deployments if d.key == key)
            return sum(counter.get(rs.key, 0) for rs in d.replica_sets)
        if status.kind == "CronJob":
            cj = next(c for c in self._others if isinstance(c, CronJobController) and c.key == key)
            return counter.get(cj.job.key, 0) if cj.job is not None else 0
        return counter.get(key, 0)
