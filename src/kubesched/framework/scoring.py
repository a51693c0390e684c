"""Score and NormalizeScore for one profile: each plugin's scores over the feasible nodes,
normalized, checked to lie in [MIN_NODE_SCORE, MAX_NODE_SCORE], and weighted into totals.

A plugin scores through its batch form (`score_nodes`) when it has one, else per node (`score`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import BatchScorePlugin, ScoreExtensions, ScorePlugin, defines
from kubesched.framework.node_table import NodeSet
from kubesched.framework.plugin_calls import (
    OnNode,
    PluginReturnError,
    ScoreError,
    checked_status,
    crashed,
    error_status,
    shown,
)
from kubesched.framework.status import Status
from kubesched.framework.types import MAX_NODE_SCORE, MIN_NODE_SCORE
from kubesched.framework.uniform_scores import is_uniform, uniform

__all__ = ["ScoreOutcome", "Scorer", "Scoring"]

IntArray = npt.NDArray[np.int64]


@dataclass(slots=True)
class ScoreOutcome:
    """Scores over feasible nodes: per-plugin normalized (before weight) and the weighted totals."""

    nodes: NodeSet
    totals: IntArray
    by_plugin: dict[str, IntArray] = field(default_factory=dict)
    error: Status | None = None
    #: Per plugin, the scores before NormalizeScore (only when asked for: `run_score(keep_raw=True)`).
    raw: dict[str, IntArray] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Scorer:
    """A Score plugin of the profile, with its forms looked up once rather than per cycle."""

    name: str
    plugin: Any
    weight: int
    #: Whether it defines `score_nodes` (else `score`, per node).
    batch: bool
    #: Whether it defines `normalize_score`.
    normalizes: bool
    #: Whether its normalization is pointwise (`ScoreExtensions.normalize_is_pointwise`).
    pointwise: bool = False

    @classmethod
    def of(cls, name: str, plugin: Any, weight: int) -> Scorer:
        kind = type(plugin)
        normalizes = defines(kind, "normalize_score")
        pointwise = normalizes and getattr(kind, "normalize_is_pointwise", False) is True
        return cls(name, plugin, weight, defines(kind, "score_nodes"), normalizes, pointwise)


class Scoring:
    """The profile's Score plugins, in order."""

    __slots__ = ("_scorers",)

    def __init__(self, scorers: list[Scorer]) -> None:
        self._scorers = scorers

    def run(
        self, state: CycleState, pod: Pod, nodes: NodeSet, *, keep_raw: bool = False, normalize: bool = True
    ) -> ScoreOutcome:
        """Score plugins over `nodes`: normalized per plugin, weighted into totals. `keep_raw` also
        keeps each plugin's scores before NormalizeScore (`outcome.raw`), and `normalize=False`
        stops there (no normalization, no totals): what opportunistic batching needs to score one
        node again and normalize it with the nodes it kept (`normalized_totals`)."""
        totals = np.zeros(len(nodes), dtype=np.int64)
        outcome = ScoreOutcome(nodes, totals)
        # Weighted uniform scores (`uniform_scores`) are summed here and added to totals once.
        offset = 0
        skip = state.skip_score_plugins
        for scorer in self._scorers:
            name, plugin, normalizes, weight = scorer.name, scorer.plugin, scorer.normalizes, scorer.weight
            if skip and name in skip:
                continue
            try:
                if scorer.batch:
                    scores = _batch_scores(scorer, state, pod, nodes)
                else:
                    scores = _per_node_scores(plugin, state, pod, nodes)
                same = is_uniform(scores)
                if keep_raw or not normalize:
                    outcome.raw[name] = scores.copy() if normalizes and not same else scores
                if not normalize:
                    continue
                if normalizes:
                    scores, status = _normalized(scorer, state, pod, nodes, scores, same)
                    if status is not None and not status.is_success():
                        outcome.error = error_status(
                            f'running Normalize on Score plugin "{name}": {status.message()}', name
                        )
                        return outcome
                    same = is_uniform(scores)
            except ScoreError as exc:
                outcome.error = error_status(f'running Score plugin "{name}": {exc}', name)
                return outcome
            except Exception as exc:
                outcome.error = crashed(f'running Score plugin "{name}"', name, exc)
                return outcome
            if not _in_range(scores[:1] if same else scores):
                bad = int(scores[(scores < MIN_NODE_SCORE) | (scores > MAX_NODE_SCORE)][0])
                outcome.error = error_status(
                    f'plugin "{name}" returns an invalid score {bad}, it should in the range of '
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                    name,
                )
                return outcome
            outcome.by_plugin[name] = scores
            if same:
                offset += int(scores[0]) * weight
            elif weight == 1:
                totals += scores
            else:
                totals += scores * weight
        if offset:
            totals += offset
        return outcome

    def normalized_totals(
        self, state: CycleState, pod: Pod, nodes: NodeSet, raw: Mapping[str, IntArray]
    ) -> tuple[IntArray, Status | None]:
        """Weighted totals over `nodes` from the plugins' scores before NormalizeScore (`raw`,
        aligned with `nodes`), normalized over `nodes` as `run` does."""
        totals = np.zeros(len(nodes), dtype=np.int64)
        for scorer in self._scorers:
            name = scorer.name
            given = raw.get(name)
            if given is None:
                continue
            scores = given.copy()
            try:
                if scorer.normalizes:
                    status = cast(ScoreExtensions, scorer.plugin).normalize_score(state, pod, nodes, scores)
                    if status is not None and not status.is_success():
                        return totals, error_status(
                            f'running Normalize on Score plugin "{name}": {status.message()}', name
                        )
            except Exception as exc:
                return totals, crashed(f'running Score plugin "{name}"', name, exc)
            if not _in_range(scores):
                return totals, error_status(
                    f'plugin "{name}" returns an invalid score after normalizing', name
                )
            totals += scores * scorer.weight
        return totals, None


def _unshared_refcount() -> int:
    """What `sys.getrefcount` says of an array only a local variable refers to (interpreters
    differ in the references their own frames hold)."""
    probe = np.empty(0, dtype=np.int64)
    return sys.getrefcount(probe)


#: At most this count, an array a plugin returned is referred to by nobody else (not the plugin,
#: not a view): the framework takes it as is instead of copying 8 bytes per node.
_UNSHARED_REFCOUNT = _unshared_refcount()


def _in_range(scores: IntArray) -> bool:
    """Whether every score lies in [MIN_NODE_SCORE, MAX_NODE_SCORE], in one pass: shifted to start
    at 0 and read as unsigned, a score below the range wraps above it."""
    if not len(scores):
        return True
    shifted = scores - MIN_NODE_SCORE if MIN_NODE_SCORE else scores
    return int(shifted.view(np.uint64).max()) <= MAX_NODE_SCORE - MIN_NODE_SCORE


def _normalized(
    scorer: Scorer, state: CycleState, pod: Pod, nodes: NodeSet, scores: IntArray, same: bool
) -> tuple[IntArray, Status | None]:
    """NormalizeScore of `scorer` over `scores`. A uniform score of a plugin whose normalization is
    pointwise is normalized as one score (of the first node) and stays uniform; any other uniform
    score becomes one writable score per node first."""
    plugin = cast(ScoreExtensions, scorer.plugin)
    if same and scorer.pointwise:
        one = np.array(scores[:1])
        status = plugin.normalize_score(state, pod, NodeSet(nodes.table, nodes.rows[:1]), one)
        return uniform(len(nodes), int(one[0])), status
    if same:
        scores = np.array(scores)
    return scores, plugin.normalize_score(state, pod, nodes, scores)


def _batch_scores(scorer: Scorer, state: CycleState, pod: Pod, nodes: NodeSet) -> IntArray:
    raw = cast(BatchScorePlugin, scorer.plugin).score_nodes(state, pod, nodes)
    # The framework writes into scores only to normalize them, in place. So it takes as they are
    # a uniform array (normalized apart, `_normalized`), the array of a plugin without
    # NormalizeScore (read-only views of the scores RowScores keeps, say), and an array nothing
    # else refers to; anything else is copied.
    if (
        type(raw) is np.ndarray
        and raw.dtype == np.int64
        and (
            not scorer.normalizes
            or is_uniform(raw)
            or (raw.flags.owndata and raw.flags.writeable and sys.getrefcount(raw) <= _UNSHARED_REFCOUNT)
        )
    ):
        scores: IntArray = raw
    else:
        scores = np.array(raw, dtype=np.int64, copy=True)
    if scores.shape != (len(nodes),):
        raise ScoreError(f"returned {scores.shape[0] if scores.ndim else 0} scores for {len(nodes)} nodes")
    return scores


def _per_node_scores(plugin: Any, state: CycleState, pod: Pod, nodes: NodeSet) -> IntArray:
    per_node = cast(ScorePlugin, plugin)
    scores = np.zeros(len(nodes), dtype=np.int64)
    for i, info in enumerate(nodes.infos):
        try:
            out = per_node.score(state, pod, info)
            value, status = out if isinstance(out, tuple) else (out, None)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise PluginReturnError(
                    f"returned {shown(out)} from Score; expected an int (0-100) or (int, Status)"
                )
            status = checked_status(status, "Score")
        except Exception as exc:
            raise OnNode(info.name, exc) from exc
        if status is not None and not status.is_success():
            raise ScoreError(status.message())
        scores[i] = int(value)
    return scores
