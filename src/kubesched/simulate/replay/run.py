"""Replay a scenario's timeline in virtual time through the real scheduler, queue and MemoryCluster.

The loop is the simulator's (`virtual_time.run_timeline`) with this timeline in front of it: apply the
events due now, let the scheduler drain its active queue, then jump the virtual clock to whatever
comes first — the next timeline event, a pod finishing its `runFor`, a backoff expiring, the
unschedulable pool's periodic flush, or a Permit deadline. Nothing is forked: backoff, requeueing
on cluster events (queueing hints) and preemption are the scheduler's own. Scheduling itself takes
no virtual time, so a pod's wait is the time it spent in the queue and for room to appear.

Workloads in the timeline (or PATHs) are run by the simulated controllers between scheduling
passes, in zero virtual time (`replay/workloads.py`).

The replay ends at `spec.until` or, without it, once the timeline is over and nothing has been
bound for IDLE_HORIZON_SECONDS of retries (as `simulate` does).
"""

from __future__ import annotations

import gc
import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import msgspec

from kubesched.api.group_claims import GROUP_CLAIMS
from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod
from kubesched.cluster.memory import ClusterError, MemoryCluster
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework.node_info import pod_key
from kubesched.framework.registry import Registry
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.options import TIE_BREAK_RANDOM
from kubesched.scheduler.profiles import profiles_from_config
from kubesched.scheduler.scheduler import Attempt
from kubesched.simulate.node_quantities import check_node_quantities
from kubesched.simulate.replay.gpu import GpuMeter
from kubesched.simulate.replay.model import ReplayPod, ReplayReport, ReplaySummary
from kubesched.simulate.replay.timeline import Counters, Sampler, default_interval, latency
from kubesched.simulate.replay.workloads import TimelineControllers, needs_controllers
from kubesched.simulate.scenario import ObjectRef, Scenario, TimelineEvent
from kubesched.simulate.snapshot.run import PER_NODE_MAX_NODES, PodRecord, node_usage, pod_result
from kubesched.simulate.virtual_time import drain, long_lived_heap, new_scheduler, run_timeline

__all__ = ["replay"]

_T = TypeVar("_T")

#: Every this many timeline events, what the replay built so far is frozen out of the cyclic GC's
#: sight (`gc.freeze`); `long_lived_heap` hands it all back when the replay ends. Garbage cycles
#: made just before a freeze are kept until then: a few hundred objects at most each time.
FREEZE_EVERY_EVENTS = 10_000

#: Why a pod left the cluster, as `pods[].ended` reports it.
COMPLETED, DELETED, PREEMPTED, NODE_DELETED = "Completed", "Deleted", "Preempted", "NodeDeleted"


@dataclass(slots=True)
class _Life:
    """One pod instance: its report record and its times (a name can be reused by a later pod)."""

    record: PodRecord
    index: int
    created: float
    responsible: bool
    run_for: float | None = None
    bound: float | None = None
    ended: float | None = None
    ending: str | None = None
    error: bool = False


def replay(
    scenario: Scenario,
    config: KubeSchedulerConfiguration,
    registry: Registry,
    *,
    initial: LoadedObjects | None = None,
    seed: int = 0,
    explain: bool = False,
    progress: Callable[[int, int], None] | None = None,
    tie_break: str = TIE_BREAK_RANDOM,
) -> ReplayReport:
    """Replay `scenario` (after the objects of `initial`, created at 0s) under `config`; `tie_break`
    decides among equal best scores (scheduler.options.TIE_BREAKS)."""
    return _Replay(
        scenario, config, registry, initial or LoadedObjects(), seed, explain, progress, tie_break
    ).run()


class _Replay:
    def __init__(
        self,
        scenario: Scenario,
        config: KubeSchedulerConfiguration,
        registry: Registry,
        initial: LoadedObjects,
        seed: int,
        explain: bool,
        progress: Callable[[int, int], None] | None,
        tie_break: str = TIE_BREAK_RANDOM,
    ) -> None:
        self.scenario = scenario
        self.events = _initial_events(initial) + scenario.events
        for event in self.events:
            if isinstance(event.obj, Node):
                check_node_quantities(event.obj)
        self.progress = progress
        self.clock = VirtualClock()
        self.cluster = MemoryCluster(
            _static_objects(initial, scenario.objects),
            self.clock.now,
            keep_events=False,
            group_claims=registry.features.enabled(GROUP_CLAIMS),
        )
        self.gpus = GpuMeter.for_scenario(
            self.cluster.objects.resource_slices,
            self.cluster.objects.resource_claim_templates,
            (e.obj for e in self.events if isinstance(e.obj, Node)),
            (e.obj for e in self.events if isinstance(e.obj, Pod) and e.action == "create"),
        )
        self.workloads = (
            TimelineControllers(
                self.cluster,
                seed=seed,
                now=self.clock.now,
                gates=registry.features,
            )
            if needs_controllers(self.cluster.objects, scenario)
            else None
        )
        self.explain = explain
        self.scheduler = new_scheduler(
            profiles_from_config(config, registry),
            config,
            registry,
            self.cluster,
            self.clock,
            seed=seed,
            explain=explain,
            observer=self._observe,
            tie_break=tie_break,
        )
        self.cluster.subscribe(self.scheduler)
        self.cluster.subscribe(self)  # after the scheduler: binds and deletes reach us second
        self.lives: list[_Life] = []
        self.current: dict[str, _Life] = {}  # pod key -> its live instance
        self.keys: dict[str, str] = {}  # namespace/name -> pod key, for delete and update events
        self.completions: list[tuple[float, int, str]] = []  # (time, life index, pod key)
        self.counters = Counters()
        self.waits: list[float] = []
        self.evictions: dict[str, int] = {PREEMPTED: 0, NODE_DELETED: 0}
        self.skipped: dict[str, int] = {}
        self._ending: str | None = None  # why the replay itself is deleting a pod right now
        last = self.events[-1].at if self.events else 0.0
        interval = scenario.sample_interval or default_interval(scenario.until or last)
        self.sampler = Sampler(interval, self.scheduler.cache.snapshot, self.counters)
        self.applied = 0  # timeline events applied so far
        self.frozen_at = 0  # events applied at the last gc.freeze
        self.bound_before = -1

    # ================================================================== the loop
    def run(self) -> ReplayReport:
        started = time.perf_counter()
        # The parsed timeline (every pod and node to come) lives as long as the replay: keep the
        # cyclic GC from walking it again at every full collection (~15% of a replay's CPU).
        with long_lived_heap():
            try:
                applied = self._loop()
            finally:
                if self.scheduler.extenders is not None:
                    self.scheduler.extenders.close()
            seconds = time.perf_counter() - started
            # Still frozen: the report's own objects do not make a full collection walk the rest.
            return self._report(seconds, applied)

    def _loop(self) -> int:
        """Apply the timeline and schedule in virtual time; returns how many events were applied."""
        run_timeline(self.scheduler, self.clock, self, until=self.scenario.until)
        return self.applied

    # ================================================================== the Timeline protocol
    def step(self, now: float) -> bool:
        """Apply the events due and the completions due, then schedule (controllers in between)."""
        events = self.events
        moved = False
        while self.applied < len(events) and events[self.applied].at <= now:
            self._apply(events[self.applied])
            self.applied += 1
            moved = True
        if self.applied - self.frozen_at >= FREEZE_EVERY_EVENTS:
            # What the replay has built so far (pods' records, the cluster's objects) mostly
            # lives to the end: keep full collections from walking it again and again.
            gc.freeze()
            self.frozen_at = self.applied
        if self.progress is not None:
            self.progress(self.applied, len(events))
        self._complete_due(now)
        self._settle()
        if self.gpus is not None and moved:
            self.gpus.observe()
        if self.counters.bound != self.bound_before:
            self.bound_before = self.counters.bound
            moved = True
        return moved

    def next_at(self) -> float | None:
        """The next timeline event or pod completion."""
        times = [
            t
            for t in (
                self.events[self.applied].at if self.applied < len(self.events) else None,
                self.completions[0][0] if self.completions else None,
            )
            if t is not None
        ]
        return min(times) if times else None

    def over(self) -> bool:
        return self.applied >= len(self.events) and not self.completions

    def advancing(self, to: float, *, last: bool) -> None:
        self.sampler.take(to, inclusive=last)

    def _settle(self) -> None:
        """Scheduling, and with workloads, controller rounds in between, until nothing moves."""
        if self.workloads is None:
            self._drain()
        else:
            self.workloads.settle(self._drain, self._as_deleted)

    def _as_deleted(self, act: Callable[[], _T]) -> _T:
        """Run `act`, whose pod deletes are a controller's: they end as Deleted, not as evictions."""
        self._ending = DELETED
        try:
            return act()
        finally:
            self._ending = None

    def _drain(self) -> None:
        drain(self.scheduler)

    # ================================================================== timeline events
    def _apply(self, event: TimelineEvent) -> None:
        ref = event.ref
        if ref.kind == "Node":
            self._apply_node(event)
        elif ref.kind != "Pod":
            assert self.workloads is not None  # made for any scenario with a workload event
            workloads = self.workloads
            skipped = self._as_deleted(lambda: workloads.apply(event))
            if skipped is not None:
                self._skip(skipped)
        elif event.action == "create":
            assert isinstance(event.obj, Pod)
            self._create_pod(event.obj, event.run_for)
        elif event.action == "update":
            assert isinstance(event.obj, Pod)
            self._update_pod(event.obj)
        else:
            self._delete_pod(ref)

    def _apply_node(self, event: TimelineEvent) -> None:
        if event.action == "delete":
            self._delete_node(event.ref)
            return
        assert isinstance(event.obj, Node)
        exists = event.ref.name in self.cluster.nodes
        if event.action == "create" and exists:
            self._skip("create of a node that exists (applied as an update)")
        elif event.action == "update" and not exists:
            self._skip("update of a node that does not exist (applied as a create)")
        self.cluster.add_node(event.obj)

    def _delete_node(self, ref: ObjectRef) -> None:
        if self.cluster.remove_node(ref.name) is None:
            self._skip("delete of a node that does not exist")
            return
        # PodGC deletes the pods of a node that is gone; the replay does it at once.
        for pod in self.cluster.pods_on_node(ref.name):
            self._remove(pod, NODE_DELETED)

    def _create_pod(self, pod: Pod, run_for: float | None) -> None:
        name = f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"
        if name in self.keys:
            self._skip("create of a pod that exists")
            return
        admitted = self.cluster.admit(pod)
        key = pod_key(admitted)
        life = self._track(admitted, run_for)
        stored = self.cluster.create_pod(admitted, on_error=self._refuse)  # admitting again changes nothing
        if self.workloads is not None:
            self.workloads.adopt(stored)
        if stored.spec.node_name and key in self.current:
            self._bound(key, life)

    def _track(self, pod: Pod, run_for: float | None) -> _Life:
        """Start the report's record of a pod about to be (or just) created."""
        responsible = not pod.spec.node_name and self.scheduler.responsible_for(pod)
        key = pod_key(pod)
        life = _Life(PodRecord(pod), len(self.lives), self.clock.now(), responsible, run_for=run_for)
        self.lives.append(life)
        self.current[key] = life
        self.keys[f"{pod.metadata.namespace}/{pod.metadata.name}"] = key
        self.counters.created += 1
        if responsible:
            self.counters.pending += 1
            if self.gpus is not None:
                self.gpus.arrive(pod)
        return life

    def _update_pod(self, pod: Pod) -> None:
        key = self.keys.get(f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}")
        life = self.current.get(key) if key is not None else None
        if key is None or life is None:
            self._skip("update of a pod that does not exist")
            return
        if life.bound is not None:
            self._skip("update of a pod that is already bound")
            return
        try:
            life.record.pod = self.cluster.update_pod(pod, on_error=self._refuse)
        except ClusterError:
            self._skip("update of a pod that is already bound")

    def _delete_pod(self, ref: ObjectRef) -> None:
        key = self.keys.get(f"{ref.namespace}/{ref.name}")
        pod = self.cluster.pods.get(key) if key is not None else None
        if pod is None:
            self._skip("delete of a pod that does not exist (completed, evicted or never created)")
            return
        self._remove(pod, DELETED)

    def _complete_due(self, now: float) -> None:
        while self.completions and self.completions[0][0] <= now:
            _, index, key = heapq.heappop(self.completions)
            pod = self.cluster.pods.get(key)
            if pod is not None and self.current.get(key) is self.lives[index]:
                self._remove(pod, COMPLETED)

    def _remove(self, pod: Pod, reason: str) -> None:
        self._ending = reason
        try:
            self.cluster.delete_pod(pod, reason=reason, message=f"replay: {reason}")
        finally:
            self._ending = None

    def _skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    # ================================================================== what the cluster tells us
    def on_node_add(self, node: Node) -> None:
        self._nodes_changed()

    def on_node_update(self, old: Node, new: Node) -> None:
        self._nodes_changed()

    def on_node_delete(self, node: Node) -> None:
        self._nodes_changed()

    def _nodes_changed(self) -> None:
        if self.workloads is not None:
            self.workloads.touch()  # a DaemonSet may add or drop a pod

    def on_pod_add(self, pod: Pod) -> None:
        if self.workloads is not None and pod_key(pod) not in self.current:
            self._track(pod, self.workloads.run_for(pod))  # a controller created it

    def on_pod_update(self, old: Pod, new: Pod) -> None:
        if new.spec.node_name and not old.spec.node_name:
            key = pod_key(new)
            life = self.current.get(key)
            if life is not None:
                self._bound(key, life)
            if self.workloads is not None:
                self.workloads.bound(new)

    def on_pod_delete(self, pod: Pod) -> None:
        key = pod_key(pod)
        life = self.current.pop(key, None)
        if life is None:
            return
        self.keys.pop(f"{pod.metadata.namespace}/{pod.metadata.name}", None)
        now = self.clock.now()
        ending = self._ending or PREEMPTED  # the replay names its own deletes; the rest are victims
        life.ended, life.ending = now, ending
        if life.bound is not None:
            self.counters.running -= 1
        elif life.responsible and not life.error:
            self.counters.pending -= 1
        if self.gpus is not None and life.responsible:
            self.gpus.leave(pod, was_bound=life.bound is not None)
        if ending == COMPLETED:
            self.counters.completed += 1
        elif ending in self.evictions:
            self.evictions[ending] += 1
            self.counters.evicted += 1
        if self.workloads is not None:
            evicted, node_gone = ending in self.evictions, ending == NODE_DELETED
            self.workloads.pod_gone(pod, completed=ending == COMPLETED, evicted=evicted, node_gone=node_gone)

    def _bound(self, key: str, life: _Life) -> None:
        now = self.clock.now()
        life.bound = now
        self.counters.running += 1
        if life.responsible and not life.error:
            self.counters.pending -= 1
            self.counters.bound += 1
            if self.gpus is not None:
                self.gpus.bind(self.cluster.pods.get(key) or life.record.pod, self.cluster.claims.get)
            wait = now - life.created
            self.waits.append(wait)
            self.counters.recent_waits.append(wait)
        if life.run_for is not None:
            heapq.heappush(self.completions, (now + life.run_for, life.index, key))

    def _observe(self, attempt: Attempt) -> None:
        life = self.current.get(pod_key(attempt.pod))
        if life is not None and life.responsible:
            per_node = len(self.cluster.nodes) <= PER_NODE_MAX_NODES
            life.record.observe(attempt, explain=self.explain, per_node=per_node)

    def _refuse(self, pod: Pod, exc: Exception) -> None:
        """A pod the scheduler could not take (e.g. an invalid quantity): an Error, not a crash."""
        life = self.current.get(pod_key(pod))
        if life is not None and life.responsible and not life.error:
            life.error = True
            life.record.result = "Error"
            life.record.message = str(exc)
            self.counters.pending -= 1

    # ================================================================== the report
    def _report(self, seconds: float, applied: int) -> ReplayReport:
        queue = self.scheduler.queue
        pods: list[ReplayPod] = []
        ignored = 0
        for life in self.lives:
            rec = life.record
            if not life.responsible:
                if rec.pod.spec.node_name:
                    continue  # created running: it counts in nodes[], as in simulate
                ignored += 1
                rec.result = "Ignored"
                rec.message = f'no profile named "{rec.pod.spec.scheduler_name}"'
            elif life.ended is None and rec.attempts == 0 and rec.result == "Gated":
                where = queue.where(pod_key(rec.pod))
                if where is not None and where != "gated":
                    rec.result = "Unschedulable"
            base = msgspec.structs.asdict(pod_result(rec, self.cluster))
            if life.bound is not None and life.responsible:
                base["result"], base["node"], base["message"] = "Scheduled", rec.node or base["node"], None
            pods.append(
                ReplayPod(
                    **base,
                    created_at=round(life.created, 3),
                    bound_at=None if life.bound is None else round(life.bound, 3),
                    wait_seconds=None if life.bound is None else round(life.bound - life.created, 3),
                    ended_at=None if life.ended is None else round(life.ended, 3),
                    ended=life.ending,
                )
            )
        table = self.scheduler.cache.snapshot()
        samples = self.sampler.samples
        resources = sorted({r for s in samples for r in s.utilization})
        mean = {
            r: round(sum(s.utilization.get(r, 0.0) for s in samples) / len(samples), 4) for r in resources
        }
        peak = {r: max(s.utilization.get(r, 0.0) for s in samples) for r in resources}
        responsible = [life for life in self.lives if life.responsible]
        summary = ReplaySummary(
            scenario=self.scenario.name,
            events=applied,
            virtual_seconds=round(self.clock.now(), 3),
            seconds=round(seconds, 6),
            events_per_second=round(applied / seconds, 1) if seconds > 0 else 0.0,
            pods=len(responsible),
            scheduled=self.counters.bound,
            pending=self.counters.pending,
            completed=self.counters.completed,
            deleted=sum(1 for life in responsible if life.ending == DELETED),
            ignored=ignored,
            errors=sum(1 for life in responsible if life.error or life.record.result == "Error"),
            evictions=dict(self.evictions),
            latency=latency(self.waits),
            utilization_mean=mean,
            utilization_peak=peak,
            skipped_events=dict(sorted(self.skipped.items())),
            recreated=self.workloads.recreated if self.workloads is not None else 0,
        )
        return ReplayReport(
            pods=pods,
            nodes=[node_usage(info) for info in sorted(table.infos, key=lambda i: i.name)],
            summary=summary,
            timeline=samples,
            heatmaps=self.sampler.heatmaps(),
            workloads=self.workloads.results(self.cluster.nodes, self.lives) if self.workloads else [],
            gpu=self.gpus.report() if self.gpus is not None else None,
        )


def _initial_events(initial: LoadedObjects) -> list[TimelineEvent]:
    """The nodes and pods of snapshot files, as creates at 0s ahead of the scenario's own events."""
    events = [TimelineEvent(0.0, "create", ObjectRef("Node", n.metadata.name), obj=n) for n in initial.nodes]
    events += [
        TimelineEvent(
            0.0, "create", ObjectRef("Pod", p.metadata.name, p.metadata.namespace or "default"), obj=p
        )
        for p in initial.pods
    ]
    return events


def _static_objects(initial: LoadedObjects, scenario_objects: LoadedObjects) -> LoadedObjects:
    """Every object but nodes and pods (those arrive through the timeline)."""
    merged = LoadedObjects()
    for source in (initial, scenario_objects):
        for name in vars(source):
            if name in ("pods", "nodes", "skipped"):
                continue
            getattr(merged, name).extend(getattr(source, name))
    return merged
