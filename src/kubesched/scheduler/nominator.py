"""Pods nominated to nodes by preemption, so later cycles keep room for them (upstream's nominator).

A nominated pod has evicted victims on a node but is not bound yet. Until it is, filters run a
pass with the nominated pods of equal or higher priority added to the node, so a lower-priority pod
cannot take the room that preemption freed for them.

Upstream's queue keeps only a reference to a nominated pod and looks its object up in its queues
when a filter asks; a pod it does not find there, one popped and being scheduled right now, stands
in as its bare name (priority 0, no requests). So in a pod group's cycle the members' own
nominations, made by an earlier cycle's preemption, never hold room against each other.
"""

from __future__ import annotations

from collections.abc import Callable

from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import Pod, PodSpec
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Status


class Nominator:
    """Pod -> nominated node and node -> nominated pods, kept in nomination order."""

    __slots__ = ("_node_of", "_pods_on", "in_flight", "version")

    def __init__(self) -> None:
        self._node_of: dict[str, str] = {}
        self._pods_on: dict[str, dict[str, PodInfo]] = {}
        #: Counts the changes: equal versions, equal nominations.
        self.version = 0
        #: Whether a pod is being scheduled now (the queue's in-flight pods); such a nominated pod
        #: shows as its bare name (see the module's docstring).
        self.in_flight: Callable[[str], bool] = lambda key: False

    def add(self, pod_info: PodInfo, node_name: str | None = None) -> None:
        """Nominate the pod, replacing any earlier nomination.

        `node_name=None` keeps what the pod object says (`status.nominatedNodeName`; upstream's
        ModeNoop) — how nominations survive a scheduler restart. A name overrides it and `""`
        clears it (ModeOverride). A pod already bound (`spec.nodeName`) is never nominated.
        """
        self.delete(pod_info.key)
        name = pod_info.pod.status.nominated_node_name if node_name is None else node_name
        if not name or pod_info.pod.spec.node_name:
            return
        self._node_of[pod_info.key] = name
        self._pods_on.setdefault(name, {})[pod_info.key] = pod_info
        self.version += 1

    def delete(self, pod_key: str) -> None:
        """Forget the pod's nomination (bound, deleted, or re-nominated); unknown keys are ignored."""
        name = self._node_of.pop(pod_key, None)
        if name is None:
            return
        self.version += 1
        pods = self._pods_on[name]
        del pods[pod_key]
        if not pods:
            del self._pods_on[name]

    def update(self, old_pod: Pod, new_pod_info: PodInfo) -> None:
        """Refresh the stored pod object after an update event.

        An update that neither had nor has `nominatedNodeName` keeps the in-memory nomination: the
        scheduler may have nominated the pod a moment before the status patch reached the informer.
        Otherwise the new object's field wins (added, changed or removed).
        """
        kept: str | None = None
        if not old_pod.status.nominated_node_name and not new_pod_info.pod.status.nominated_node_name:
            kept = self._node_of.get(new_pod_info.key)
        self.add(new_pod_info, kept)

    def nominated_node(self, pod_key: str) -> str | None:
        return self._node_of.get(pod_key)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        """The pods nominated to `node_name`, oldest nomination first, a pod in flight bare."""
        in_flight = self.in_flight
        return [_bare(p) if in_flight(p.key) else p for p in self._pods_on.get(node_name, {}).values()]

    def nominated_pods_for_filter(self, node_name: str, pod_info: PodInfo) -> list[PodInfo]:
        """The nominated pods the filter pass must assume on the node when scheduling `pod_info`.

        Only pods of priority >= the incoming pod's reserve room against it; the pod itself never
        counts (it may be re-scheduling after its own nomination).
        """
        return [
            p
            for p in self.nominated_pods_for_node(node_name)
            if p.priority >= pod_info.priority and p.key != pod_info.key
        ]

    def has_nominated_pods(self) -> bool:
        """Cheap check so the filter pass can skip the two-pass path entirely."""
        return bool(self._node_of)

    def __contains__(self, pod_key: object) -> bool:
        return pod_key in self._node_of

    def __len__(self) -> int:
        return len(self._node_of)


def _bare(pi: PodInfo) -> PodInfo:
    """How upstream's queue shows a nominated pod it cannot find: name, namespace, uid and group."""
    meta = pi.pod.metadata
    bare = Pod(
        metadata=ObjectMeta(name=meta.name, namespace=meta.namespace, uid=meta.uid),
        spec=PodSpec(scheduling_group=pi.pod.spec.scheduling_group),
    )
    return PodInfo(bare)


def filter_with_nominated_pods(
    nominator: Nominator, fwk: Framework, state: CycleState, pi: PodInfo, info: NodeInfo
) -> Status | None:
    """Upstream's RunFilterPluginsWithNominatedPods: the Filters with the node's nominated pods of
    equal or higher priority added, then without them; both must pass (None)."""
    nominated = nominator.nominated_pods_for_filter(info.name, pi)
    if nominated:
        state_with = state.clone()
        info_with = info.clone()
        for other in nominated:
            info_with.add_pod(other)
            st = fwk.run_pre_filter_extension_add_pod(state_with, pi.pod, other, info_with)
            if st is not None:
                return st
        st = fwk.run_filter_on_node(state_with, pi.pod, info_with)
        if st is not None:
            return st
    return fwk.run_filter_on_node(state, pi.pod, info)
