"""Taints and tolerations: whether a pod's tolerations let it onto a tainted node.

Matching follows upstream `Toleration.ToleratesTaint`: an empty toleration effect matches every
effect; an empty key matches every key; operator Equal (or empty) compares values, Exists ignores
them; the numeric operators Gt/Lt (v1.35+, TaintTolerationComparisonOperators) read both values as
canonical decimal int64 (`0`, `950`, `-3`; not `0950` or `+3`) and hold when the taint's value is
greater / less than the toleration's. Unknown operators tolerate nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from kubesched.api.objects import Taint, Toleration

__all__ = [
    "DEFAULT_FILTER_EFFECTS",
    "EFFECT_NO_EXECUTE",
    "EFFECT_NO_SCHEDULE",
    "EFFECT_PREFER_NO_SCHEDULE",
    "TAINT_CONTROL_PLANE",
    "TAINT_NODE_NOT_READY",
    "TAINT_NODE_UNREACHABLE",
    "TAINT_NODE_UNSCHEDULABLE",
    "find_untolerated_taint",
    "tolerates_all",
    "toleration_tolerates",
]

EFFECT_NO_SCHEDULE = "NoSchedule"
EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
EFFECT_NO_EXECUTE = "NoExecute"

#: Effects the TaintToleration filter enforces; PreferNoSchedule only affects scoring.
DEFAULT_FILTER_EFFECTS: frozenset[str] = frozenset({EFFECT_NO_SCHEDULE, EFFECT_NO_EXECUTE})

#: Put on control-plane nodes by kubeadm (NoSchedule).
TAINT_CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
#: Mirrors `spec.unschedulable` (NoSchedule); NodeUnschedulable checks tolerations of it.
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
#: Added by the node lifecycle controller while the Ready condition is False / Unknown.
TAINT_NODE_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE = "node.kubernetes.io/unreachable"

_CANONICAL_INT_RE = re.compile(r"0|-?[1-9][0-9]*")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _canonical_int(text: str) -> int | None:
    if not _CANONICAL_INT_RE.fullmatch(text):
        return None
    n = int(text)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


def _compare(taint_value: str, toleration_value: str, greater: bool) -> bool:
    taint_n = _canonical_int(taint_value)
    toleration_n = _canonical_int(toleration_value)
    if taint_n is None or toleration_n is None:
        return False
    return taint_n > toleration_n if greater else taint_n < toleration_n


def toleration_tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Whether `toleration` tolerates `taint` (key, effect and value according to the operator)."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    op = toleration.operator
    if op in ("", "Equal"):
        return toleration.value == taint.value
    if op == "Exists":
        return True
    if op == "Gt":
        return _compare(taint.value, toleration.value, greater=True)
    if op == "Lt":
        return _compare(taint.value, toleration.value, greater=False)
    return False


def find_untolerated_taint(
    taints: Iterable[Taint],
    tolerations: Sequence[Toleration],
    effects: frozenset[str] | set[str] = DEFAULT_FILTER_EFFECTS,
) -> Taint | None:
    """The first taint whose effect is in `effects` that no toleration tolerates, or None.

    The first one is what upstream reports (and logs) when the TaintToleration filter fails.
    """
    for taint in taints:
        if taint.effect not in effects:
            continue
        if not any(toleration_tolerates(tol, taint) for tol in tolerations):
            return taint
    return None


def tolerates_all(
    taints: Iterable[Taint],
    tolerations: Sequence[Toleration],
    effects: frozenset[str] | set[str] = DEFAULT_FILTER_EFFECTS,
) -> bool:
    """Whether every taint with an effect in `effects` is tolerated."""
    return find_untolerated_taint(taints, tolerations, effects) is None
