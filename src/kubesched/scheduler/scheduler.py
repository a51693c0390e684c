"""Scheduler: pops pods, runs the scheduling cycle, then the binding cycle, as kube-scheduler does.

Cluster changes come in through the `on_*` handlers; decisions go out through a ClusterPort.
Time comes from the injected clock and ties are broken by a seeded RNG, so a run is
reproducible. Binding cycles are handed to `run_binding` (called inline by the simulator, on a
worker by the live scheduler).

This class is the facade: it builds the collaborators and shares its state with them. The
handlers are in event_handlers.py, the scheduling cycle in schedule_one.py, the binding cycle in
binding_cycle.py, failure handling in failures.py, repeated failures in failure_memo.py and the
plugins' Handle in handle.py.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kubesched.api.objects import Node, Pod
from kubesched.framework.events import ActionType, Resource
from kubesched.framework.filter_memo import FilterMemo
from kubesched.framework.group_forest import GroupForest
from kubesched.framework.pod_groups import PodGroupState, SchedulingGroups
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import Framework
from kubesched.framework.waiting_pods import WaitingPods
from kubesched.scheduler.attempt import Abandoned, Attempt
from kubesched.scheduler.batch import BatchMetrics, OpportunisticBatch
from kubesched.scheduler.binding_cycle import REVALIDATED_FILTERS, Binding, BindingCycle
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.clock import Clock
from kubesched.scheduler.event_handlers import EventHandlers
from kubesched.scheduler.failure_memo import RepeatedFailures
from kubesched.scheduler.failures import Failures
from kubesched.scheduler.handle import profile_handle
from kubesched.scheduler.nominator import Nominator
from kubesched.scheduler.options import ProfileSpec, SchedulerOptions
from kubesched.scheduler.pod_group_cycle import PodGroupCycle, PodGroupOutcome
from kubesched.scheduler.ports import ClusterPort
from kubesched.scheduler.queue import SchedulingQueue
from kubesched.scheduler.schedule_one import SchedulingCycle

if TYPE_CHECKING:
    from kubesched.scheduler.extenders import Extenders

__all__ = ["REVALIDATED_FILTERS", "Abandoned", "Attempt", "ProfileSpec", "Scheduler", "SchedulerOptions"]

_DEFAULTS = SchedulerOptions()


class Scheduler:
    def __init__(
        self,
        profiles: Sequence[ProfileSpec],
        registry: Registry,
        port: ClusterPort,
        clock: Clock,
        options: SchedulerOptions = _DEFAULTS,
        *,
        observer: Callable[[Attempt], None] | None = None,
        run_binding: Callable[[Callable[[], None]], None] | None = None,
        extenders: Extenders | None = None,
        bind_gate: Callable[[], str | None] | None = None,
        on_abandoned: Callable[[Abandoned], None] | None = None,
        batch_metrics: BatchMetrics | None = None,
        on_pod_group: Callable[[PodGroupOutcome], None] | None = None,
    ) -> None:
        self.port = port
        #: GenericWorkload: pods of a scheduling.k8s.io PodGroup are scheduled with their group.
        self.pod_groups_enabled = registry.features.enabled("GenericWorkload")
        #: CompositePodGroup: a PodGroup under a composite is scheduled with its whole tree.
        self.composites_enabled = self.pod_groups_enabled and registry.features.enabled("CompositePodGroup")
        #: Why this scheduler may not bind at all right now (None: it may); asked before PreBind and
        #: again, with the re-validation of the decision, just before Bind.
        self.bind_gate = bind_gate or (lambda: None)
        self.on_abandoned = on_abandoned or (lambda abandoned: None)
        #: HTTP extenders of the config (scheduler/extenders.py); None skips every extender hook.
        self.extenders = extenders
        self.clock = clock
        self.options = options
        self.rng = random.Random(options.seed)
        self.cache = Cache()
        #: objects every profile's plugins share (Handle.shared_state)
        self.shared: dict[str, Any] = {}
        self.nominator = Nominator()
        self.waiting = WaitingPods()
        self.observer = observer or (lambda attempt: None)
        self.run_binding = run_binding or (lambda fn: fn())
        self.frameworks: dict[str, Framework] = {}
        for spec in profiles:
            self.frameworks[spec.scheduler_name] = Framework(
                spec.scheduler_name,
                spec.points,
                spec.plugin_args,
                registry,
                profile_handle(self, spec.scheduler_name),
                percentage_of_nodes_to_score=spec.percentage_of_nodes_to_score,
            )
        #: Opportunistic batching per profile; extenders turn signatures off, as upstream, and the
        #: OpportunisticBatching gate (the registry's) batching itself.
        batching = registry.features.enabled("OpportunisticBatching")
        self.batches = {
            name: OpportunisticBatch(fwk, clock, batch_metrics, signs=extenders is None, enabled=batching)
            for name, fwk in self.frameworks.items()
        }
        first = next(iter(self.frameworks.values()))
        self.queue = SchedulingQueue(
            first.less,
            clock,
            profiles=self.frameworks,
            initial_backoff=options.pod_initial_backoff_seconds,
            max_backoff=options.pod_max_backoff_seconds,
            sort_key=first.sort_key,
        )
        self.nominator.in_flight = self.queue.in_flight
        pending: dict[str, Pod] = {}  # unassigned pods this scheduler is responsible for
        #: Filter verdicts per pod shape, patched for the next pod of the shape (framework/filter_memo).
        self.filter_memo = FilterMemo()
        failures = Failures(
            cache=self.cache,
            queue=self.queue,
            nominator=self.nominator,
            port=port,
            clock=clock,
            pending=pending,
            observer=self.observer,
            explain=options.explain,
        )
        #: Failed attempts repeated for pods of the same content while nothing changes.
        self.repeated_failures = repeated = RepeatedFailures(
            cache=self.cache,
            nominator=self.nominator,
            batches=self.batches,
            failures=failures,
            with_extenders=extenders is not None,
        )
        self._binding = BindingCycle(
            cache=self.cache,
            queue=self.queue,
            waiting=self.waiting,
            port=port,
            clock=clock,
            pending=pending,
            failures=failures,
            observer=self.observer,
            run_binding=self.run_binding,
            bind_gate=self.bind_gate,
            on_abandoned=self.on_abandoned,
            extenders=extenders,
        )
        self._cycle = SchedulingCycle(
            cache=self.cache,
            queue=self.queue,
            nominator=self.nominator,
            port=port,
            clock=clock,
            options=options,
            rng=self.rng,
            pending=pending,
            frameworks=self.frameworks,
            batches=self.batches,
            extenders=extenders,
            filter_memo=self.filter_memo,
            failures=failures,
            repeated=repeated,
            binding=self._binding,
        )
        self._events = EventHandlers(
            cache=self.cache,
            queue=self.queue,
            nominator=self.nominator,
            waiting=self.waiting,
            pending=pending,
            frameworks=self.frameworks,
            filter_memo=self.filter_memo,
            repeated=repeated,
            pod_groups=self.pod_groups_enabled,
        )
        if self.pod_groups_enabled:
            self._cycle.group_cycle = PodGroupCycle(
                trial=self._cycle,
                groups=lambda: self.groups,
                forest=self.group_forest,
                cache=self.cache,
                queue=self.queue,
                port=port,
                clock=clock,
                failures=failures,
                frameworks=self.frameworks,
                observer=on_pod_group,
                topology=registry.features.enabled("TopologyAwareWorkloadScheduling"),
                rng=self.rng,
                nominator=self.nominator,
                group_preemption_policy=registry.features.enabled("PodGroupPreemptionPolicy"),
            )

    @property
    def groups(self) -> SchedulingGroups | None:
        """The cluster's PodGroups and their pods (the port's `groups`), None with GenericWorkload off."""
        if not self.pod_groups_enabled:
            return None
        groups = getattr(self.port, "groups", None)
        return groups if isinstance(groups, SchedulingGroups) else None

    def pod_group_state(self, namespace: str, name: str) -> PodGroupState | None:
        """PodGroup `namespace/name` with its pods, scheduled ones told apart (for GangScheduling)."""
        groups = self.groups
        return None if groups is None else groups.state(namespace, name, self.cache.is_assumed)

    def group_forest(self) -> GroupForest | None:
        """The CompositePodGroup hierarchies, None with the CompositePodGroup gate off."""
        groups = self.groups if self.composites_enabled else None
        return None if groups is None else GroupForest(groups, self.cache.is_assumed)

    # -- cluster events in (event_handlers.py)
    def responsible_for(self, pod: Pod) -> bool:
        return self._events.responsible_for(pod)

    def on_node_add(self, node: Node) -> None:
        self._events.on_node_add(node)

    def on_node_update(self, old: Node, new: Node) -> None:
        self._events.on_node_update(old, new)

    def on_node_delete(self, node: Node) -> None:
        self._events.on_node_delete(node)

    def on_object_event(self, resource: Resource, action: ActionType, old: Any, new: Any) -> None:
        """Another kind changed (a ResourceClaim, a PV, ...); see EventHandlers.on_object_event."""
        self._events.on_object_event(resource, action, old, new)

    def on_pod_add(self, pod: Pod) -> None:
        """A pod appeared. Raises InputError (e.g. a bad quantity) so the caller can report the pod."""
        self._events.on_pod_add(pod)

    def on_pod_update(self, old: Pod, new: Pod) -> None:
        self._events.on_pod_update(old, new)

    def on_pod_delete(self, pod: Pod) -> None:
        self._events.on_pod_delete(pod)

    # -- the cycles (schedule_one.py, binding_cycle.py)
    def schedule_one(self) -> bool:
        """Pop one pod and run its scheduling cycle. False when the active queue is empty."""
        return self._cycle.schedule_one()

    def release_waiting_pods(self) -> int:
        """Expire Permit timers and start the binding cycles of pods no longer waiting."""
        return self._binding.release_waiting_pods()

    def next_permit_deadline(self) -> float | None:
        return self.waiting.next_deadline()

    def stale_decision(self, b: Binding) -> tuple[str, str] | None:
        """(reason, message) when a decision must not be bound any more (BindingCycle.stale_decision)."""
        return self._binding.stale_decision(b)
