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
from kubesched.framework.interfaces import (
    BackgroundEvictionPort,
    Handle,
)
from kubesched.framework.node_info import pod_key
from kubesched.framework.status import Code, Status
from kubesched.plugins.default_preemption.candidates import Candidate

__all__ = [
    "PREEMPTED",
    "PREEMPTION_BY_SCHEDULER",
    "WAITING_FOR_PREEMPTION",
    "Executor",
    "terminating_by_preemption",
]

#: PreEnqueue's answer while the pod's victims are being evicted in the background (upstream's words).
WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
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
        with self._preempting_lock:
            running = self._preempting.get(pod_key(pod))
            if running is None:
                return None
            if running.last_victim is not None and self._victim_leaving(handle, running):
                return None
            running.gated = True
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING_FOR_PREEMPTION)

    def _victim_leaving(self, handle: Handle | None, running: Preempting) -> bool:
        if handle is None:
            return True
        snapshot = handle.snapshot
        row = snapshot.index.get(running.node)
        if row is None:
            return True
        victim = snapshot.infos[row].pods.get(running.last_victim or "")
        return victim is None or bool(victim.pod.metadata.deletion_timestamp)

    def prepare(self, handle: Handle, candidate: Candidate, preemptor: Pod) -> Status | None:
        """Evict the victims, announce it, and free the node from lower-priority nominations.

        Where the cluster evicts in the background (live mode, as v1.37's SchedulerAsyncPreemption),
        the evictions run there and this returns at once; the simulator evicts here, in virtual time.
        """
        port = handle.background_eviction()
        if port is not None:
            self._prepare_in_background(handle, port, candidate, preemptor)
            return None
        node = candidate.name
        try:
            for pi in candidate.victims:
                victim = pi.pod
                if handle.get_waiting_pod(pi.key) is not None:
                    handle.reject_waiting_pod(pi.key, self.name, PREEMPTED)
                else:
                    handle.delete_pod(victim, reason=PREEMPTION_BY_SCHEDULER, message=_why(preemptor))
                _announce(handle, victim, preemptor, node)
        except Exception as exc:  # a failed eviction fails this attempt, not the scheduler
            return Status.as_error(str(exc) or type(exc).__name__)
        _clear_lower_nominations(handle, preemptor, node)
        return None

    def _prepare_in_background(
        self, handle: Handle, port: BackgroundEvictionPort, candidate: Candidate, preemptor: Pod
    ) -> None:
        """Upstream's prepareCandidateAsync. Victims waiting at Permit are rejected here (in memory,
        under the scheduler's lock); victims already terminating are skipped; the others are evicted
        by a background thread, the last one only after all the others succeeded. Any error other
        than "already gone" stops the evictions and moves the pod back to activeQ, where it tries
        again (its nomination stays, as upstream's does)."""
        node, key = candidate.name, pod_key(preemptor)
        _clear_lower_nominations(handle, preemptor, node)
        to_evict: list[Pod] = []
        for pi in candidate.victims:
            if handle.get_waiting_pod(pi.key) is not None:
                handle.reject_waiting_pod(pi.key, self.name, PREEMPTED)
                _announce(handle, pi.pod, preemptor, node)
            elif not pi.pod.metadata.deletion_timestamp:
                to_evict.append(pi.pod)
        if not to_evict:
            return
        running = Preempting(node)
        with self._preempting_lock:
            self._preempting[key] = running
        failed: list[BaseException] = []

        def evict(victim: Pod) -> None:
            if port.evict_now(victim, reason=PREEMPTION_BY_SCHEDULER, message=_why(preemptor)):
                _announce(handle, victim, preemptor, node)

        def work() -> None:
            try:
                for victim in to_evict[:-1]:
                    evict(victim)
                with self._preempting_lock:
                    running.last_victim = pod_key(to_evict[-1])
                evict(to_evict[-1])
            except Exception as exc:
                log.warning("preemption for %s on node %s stopped: %s", key, node, exc)
                failed.append(exc)
                raise

        def then() -> None:
            with self._preempting_lock:
                self._preempting.pop(key, None)
            if failed:
                handle.activate([preemptor])  # upstream: do not leave the pod parked after an error
            elif running.gated:
                # kubesched's leftover flush leaves gated pods alone, so a pod held back by the
                # gate would wait for ever; upstream's flush retries it within 5 minutes.
                handle.activate([preemptor])

        port.run_in_background(work, then)


def _clear_lower_nominations(handle: Handle, preemptor: Pod, node: str) -> None:
    """Lower-priority pods nominated to `node` may no longer fit there: let them look elsewhere."""
    priority = preemptor.spec.priority or 0
    for pi in handle.nominated_pods_for_node(node):
        if pi.priority < priority:
            try:
                handle.set_nominated_node(pi.pod, "")
            except Exception:  # not critical: the nomination is re-evaluated on its next attempt
                continue


def _why(preemptor: Pod) -> str:
    """The DisruptionTarget message a victim gets (upstream's words)."""
    return f"{preemptor.spec.scheduler_name}: preempting to accommodate a higher priority pod"


def _announce(handle: Handle, victim: Pod, preemptor: Pod, node: str) -> None:
    handle.record_event(
        victim,
        type="Normal",
        reason="Preempted",
        action="Preempting",
        note=f"Preempted by pod {preemptor.metadata.uid} on node {node}",
    )
