"""PoolFilter: a pod annotated `example.com/pool: NAME` runs only on nodes labelled `example.com/pool=NAME`.

A Filter plugin in the per-node form, as docs/writing-plugins.md introduces them; pods without the
annotation are not constrained.
"""

from __future__ import annotations

from kubesched.api.objects import Pod
from kubesched.framework import CycleState, FilterPlugin, NodeInfo, Status

POOL = "example.com/pool"


class PoolFilter(FilterPlugin):
    """Filter: keep an annotated pod inside its node pool."""

    name = "PoolFilter"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        wanted = pod.metadata.annotations.get(POOL)
        if wanted is None or node_info.labels.get(POOL) == wanted:
            return None
        return Status.unschedulable_and_unresolvable(f"node(s) not in pool {wanted}")
