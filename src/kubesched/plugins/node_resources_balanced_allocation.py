"""NodeResourcesBalancedAllocation: prefer nodes whose resources would be used evenly.

A node with 90% of its cpu requested but 10% of its memory strands the memory: no pod can use it.
For each configured resource the balance of a node is `int((1 - std) * 100)` of the fractions
`min(requested / allocatable, 1)` (real requests, not the 100m/200Mi defaults), where std is
`|f0 - f1| / 2` for two fractions, the population standard deviation for more, 0 for fewer.
Since v1.36 the plugin scores the *change* the pod makes to that balance:
`50 + (50 + balance(with pod) - balance(without pod)) // 2`, so a node the pod leaves as balanced as
it was scores 75 (an empty node too), a node it balances scores up to 100 and one it unbalances down
to 50 (checked against the v1.37.2 binary). As upstream since ~v1.33, PreScore skips best-effort
pods: they request nothing, so they cannot change any node's balance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.errors import FieldErrors, InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import BatchScorePlugin, Handle, PreScorePlugin, ScorePlugin
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import NodeSet
from kubesched.framework.row_scores import RowScores
from kubesched.framework.signature import SignFragment, requests_fragment
from kubesched.framework.status import Status
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.plugins.node_resources_fit import (
    node_allocatable_requested,
    score_pod_requests,
    table_allocatable_requested,
)
from kubesched.plugins.node_resources_fit_args import ResourceSpec, default_resources

__all__ = [
    "NodeResourcesBalancedAllocation",
    "NodeResourcesBalancedAllocationArgs",
    "balance_change_score",
    "balance_score",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

PRE_SCORE_STATE_KEY = "PreScoreNodeResourcesBalancedAllocation"


class NodeResourcesBalancedAllocationArgs(msgspec.Struct, kw_only=True, rename="camel"):
    """pluginConfig args (kind NodeResourcesBalancedAllocationArgs); every weight must be 1."""

    resources: list[ResourceSpec] = msgspec.field(default_factory=default_resources)

    def __post_init__(self) -> None:
        if not self.resources:  # upstream defaulting: an empty list means cpu and memory
            self.resources = default_resources()

    def validate(self) -> list[InputError]:
        errors: list[InputError] = []
        seen: set[str] = set()
        for i, spec in enumerate(self.resources):
            if not spec.name:
                errors.append(InputError("must not be empty", path=f"resources[{i}].name"))
            elif spec.name in seen:
                errors.append(InputError(f"duplicate value {spec.name!r}", path=f"resources[{i}].name"))
            seen.add(spec.name)
            if spec.weight != 1:
                errors.append(InputError("must be 1", path=f"resources[{i}].weight"))
        return errors


def balance_score(fractions: Sequence[float]) -> int:
    """`int((1 - std) * 100)` of resource fractions already capped at 1, in upstream's float order."""
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        total = 0.0
        for f in fractions:
            total += f
        mean = total / len(fractions)
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def balance_change_score(with_pod: int, without_pod: int) -> int:
    """v1.36+ score from the node's balance with and without the pod (each 50..100): 50..100, 75 = same."""
    half = MAX_NODE_SCORE // 2
    return half + (half + with_pod - without_pod) // 2


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    """The pod's real request of each configured resource."""

    pod_requests: tuple[int, ...]

    def clone(self) -> _PreScoreState:
        return self


class NodeResourcesBalancedAllocation(PreScorePlugin, ScorePlugin, BatchScorePlugin):
    """Score nodes by how evenly the configured resources would be requested with the pod on them."""

    name: ClassVar[str] = "NodeResourcesBalancedAllocation"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()
    args_type: ClassVar[type[NodeResourcesBalancedAllocationArgs]] = NodeResourcesBalancedAllocationArgs

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """KEP-5598: the parts of the pod this plugin's answers depend on."""
        return [requests_fragment(pod)]

    def __init__(
        self, args: NodeResourcesBalancedAllocationArgs | None = None, handle: Handle | None = None
    ) -> None:
        self.args = args if args is not None else NodeResourcesBalancedAllocationArgs()
        errors = self.args.validate()
        if errors:
            raise FieldErrors(errors)
        self.handle = handle
        self.resources = [r.name for r in self.args.resources]
        self._row_scores = RowScores()

    def _state(self, state: CycleState, pod: Pod) -> _PreScoreState:
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            return s
        computed = _PreScoreState(tuple(score_pod_requests(pod, self.resources, non_zero=False)))
        state.write(PRE_SCORE_STATE_KEY, computed)
        return computed

    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        s = _PreScoreState(tuple(score_pod_requests(pod, self.resources, non_zero=False)))
        if not any(s.pod_requests):
            return Status.skip()  # a best-effort pod leaves every node's balance as it is
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        s = self._state(state, pod)
        with_pod: list[float] = []
        without_pod: list[float] = []
        for name, pod_request in zip(self.resources, s.pod_requests, strict=True):
            alloc, req = node_allocatable_requested(node_info, name, pod_request, non_zero=False)
            if alloc == 0:
                continue
            for fractions, used in ((with_pod, req), (without_pod, req - pod_request)):
                fraction = float(used) / float(alloc)
                fractions.append(1.0 if fraction > 1 else fraction)
        return balance_change_score(balance_score(with_pod), balance_score(without_pod))

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> IntArray:
        """`score` for every node at once, with the same float operations in the same order; rows
        whose pods did not change since a pod of the same requests are not computed again."""
        s = self._state(state, pod)
        return self._row_scores.scores(
            nodes,
            s.pod_requests,
            lambda rows: self._score_rows(s, rows),
            lambda ni: self.score(state, pod, ni),
        )

    def _score_rows(self, s: _PreScoreState, nodes: NodeSet) -> IntArray:
        n = len(nodes)
        pairs = [
            table_allocatable_requested(nodes, name, pod_request, non_zero=False)
            for name, pod_request in zip(self.resources, s.pod_requests, strict=True)
        ]
        without = [
            (alloc, req - pod_request)
            for (alloc, req), pod_request in zip(pairs, s.pod_requests, strict=True)
        ]
        half = MAX_NODE_SCORE // 2
        if len(pairs) >= 2 and all(bool(alloc.all()) for alloc, _ in pairs):
            # Both passes divide by the same allocatable: check and convert it once (a float64
            # divisor gives the same quotients as the int64 one true_divide would convert).
            floats = [alloc.astype(np.float64) for alloc, _ in pairs]
            with_pod = _scores_all_valid([(f, r) for f, (_, r) in zip(floats, pairs, strict=True)], n)
            without_pod = _scores_all_valid([(f, r) for f, (_, r) in zip(floats, without, strict=True)], n)
        else:
            with_pod, without_pod = _balance_scores(pairs, n), _balance_scores(without, n)
        out: IntArray = half + (half + with_pod - without_pod) // 2
        return out


def _balance_scores(pairs: Sequence[tuple[IntArray, IntArray]], n: int) -> IntArray:
    """`balance_score` of every row: (allocatable, requested) per resource, allocatable 0 = skipped."""
    if all(bool(alloc.all()) for alloc, _ in pairs):
        return _scores_all_valid(pairs, n)
    count = np.zeros(n, dtype=np.int64)
    first = np.zeros(n, dtype=np.float64)
    second = np.zeros(n, dtype=np.float64)
    total = np.zeros(n, dtype=np.float64)
    columns: list[tuple[npt.NDArray[np.bool_], FloatArray]] = []
    for alloc, req in pairs:
        valid = alloc != 0
        if not valid.any():
            continue
        fraction = req.astype(np.float64) / np.where(valid, alloc, 1).astype(np.float64)
        fraction = np.where(valid & (fraction > 1), 1.0, np.where(valid, fraction, 0.0))
        first = np.where(valid & (count == 0), fraction, first)
        second = np.where(valid & (count == 1), fraction, second)
        total = total + fraction  # invalid rows add an exact 0.0, as if skipped
        count += valid
        columns.append((valid, fraction))
    std = np.zeros(n, dtype=np.float64)
    two = count == 2
    std[two] = np.abs((first[two] - second[two]) / 2)
    many = count > 2
    if many.any():
        k = count[many].astype(np.float64)
        mean = total[many] / k
        acc = np.zeros(len(k), dtype=np.float64)
        for valid, fraction in columns:
            d = fraction[many] - mean
            acc = acc + np.where(valid[many], d * d, 0.0)
        std[many] = np.sqrt(acc / k)
    out: IntArray = ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    return out


def _scores_all_valid(pairs: Sequence[tuple[npt.NDArray[Any], IntArray]], n: int) -> IntArray:
    """`_balance_scores` when every node has every resource (the common case): every fraction counts,
    so no masking is needed. Same float operations, in the same order, as `balance_score`."""
    if len(pairs) < 2:
        return np.full(n, MAX_NODE_SCORE, dtype=np.int64)  # std 0
    fractions: list[FloatArray] = []
    for alloc, req in pairs:
        fraction = np.true_divide(req, alloc, dtype=np.float64)
        np.minimum(fraction, 1.0, out=fraction)
        fractions.append(fraction)
    if len(fractions) == 2:
        std = fractions[0] - fractions[1]
        std /= 2
        np.abs(std, out=std)
    else:
        total = fractions[0] + fractions[1]
        for f in fractions[2:]:
            total += f
        mean = total / len(fractions)
        acc = np.zeros(n, dtype=np.float64)
        for f in fractions:
            d = f - mean
            d *= d
            acc += d
        acc /= len(fractions)
        std = np.sqrt(acc)
    np.subtract(1, std, out=std)
    std *= MAX_NODE_SCORE
    out: IntArray = std.astype(np.int64)
    return out
