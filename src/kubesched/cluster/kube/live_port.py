"""The live scheduler's `ClusterPort`: where the core's decisions and writes go to the API server.

Binds go through the bind pipeline's gate (`pipeline`); VolumeBinding's and DynamicResources' writes
and waits, and a `pause`, let go of the state lock for the duration of the call, so the loop and the
other binding cycles go on meanwhile. Events, status patches and evictions never block anyone: they
are queued to worker threads (`AsyncCalls`); the listers read the informers' stores.

Never bound twice: a pod is only popped while unbound and not in the cache; the API server refuses a
second Binding with 409 "already assigned", which `bind` treats as final and never as a success
(someone else bound it, so no `Scheduled` Event and no scheduled count are ours to give): the pod is
recorded as bound there at once, so it leaves the queue instead of being retried.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from kubesched.api.objects import Pod, PodExtendedResourceClaimStatus
from kubesched.api.resource import AllocationResult, Condition, ResourceClaim, ResourceClaimConsumerReference
from kubesched.api.scheduling_groups import PodGroup
from kubesched.api.storage import PersistentVolumeClaim
from kubesched.cluster.kube.binder import BindConflict, Binder
from kubesched.cluster.kube.claims import ApiClaimWriter
from kubesched.cluster.kube.client import KubeClient
from kubesched.cluster.kube.events import EventRecorder
from kubesched.cluster.kube.informer import Informer
from kubesched.cluster.kube.pipeline import BindPipeline
from kubesched.cluster.kube.state_lock import StateLock
from kubesched.cluster.kube.status import PodStatusWriter
from kubesched.cluster.kube.volumes import ApiVolumeBinder, ApiVolumeReader, InformerVolumeReader
from kubesched.cluster.kube.workers import AsyncCalls
from kubesched.framework.pod_groups import SchedulingGroups, with_condition
from kubesched.scheduler.scheduler import Scheduler

__all__ = ["LivePort"]

log = logging.getLogger(__name__)

#: Seconds an Event sender waits for its batch to fill (`EventRecorder.linger`): while pods bind,
#: one Event each, that many go out in one write instead of nearly one request per Event.
EVENT_LINGER = 0.02


class _Answered(threading.local):
    """The answer to a bind already sent in a batch, for the `bind` call on this thread that asks
    for it (see `LivePort.answered`)."""

    ready = False
    error: Exception | None = None


class LivePort:
    """ClusterPort over the API server (see module docstring); `scheduler` is set by the owner
    once the core that uses this port is built."""

    scheduler: Scheduler

    def __init__(
        self,
        client: KubeClient,
        lock: StateLock,
        pipeline: BindPipeline,
        *,
        informers: dict[str, Informer],
        groups: SchedulingGroups,
        dispatch: Callable[[Callable[[], None]], None],
        events_client: KubeClient | None,
        event_workers: int,
        status_workers: int,
    ) -> None:
        self.client = client
        self._lock = lock
        self.pipeline = pipeline
        self.informers = informers
        self.groups = groups
        self._dispatch = dispatch  # runs a callable on the scheduling loop, under the lock
        self.binder = Binder(client)
        self._answered = _Answered()
        #: VolumeBinding's PreBind writes (PV claimRef, selected-node) and waits through this.
        self.volumes = ApiVolumeBinder(client, InformerVolumeReader(informers, ApiVolumeReader(client)))
        self.claims = ApiClaimWriter(client, now=lambda: time.time())
        self._event_calls = AsyncCalls("events", event_workers)
        self._status_calls = AsyncCalls("pod-status", status_workers)
        self.events = EventRecorder(events_client or client, self._event_calls, linger=EVENT_LINGER)
        self.status = PodStatusWriter(client, self._status_calls)
        #: Binds the API server refused with 409 (read under no lock; it only grows).
        self.bind_conflicts = 0

    def bind(self, pod: Pod, node_name: str) -> None:
        """POST the Binding through the pipeline's gate, with the state lock let go.

        The pipeline took the client's rate-limiter token before the cycle ran, so the request goes
        out at once. A 409 is final and never a success (see module docstring); `BindRefused` means
        the gate closed (the core abandons the attempt). Under `answered`, the bind was sent
        already and this gives its answer.
        """
        conflict: BindConflict | None = None
        answered = self._answered
        if answered.ready:
            answered.ready = False
            if answered.error is not None and not isinstance(answered.error, BindConflict):
                raise answered.error
            conflict = answered.error
        else:
            with self._lock.released(), self.pipeline.sending():
                try:
                    self.binder.bind(pod, node_name, throttle=False)
                except BindConflict as exc:
                    conflict = exc
        if conflict is None:
            return
        self.bind_conflicts += 1
        log.warning("binding pod %s to %s: %s", pod.key, node_name, conflict.message or "conflict (409)")
        if conflict.node:
            self._bound_elsewhere(pod, conflict.node)
        raise conflict

    @contextlib.contextmanager
    def answered(self, error: Exception | None) -> Iterator[None]:
        """The next `bind` on this thread, within this block, was sent already (in a pipelined
        batch) and was answered thus (None: bound), so it gives that answer instead of a request:
        the Bind plugins run as ever and DefaultBinder gets the answer through this port."""
        answered = self._answered
        answered.ready, answered.error = True, error
        try:
            yield
        finally:
            answered.ready, answered.error = False, None

    def _bound_elsewhere(self, pod: Pod, node: str) -> None:
        """Tell the core now that `pod` is bound to `node` (the watch event may lag), so the pod
        leaves the queue and its failed binding cycle does not requeue it."""
        pods = self.informers.get("Pod")
        current = pods.get(f"{pod.metadata.namespace}/{pod.metadata.name}") if pods else None
        if current is None or current.metadata.uid != pod.metadata.uid or current.spec.node_name:
            return
        bound = msgspec.structs.replace(current, spec=msgspec.structs.replace(current.spec, node_name=node))
        if self._lock.owned():
            self.scheduler.on_pod_update(current, bound)
        else:  # a split cycle's bind: its failure reaches the loop after this, in order
            self._dispatch(lambda: self.scheduler.on_pod_update(current, bound))

    def bind_pvc(self, pvc: PersistentVolumeClaim, pv_name: str, *, timeout: float) -> None:
        """VolumeBinding's PreBind (static binding): set the PV's claimRef and wait for the PV
        controller, with the state lock let go (the wait may take up to `bindTimeoutSeconds`)."""
        with self._lock.released():
            self.volumes.bind_pvc(pvc, pv_name, timeout=timeout)

    def provision_pvc(self, pvc: PersistentVolumeClaim, node_name: str, *, timeout: float) -> None:
        """VolumeBinding's PreBind (provisioning): annotate the claim's selected node and wait."""
        with self._lock.released():
            self.volumes.provision_pvc(pvc, node_name, timeout=timeout)

    # -- ResourceClaimWriter: DynamicResources' writes, with the state lock let go during the calls
    def write_claim_allocation(
        self,
        claim: ResourceClaim,
        allocation: AllocationResult | None,
        pod: Pod,
        consumer: ResourceClaimConsumerReference | None = None,
    ) -> ResourceClaim:
        with self._lock.released():
            return self.claims.write_allocation(claim, allocation, pod, consumer)

    def remove_claim_reservation(self, claim: ResourceClaim, uid: str) -> None:
        with self._lock.released():
            self.claims.remove_reservation(claim, uid)

    def deallocate_claim(self, claim: ResourceClaim) -> None:
        with self._lock.released():
            self.claims.deallocate(claim)

    def create_claim(self, claim: ResourceClaim) -> ResourceClaim:
        with self._lock.released():
            return self.claims.create(claim)

    def delete_claim(self, claim: ResourceClaim) -> None:
        with self._lock.released():
            self.claims.delete(claim)

    def write_extended_resource_claim_status(self, pod: Pod, status: PodExtendedResourceClaimStatus) -> None:
        with self._lock.released():
            self.claims.write_pod_extended_status(pod, status)

    def pause(self, seconds: float) -> None:
        """Let the cluster move on for `seconds` (PreBind waiting for binding conditions)."""
        with self._lock.released():
            time.sleep(seconds)

    def record_event(
        self, pod: Pod, *, type: str, reason: str, action: str, note: str, reporter: str
    ) -> None:
        self.events.record(pod, type=type, reason=reason, action=action, note=note, reporter=reporter)

    def set_pod_scheduled_condition(
        self, pod: Pod, *, reason: str, message: str, nominated_node_name: str | None
    ) -> None:
        self.status.set_pod_scheduled_condition(
            pod, reason=reason, message=message, nominated_node_name=nominated_node_name
        )

    def set_nominated_node_name(self, pod: Pod, node_name: str) -> None:
        self.status.set_nominated_node_name(pod, node_name)

    def set_pod_group_condition(self, pod_group: PodGroup, condition: Condition) -> None:
        """The PodGroup's condition: kept here at once (the next cycle reads it), written by a status
        patch on the status workers."""
        self.groups.put(with_condition(pod_group, condition))
        self.status.set_pod_group_condition(pod_group, condition)

    def expect_binding(self, pod: Pod, node_name: str) -> None:
        """Synchronous, unlike the other status writes: the patch must reach the API server before
        the bind, or it would set the nomination again on the bound pod."""
        with self._lock.released():
            self.status.expect_binding(pod, node_name)

    def delete_pod(self, pod: Pod, *, reason: str, message: str) -> None:
        self.status.delete_pod(pod, reason=reason, message=message)

    def evict_now(self, pod: Pod, *, reason: str, message: str) -> bool:
        """Synchronous; called from a preemption's background thread, which holds no lock."""
        return self.status.evict_now(pod, reason=reason, message=message)

    def run_in_background(self, work: Callable[[], None], then: Callable[[], None]) -> None:
        """A preemption's evictions (upstream's goroutine): `work` without the state lock, so the loop
        keeps scheduling; `then` under it, even if `work` raised."""
        lock = self._lock

        def run() -> None:
            try:
                work()
            except Exception:
                log.exception("background preemption failed")
            finally:
                with lock:
                    then()

        threading.Thread(target=run, name="kubesched-preemption", daemon=True).start()

    def lister(self, kind: str) -> list[Any]:
        informer = self.informers.get(kind)
        return informer.objects() if informer is not None else []
