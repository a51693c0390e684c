"""The nearest nodes of unschedulable pods after a run, as `kubesched explain` works them out.

The HTML report's pod panel says what is missing on each of the nodes a pending pod came closest to.
Running every Filter plugin on every node costs a scheduling cycle's worth of work per pod, and 2000
replicas of one Deployment would all get the same answer. So the nodes are worked out for the first
pod of each group of pods with the same workload and explanation (`groups.group_pods`, the blocks
`--explain` prints), for at most MAX_GROUPS groups; every other pod of a group points at that first
pod. The answer is on the cluster as the run left it, the state `explain` would read afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubesched.cluster.memory import MemoryCluster
from kubesched.scheduler.scheduler import Scheduler
from kubesched.simulate.explain.model import NearNode
from kubesched.simulate.explain.nearest import nearest_in_cluster
from kubesched.simulate.snapshot.groups import group_pods
from kubesched.simulate.snapshot.model import PodResult

__all__ = ["MAX_GROUPS", "Nearest", "nearest_by_pod"]

#: Groups of unschedulable pods whose first pod gets its nearest nodes worked out.
MAX_GROUPS = 100


@dataclass(frozen=True, slots=True)
class Nearest:
    """A pod's nearest nodes, or, for a later pod of a group, the first pod (`namespace/name`) that
    has them (`nodes` then empty)."""

    nodes: list[NearNode]
    of: str | None = None


def nearest_by_pod(
    scheduler: Scheduler,
    cluster: MemoryCluster,
    pods: Sequence[PodResult],
    *,
    max_groups: int = MAX_GROUPS,
) -> dict[str, Nearest]:
    """`namespace/name` -> nearest nodes for the Unschedulable pods of `pods` (see the module
    docstring); pods of groups past `max_groups` are left out."""
    pending = {
        (p.metadata.namespace, p.metadata.name): p for p in cluster.pods.values() if not p.spec.node_name
    }
    table = scheduler.cache.snapshot()
    out: dict[str, Nearest] = {}
    groups = group_pods([p for p in pods if p.result == "Unschedulable"])
    for group in groups[:max_groups]:
        first = group.first
        pod = pending.get((first.namespace, first.name))
        fwk = scheduler.frameworks.get(first.scheduler_name)
        if pod is None or fwk is None:
            continue
        key = f"{first.namespace}/{first.name}"
        out[key] = Nearest(nearest_in_cluster(fwk, pod, table, cluster))
        for other in group.pods[1:]:
            out[f"{other.namespace}/{other.name}"] = Nearest([], of=key)
    return out
