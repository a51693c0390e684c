"""The virtual-time loop every simulate command runs: schedule until the active queue is empty, then
jump the virtual clock to the next thing that can change something (a backoff expiring, the
unschedulable pool's periodic flush, a Permit deadline).

`simulate` and `capacity` run `run_until_settled`; a replay runs the same loop with its timeline
in front (`run_timeline`, replay/run.py); `explain` drains until its one pod has had its cycle.
Scheduling itself takes no virtual time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from collections.abc import Callable, Iterator
from typing import Protocol

from kubesched.cluster.memory import MemoryCluster
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework.registry import Registry
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.extenders import Extenders
from kubesched.scheduler.options import TIE_BREAK_RANDOM
from kubesched.scheduler.pod_group_cycle import PodGroupOutcome
from kubesched.scheduler.profiles import options_from_config
from kubesched.scheduler.scheduler import Attempt, ProfileSpec, Scheduler
from kubesched.simulate.malloc import reused_heap

__all__ = [
    "IDLE_HORIZON_SECONDS",
    "Timeline",
    "drain",
    "long_lived_heap",
    "new_scheduler",
    "run_timeline",
    "run_until_settled",
]

#: Stop once this much virtual time passed without a pod being bound (covers Permit's 15 min cap).
IDLE_HORIZON_SECONDS = 16 * 60.0

#: The cyclic GC's thresholds while a run lasts. A cycle allocates thousands of short-lived
#: containers (statuses, records, queue entries), so the default 700 started a young collection
#: every few cycles, and each tenth of those walked the middle generation too: about 4 % of a
#: replay's CPU. Ten thousand makes them rare; the cycles they would reclaim sooner are small.
RUN_GC_THRESHOLD = (10_000, 20, 10)


def new_scheduler(
    profiles: list[ProfileSpec],
    config: KubeSchedulerConfiguration,
    registry: Registry,
    cluster: MemoryCluster,
    clock: VirtualClock,
    *,
    seed: int = 0,
    explain: bool = False,
    every_node: bool = False,
    observer: Callable[[Attempt], None] | None = None,
    tie_break: str = TIE_BREAK_RANDOM,
    on_pod_group: Callable[[PodGroupOutcome], None] | None = None,
) -> Scheduler:
    """The scheduler a simulation runs: `config`'s profiles and extenders over the in-memory cluster.

    With `every_node`, every feasible node is scored whatever percentageOfNodesToScore says (explain).
    `tie_break` decides among equal best scores (scheduler.options.TIE_BREAKS).
    """
    options = options_from_config(config, seed=seed, explain=explain)
    if every_node:
        options = dataclasses.replace(options, percentage_of_nodes_to_score=100)
    if tie_break != options.tie_break:
        options = dataclasses.replace(options, tie_break=tie_break)
    return Scheduler(
        profiles,
        registry,
        cluster,
        clock,
        options,
        observer=observer,
        on_pod_group=on_pod_group,
        # The config's HTTP extenders; one that binds leaves the in-memory cluster to record it.
        extenders=Extenders.from_config(config.extenders, after_bind=cluster.bind),
    )


def drain(scheduler: Scheduler, *, stop: Callable[[], bool] | None = None) -> None:
    """Schedule until the active queue is empty and releasing Permit waits queued nothing new.

    With `stop`, return as soon as it says so (checked before each pod is handed out).
    """
    while True:
        while (stop is None or not stop()) and scheduler.schedule_one():
            pass
        if stop is not None and stop():
            return
        scheduler.release_waiting_pods()
        if not scheduler.queue.pending_counts().get("active", 0):
            return


class Timeline(Protocol):
    """What a run puts in front of the scheduler: its own happenings in virtual time (a replay's
    events and pod completions). `run_timeline` asks it what is due and when it next acts."""

    def step(self, now: float) -> bool:
        """Apply what is due at `now` and schedule until settled; True if anything moved (something
        applied, or a pod bound)."""
        ...

    def next_at(self) -> float | None:
        """When the timeline next acts on its own, or None."""
        ...

    def over(self) -> bool:
        """Nothing of the timeline's own is left to come."""
        ...

    def advancing(self, to: float, *, last: bool) -> None:
        """The clock is about to move to `to` (`last`: the run ends there)."""
        ...


class _Settle:
    """No timeline: the run is the input's pods, scheduled until nothing moves."""

    def __init__(self, scheduler: Scheduler, cluster: MemoryCluster) -> None:
        self.scheduler = scheduler
        self.cluster = cluster
        self.binds = 0

    def step(self, now: float) -> bool:
        drain(self.scheduler)
        binds = sum(self.cluster.bind_count.values())
        moved, self.binds = binds != self.binds, binds
        return moved

    def next_at(self) -> float | None:
        return None

    def over(self) -> bool:
        return True

    def advancing(self, to: float, *, last: bool) -> None:
        pass


def run_timeline(
    scheduler: Scheduler,
    clock: VirtualClock,
    timeline: Timeline,
    *,
    until: float | None = None,
    retry_unschedulable: bool = True,
) -> None:
    """The virtual-time loop: let `timeline` act and the scheduler drain, then jump the clock to
    whatever comes first (the timeline's next act, a backoff expiring, the unschedulable pool's
    periodic flush, a Permit deadline).

    It ends at `until`, or, without it, once the timeline is over and nothing has moved for
    IDLE_HORIZON_SECONDS. Without `retry_unschedulable` only backoffs wake the queue, so a pod
    parked as unschedulable is not tried again unless a cluster event requeues it.
    """
    last_progress = clock.now()
    queue = scheduler.queue
    while True:
        now = clock.now()
        if timeline.step(now):
            last_progress = now
        queue_wakeup = queue.next_wakeup() if retry_unschedulable else queue.next_backoff_expiry()
        wakeups = [
            t for t in (timeline.next_at(), queue_wakeup, scheduler.next_permit_deadline()) if t is not None
        ]
        following = min(wakeups) if wakeups else None
        if until is not None:
            if following is None or following > until:
                timeline.advancing(until, last=True)
                clock.advance_to(until)
                return
        elif following is None or (timeline.over() and following - last_progress > IDLE_HORIZON_SECONDS):
            timeline.advancing(now, last=True)
            return
        timeline.advancing(following, last=False)
        clock.advance_to(following)
        if retry_unschedulable:
            queue.run_periodic()
        else:
            queue.flush_backoff_completed()


def run_until_settled(
    scheduler: Scheduler, clock: VirtualClock, cluster: MemoryCluster, *, retry_unschedulable: bool = False
) -> None:
    """Schedule until nothing can progress: queues drained, waits resolved, no backoff left.

    With `retry_unschedulable` (what `simulate` does), pods parked as unschedulable are also retried
    each time they have waited podMaxInUnschedulablePodsDuration (5 min), as kube-scheduler's leftover
    flush does, until IDLE_HORIZON_SECONDS pass without a bind. Without it, the loop stops once only
    such pods are left, so a failing pod is tried once unless a cluster event requeues it.
    """
    run_timeline(scheduler, clock, _Settle(scheduler, cluster), retry_unschedulable=retry_unschedulable)


@contextlib.contextmanager
def long_lived_heap() -> Iterator[None]:
    """Keep the cyclic garbage collector off the objects that exist when a run starts (the input,
    the cluster): they live as long as the run, yet every full collection walked all of them again
    (5,000 nodes with 8 devices each: ~20 % of a DRA run's CPU). They are handed back to the
    collector when the run ends, so nothing a long-lived caller drops later is kept. The C heap keeps
    the large blocks each cycle frees for the next one (`reused_heap`), and young collections run
    less often (`RUN_GC_THRESHOLD`)."""
    gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(*RUN_GC_THRESHOLD)
    try:
        with reused_heap():
            yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
