"""The queue's unschedulable pool, indexed by the plugins that rejected (or gate) each pod.

A cluster event can only move a pod if one of its rejecting plugins registered for that event
(upstream's isPodWorthRequeuing asks exactly those plugins), so an event visits only the pods
filed under such a plugin. Pods that any event moves (no rejecting plugin, an extender's
rejection) are filed apart and always visited. A registration with a `HintIndex` narrows its
plugin's pods further, to those holding one of the event's keys (a claim event visits the pods that
name that claim, not every pod DynamicResources rejected). Visits keep arrival order: which pods
move first decides their activeQ tie-break.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any

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
#: One indexed registration of a bucket's plugin and its pods by key.
_Keyed = tuple[ClusterEventWithHint, dict[Hashable, dict[str, QueuedPodInfo]]]


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
        #: Per bucket, its plugin's registrations that carry a HintIndex, with their pods by key.
        self._keyed: dict[_Bucket, list[_Keyed]] = {}
        #: Where each pod is filed by key: (its key index, the keys it held when filed).
        self._keys_filed: dict[
            str, list[tuple[dict[Hashable, dict[str, QueuedPodInfo]], tuple[Hashable, ...]]]
        ] = {}
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
            self._file_keys(bucket, qpi)
        self._filed[key] = buckets

    def remove(self, key: str) -> QueuedPodInfo:
        qpi = self._pods.pop(key)
        del self._arrival[key]
        self.gated -= bool(qpi.gating_plugin)
        self._unfile(key)
        return qpi

    def candidates(
        self, event: ClusterEvent, exclude: str | None = None, old_obj: Any = None, new_obj: Any = None
    ) -> list[QueuedPodInfo]:
        """The pods `event` (from `old_obj` to `new_obj`) may move, in arrival order: the rest
        would be judged Skip."""
        if is_wildcard(event):
            return [qpi for key, qpi in self._pods.items() if key != exclude]
        groups = [self._always] if self._always else []
        narrowed = False
        for (name, plugin), pods in self._by_plugin.items():
            if not pods or not covers(covering := self.covering(name, event), plugin):
                continue
            regs = covering.get(plugin)  # absent: registered for every event, no index
            keyed = None if regs is None else self._narrow((name, plugin), regs, old_obj, new_obj)
            narrowed |= keyed is not None
            groups.append(pods if keyed is None else keyed)
        if len(groups) == 1 and not narrowed:
            picked = dict(groups[0])
        else:
            merged: dict[str, QueuedPodInfo] = {}
            for pods in groups:
                merged.update(pods)
            arrival = self._arrival
            picked = {key: merged[key] for key in sorted(merged, key=arrival.__getitem__)}
        picked.pop(exclude or "", None)
        return list(picked.values())

    def _narrow(
        self, bucket: _Bucket, regs: Sequence[ClusterEventWithHint], old_obj: Any, new_obj: Any
    ) -> dict[str, QueuedPodInfo] | None:
        """The bucket's pods that hold a key of the event for every covering registration, or None
        when some registration has no index or any pod may be queued (visit the whole bucket)."""
        keyed = self._keyed.get(bucket, [])
        out: dict[str, QueuedPodInfo] = {}
        for reg in regs:
            found = next((by_key for indexed, by_key in keyed if indexed is reg), None)
            if found is None or reg.index is None:
                return None
            event_keys = reg.index.event_keys(old_obj, new_obj)
            if event_keys is None:
                return None
            for k in event_keys:
                out.update(found.get(k, {}))
        return out

    def _file_keys(self, bucket: _Bucket, qpi: QueuedPodInfo) -> None:
        keyed = self._keyed.get(bucket)
        if keyed is None:
            regs = self._registrations(bucket[0]).get(bucket[1], ())
            keyed = self._keyed[bucket] = [(reg, {}) for reg in regs if reg.index is not None]
        for reg, by_key in keyed:
            assert reg.index is not None
            keys = tuple(set(reg.index.pod_keys(qpi.pod)))
            for k in keys:
                by_key.setdefault(k, {})[qpi.key] = qpi
            self._keys_filed.setdefault(qpi.key, []).append((by_key, keys))

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
        for by_key, keys in self._keys_filed.pop(key, ()):
            for k in keys:
                pods = by_key[k]
                del pods[key]
                if not pods:
                    del by_key[k]
