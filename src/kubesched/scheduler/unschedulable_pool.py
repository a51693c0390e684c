"""The queue's unschedulable pool, indexed by the plugins that rejected (or gate) each pod.

A cluster event can only move a pod if one of its rejecting plugins registered for that event
(upstream's isPodWorthRequeuing asks exactly those plugins), so an event visits only the pods
filed under such a plugin. Pods that any event moves (no rejecting plugin, an extender's
rejection) are filed apart and always visited. Visits keep arrival order: which pods move first
decides their activeQ tie-break.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from kubesched.framework.events import ClusterEvent, ClusterEventWithHint
from kubesched.framework.types import QueuedPodInfo
from kubesched.scheduler.queueing_hints import (
    covering_registrations,
    covers,
    is_wildcard,
    moved_by_any_event,
    rejectors,
)

__all__ = ["UnschedulablePool"]

#: A profile's registrations by scheduler name (the queue reads them once per profile).
Registrations = Callable[[str], Mapping[str, Sequence[ClusterEventWithHint]]]

_Bucket = tuple[str, str]  # (scheduler name, plugin)


class UnschedulablePool:
    """Pool pods by key in arrival order, plus the (profile, plugin) index events look them up by."""

    def __init__(self, registrations: Registrations) -> None:
        self._registrations = registrations
        self._pods: dict[str, QueuedPodInfo] = {}
        #: Gated pods (held by a PreEnqueue plugin), counted apart for the metrics.
        self.gated = 0
        self._arrival: dict[str, int] = {}
        self._next_arrival = 0
        #: Pods every event is weighed for.
        self._always: dict[str, QueuedPodInfo] = {}
        self._by_plugin: dict[_Bucket, dict[str, QueuedPodInfo]] = {}
        #: Where each pod is filed, as read when it entered (its rejectors do not change meanwhile).
        self._filed: dict[str, tuple[_Bucket, ...]] = {}
        #: (profile, event) -> its plugins' registrations that cover the event.
        self._covering: dict[tuple[str, ClusterEvent], Mapping[str, Sequence[ClusterEventWithHint]]] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._pods.get(key)

    def values(self) -> Iterator[QueuedPodInfo]:
        """Every pooled pod, gated ones included, in arrival order."""
        return iter(self._pods.values())

    def add(self, qpi: QueuedPodInfo) -> None:
        key = qpi.key
        if key in self._pods:
            self._unfile(key)
        else:
            self._arrival[key] = self._next_arrival
            self._next_arrival += 1
            self.gated += bool(qpi.gating_plugin)
        self._pods[key] = qpi
        if moved_by_any_event(qpi):
            self._always[key] = qpi
            self._filed[key] = ()
            return
        name = qpi.pod.spec.scheduler_name
        buckets = tuple((name, plugin) for plugin in rejectors(qpi))
        for bucket in buckets:
            self._by_plugin.setdefault(bucket, {})[key] = qpi
        self._filed[key] = buckets

    def remove(self, key: str) -> QueuedPodInfo:
        qpi = self._pods.pop(key)
        del self._arrival[key]
        self.gated -= bool(qpi.gating_plugin)
        self._unfile(key)
        return qpi

    def candidates(self, event: ClusterEvent, exclude: str | None = None) -> list[QueuedPodInfo]:
        """The pods `event` may move, in arrival order: the rest would be judged Skip."""
        if is_wildcard(event):
            return [qpi for key, qpi in self._pods.items() if key != exclude]
        groups = [self._always] if self._always else []
        groups += [
            pods
            for (name, plugin), pods in self._by_plugin.items()
            if pods and covers(self.covering(name, event), plugin)
        ]
        if len(groups) == 1:
            picked = dict(groups[0])
        else:
            merged: dict[str, QueuedPodInfo] = {}
            for pods in groups:
                merged.update(pods)
            arrival = self._arrival
            picked = {key: merged[key] for key in sorted(merged, key=arrival.__getitem__)}
        picked.pop(exclude or "", None)
        return list(picked.values())

    def covering(self, profile: str, event: ClusterEvent) -> Mapping[str, Sequence[ClusterEventWithHint]]:
        """The registrations of `profile` that cover `event`, worked out once per pair (upstream
        indexes its queueing hints by event the same way)."""
        known = self._covering.get((profile, event))
        if known is None:
            known = self._covering[profile, event] = covering_registrations(
                self._registrations(profile), event
            )
        return known

    def _unfile(self, key: str) -> None:
        buckets = self._filed.pop(key, ())
        if not buckets:
            self._always.pop(key, None)
        for bucket in buckets:
            pods = self._by_plugin[bucket]
            del pods[key]
