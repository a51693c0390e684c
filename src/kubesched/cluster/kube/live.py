"""LiveCluster: the scheduler core driven by a real API server.

It puts together, each in a module of its own:

* the `ClusterPort` the core sends decisions to (binds, Events, status patches, evictions,
  listers), mirroring `cluster.memory.MemoryCluster` (`live_port`, which `LiveCluster` is);
* the informers that feed the core (`live_feeds`: Pods, Nodes, and every other kind plugins list,
  skipping kinds the server does not serve, such as the PodGroup CRD of a cluster without
  scheduler-plugins);
* the scheduling loop (`live_loop`), with binding cycles in a bounded `BindPipeline` (`pipeline`),
  handed over by `live_binding`;
* the config's HTTP extenders (`extenders:`, `live_extenders`), called from the core exactly as in
  `kubesched simulate`;

and owns leadership (`set_leading`) and shutdown (`stop`).

Concurrency model (one rule): **all scheduler state is guarded by one lock, `StateLock`**, and
everything that touches the `Scheduler` holds it:

* the scheduling-loop thread takes it for slices of steps (the informers' changes, which they hand
  to it in order instead of taking the lock, see `handoff`; backoff; Permit waiters; one
  `schedule_one()`), so changes and binding results interleave between pods;
* each binding cycle runs on a pipeline worker holding the lock, and **lets go of it for the
  duration of the `POST .../binding`** (`LivePort.bind`), so many binds are in flight while the loop
  keeps scheduling. The core is written for this: before the POST the pod is assumed in the cache
  and done in the queue, so anything that happens meanwhile (its own watch event, a delete) sees a
  consistent state. VolumeBinding's PreBind writes and its wait for the PV controller let go of it
  the same way. The cycle's `Scheduled` Event is sent by the same worker once the cycle is over
  (`AsyncCalls.carry`), not by an Event worker woken for it. A cycle with nothing but the POST is
  split instead (see `live_binding`).

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
plain `threading.Lock` allows) and knows its owner (so `bind` can tell it is held).

Beside it: the lock (`state_lock`), which kinds to watch (`discovery`), the attempts' log fields and
the metrics protocol (`live_reports`), and pods the core cannot take (`bad_pods`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from kubesched.cluster.kube.bad_pods import BadPods
from kubesched.cluster.kube.client import KubeClient
from kubesched.cluster.kube.handoff import LoopHandoff
from kubesched.cluster.kube.informer import ApiListWatch, Informer, ListWatch, ResourceKind
from kubesched.cluster.kube.initial_lists import InitialLists
from kubesched.cluster.kube.live_binding import BindingRunner
from kubesched.cluster.kube.live_extenders import LiveExtenders
from kubesched.cluster.kube.live_feeds import InformerFeeds
from kubesched.cluster.kube.live_loop import LOOP_STALL_SECONDS, SchedulingLoop
from kubesched.cluster.kube.live_port import LivePort
from kubesched.cluster.kube.live_reports import LiveMetrics, attempt_fields
from kubesched.cluster.kube.pipeline import BindPipeline, Fence
from kubesched.cluster.kube.state_lock import StateLock
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework.pod_groups import SchedulingGroups
from kubesched.framework.registry import Registry
from kubesched.scheduler.clock import Clock, RealClock
from kubesched.scheduler.profiles import options_from_config, profiles_from_config
from kubesched.scheduler.scheduler import Abandoned, Attempt, Scheduler

__all__ = ["LiveCluster", "LiveOptions"]

log = logging.getLogger(__name__)
#: One line per scheduling attempt at debug level, with its fields in `extra["fields"]`.
decisions = logging.getLogger("kubesched.decisions")


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


class LiveCluster(LivePort):
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
        initial_lists: InitialLists | None = None,
    ) -> None:
        """`initial_lists`: the first Node and Pod LISTs and the discovery, already on their way
        through `client` (`kubesched run` sends them early); the informers and discovery take them."""
        self.config = config
        self.options = options
        self.metrics = metrics
        lock = StateLock()
        self._lock = lock
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._leading = threading.Event()
        clock = clock or RealClock()
        profiles = profiles_from_config(config, registry)
        self.profile_names = frozenset(p.scheduler_name for p in profiles)
        #: The config's HTTP extenders (None when it lists none); closed by `stop()`.
        self.extenders: LiveExtenders | None = (
            LiveExtenders(list(config.extenders), lock) if config.extenders else None
        )
        #: Binding cycles in flight (bounded) and the gate every bind passes. It starts suspended:
        #: nothing is bound before `set_leading(True)`.
        pipeline = BindPipeline(
            options.bind_depth,
            limiter=getattr(client, "limiter", None),
            fence=fence,
            on_done=self._wake.set,
            send_batch=lambda jobs: self.binding.send_binds(jobs),
        )
        pipeline.suspend("not leading")
        if self.extenders is not None:
            self.extenders.pipeline = pipeline
        #: Informer changes for the loop (see `handoff`); taken while the loop thread runs.
        self._handoff = LoopHandoff(lock)
        informers: dict[str, Informer] = {}
        #: The scheduling.k8s.io groups and their pods, fed by the informers (empty with the gates off).
        groups = SchedulingGroups()
        super().__init__(
            client,
            lock,
            pipeline,
            informers=informers,
            groups=groups,
            dispatch=self._dispatch,
            events_client=events_client,
            event_workers=options.event_workers,
            status_workers=options.status_workers,
        )
        self.binding = BindingRunner(lock, pipeline, self._event_calls, self._dispatch, self.binder, self)
        self.scheduler = Scheduler(
            profiles,
            registry,
            self,
            clock,
            options_from_config(config),
            observer=self._observe,
            run_binding=self.binding.run,
            extenders=self.extenders,
            bind_gate=pipeline.refusal,
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
        self.feeds = InformerFeeds(
            self.scheduler,
            client,
            initial_lists.source(source or ApiListWatch(client))
            if initial_lists is not None
            else source or ApiListWatch(client),
            informers=informers,
            groups=groups,
            bad_pods=BadPods(self.profile_names, self.events, self.status, metrics),
            dispatch=self._dispatch,
            features=registry.features,
            kinds=options.kinds,
            stopping=self._stopping,
            served_resources=initial_lists.served_resources if initial_lists is not None else None,
        )
        self.loop = SchedulingLoop(
            self.scheduler,
            lock,
            self._handoff,
            pipeline,
            clock,
            wake=self._wake,
            leading=self._leading,
            stopping=self._stopping,
            metrics=metrics,
            dropped=self._dropped,
            stall_seconds=LOOP_STALL_SECONDS
            + sum(e.timeout for e in (self.extenders.extenders if self.extenders is not None else ())),
        )
        #: Counters (read them under no lock; they only grow).
        self.scheduled = 0
        self.attempts = 0
        self.abandoned = 0

    def _dispatch(self, fn: Callable[[], None]) -> None:
        """Run `fn` under the state lock: on the loop while it runs (`handoff`), else here at once."""
        self._handoff.deliver(fn)
        self._wake.set()

    def _dropped(self) -> dict[str, int]:
        return {
            "events": self._event_calls.dropped + self.events.dropped,
            "pod-status": self._status_calls.dropped,
        }

    # ================================================================== informers

    def discover(self) -> list[ResourceKind]:
        """The kinds to watch that this server serves (Pods and Nodes are required; see `discovery`)."""
        return self.feeds.discover()

    def start_informers(self, kinds: list[ResourceKind] | None = None) -> None:
        self.feeds.create(kinds if kinds is not None else self.feeds.discover())
        self._event_calls.start()
        self._status_calls.start()
        self.events.start()
        self.feeds.start()

    def has_synced(self) -> bool:
        return self.feeds.has_synced()

    def unsynced(self) -> list[str]:
        return self.feeds.unsynced()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self.feeds.wait_for_sync(timeout)

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
        self.loop.start()

    def loop_problem(self) -> str | None:
        """For /livez: None while the loop runs and comes round (see `SchedulingLoop.problem`)."""
        return self.loop.problem()

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
        self.loop.join(left(0.3))
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
        self.feeds.stop()

    def snapshot_counts(self) -> dict[str, int]:
        """Queue and cache sizes (for logs, tests and benchmarks)."""
        with self._lock:
            counts = dict(self.scheduler.queue.pending_counts())
            counts["in_flight_binds"] = self.pipeline.admitted
            counts["cache_pods"] = self.scheduler.cache.pod_count
            counts["assumed"] = self.scheduler.cache.assumed_count
            return counts
