"""LiveCluster: the scheduler core driven by a real API server.

It is three things at once:

* the `ClusterPort` the core sends decisions to (binds, Events, status patches, evictions,
  listers), mirroring `cluster.memory.MemoryCluster`;
* the owner of the informers that feed the core (Pods, Nodes, and every other kind plugins list,
  skipping kinds the server does not serve, such as the PodGroup CRD of a cluster without
  scheduler-plugins);
* the scheduling loop, with binding cycles in a bounded `BindPipeline` (see `pipeline`);
* the owner of the config's HTTP extenders (`extenders:`), called from the core exactly as in
  `kubesched simulate`.

Concurrency model (one rule): **all scheduler state is guarded by one lock, `StateLock`**, and
everything that touches the `Scheduler` holds it:

* the scheduling-loop thread takes it for slices of steps (the informers' changes, which they hand
  to it in order instead of taking the lock, see `handoff`; backoff; Permit waiters; one
  `schedule_one()`), so changes and binding results interleave between pods;
* each binding cycle runs on a pipeline worker holding the lock, and **lets go of it for the
  duration of the `POST .../binding`** (`bind`), so many binds are in flight while the loop keeps
  scheduling. The core is written for this: before the POST the pod is assumed in the cache and done
  in the queue, so anything that happens meanwhile (its own watch event, a delete) sees a
  consistent state. VolumeBinding's PreBind writes and its wait for the PV controller
  (`bind_pvc`, `provision_pvc`, see `volumes`) let go of it the same way. The cycle's `Scheduled`
  Event is sent by the same worker once the cycle is over (`AsyncCalls.carry`), not by an Event
  worker woken for it.

Back-pressure and stale decisions: the loop pops a pod only while the pipeline has room (at most
`bind_depth` pods placed but not bound). Just before each bind the core re-validates the decision
against the cache (node still there, pod still fits) and asks the pipeline's gate, which refuses
once leadership is lost, the Lease fence expired or shutdown began; a refused or stale decision is
undone and its pod requeued at once, with a log line and `kubesched_binds_abandoned_total`.

Extenders: filter and prioritize are part of the scheduling cycle, so they run under the lock like
every other step of it (the cycle is serial, as upstream's is; `httpTimeout` bounds each call). A
`bindVerb` extender binds in the binding cycle instead of the POST above, and like it lets go of
the lock for the HTTP call.

The lock is FIFO (a waiting binder is not starved by the loop re-taking the lock at once, which a
plain `threading.Lock` allows) and knows its owner (so `bind` can tell it is held). Events, status
patches and evictions never block anyone: they are queued to worker threads (`AsyncCalls`).

Never bound twice: a pod is only popped while unbound and not in the cache; the API server refuses
a second Binding with 409 "already assigned", which `bind` treats as final and never as a success
(someone else bound it, so no `Scheduled` Event and no scheduled count are ours to give): the pod is
recorded as bound there at once, so it leaves the queue instead of being retried.

Beside it: the lock (`state_lock`), which kinds to watch (`discovery`), the extenders' binding
(`live_extenders`), the attempts' log fields and the metrics protocol (`live_reports`), and what a
pod that does not decode still says (`bad_pods`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from kubesched.api.objects import Pod, PodExtendedResourceClaimStatus
from kubesched.api.resource import AllocationResult, Condition, ResourceClaim, ResourceClaimConsumerReference
from kubesched.api.scheduling_groups import COMPOSITE_POD_GROUP_KEY, POD_GROUP_KEY, PodGroup
from kubesched.api.storage import PersistentVolumeClaim
from kubesched.cluster.kube.bad_pods import pod_identity
from kubesched.cluster.kube.binder import BindConflict, Binder
from kubesched.cluster.kube.claims import ApiClaimWriter
from kubesched.cluster.kube.client import KubeClient
from kubesched.cluster.kube.discovery import GROUP_KINDS, served_kinds
from kubesched.cluster.kube.events import EventRecorder
from kubesched.cluster.kube.handoff import LoopHandoff
from kubesched.cluster.kube.informer import (
    KINDS,
    ApiListWatch,
    CallbackHandlers,
    Informer,
    ListWatch,
    ResourceKind,
)
from kubesched.cluster.kube.live_extenders import LiveExtenders
from kubesched.cluster.kube.live_reports import LiveMetrics, attempt_fields
from kubesched.cluster.kube.pipeline import BindPipeline, Fence
from kubesched.cluster.kube.state_lock import StateLock
from kubesched.cluster.kube.status import PodStatusWriter
from kubesched.cluster.kube.volumes import ApiVolumeBinder, ApiVolumeReader, InformerVolumeReader
from kubesched.cluster.kube.workers import AsyncCalls
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.errors import InputError
from kubesched.framework.events import ActionType, Resource
from kubesched.framework.pod_groups import SchedulingGroups, with_condition
from kubesched.framework.registry import Registry
from kubesched.scheduler.binding_cycle import BindingJob
from kubesched.scheduler.clock import Clock, RealClock
from kubesched.scheduler.profiles import options_from_config, profiles_from_config
from kubesched.scheduler.scheduler import Abandoned, Attempt, Scheduler

__all__ = ["LiveCluster", "LiveOptions"]

log = logging.getLogger(__name__)
#: One line per scheduling attempt at debug level, with its fields in `extra["fields"]`.
decisions = logging.getLogger("kubesched.decisions")

#: Kinds whose changes may make an unschedulable pod schedulable, and the event resource they raise.
_EVENT_RESOURCES: dict[str, Resource] = {
    "PersistentVolume": Resource.PERSISTENT_VOLUME,
    "PersistentVolumeClaim": Resource.PERSISTENT_VOLUME_CLAIM,
    "StorageClass": Resource.STORAGE_CLASS,
    "CSINode": Resource.CSI_NODE,
    "CSIDriver": Resource.CSI_DRIVER,
    "CSIStorageCapacity": Resource.CSI_STORAGE_CAPACITY,
    # scheduler-plugins' PodGroup: a new or resized group can complete a gang Coscheduling turned away.
    "PodGroup": Resource.POD_GROUP,
    # DynamicResources: a claim created or freed, a new class or new devices.
    "ResourceClaim": Resource.RESOURCE_CLAIM,
    "ResourceSlice": Resource.RESOURCE_SLICE,
    "DeviceClass": Resource.DEVICE_CLASS,
    "DeviceTaintRule": Resource.DEVICE_TAINT_RULE,
}
#: Pods parked longer than upstream's 5 minutes are retried; checked this often (upstream: 30 s).
LEFTOVER_FLUSH_PERIOD = 30.0
#: The scheduling loop keeps the state lock for consecutive steps this long at most before it lets
#: the binders and informers waiting for it go first.
LOOP_SLICE_SECONDS = 0.005
#: How often queue/cache gauges are refreshed.
HOUSEKEEPING_PERIOD = 0.5
#: The scheduling loop counts as stuck (for /livez) when it has not come round for this long: a
#: plugin that hangs, or a thread that never lets go of the state lock. Extenders' `httpTimeout`s
#: are added, since a cycle may legitimately wait for each of them.
LOOP_STALL_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class LiveOptions:
    #: Pods placed but not yet bound, at most (the bind pipeline's depth; each has its own thread).
    bind_depth: int = 32
    #: Threads sending Events, and threads sending status patches / evictions, at most (each pool
    #: starts them as its backlog needs them). Events must keep pace with binds whatever the API
    #: server's latency (their own rate limiter bounds them): a backlog would be lost on shutdown,
    #: leaving bound pods without their `Scheduled` Event. Every bind is followed by an Event that
    #: takes about as long to send, and up to `bind_depth` binds are in flight: 16 threads left
    #: ~300 Events unsent after 3,000 binds at 1,000 nodes on a loaded API server, 64 none.
    event_workers: int = 64
    status_workers: int = 2
    #: Kinds to watch besides Pods and Nodes (default: every kind plugins may list).
    kinds: tuple[str, ...] | None = None


class LiveCluster:
    """ClusterPort over the API server, informers, and the scheduling loop (see module docstring)."""

    def __init__(
        self,
        config: KubeSchedulerConfiguration,
        registry: Registry,
        client: KubeClient,
        *,
        events_client: KubeClient | None = None,
        metrics: LiveMetrics | None = None,
        options: LiveOptions = LiveOptions(),
        clock: Clock | None = None,
        source: ListWatch | None = None,
        fence: Fence | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.options = options
        self.metrics = metrics
        self._lock = StateLock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._leading = threading.Event()
        self._clock = clock or RealClock()
        profiles = profiles_from_config(config, registry)
        self.profile_names = frozenset(p.scheduler_name for p in profiles)
        #: The config's HTTP extenders (None when it lists none); closed by `stop()`.
        self.extenders: LiveExtenders | None = (
            LiveExtenders(list(config.extenders), self._lock) if config.extenders else None
        )
        #: Binding cycles in flight (bounded) and the gate every bind passes. It starts suspended:
        #: nothing is bound before `set_leading(True)`.
        self.pipeline = BindPipeline(
            options.bind_depth,
            limiter=getattr(client, "limiter", None),
            fence=fence,
            on_done=self._wake.set,
        )
        self.pipeline.suspend("not leading")
        if self.extenders is not None:
            self.extenders.pipeline = self.pipeline
        self.scheduler = Scheduler(
            profiles,
            registry,
            self,
            self._clock,
            options_from_config(config),
            observer=self._observe,
            run_binding=self._run_binding,
            extenders=self.extenders,
            bind_gate=self.pipeline.refusal,
            on_abandoned=self._abandoned,
            batch_metrics=metrics,
        )
        if metrics is not None:
            for fwk in self.scheduler.frameworks.values():
                metrics.instrument(fwk.plugins)
        if self.extenders is not None:
            log.info("opportunistic batching off: the configuration has extenders")
        for fwk in self.scheduler.frameworks.values():
            if fwk.unsigned_plugins:  # as kube-scheduler says it at start-up
                log.info(
                    "profile %s: opportunistic batching off: plugins %s do not sign pods",
                    fwk.profile_name,
                    ", ".join(fwk.unsigned_plugins),
                )
        self.binder = Binder(client)
        self.informers: dict[str, Informer] = {}
        self._features = registry.features
        #: The scheduling.k8s.io groups and their pods, fed by the informers (empty with the gates off).
        self.groups = SchedulingGroups()
        #: VolumeBinding's PreBind writes (PV claimRef, selected-node) and waits through this.
        self.volumes = ApiVolumeBinder(client, InformerVolumeReader(self.informers, ApiVolumeReader(client)))
        self.claims = ApiClaimWriter(client, now=lambda: time.time())
        self._event_calls = AsyncCalls("events", options.event_workers)
        self._status_calls = AsyncCalls("pod-status", options.status_workers)
        self.events = EventRecorder(events_client or client, self._event_calls)
        self.status = PodStatusWriter(client, self._status_calls)
        self._source = source or ApiListWatch(client)
        self._loop_thread: threading.Thread | None = None
        #: Informer changes for the loop (see `handoff`); taken while the loop thread runs.
        self._handoff = LoopHandoff(self._lock)
        self._loop_error: BaseException | None = None
        self._loop_beat = 0.0  # monotonic time the loop last came round
        self.loop_stall_seconds = LOOP_STALL_SECONDS + sum(
            e.timeout for e in (self.extenders.extenders if self.extenders is not None else ())
        )
        self._reported_bad: set[tuple[str, str]] = set()
        self._next_leftover_flush = 0.0
        #: Counters (read them under no lock; they only grow).
        self.scheduled = 0
        self.bind_conflicts = 0
        self.attempts = 0
        self.abandoned = 0

    # ================================================================== ClusterPort

    def bind(self, pod: Pod, node_name: str) -> None:
        """POST the Binding through the pipeline's gate, with the state lock let go.

        The pipeline took the client's rate-limiter token before the cycle ran, so the request goes
        out at once. A 409 is final and never a success (see module docstring); `BindRefused` means
        the gate closed (the core abandons the attempt).
        """
        conflict: BindConflict | None = None
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
            # Bound elsewhere: tell the core now (the watch event may lag), so the pod leaves the
            # queue and the failed binding cycle below does not requeue it.
            pods = self.informers.get("Pod")
            current = pods.get(f"{pod.metadata.namespace}/{pod.metadata.name}") if pods else None
            if (
                current is not None
                and current.metadata.uid == pod.metadata.uid
                and not current.spec.node_name
            ):
                bound = msgspec.structs.replace(
                    current, spec=msgspec.structs.replace(current.spec, node_name=conflict.node)
                )
                if self._lock.owned():
                    self.scheduler.on_pod_update(current, bound)
                else:  # a split cycle's bind: its failure reaches the loop after this, in order
                    self._dispatch(lambda: self.scheduler.on_pod_update(current, bound))
        raise conflict

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

    def remove_claim_reservation(self, claim: ResourceClaim, pod: Pod) -> None:
        with self._lock.released():
            self.claims.remove_reservation(claim, pod)

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

        def run() -> None:
            try:
                work()
            except Exception:
                log.exception("background preemption failed")
            finally:
                with self._lock:
                    then()

        threading.Thread(target=run, name="kubesched-preemption", daemon=True).start()

    def lister(self, kind: str) -> list[Any]:
        informer = self.informers.get(kind)
        return informer.objects() if informer is not None else []

    # ================================================================== informers

    def discover(self) -> list[ResourceKind]:
        """The kinds to watch that this server serves (Pods and Nodes are required; see `discovery`)."""
        wanted = self.options.kinds if self.options.kinds is not None else tuple(KINDS)
        return served_kinds(self.client, wanted, self._features)

    def start_informers(self, kinds: list[ResourceKind] | None = None) -> None:
        for rk in kinds if kinds is not None else self.discover():
            informer = Informer(
                rk,
                self._source,
                self._handlers_for(rk.key),
                dispatch=self._dispatch,
                on_decode_error=self._pod_decode_error if rk.key == "Pod" else None,
            )
            self.informers[rk.key] = informer
        self._event_calls.start()
        self._status_calls.start()
        self.events.start()
        for informer in self.informers.values():
            informer.start()

    def has_synced(self) -> bool:
        return bool(self.informers) and all(i.has_synced for i in self.informers.values())

    def unsynced(self) -> list[str]:
        return [kind for kind, i in self.informers.items() if not i.has_synced]

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        for informer in self.informers.values():
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            while not informer.wait_for_sync(0.2 if remaining is None else min(0.2, remaining)):
                if self._stopping.is_set():
                    return False
                if deadline is not None and time.monotonic() >= deadline:
                    return False
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        return True

    def _dispatch(self, fn: Callable[[], None]) -> None:
        """One batch of an informer's changes: to the loop while it runs, else applied here."""
        self._handoff.deliver(fn)
        self._wake.set()

    def _handlers_for(self, kind: str) -> CallbackHandlers | None:
        s = self.scheduler
        if kind == "Node":
            return CallbackHandlers(s.on_node_add, s.on_node_update, s.on_node_delete)
        if kind == "Pod":
            return CallbackHandlers(self._on_pod_add, self._on_pod_update, self._on_pod_delete)
        if kind == POD_GROUP_KEY:  # the groups first, then the event for pods GangScheduling holds
            return CallbackHandlers(self._on_group_add, self._on_group_update, self.groups.remove)
        if kind == COMPOSITE_POD_GROUP_KEY:
            return CallbackHandlers(self._on_composite_add, self.groups.update, self.groups.remove)
        if kind in GROUP_KINDS:
            return CallbackHandlers(self.groups.put, self.groups.update, self.groups.remove)
        resource = _EVENT_RESOURCES.get(kind)
        if resource is None:
            return None  # listed by plugins, but no queueing event is tied to it

        def moved(action: ActionType) -> Callable[[Any, Any], None]:
            def handle(old: Any, new: Any) -> None:
                s.on_object_event(resource, action, old, new)

            return handle

        add, update, delete = moved(ActionType.ADD), moved(ActionType.UPDATE), moved(ActionType.DELETE)
        return CallbackHandlers(lambda o: add(None, o), update, lambda o: delete(o, None))

    def _on_group_add(self, pg: Any) -> None:
        self.groups.put(pg)
        self.scheduler.on_object_event(Resource.SCHEDULING_POD_GROUP, ActionType.ADD, None, pg)

    def _on_composite_add(self, cpg: Any) -> None:
        self.groups.put(cpg)
        self.scheduler.on_object_event(Resource.SCHEDULING_COMPOSITE_POD_GROUP, ActionType.ADD, None, cpg)

    def _on_group_update(self, old: Any, new: Any) -> None:
        self.groups.update(old, new)
        self.scheduler.on_object_event(Resource.SCHEDULING_POD_GROUP, ActionType.UPDATE, old, new)

    def set_pod_group_condition(self, pod_group: PodGroup, condition: Condition) -> None:
        """The PodGroup's condition: kept here at once (the next cycle reads it), written by a status
        patch on the status workers."""
        self.groups.put(with_condition(pod_group, condition))
        self.status.set_pod_group_condition(pod_group, condition)

    def _on_pod_add(self, pod: Pod) -> None:
        self.groups.on_pod_add(pod)
        try:
            self.scheduler.on_pod_add(pod)
        except InputError as exc:
            self._bad_pod(pod, str(exc))

    def _on_pod_update(self, old: Pod, new: Pod) -> None:
        self.groups.on_pod_update(old, new)
        try:
            self.scheduler.on_pod_update(old, new)
        except InputError as exc:
            self._bad_pod(new, str(exc))

    def _on_pod_delete(self, pod: Pod) -> None:
        self.groups.on_pod_delete(pod)
        self.scheduler.on_pod_delete(pod)

    def _pod_decode_error(self, raw: bytes, exc: Exception) -> None:
        pod = pod_identity(raw)
        if pod is None:
            log.warning("skipping an undecodable pod: %s", exc)
            return
        self._dispatch(lambda: self._bad_pod(pod, f"cannot decode the pod: {exc}"))

    def _bad_pod(self, pod: Pod, message: str) -> None:
        """A pod the core cannot take (e.g. an invalid quantity): tell its owner once per version.

        Only this pod is affected: it gets a FailedScheduling Event and `PodScheduled=False` with
        reason SchedulerError, and every other pod is scheduled as usual.
        """
        if pod.spec.node_name or pod.spec.scheduler_name not in self.profile_names:
            log.warning("ignoring pod %s: %s", pod.key, message)
            return
        mark = (pod.metadata.uid or pod.key, pod.metadata.resource_version)
        if mark in self._reported_bad:
            return
        if len(self._reported_bad) > 10_000:
            self._reported_bad.clear()
        self._reported_bad.add(mark)
        log.warning("pod %s cannot be scheduled: %s", pod.key, message)
        reporter = pod.spec.scheduler_name
        self.record_event(
            pod,
            type="Warning",
            reason="FailedScheduling",
            action="Scheduling",
            note=message,
            reporter=reporter,
        )
        self.set_pod_scheduled_condition(
            pod, reason="SchedulerError", message=message, nominated_node_name=None
        )
        if self.metrics is not None:
            self.metrics.observe_attempt("Error", reporter, 0.0)

    # ================================================================== scheduling loop

    def set_leading(self, leading: bool) -> None:
        """Start or stop popping pods and binding (leader election); informers keep running either way.

        Losing leadership shuts the pipeline's gate before anything else: from then on no bind
        request is sent, and the cycles still queued are abandoned as they reach the gate.
        """
        if leading:
            self._leading.set()
            if not self._stopping.is_set():
                self.pipeline.resume()
        else:
            self.pipeline.suspend("not leading")
            self._leading.clear()
        self._wake.set()

    @property
    def leading(self) -> bool:
        return self._leading.is_set()

    def start_loop(self) -> None:
        self._loop_thread = threading.Thread(target=self._loop, name="scheduling-loop", daemon=True)
        self._handoff.open()
        self._loop_thread.start()

    def loop_problem(self) -> str | None:
        """For /livez: None while the loop runs and comes round (or has not been started yet).

        The loop comes round at least once a second when idle, and while it waits for room in the
        bind pipeline; one that has not for `loop_stall_seconds` is stuck in a scheduling cycle
        (a plugin or extender that hangs) or waiting for a state lock nobody lets go of.
        """
        if self._loop_error is not None:
            return f"scheduling loop crashed: {self._loop_error!r}"
        if self._loop_thread is None or self._stopping.is_set():
            return None
        if not self._loop_thread.is_alive():
            return "scheduling loop exited"
        stalled = time.monotonic() - self._loop_beat
        if stalled > self.loop_stall_seconds:
            return f"scheduling loop stuck for {stalled:.0f} s (limit {self.loop_stall_seconds:.0f} s)"
        return None

    def _loop(self) -> None:
        last_housekeeping = 0.0
        try:
            while not self._stopping.is_set():
                self._loop_beat = time.monotonic()
                self._wake.clear()
                wait = 1.0
                # Pop only while leading, while the gate is open (the Lease fence may have run out
                # before the elector noticed) and while the pipeline has room: a full pipeline
                # wakes the loop each time a binding cycle ends.
                if self._may_pop():
                    with self._lock:
                        wait = self._steps()
                elif self._handoff:
                    with self._lock:
                        self._handoff.apply()
                now = time.monotonic()
                if now - last_housekeeping >= HOUSEKEEPING_PERIOD:
                    last_housekeeping = now
                    self._housekeeping()
                if wait > 0:
                    self._wake.wait(wait)
        except BaseException as exc:
            self._loop_error = exc
            log.exception("scheduling loop crashed")
            raise
        finally:
            self._handoff.close()

    def _may_pop(self) -> bool:
        return self._leading.is_set() and self.pipeline.refusal() is None and self.pipeline.has_room()

    def _steps(self) -> float:
        """Steps under one hold of the lock, for up to `LOOP_SLICE_SECONDS` while there is work.

        Every hold of the lock that others wait for hands it over (FIFO) and costs two thread
        switches; with one step per hold most pods paid that, as binders and informers queue behind
        every step. Slices took CPU per pod from 1.68 to 1.55 ms (3,000 pods on 1,000 nodes, medians
        of five interleaved runs).
        """
        deadline = time.monotonic() + LOOP_SLICE_SECONDS
        while True:
            wait = self._step()
            if wait > 0 or time.monotonic() >= deadline or self._stopping.is_set() or not self._may_pop():
                return wait

    def _step(self) -> float:
        """One loop step under the lock; returns how long to sleep (0: go on at once)."""
        self._handoff.apply()
        s = self.scheduler
        queue = s.queue
        now = self._clock.now()
        queue.flush_backoff_completed()
        if now >= self._next_leftover_flush:
            queue.flush_unschedulable_leftover()
            self._next_leftover_flush = now + LEFTOVER_FLUSH_PERIOD
        s.release_waiting_pods()
        try:
            if s.schedule_one():
                return 0.0
        except Exception:
            # A bug in a plugin or the core must not take the scheduler down; the pod stays in
            # flight (visible in logs), every other pod goes on.
            log.exception("scheduling cycle failed")
            return 0.0
        wakeups = [t for t in (queue.next_backoff_expiry(), s.next_permit_deadline()) if t is not None]
        if not wakeups:
            return 1.0
        return min(1.0, max(0.005, min(wakeups) - now))

    def _housekeeping(self) -> None:
        if self.metrics is None:
            return
        with self._lock:
            q = self.scheduler.queue
            cache = self.scheduler.cache
            counts = q.pending_counts()
            sizes = (cache.node_count, cache.pod_count, cache.assumed_count)
            incoming = dict(q.incoming)
        self.metrics.set_pending(counts)
        self.metrics.set_cache_size(*sizes)
        self.metrics.sync_incoming(incoming)
        self.metrics.sync_dropped(
            {
                "events": self._event_calls.dropped + self.events.dropped,
                "pod-status": self._status_calls.dropped,
            }
        )

    def _run_binding(self, fn: Callable[[], None]) -> None:
        """The core's `run_binding` hook (called under the lock): hand the cycle to the pipeline.

        A cycle whose bind may be sent apart (`BindingJob.splittable`: DefaultBinder, nothing to do
        in PreBind) is split when its rate-limiter token is there now: its checks run here, under
        the lock this thread holds; a worker sends the bind without the lock and hands the rest
        back to the loop (`_dispatch`), so it never waits for the lock. Waiting for the lock twice
        per pod, each time a thread switch for the worker and one for the loop, cost more CPU than
        the bind's request. Other cycles run whole on their worker, taking the lock around them.
        """
        if isinstance(fn, BindingJob) and fn.splittable() and self.pipeline.take_token_now():
            if fn.prepare():
                self.pipeline.submit(lambda: self._send_bind(fn), token_taken=True)
            return
        events = self._event_calls

        def cycle() -> Callable[[], None] | None:
            # The cycle's `Scheduled` Event is sent by this worker once the cycle is over, on the
            # connection it just used, instead of waking an Event worker for it.
            events.carry()
            try:
                with self._lock:
                    fn()
            finally:
                carried = events.carried()
            return (lambda: events.make(carried)) if carried else None

        self.pipeline.submit(cycle)

    def _send_bind(self, job: BindingJob) -> None:
        """A split cycle's bind, on a pipeline worker without the lock; the rest goes to the loop."""
        status = job.bind()
        self._dispatch(lambda: job.finish(status))

    def _abandoned(self, a: Abandoned) -> None:
        """A decision dropped before its bind (core callback, under the lock): say so, count it."""
        self.abandoned += 1
        if a.reason == "Refused":
            log.debug("not binding pod %s to %s: %s", a.pod.key, a.node, a.message)
        else:
            log.info("not binding pod %s to %s: %s; requeued", a.pod.key, a.node, a.message)
        if self.metrics is not None:
            self.metrics.observe_abandoned_bind(a.reason, a.profile)

    def _observe(self, attempt: Attempt) -> None:
        if decisions.isEnabledFor(logging.DEBUG):
            error = attempt.error.__cause__ or attempt.error if attempt.error is not None else None
            decisions.debug("scheduling attempt", extra={"fields": attempt_fields(attempt)}, exc_info=error)
        if attempt.result == "Waiting":
            return
        self.attempts += 1
        if attempt.result == "Scheduled":
            self.scheduled += 1
        if self.metrics is None:
            return
        self.metrics.observe_attempt(attempt.result, attempt.profile, attempt.duration)
        if attempt.result == "Unschedulable":
            fwk = self.scheduler.frameworks.get(attempt.profile)
            if fwk is not None and fwk.plugins_at("postFilter"):
                self.metrics.observe_preemption_attempt()

    # ================================================================== shutdown

    def stop(self, timeout: float = 1.5) -> None:
        """Stop within about `timeout` seconds: no more pops and no more bind requests, then wait
        for the requests already on the wire, flush Events and status patches with what time is
        left, stop the informers.

        Queued binds are dropped, not sent: their pods stay unbound for whoever schedules next
        (kube-scheduler cancels its binding goroutines the same way), so a shutdown under load takes
        a bounded time instead of as long as the backlog.
        """
        deadline = time.monotonic() + timeout

        def left(share: float = 1.0) -> float:
            return max(0.05, (deadline - time.monotonic()) * share)

        self._stopping.set()
        self.pipeline.close("shutting down")
        self._leading.clear()
        self._wake.set()
        if self._loop_thread is not None:
            self._loop_thread.join(left(0.3))
        if not self.pipeline.drain(left(0.5)):
            log.warning("%d bind requests still unanswered at shutdown", self.pipeline.on_wire)
        self.pipeline.wait_idle(left(0.3))  # the refused cycles undo their assumes
        self.pipeline.stop_workers()
        if self.extenders is not None:
            self.extenders.close()  # after the binds: a bindVerb extender may still be answering
        # Events and status patches were being sent all along; what is left of the time goes to the
        # backlog, Events first (a bound pod's `Scheduled` Event is the one users look for), with
        # the repeat counts not yet written.
        self.events.stop()
        self._event_calls.stop(left(0.8))
        if self.events.unsent:
            log.warning("events: %d Events not sent at shutdown", self.events.unsent)
        self._status_calls.stop(left())
        for informer in self.informers.values():
            informer.stop()

    def snapshot_counts(self) -> dict[str, int]:
        """Queue and cache sizes (for logs, tests and benchmarks)."""
        with self._lock:
            counts = dict(self.scheduler.queue.pending_counts())
            counts["in_flight_binds"] = self.pipeline.admitted
            counts["cache_pods"] = self.scheduler.cache.pod_count
            counts["assumed"] = self.scheduler.cache.assumed_count
            return counts
