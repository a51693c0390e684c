"""What the simulated controllers share: the cluster, which pods each workload owns, what they changed.

A pod belongs to the workload its controller ownerReference names (kind, namespace, name), as the
controllers' own pod lists do; pods in the input keep the owners they came with, and pods the
simulation creates are indexed as they are made, so no controller ever scans every pod.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kubesched.api.controllers import PodTemplateSpec
from kubesched.api.meta import ObjectMeta, OwnerReference, controller_of
from kubesched.api.objects import Pod, PodSpec
from kubesched.cluster.memory import MemoryCluster
from kubesched.framework.node_info import pod_key
from kubesched.simulate.workloads.naming import NameSource

__all__ = [
    "Controller",
    "ControllerContext",
    "OwnerKey",
    "PodChanges",
    "PodTimes",
    "WorkloadStatus",
    "is_available",
    "owner_of",
]

#: (kind, namespace, name) of a workload object.
OwnerKey = tuple[str, str, str]


def is_available(pod: Pod) -> bool:
    """Running and ready, as far as a simulation can tell: bound to a node and not being deleted.

    Nothing runs in the simulator, so a bound pod counts as ready at once (minReadySeconds and
    readiness probes do not delay it).
    """
    return bool(pod.spec.node_name) and pod.metadata.deletion_timestamp is None


@dataclass(frozen=True, slots=True)
class PodTimes:
    """When a pod was created and became ready, in virtual seconds; None when before the simulation."""

    created: float | None
    ready: float | None


_BEFORE = PodTimes(None, None)


@dataclass
class WorkloadStatus:
    """Where a workload stands: how many pods it wants, which are its current pods, which are old."""

    kind: str
    namespace: str
    name: str
    desired: int
    #: Pods of the current revision (all of the workload's pods for kinds without revisions).
    current: list[Pod]
    #: Pods of earlier revisions still present (a Deployment's rollout in progress).
    old: list[Pod] = field(default_factory=list)
    #: What the controller waits for, when that and not the scheduler holds the workload back.
    waiting_for: str | None = None


class Controller(Protocol):
    """One simulated controller: acts on its workload once per round, and says where it stands."""

    key: OwnerKey

    def reconcile(self, ctx: ControllerContext) -> None: ...

    def scale(self, replicas: int) -> None:
        """Ask for `replicas` pods (a DaemonSet's count is its nodes': it ignores this)."""
        ...

    def status(self, ctx: ControllerContext) -> WorkloadStatus: ...


@dataclass
class PodChanges:
    """What one reconcile round did: pods created, and pods deleted with the reason why."""

    created: list[Pod] = field(default_factory=list)
    deleted: list[tuple[Pod, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.created or self.deleted)


class ControllerContext:
    def __init__(self, cluster: MemoryCluster, *, seed: int, now: Callable[[], float] = lambda: 0.0) -> None:
        self.cluster = cluster
        self.now = now
        self.names = NameSource(seed)
        self.changes = PodChanges()
        self.created_by: Counter[OwnerKey] = Counter()
        self.deleted_by: Counter[OwnerKey] = Counter()
        #: Per workload, the keys of its pods (a dict as an ordered set: oldest first).
        self._owned: dict[OwnerKey, dict[str, None]] = {}
        #: Virtual times of the pods made or adopted during the simulation (the input's have none).
        self._times: dict[str, PodTimes] = {}
        for key, pod in cluster.pods.items():
            owner = owner_of(pod)
            if owner is not None:
                self._owned.setdefault(owner, {})[key] = None
        self._finished: dict[OwnerKey, list[Pod]] = {}
        for pod in cluster.finished_pods:
            self.record_finished(pod)

    def take_changes(self) -> PodChanges:
        changes, self.changes = self.changes, PodChanges()
        return changes

    def pods_of(self, owner: OwnerKey) -> list[Pod]:
        """The workload's pods still in the cluster, oldest first, in their current state.

        A pod first seen bound is taken to have become ready now (what a controller's watch sees).
        """
        keys = self._owned.get(owner)
        if not keys:
            return []
        pods = self.cluster.pods
        live = [k for k in keys if k in pods]
        if len(live) != len(keys):  # deleted meanwhile (scaled down, or a preemption victim)
            self._owned[owner] = dict.fromkeys(live)
        out = [pods[k] for k in live]
        for key, pod in zip(live, out, strict=True):
            t = self._times.get(key)
            if t is not None and t.ready is None and pod.spec.node_name:
                self._times[key] = PodTimes(t.created, self.now())
        return out

    def times(self, pod: Pod) -> PodTimes:
        """When `pod` was created and became ready (None: before the simulation)."""
        return self._times.get(pod_key(pod), _BEFORE)

    def adopt(self, pod: Pod) -> None:
        """Index a pod made outside the controllers (a scenario's own pod) under its controller owner."""
        owner = owner_of(pod)
        if owner is not None:
            key = pod_key(pod)
            self._owned.setdefault(owner, {})[key] = None
            self._times.setdefault(key, PodTimes(self.now(), None))

    def record_finished(self, pod: Pod) -> None:
        """A pod that ended Succeeded or Failed: a Job counts its completions from these."""
        owner = owner_of(pod)
        if owner is not None:
            self._finished.setdefault(owner, []).append(pod)

    def forget(self, owner: OwnerKey) -> None:
        """A deleted workload: its finished pods no longer count for a new one of the same name."""
        self._owned.pop(owner, None)
        self._finished.pop(owner, None)

    def finished_of(self, owner: OwnerKey) -> list[Pod]:
        """The workload's pods that already ended (phase Succeeded or Failed)."""
        return self._finished.get(owner, [])

    def create_pod(
        self,
        owner: OwnerKey,
        reference: OwnerReference,
        template: PodTemplateSpec,
        *,
        name: str = "",
        generate_name: str = "",
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        spec: PodSpec | None = None,
    ) -> Pod:
        """A pod from `template`, as `GetPodFromTemplate` builds it, created in the cluster.

        With `generate_name` the name is completed as the API server does (retrying a taken name).
        """
        namespace = owner[1]
        if not name:
            name = self.names.generate(generate_name, "/".join(owner))
            while self.cluster.has_pod_named(namespace, name):
                name = self.names.generate(generate_name, "/".join(owner))
        meta = ObjectMeta(
            name=name,
            generate_name=generate_name,
            namespace=namespace,
            labels={**template.metadata.labels, **(labels or {})},
            annotations={**template.metadata.annotations, **(annotations or {})},
            owner_references=[reference],
        )
        pod = self.cluster.create_pod(Pod(metadata=meta, spec=spec or template.spec))
        key = pod_key(pod)
        self._owned.setdefault(owner, {})[key] = None
        self._times[key] = PodTimes(self.now(), None)
        self.created_by[owner] += 1
        self.changes.created.append(pod)
        return pod

    def delete_pod(self, owner: OwnerKey, pod: Pod, why: str) -> None:
        self.cluster.delete_pod(pod, reason="Killing", message=why)
        self.deleted_by[owner] += 1
        self.changes.deleted.append((pod, why))


def owner_of(pod: Pod) -> OwnerKey | None:
    """The workload named by the pod's controller ownerReference."""
    ref = controller_of(pod.metadata)
    return (ref.kind, pod.metadata.namespace, ref.name) if ref is not None else None
