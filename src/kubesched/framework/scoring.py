"""Score and NormalizeScore for one profile: each plugin's scores over the feasible nodes,
normalized, checked to lie in [MIN_NODE_SCORE, MAX_NODE_SCORE], and weighted into totals.

A plugin scores through its batch form (`score_nodes`) when it has one, else per node (`score`).
"""

from __future__ import annotations

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

    @classmethod
    def of(cls, name: str, plugin: Any, weight: int) -> Scorer:
        kind = type(plugin)
        return cls(name, plugin, weight, defines(kind, "score_nodes"), defines(kind, "normalize_score"))


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
        skip = state.skip_score_plugins
        for scorer in self._scorers:
            name, plugin, normalizes, weight = scorer.name, scorer.plugin, scorer.normalizes, scorer.weight
            if skip and name in skip:
                continue
            try:
                if scorer.batch:
                    scores = _batch_scores(plugin, state, pod, nodes)
                else:
                    scores = _per_node_scores(plugin, state, pod, nodes)
                if keep_raw or not normalize:
                    outcome.raw[name] = scores.copy() if normalizes else scores
                if not normalize:
                    continue
                if normalizes:
                    status = cast(ScoreExtensions, plugin).normalize_score(state, pod, nodes, scores)
                    if status is not None and not status.is_success():
                        outcome.error = error_status(
                            f'running Normalize on Score plugin "{name}": {status.message()}', name
                        )
                        return outcome
            except ScoreError as exc:
                outcome.error = error_status(f'running Score plugin "{name}": {exc}', name)
                return outcome
            except Exception as exc:
                outcome.error = crashed(f'running Score plugin "{name}"', name, exc)
                return outcome
            if len(scores) and (scores.min() < MIN_NODE_SCORE or scores.max() > MAX_NODE_SCORE):
                bad = int(scores[(scores < MIN_NODE_SCORE) | (scores > MAX_NODE_SCORE)][0])
                outcome.error = error_status(
                    f'plugin "{name}" returns an invalid score {bad}, it should in the range of '
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                    name,
                )
                return outcome
            outcome.by_plugin[name] = scores
            if weight == 1:
                totals += scores
            else:
                totals += scores * weight
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
            if len(scores) and (scores.min() < MIN_NODE_SCORE or scores.max() > MAX_NODE_SCORE):
                return totals, error_status(
                    f'plugin "{name}" returns an invalid score after normalizing', name
                )
            totals += scores * scorer.weight
        return totals, None


def _batch_scores(plugin: Any, state: CycleState, pod: Pod, nodes: NodeSet) -> IntArray:
    raw = cast(BatchScorePlugin, plugin).score_nodes(state, pod, nodes)
    # A fresh int64 array the framework owns (normalization writes into it in place).
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
