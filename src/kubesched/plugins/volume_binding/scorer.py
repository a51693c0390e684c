"""VolumeBinding's Score (StorageCapacityScoring): how full the node's chosen volumes would be.

Per storage class, the utilization the pod's claims would bring (`requested * 100 // capacity`) is
mapped through the args' shape; the node scores the rounded mean over the classes. The classes are
those of the static PVs chosen on the node if any, else those of the claims to provision there with
a CSIStorageCapacity.
"""

from __future__ import annotations

import numpy as np

from kubesched.api.quantity import QuantityError, quantity_nanos
from kubesched.api.storage import CSIStorageCapacity
from kubesched.framework.node_table import IntArray
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.plugins.node_resources_fit import broken_linear
from kubesched.plugins.node_resources_fit_args import MAX_CUSTOM_PRIORITY_SCORE, MAX_UTILIZATION
from kubesched.plugins.volume_binding.args import VolumeBindingArgs
from kubesched.plugins.volume_binding.binder import Evaluation, storage_of

__all__ = ["CapacityScorer"]


class CapacityScorer:
    """The args' shape, scaled to node scores, applied to an `Evaluation`'s choices."""

    __slots__ = ("_shape_s", "_shape_u")

    def __init__(self, args: VolumeBindingArgs) -> None:
        self._shape_u = [p.utilization for p in args.shape]
        self._shape_s = [p.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE) for p in args.shape]

    def scores(self, ev: Evaluation, n: int) -> IntArray:
        """Per node of the evaluated batch (`n` long), the rounded mean class score; 0 for no classes."""
        out = np.zeros(n, dtype=np.int64)
        for pos in range(n):
            classes: dict[str, list[int]] = {}
            for claim, pvs, choice in ev.static:
                if choice[pos] < 0:
                    continue
                used = classes.setdefault(claim.class_name, [0, 0])
                used[0] += storage_of(claim.pvc.spec.resources.requests)
                used[1] += storage_of(pvs[int(choice[pos])].spec.capacity)
            if not classes:
                for claim, caps, choice in ev.capacity:
                    if choice[pos] < 0:
                        continue
                    used = classes.setdefault(claim.class_name, [0, 0])
                    used[0] += storage_of(claim.pvc.spec.resources.requests)
                    # the class's capacity on the node, not a sum (as upstream)
                    used[1] = capacity_value(caps[int(choice[pos])])
            if classes:
                total = sum(self._class_score(req, cap) for req, cap in classes.values())
                out[pos] = (2 * total + len(classes)) // (2 * len(classes))  # Go math.Round
        return out

    def _class_score(self, requested: int, capacity: int) -> int:
        u = (
            MAX_UTILIZATION
            if capacity == 0 or requested > capacity
            else requested * MAX_UTILIZATION // capacity
        )
        return broken_linear(self._shape_u, self._shape_s, u)


def capacity_value(cap: CSIStorageCapacity) -> int:
    """The reported capacity (0 when absent or unreadable: the class then scores as full)."""
    try:
        return quantity_nanos(cap.capacity) if cap.capacity is not None else 0
    except QuantityError:
        return 0
