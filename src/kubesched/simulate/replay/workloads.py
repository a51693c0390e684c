"""The controllers of a scenario replay: workloads created, changed and deleted over virtual time.

The replay runs the same simulated controllers as `simulate` (`simulate/workloads/`). Controllers
act in zero virtual time: after each instant's events, a round of every controller, then the
scheduler, again until a round changes nothing — so a rolling update whose pods fit completes at
the instant it starts, one that does not stops where maxSurge/maxUnavailable hold it. A round runs
only when something a controller watches changed (a workload event, a node, one of its pods), so
a replay without workloads costs nothing more.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

import msgspec

from kubesched.api.controllers import CronJob
from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod
from kubesched.api.workloads import WORKLOAD_KINDS, WorkloadObject
from kubesched.cluster.memory import MemoryCluster
from kubesched.config.features import DEFAULT_GATES, FeatureGates
from kubesched.errors import InputError
from kubesched.framework.node_info import pod_key
from kubesched.simulate.scenario import WORKLOAD_TIMELINE_KINDS, Scenario, TimelineEvent
from kubesched.simulate.snapshot.model import WorkloadResult
from kubesched.simulate.snapshot.run import PodRecord
from kubesched.simulate.snapshot.workloads import workload_results
from kubesched.simulate.workloads import PodChanges, WorkloadControllers, has_workloads
from kubesched.simulate.workloads.context import OwnerKey, owner_of

__all__ = ["TimelineControllers", "needs_controllers"]


class Life(Protocol):
    """What `results` reads of the replay's record of one pod instance."""

    @property
    def record(self) -> PodRecord: ...

    @property
    def ended(self) -> float | None: ...


def needs_controllers(objects: LoadedObjects, scenario: Scenario) -> bool:
    """Whether the snapshot or the timeline holds a workload (otherwise the replay runs none)."""
    return has_workloads(objects) or any(e.ref.kind in WORKLOAD_TIMELINE_KINDS for e in scenario.events)


#: Controller rounds allowed in one instant per pod and node of the cluster (a rollout takes about two).
ROUNDS_PER_OBJECT = 4


class TimelineControllers:
    """The workload controllers, the Jobs' pod run times, and what the replay counts about them."""

    def __init__(
        self,
        cluster: MemoryCluster,
        *,
        seed: int,
        now: Callable[[], float],
        gates: FeatureGates = DEFAULT_GATES,
    ) -> None:
        if cluster.objects.cron_jobs:  # given as PATHs (the scenario refuses them itself)
            name = cluster.objects.cron_jobs[0].metadata.name
            raise InputError(
                f"CronJob {name}: not replayed (a scenario has no wall clock to run its schedule by); "
                "create the Jobs it runs in the timeline"
            )
        self.controllers = WorkloadControllers(cluster, seed=seed, now=now, gates=gates)
        self._cluster = cluster
        self._now = now
        #: A Job's `runFor`: how long each of its pods runs once bound.
        self._run_for: dict[OwnerKey, float] = {}
        #: Per workload, its pods evicted (preempted, node gone) that it has not replaced yet.
        self._owed: Counter[OwnerKey] = Counter()
        #: Pods the controllers created to replace evicted ones.
        self.recreated = 0
        self._dirty = True

    def touch(self) -> None:
        """Something a controller watches changed: run a round at the next settle."""
        self._dirty = True

    def bound(self, pod: Pod) -> None:
        """A pod was bound: if a workload owns it, a rollout or an OrderedReady StatefulSet may move on."""
        if owner_of(pod) is not None:
            self._dirty = True

    def apply(self, event: TimelineEvent) -> str | None:
        """A workload event; what did not go as the event says, as a `skippedEvents` reason."""
        self._dirty = True
        ref = event.ref
        key = (ref.kind, ref.namespace, ref.name)
        exists = self.controllers.lookup(*key) is not None
        if event.action == "delete":
            self._run_for.pop(key, None)
            self.controllers.remove(*key)
            return None if exists else f"delete of a {ref.kind} that does not exist"
        assert isinstance(event.obj, WORKLOAD_KINDS) and not isinstance(event.obj, CronJob)
        obj: WorkloadObject = event.obj
        if event.run_for is not None:
            self._run_for[key] = event.run_for
        self.controllers.apply(obj)  # as `kubectl apply` would: creates or updates
        if event.action == "create" and exists:
            return f"create of a {ref.kind} that exists (applied as an update)"
        if event.action == "update" and not exists:
            return f"update of a {ref.kind} that does not exist (applied as a create)"
        return None

    def run_for(self, pod: Pod) -> float | None:
        """How long a pod the controllers created runs (its Job's runFor), None: until deleted."""
        owner = owner_of(pod)
        return self._run_for.get(owner) if owner is not None else None

    def adopt(self, pod: Pod) -> None:
        """A pod of the timeline itself that names a workload as its controller counts as its pod."""
        self.controllers.adopt(pod)

    def pod_gone(self, pod: Pod, *, completed: bool, evicted: bool, node_gone: bool) -> None:
        """One of the cluster's pods ended; a completed one counts towards its Job's completions."""
        owner = owner_of(pod)
        if owner is None:
            return
        self._dirty = True
        if completed:
            self.controllers.record_finished(_ended(pod, "Succeeded"))
        elif evicted and not (node_gone and owner[0] == "DaemonSet"):
            self._owed[owner] += 1  # a DaemonSet does not replace the pod of a node that is gone
            if owner[0] == "Job":  # counted against backoffLimit, as upstream without a podFailurePolicy
                self.controllers.record_finished(_ended(pod, "Failed"))

    def results(self, nodes: Mapping[str, Node], lives: Iterable[Life]) -> list[WorkloadResult]:
        """Each workload at the end, with its pending pods' last scheduling messages."""
        messages = {pod_key(life.record.pod): life.record.message for life in lives if life.ended is None}
        return workload_results(self.controllers, nodes, {k: m for k, m in messages.items() if m})

    def settle(
        self, drain: Callable[[], None], as_deleted: Callable[[Callable[[], PodChanges]], PodChanges]
    ) -> None:
        """Controller rounds and scheduling until a round changes nothing.

        `as_deleted` runs a round so that the pods it deletes end as deleted (not as evictions).
        Bounded: a round that changes something creates or deletes a pod, and a rollout needs a few
        rounds per pod or node; far more rounds than that in one instant means controllers that
        undo each other's work, an input error rather than a replay that never ends.
        """
        rounds = 0
        while True:
            if self._dirty:
                rounds += 1
                limit = ROUNDS_PER_OBJECT * (len(self._cluster.pods) + len(self._cluster.nodes)) + 100
                if rounds > limit:
                    raise InputError(
                        f"the workload controllers did not settle at {self._now():g}s after {rounds - 1} "
                        "rounds (each changed a pod): two workloads may select the same pods"
                    )
                self._dirty = False
                changes = as_deleted(self.controllers.reconcile)
                for pod in changes.created:
                    owner = owner_of(pod)
                    if owner is not None and self._owed[owner] > 0:
                        self._owed[owner] -= 1
                        self.recreated += 1
                if changes:
                    self._dirty = True
            drain()
            if not self._dirty:
                return


def _ended(pod: Pod, phase: str) -> Pod:
    return msgspec.structs.replace(pod, status=msgspec.structs.replace(pod.status, phase=phase))
