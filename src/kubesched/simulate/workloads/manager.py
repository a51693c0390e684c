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
from collections.abc import Iterable, Sequence
from typing import TypeVar

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import (
    CronJob,
    DaemonSet,
    Deployment,
    Job,
    ObjectMeta,
    ReplicaSet,
    ReplicationController,
    StatefulSet,
)
from kubesched.api.workloads import replicas_of
from kubesched.cluster.memory import MemoryCluster
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


class WorkloadControllers:
    def __init__(self, cluster: MemoryCluster, *, seed: int = 0) -> None:
        self._ctx = ControllerContext(cluster, seed=seed)
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
            (_namespace(d.metadata), d.metadata.name): DeploymentController(
                ("Deployment", _namespace(d.metadata), d.metadata.name), d, _uid("Deployment", d.metadata)
            )
            for d in _latest(objects.deployments)
        }
        for index, rs in enumerate(_latest(objects.replica_sets)):
            if rs.spec.template is None:  # a selector-only object (spreading); nothing to create
                continue
            namespace = _namespace(rs.metadata)
            owner = next((r for r in rs.metadata.owner_references if r.controller), None)
            deployment = (
                deployments.get((namespace, owner.name)) if owner and owner.kind == "Deployment" else None
            )
            controller = ReplicaSetController(
                key=("ReplicaSet", namespace, rs.metadata.name),
                reference=controller_reference(
                    "apps/v1", "ReplicaSet", rs.metadata.name, _uid("ReplicaSet", rs.metadata)
                ),
                template=rs.spec.template,
                replicas=replicas_of(rs),
                deployment=deployment.key[2] if deployment else None,
                age=index,
            )
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
            if s.spec.template is None:
                continue
            ns, name = _namespace(s.metadata), s.metadata.name
            ref = controller_reference("apps/v1", "StatefulSet", name, _uid("StatefulSet", s.metadata))
            self._add(StatefulSetController(("StatefulSet", ns, name), s, ref))
        for ds in _latest(objects.daemon_sets):
            ns, name = _namespace(ds.metadata), ds.metadata.name
            ref = controller_reference("apps/v1", "DaemonSet", name, _uid("DaemonSet", ds.metadata))
            self._add(DaemonSetController(("DaemonSet", ns, name), ds, ref))
        for job in _latest(objects.jobs):
            self._add(
                JobController(
                    ("Job", _namespace(job.metadata), job.metadata.name), job, _uid("Job", job.metadata)
                )
            )
        minute = _snapshot_minute(objects) if objects.cron_jobs else 0
        for cj in _latest(objects.cron_jobs):
            key = ("CronJob", _namespace(cj.metadata), cj.metadata.name)
            self._add(CronJobController(key, cj, _uid("CronJob", cj.metadata), minute))

    def _add_replication_controllers(self, rcs: Iterable[ReplicationController]) -> None:
        for rc in _latest(list(rcs)):
            template = rc.spec.template
            if template is None:
                continue
            ns, name = _namespace(rc.metadata), rc.metadata.name
            ref = controller_reference(
                "v1", "ReplicationController", name, _uid("ReplicationController", rc.metadata)
            )
            controller = ReplicaSetController(
                ("ReplicationController", ns, name), ref, template, replicas_of(rc)
            )
            self._replica_sets.append(controller)
            self._reported.append(controller)

    def _add(self, controller: Controller) -> None:
        self._others.append(controller)
        self._reported.append(controller)

    # ------------------------------------------------------------------ running
    def reconcile(self) -> PodChanges:
        """One round: every controller acts once. Returns the pods created and deleted."""
        ctx = self._ctx
        for d in self._deployments:
            d.reconcile(ctx)
            self._objects.replica_sets.extend(d.made)
            d.made.clear()
            for rs in d.replica_sets:
                rs.reconcile(ctx)
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
