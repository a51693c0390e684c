"""Queueing hints: whether a cluster event may help a pod that plugins rejected, and how soon to
retry it (upstream's isPodWorthRequeuing), and which Pod update events a pod's change produces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import IntEnum
from typing import Any

from kubesched.api.objects import Pod
from kubesched.framework.events import (
    WILDCARD_EVENT,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from kubesched.framework.types import QueuedPodInfo

__all__ = [
    "EXTENDER",
    "Strategy",
    "covering_registrations",
    "covers",
    "is_wildcard",
    "moved_by_any_event",
    "pod_update_events",
    "rejectors",
    "worth_requeuing",
]

#: Rejections by an extender carry no plugin hints, so any event may help them.
EXTENDER = "Extender"

#: What a plugin without EnqueueExtensions is registered for: every event, hint Queue.
_ANY_EVENT = (ClusterEventWithHint(WILDCARD_EVENT),)


class Strategy(IntEnum):
    """How a pod should be requeued; larger wins when several events are weighed."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATE = 2


def worth_requeuing(
    qpi: QueuedPodInfo,
    event: ClusterEvent,
    old_obj: Any,
    new_obj: Any,
    covering: Mapping[str, Sequence[ClusterEventWithHint]],
) -> Strategy:
    """Weigh one event for one pod by the hints of the plugins that rejected (or gate) it, given
    the registrations of its profile that cover the event (`covering_registrations`).

    Queue from a Pending plugin -> immediately; from an Unschedulable plugin -> after backoff;
    no hint, or a hint that raised, counts as Queue.
    """
    plugins = rejectors(qpi)
    if not plugins or is_wildcard(event):
        return Strategy.AFTER_BACKOFF
    pending = qpi.pending_plugins
    if EXTENDER in plugins and not pending:
        return Strategy.AFTER_BACKOFF
    strategy = Strategy.AFTER_BACKOFF if EXTENDER in plugins else Strategy.SKIP
    for plugin in sorted(plugins):
        for reg in covering.get(plugin, _ANY_EVENT):
            if _hint(reg, qpi.pod, old_obj, new_obj) is QueueingHint.SKIP:
                continue
            if plugin in pending:
                return Strategy.IMMEDIATE
            if not pending:
                return Strategy.AFTER_BACKOFF
            strategy = Strategy.AFTER_BACKOFF
    return strategy


def covering_registrations(
    registered: Mapping[str, Sequence[ClusterEventWithHint]], event: ClusterEvent
) -> dict[str, tuple[ClusterEventWithHint, ...]]:
    """Each registered plugin's registrations that cover `event`, in their order. A plugin absent
    from `registered` (no EnqueueExtensions) stays absent: it is registered for every event."""
    return {plugin: tuple(r for r in regs if r.event.matches(event)) for plugin, regs in registered.items()}


def covers(covering: Mapping[str, Sequence[ClusterEventWithHint]], plugin: str) -> bool:
    """May the event `covering` was worked out for move a pod `plugin` rejected?"""
    return bool(covering.get(plugin, _ANY_EVENT))


def rejectors(qpi: QueuedPodInfo) -> set[str]:
    """The plugins whose hints decide for the pod: its gating plugin, else those that rejected it."""
    return {qpi.gating_plugin} if qpi.gating_plugin else qpi.unschedulable_plugins | qpi.pending_plugins


def moved_by_any_event(qpi: QueuedPodInfo) -> bool:
    """Does every event move the pod, whatever it is? (No rejecting plugin, or an extender's
    rejection, which carries no hints.)"""
    plugins = rejectors(qpi)
    return not plugins or EXTENDER in plugins


def _hint(reg: ClusterEventWithHint, pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
    if reg.hint is None:
        return QueueingHint.QUEUE
    try:
        hint = reg.hint(pod, old_obj, new_obj)
    except Exception:
        # A broken hint must not strand the pod in the pool: treat it as Queue.
        return QueueingHint.QUEUE
    return QueueingHint.SKIP if hint is QueueingHint.SKIP else QueueingHint.QUEUE


def is_wildcard(event: ClusterEvent) -> bool:
    """The wildcard event (UnschedulableTimeout, ForceActivate, ...) moves every pod."""
    return event.resource == Resource.WILDCARD and event.action == ActionType.ALL


def pod_update_events(
    old_pod: Pod,
    new_pod: Pod,
    *,
    old_requests: Mapping[str, int] | None = None,
    new_requests: Mapping[str, int] | None = None,
) -> list[ClusterEvent]:
    """The Pod update events that may change a scheduling result (upstream PodSchedulingPropertiesChange).

    Labels, tolerations, scheduling gates dropping to none, a generated ResourceClaim recorded in
    the status and (when both request maps are given) any request shrinking. Other changes (the
    rest of the status, annotations) yield nothing: no hint can care.
    The queue asks this only for the pending pod's own update, so the resource is AssignedPod when
    the new object has a `spec.nodeName`, else TargetPod (v1.37.2's queue Update does the same).
    """
    resource = Resource.ASSIGNED_POD if new_pod.spec.node_name else Resource.TARGET_POD
    actions: list[ActionType] = []
    if old_pod.metadata.labels != new_pod.metadata.labels:
        actions.append(ActionType.UPDATE_POD_LABEL)
    if (
        old_requests is not None
        and new_requests is not None
        and any(new_requests.get(name, 0) < amount for name, amount in old_requests.items())
    ):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if old_pod.spec.scheduling_gates and not new_pod.spec.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if old_pod.spec.tolerations != new_pod.spec.tolerations:
        actions.append(ActionType.UPDATE_POD_TOLERATION)
    if (
        old_pod.status.resource_claim_statuses != new_pod.status.resource_claim_statuses
        or old_pod.status.extended_resource_claim_status != new_pod.status.extended_resource_claim_status
    ):
        # The resourceclaim controller recorded a generated claim (DynamicResourceAllocation is GA).
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    return [ClusterEvent(resource, a) for a in actions]
