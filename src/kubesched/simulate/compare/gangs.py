"""Gangs (pod groups) of a run: which were placed whole, which only in part, which not at all.

A partly placed gang holds resources it cannot use (its members wait for each other), which is
why a comparison counts it apart from a gang that is not placed at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kubesched.api.objects import Pod
from kubesched.api.scheduler_plugins import PodGroup
from kubesched.plugins.contrib.coscheduling import (
    MIN_AVAILABLE_ANNOTATION,
    POD_GROUP_API_VERSION,
    POD_GROUP_LABEL,
)
from kubesched.simulate.report import ReportStruct

__all__ = ["Gang", "GangCounts", "count_gangs", "gangs_of"]


@dataclass(frozen=True)
class Gang:
    namespace: str
    name: str
    min_member: int


class GangCounts(ReportStruct):
    total: int = 0
    #: At least minMember members bound.
    placed: int = 0
    #: Some members bound, fewer than minMember.
    partial: int = 0
    not_placed: int = 0


def gangs_of(pods: Iterable[Pod], pod_groups: Sequence[PodGroup]) -> list[Gang]:
    """Every gang the pods name, sized by its PodGroup's minMember or the min-available annotation."""
    sizes = {
        (pg.metadata.namespace or "default", pg.metadata.name): pg.spec.min_member
        for pg in pod_groups
        if pg.api_version == POD_GROUP_API_VERSION
    }
    gangs: dict[tuple[str, str], Gang] = {}
    for pod in pods:
        name = pod.metadata.labels.get(POD_GROUP_LABEL)
        key = (pod.metadata.namespace or "default", name or "")
        if not name or key in gangs:
            continue
        size = sizes.get(key)
        if size is None:
            size = int(pod.metadata.annotations.get(MIN_AVAILABLE_ANNOTATION, "1") or 1)
        gangs[key] = Gang(key[0], name, max(size, 1))
    return sorted(gangs.values(), key=lambda g: (g.namespace, g.name))


def count_gangs(pods: Sequence[Pod], pod_groups: Sequence[PodGroup]) -> GangCounts:
    """How the gangs of `pods` (in their state after a run) were placed."""
    bound: dict[tuple[str, str], int] = {}
    for pod in pods:
        name = pod.metadata.labels.get(POD_GROUP_LABEL)
        if name and pod.spec.node_name:
            key = (pod.metadata.namespace or "default", name)
            bound[key] = bound.get(key, 0) + 1
    counts = GangCounts()
    for gang in gangs_of(pods, pod_groups):
        n = bound.get((gang.namespace, gang.name), 0)
        counts.total += 1
        if n >= gang.min_member:
            counts.placed += 1
        elif n:
            counts.partial += 1
        else:
            counts.not_placed += 1
    return counts
