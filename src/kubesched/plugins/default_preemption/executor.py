"""Carrying a preemption out: victims rejected or evicted, announced, lower nominations cleared.

As upstream's framework/preemption executor: the simulator evicts within the cycle; where the
cluster offers background eviction (live mode, SchedulerAsyncPreemption) the evictions run on a
thread, and until they are done PreEnqueue holds the preemptor back (`Executor.gate`).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import CompositePodGroup, PodGroup
from kubesched.framework.interfaces import (
    BackgroundEvictionPort,
    Handle,
)
from kubesched.framework.node_info import PodInfo, pod_key
from kubesched.framework.status import Code, Status
from kubesched.plugins.default_preemption.candidates import Candidate

__all__ = [
    "GROUP_DOMAIN",
    "PREEMPTED",
    "PREEMPTION_BY_SCHEDULER",
    "WAITING_FOR_GROUP_PREEMPTION",
    "WAITING_FOR_PREEMPTION",
    "Executor",
    "group_preemption_key",
    "terminating_by_preemption",
]

#: PreEnqueue's answer while the pod's victims are being evicted in the background (upstream's words).
WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
#: The same for a pod whose group's victims are being evicted.
WAITING_FOR_GROUP_PREEMPTION = "waiting for the preemption for this pod group to be finished"
#: The "node" a pod group preempts on (upstream's name for the cluster-wide domain).
GROUP_DOMAIN = "cluster"
#: What a rejected waiting victim is told (upstream's word).
PREEMPTED = "preempted"
#: The DisruptionTarget condition reason of a pod the scheduler preempts.
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Preempting:
    """A preemption whose victims are being evicted in the background (live mode)."""

    node: str
    #: Key of the last victim once its eviction has begun: from then on the preemption counts as
    #: done as soon as the cache sees that victim terminating or gone (see `Executor.gate`).
    last_victim: str | None = None
    #: PreEnqueue held the pod back at least once.
    gated: bool = False
    #: The last victim's node (a pod group's victims are spread over the cluster).
    last_node: str | None = None


def terminating_by_preemption(pod: Pod) -> bool:
    """Deleted (deletionTimestamp set) because a scheduler preempted it (DisruptionTarget condition)."""
    if not pod.metadata.deletion_timestamp:
        return False
    for cond in pod.status.conditions:
        if cond.type == "DisruptionTarget":
            return cond.status == "True" and cond.reason == PREEMPTION_BY_SCHEDULER
    return False


class Executor:
    """Evicts a chosen candidate's victims, and remembers the preemptions still evicting."""

    def __init__(self, plugin_name: str) -> None:
        self.name = plugin_name
        #: Pod key -> its preemption still evicting in the background. Read under the scheduler's
        #: lock by PreEnqueue, written by the eviction thread too: guarded by its own lock.
        self._preempting: dict[str, Preempting] = {}
        self._preempting_lock = threading.Lock()

    def gate(self, handle: Handle | None, pod: Pod) -> Status | None:
        """Upstream's async preemption gate: a pod whose victims are still being evicted waits.

        The preemption counts as finished once its last victim's eviction has started and the cache
        sees that victim terminating or gone, so a deletion event that arrives before the eviction
        thread ends does not leave the pod held back.
        """
        if self._running(handle, pod_key(pod)):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING_FOR_PREEMPTION)
        return None

    def _running(self, handle: Handle | None, key: str) -> bool:
        if key not in self._preempting:  # one atomic look, as under the lock: most pods preempt nothing
            return False
        with self._preempting_lock:
            running = self._preempting.get(key)
            if running is None:
                return False
            if running.last_victim is not None and self._victim_leaving(handle, running):
                return False
            running.gated = True
        return True

    def _victim_leaving(self, handle: Handle | None, running: Preempting) -> bool:
        if handle is None:
            return True
        snapshot = handle.snapshot
        row = snapshot.index.get(running.last_node or running.node)
        if row is None:
            return True
        victim = snapshot.infos[row].pods.get(running.last_victim or "")
        return victim is None or bool(victim.pod.metadata.deletion_timestamp)

    def prepare(self, handle: Handle, candidate: Candidate, preemptor: Pod) -> Status | None:
        """Evict the victims, announce it, and free the node from lower-priority nominations.

        Where the cluster evicts in the background (live mode, as v1.37's SchedulerAsyncPreemption),
        the evictions run there and this returns at once; the simulator evicts here, in virtual time.
        """
        who = _Preemptor.of_pod(preemptor)
        status = self._carry_out(handle, candidate.name, candidate.victims, who)
        if status is None and handle.background_eviction() is None:
            _clear_lower_nominations(handle, preemptor, candidate.name)
        return status

    def prepare_group(
        self,
        handle: Handle,
        victims: list[PodInfo],
        pod_group: PodGroup | CompositePodGroup,
        members: list[Pod],
    ) -> Status | None:
        """Evict a pod group's victims (upstream's actuatePodGroupPreemption). Its "node" is the
        whole cluster, named `cluster` in the Events, so no nomination is cleared."""
        return self._carry_out(handle, GROUP_DOMAIN, victims, _Preemptor.of_group(pod_group, members))

    def group_gate(self, handle: Handle | None, group_key: str) -> Status | None:
        """PreEnqueue for a pod of a group whose victims are still being evicted."""
        if self._running(handle, group_key):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING_FOR_GROUP_PREEMPTION)
        return None

    def _carry_out(self, handle: Handle, node: str, victims: list[PodInfo], who: _Preemptor) -> Status | None:
        port = handle.background_eviction()
        if port is not None:
            if who.kind == "pod":
                _clear_lower_nominations(handle, who.pods[0], node)
            self._prepare_in_background(handle, port, node, victims, who)
            return None
        try:
            for pi in victims:
                victim = pi.pod
                if handle.get_waiting_pod(pi.key) is not None:
                    handle.reject_waiting_pod(pi.key, self.name, PREEMPTED)
                elif who.kind != "pod" and victim.metadata.deletion_timestamp:
                    continue  # already being deleted: upstream sends no second call
                else:
                    handle.delete_pod(victim, reason=PREEMPTION_BY_SCHEDULER, message=who.why())
                _announce(handle, victim, who, node)
        except Exception as exc:  # a failed eviction fails this attempt, not the scheduler
            return Status.as_error(str(exc) or type(exc).__name__)
        return None

    def _prepare_in_background(
        self, handle: Handle, port: BackgroundEvictionPort, node: str, victims: list[PodInfo], who: _Preemptor
    ) -> None:
        """Upstream's prepareCandidateAsync. Victims waiting at Permit are rejected here (in memory,
        under the scheduler's lock); victims already terminating are skipped; the others are evicted
        by a background thread, the last one only after all the others succeeded. Any error other
        than "already gone" stops the evictions and moves the preemptor back to activeQ, where it
        tries again (its nomination stays, as upstream's does)."""
        key = who.key
        to_evict: list[Pod] = []
        for pi in victims:
            if handle.get_waiting_pod(pi.key) is not None:
                handle.reject_waiting_pod(pi.key, self.name, PREEMPTED)
                _announce(handle, pi.pod, who, node)
            elif not pi.pod.metadata.deletion_timestamp:
                to_evict.append(pi.pod)
        if not to_evict:
            return
        running = Preempting(node)
        with self._preempting_lock:
            self._preempting[key] = running
        failed: list[BaseException] = []

        def evict(victim: Pod) -> None:
            if port.evict_now(victim, reason=PREEMPTION_BY_SCHEDULER, message=who.why()):
                _announce(handle, victim, who, node)

        def work() -> None:
            try:
                for victim in to_evict[:-1]:
                    evict(victim)
                with self._preempting_lock:
                    running.last_victim = pod_key(to_evict[-1])
                    running.last_node = to_evict[-1].spec.node_name or node
                evict(to_evict[-1])
            except Exception as exc:
                log.warning("preemption for %s %s on %s stopped: %s", who.kind, key, node, exc)
                failed.append(exc)
                raise

        def then() -> None:
            with self._preempting_lock:
                self._preempting.pop(key, None)
            if failed:
                handle.activate(who.pods)  # upstream: do not leave the pods parked after an error
            elif running.gated:
                # kubesched's leftover flush leaves gated pods alone, so a pod held back by the
                # gate would wait for ever; upstream's flush retries it within 5 minutes.
                handle.activate(who.pods)

        port.run_in_background(work, then)


@dataclass(frozen=True, slots=True)
class _Preemptor:
    """Who preempts, as the Events and the DisruptionTarget condition name it (a pod or a group)."""

    kind: str  # upstream's entity types: pod, podgroup
    key: str
    uid: str
    scheduler_name: str
    pods: list[Pod]

    @staticmethod
    def of_pod(pod: Pod) -> _Preemptor:
        return _Preemptor("pod", pod_key(pod), pod.metadata.uid, pod.spec.scheduler_name, [pod])

    @staticmethod
    def of_group(pod_group: PodGroup | CompositePodGroup, members: list[Pod]) -> _Preemptor:
        key = f"{pod_group.metadata.namespace or 'default'}/{pod_group.metadata.name}"
        scheduler = members[0].spec.scheduler_name if members else ""
        kind = "compositepodgroup" if isinstance(pod_group, CompositePodGroup) else "podgroup"
        return _Preemptor(kind, group_preemption_key(key), pod_group.metadata.uid, scheduler, members)

    def why(self) -> str:
        """The DisruptionTarget message a victim gets (upstream's words)."""
        return f"{self.scheduler_name}: preempting to accommodate a higher priority {self.kind}"


def group_preemption_key(group: str) -> str:
    """The executor's key of a pod group's preemption (`namespace/name` of the PodGroup)."""
    return f"podgroup:{group}"


def _clear_lower_nominations(handle: Handle, preemptor: Pod, node: str) -> None:
    """Lower-priority pods nominated to `node` may no longer fit there: let them look elsewhere."""
    priority = preemptor.spec.priority or 0
    for pi in handle.nominated_pods_for_node(node):
        if pi.priority < priority:
            try:
                handle.set_nominated_node(pi.pod, "")
            except Exception:  # not critical: the nomination is re-evaluated on its next attempt
                continue


def _announce(handle: Handle, victim: Pod, who: _Preemptor, node: str) -> None:
    handle.record_event(
        victim,
        type="Normal",
        reason="Preempted",
        action="Preempting",
        note=f"Preempted by {who.kind} {who.uid} on node {node}",
    )
