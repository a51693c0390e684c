"""Which pods a controller deletes first when it has too many: the ReplicaSet controller's ranking.

Upstream (`controller_utils`, `ActivePodsWithRanks`) prefers for deletion, rule by rule:

1. a pod not on a node over one on a node;
2. a Pending pod over a Running one (a bound pod counts as Running here);
3. a pod not ready over a ready one (bound = ready, see `is_available`);
4. a lower `controller.kubernetes.io/pod-deletion-cost` annotation over a higher one;
5. a pod sharing its node with more active pods of the same workload ("doubled up");
6. a pod ready for a shorter time, and then 8. a newer pod — both compared on a log2 scale of
   their age (LogarithmicScaleDown, on since v1.22), ties broken by uid;
7. (restart counts) has no counterpart: nothing restarts in a simulation.

Times are virtual seconds. A pod whose time is unknown (it was in the input, before the simulation
started) counts as the oldest, where upstream would see a real, old timestamp.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from functools import cmp_to_key
from typing import Final

from kubesched.api.objects import Pod
from kubesched.simulate.workloads.context import PodTimes, is_available

__all__ = ["DELETION_COST", "deletion_cost", "deletion_order"]

DELETION_COST: Final = "controller.kubernetes.io/pod-deletion-cost"
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def deletion_cost(pod: Pod) -> int:
    """The pod-deletion-cost annotation as an int32; 0 when absent or invalid (as upstream)."""
    raw = pod.metadata.annotations.get(DELETION_COST)
    if raw is None:
        return 0
    try:
        value = int(raw, 10)
    except ValueError:
        return 0
    return value if _INT32_MIN <= value <= _INT32_MAX else 0


def _log_rank(when: float, now: float) -> int:
    """floor(log2(age in nanoseconds)); -1 for a pod with no age yet."""
    age_ns = (now - when) * 1e9
    return math.floor(math.log2(age_ns)) if age_ns >= 1 else -1


def _newer_first(a: float | None, b: float | None, now: float, uids: tuple[str, str]) -> int | None:
    """Rules 6 and 8: negative when `a` is the newer time; None when the times are equal.

    An unknown time (before the simulation) is the oldest. Times in the same power-of-two age
    bucket are told apart by uid, as upstream does.
    """
    if a == b:
        return None
    if a is None or b is None:
        return 1 if a is None else -1
    diff = _log_rank(a, now) - _log_rank(b, now)
    if diff == 0:
        return -1 if uids[0] < uids[1] else 1
    return diff


def deletion_order(
    pods: Sequence[Pod], related: Sequence[Pod], times: Callable[[Pod], PodTimes], now: float
) -> list[Pod]:
    """`pods` sorted so that the ones the controller deletes first come first.

    `related` are the pods counted for rule 5: the workload's own pods, or for a Deployment's
    ReplicaSet, the pods of all the Deployment's ReplicaSets.
    """
    on_node = Counter(p.spec.node_name for p in related if p.metadata.deletion_timestamp is None)

    def compare(a: Pod, b: Pod) -> int:
        for rule in (
            lambda p: bool(p.spec.node_name),  # 1 (and 2: a bound pod is Running)
            is_available,  # 3
            deletion_cost,  # 4
            lambda p: -on_node[p.spec.node_name],  # 5
        ):
            x, y = rule(a), rule(b)
            if x != y:
                return -1 if x < y else 1
        uids = (a.metadata.uid, b.metadata.uid)
        ta, tb = times(a), times(b)
        if is_available(a):  # both are (rule 3)
            ready = _newer_first(ta.ready, tb.ready, now, uids)
            if ready is not None:
                return ready
        created = _newer_first(ta.created, tb.created, now, uids)
        return created if created is not None else 0

    return sorted(pods, key=cmp_to_key(compare))
