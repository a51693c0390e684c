"""The pod-group cycle's PodGroupPostFilter step (upstream's RunPodGroupPostFilterPlugins), run when
a group's cycle failed as Unschedulable.

The plugins (DefaultPreemption's pod-group preemption) get the cache as a mutable snapshot (pods
taken off and put back, members assumed and forgotten) and a function that runs the group's
algorithm again on it. The first success stops the run; Unschedulable reasons are collected; any
other code is an error naming the plugin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubesched.framework.node_info import NodeInfo, PodInfo, pod_key
from kubesched.framework.placement import ProposedAssignment
from kubesched.framework.pod_group_preemption import (
    GroupPreemptor,
    PodGroupPostFilterResult,
    PodGroupSchedulingFunc,
)
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.scheduler.cache import Cache, Lifted
from kubesched.scheduler.nominator import Nominator
from kubesched.scheduler.schedule_one import with_node_name

__all__ = ["CacheSnapshot", "NominationHold", "post_filter_plugins", "run_pod_group_post_filter"]


class NominationHold:
    """Upstream's assume drops a pod's nomination and undoing the assume restores it: while a
    member is assumed in a trial it is no nominated pod, so the filters do not count it twice."""

    def __init__(self, nominator: Nominator | None) -> None:
        self._nominator = nominator
        self._held: dict[str, tuple[PodInfo, str]] = {}

    def hold(self, pi: PodInfo) -> None:
        """The pod was assumed: set its nomination aside."""
        if self._nominator is not None and (node := self._nominator.nominated_node(pi.key)):
            self._nominator.delete(pi.key)
            self._held[pi.key] = (pi, node)

    def release(self, key: str) -> None:
        """The pod's assume was undone: its nomination is back."""
        held = self._held.pop(key, None)
        if held is not None and self._nominator is not None:
            self._nominator.add(*held)


class CacheSnapshot:
    """The scheduler's cache as a pod-group preemption's mutable snapshot. Whatever a plugin takes
    off must be put back before the cycle goes on (the plugin's contract)."""

    def __init__(self, cache: Cache, fwk: Framework, nominator: Nominator | None) -> None:
        self._cache = cache
        self._fwk = fwk
        self._lifted: dict[str, Lifted] = {}
        self._held = NominationHold(nominator)

    def node_info(self, name: str) -> NodeInfo | None:
        table = self._cache.snapshot()
        row = table.index.get(name)
        return table.infos[row] if row is not None else None

    def remove_pod(self, pi: PodInfo) -> None:
        self._lifted[pi.key] = self._cache.lift(pi.key)

    def add_pod(self, pi: PodInfo) -> None:
        self._cache.put_back(self._lifted.pop(pi.key))

    def assume(self, assignment: ProposedAssignment) -> Status | None:
        pod = with_node_name(assignment.pod, assignment.node_name)
        pi = PodInfo(pod)
        self._cache.assume_pod(pi, assignment.node_name)
        self._held.hold(pi)
        return self._fwk.run_reserve(assignment.state, pod, assignment.node_name)

    def forget(self, assignment: ProposedAssignment) -> None:
        pod = with_node_name(assignment.pod, assignment.node_name)
        self._fwk.run_unreserve(assignment.state, pod, assignment.node_name)
        key = pod_key(pod)
        self._cache.forget_pod(key)
        self._held.release(key)


def run_pod_group_post_filter(
    fwk: Framework,
    plugins: Sequence[tuple[str, Any]],
    preemptor: GroupPreemptor,
    snapshot: CacheSnapshot,
    schedule: PodGroupSchedulingFunc,
) -> tuple[PodGroupPostFilterResult | None, Status]:
    """Each plugin's `pod_group_post_filter` in turn, as upstream's framework runs them."""
    reasons: list[str] = []
    rejector = ""
    for name, plugin in plugins:
        try:
            result, status = plugin.pod_group_post_filter(preemptor, schedule, snapshot)
        except Exception as exc:  # a plugin's bug is an Error status, as everywhere
            result, status = None, Status.as_error(str(exc) or type(exc).__name__)
        if status is None or status.is_success():
            return result, status if status is not None else Status(Code.SUCCESS)
        if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return result, status.with_plugin(name)
        if status.code == Code.UNSCHEDULABLE:
            reasons += status.all_reasons()
            rejector = rejector or name
            continue
        error = Status.as_error(f'error in "{name}" PodGroupPostFilter plugins: {status.message()}')
        return None, error.with_plugin(name)
    out = Status(Code.UNSCHEDULABLE, *reasons)
    return None, out.with_plugin(rejector) if rejector else out


def post_filter_plugins(fwk: Framework) -> list[tuple[str, Any]]:
    """The profile's plugins with a PodGroupPostFilter, in the order of its PostFilter plugins
    (DynamicResources before DefaultPreemption, as upstream's default profile has them)."""
    out: list[tuple[str, Any]] = []
    for name in fwk.plugins_at("postFilter"):
        plugin = fwk.plugins.get(name)
        if plugin is not None and callable(getattr(plugin, "pod_group_post_filter", None)):
            out.append((name, plugin))
    return out
