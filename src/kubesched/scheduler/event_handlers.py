"""Cluster changes in (upstream's eventhandlers.go): nodes and pods update the cache, the pending
pods and the queue; a change that may help waiting pods moves them (queueing hints decide which).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.objects import Node, Pod
from kubesched.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    UNSCHEDULED_POD_ADD,
    ActionType,
    ClusterEvent,
    Resource,
)
from kubesched.framework.filter_memo import FilterMemo
from kubesched.framework.node_info import PodInfo, pod_key
from kubesched.framework.runtime import Framework
from kubesched.framework.waiting_pods import WaitingPods
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.failure_memo import RepeatedFailures
from kubesched.scheduler.nominator import Nominator
from kubesched.scheduler.queue import SchedulingQueue
from kubesched.scheduler.queueing_hints import pod_update_events

__all__ = ["EventHandlers"]


class EventHandlers:
    """The `on_*` handlers of a Scheduler."""

    def __init__(
        self,
        *,
        cache: Cache,
        queue: SchedulingQueue,
        nominator: Nominator,
        waiting: WaitingPods,
        pending: dict[str, Pod],
        frameworks: Mapping[str, Framework],
        filter_memo: FilterMemo,
        repeated: RepeatedFailures,
        pod_groups: bool = False,
    ) -> None:
        self._cache = cache
        #: GenericWorkload: a new pending pod is also an event (it may complete a gang).
        self._pod_groups = pod_groups
        self._queue = queue
        self._nominator = nominator
        self._waiting = waiting
        #: The Scheduler's unassigned pods (shared): the pods of its profiles enter it here.
        self._pending = pending
        self._frameworks = frameworks
        self._filter_memo = filter_memo
        self._repeated = repeated

    def responsible_for(self, pod: Pod) -> bool:
        return pod.spec.scheduler_name in self._frameworks

    def on_node_add(self, node: Node) -> None:
        self._cache.add_node(node)
        self._queue.move_all_to_active_or_backoff(NODE_ADD, None, node)

    def on_node_update(self, old: Node, new: Node) -> None:
        self._cache.update_node(new)
        event = ClusterEvent(Resource.NODE, _node_change(old, new))
        self._queue.move_all_to_active_or_backoff(event, old, new)

    def on_node_delete(self, node: Node) -> None:
        self._cache.remove_node(node.metadata.name)

    def on_object_event(self, resource: Resource, action: ActionType, old: Any, new: Any) -> None:
        """Another kind changed (a ResourceClaim, a PV, ...): plugins that keep a cache of such
        objects (`ClusterObjectObserver`) see it first, then pods waiting for such an event move."""
        for fwk in self._frameworks.values():
            for observer in fwk.object_observers:
                observer.on_cluster_object(resource, old, new)
        self._filter_memo.forget_all()
        self._repeated.objects_changed()
        self._queue.move_all_to_active_or_backoff(ClusterEvent(resource, action), old, new)

    def on_pod_add(self, pod: Pod) -> None:
        """A pod appeared. Raises InputError (e.g. a bad quantity) so the caller can report the pod."""
        if pod.spec.node_name:
            self._cache.add_pod(PodInfo(pod))
            self._pending.pop(pod_key(pod), None)
            self._queue.move_all_to_active_or_backoff(ASSIGNED_POD_ADD, None, pod)
            return
        if not self.responsible_for(pod):
            return
        pi = PodInfo(pod)
        self._pending[pi.key] = pod
        self._queue.add(pi)
        if self._pod_groups:
            self._queue.move_all_to_active_or_backoff(UNSCHEDULED_POD_ADD, None, pod)

    def on_pod_update(self, old: Pod, new: Pod) -> None:
        key = pod_key(new)
        if new.spec.node_name:
            was_pending = key in self._pending
            self._pending.pop(key, None)
            if was_pending:
                self._queue.delete(key)
                self._filter_memo.bound(key)
            known = self._cache.pod_info(key)  # typically the assumed copy of this very pod
            same_spec = known is not None and known.pod.spec == new.spec
            updated = known.with_pod(new) if known is not None and same_spec else PodInfo(new)
            self._cache.update_pod(updated)
            if not old.spec.node_name:
                # Upstream's assigned-pod informer sees a pod that just got bound as an Add.
                self._queue.move_all_to_active_or_backoff(ASSIGNED_POD_ADD, None, new)
                return
            old_requests = known.requests if known is not None else PodInfo(old).requests
            for event in pod_update_events(
                old, new, old_requests=old_requests, new_requests=updated.requests
            ):
                self._queue.move_all_to_active_or_backoff(event, old, new)
            return
        if not self.responsible_for(new):
            return
        self._pending[key] = new
        if self._cache.is_assumed(key):
            # Being bound (its binding's own nominatedNodeName write comes back here): upstream
            # leaves assumed pods out of the queue, so the nomination is not counted twice.
            return
        self._queue.update(old, PodInfo(new))

    def on_pod_delete(self, pod: Pod) -> None:
        key = pod_key(pod)
        if self._pending.pop(key, None) is not None:
            self._queue.delete(key)
            self._filter_memo.forget(key)
            self._nominator.delete(key)
            wp = self._waiting.get(key)
            if wp is not None:
                wp.reject("", "pod deleted")
            # Live mode runs binding cycles concurrently: a pod deleted while its bind is in flight
            # is still assumed here; drop it, or its resources would stay accounted on the node.
            if self._cache.is_assumed(key):
                self._cache.remove_pod(key)
            return
        if self._cache.remove_pod(key) is not None:
            self._queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None)


def _node_change(old: Node, new: Node) -> ActionType:
    """Which Update* bits a node update carries (labels, taints, allocatable, conditions)."""
    action = ActionType(0)
    if old.metadata.labels != new.metadata.labels:
        action |= ActionType.UPDATE_NODE_LABEL
    if old.spec.taints != new.spec.taints or old.spec.unschedulable != new.spec.unschedulable:
        action |= ActionType.UPDATE_NODE_TAINT
    if old.effective_allocatable() != new.effective_allocatable():
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if old.status.conditions != new.status.conditions:
        action |= ActionType.UPDATE_NODE_CONDITION
    if old.metadata.annotations != new.metadata.annotations:
        action |= ActionType.UPDATE_NODE_ANNOTATION
    if old.status.declared_features != new.status.declared_features:
        action |= ActionType.UPDATE_NODE_DECLARED_FEATURE
    return action or ActionType.UPDATE
