"""Uniform scores (one value for every node) give what the same scores, one per node, give."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.framework import CycleState, NodeSet
from kubesched.framework.normalize import default_normalize_score
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import Framework
from kubesched.framework.scoring import ScoreOutcome
from kubesched.framework.uniform_scores import is_uniform, uniform
from kubesched.testing.builders import make_node, make_pod, make_table

POD = make_pod("p", cpu="100m")
NODES = make_table([make_node(f"n{i}", cpu="4") for i in range(5)]).all()


class Sort:
    name = "Sort"

    def less(self, a: Any, b: Any) -> bool:
        return False


class Binder:
    name = "Binder"

    def bind(self, state: Any, pod: Any, node_name: str) -> None:
        return None


def scorer(name: str, value: int, *, same: bool, normalize: Any = None, pointwise: bool = False) -> type:
    """A batch Score plugin giving every node `value`, as a uniform array or one per node."""

    def score_nodes(self: Any, state: Any, pod: Any, nodes: NodeSet) -> Any:
        return uniform(len(nodes), value) if same else np.full(len(nodes), value, dtype=np.int64)

    body: dict[str, Any] = {"name": name, "score_nodes": score_nodes}
    if normalize is not None:
        body["normalize_score"] = lambda self, state, pod, nodes, scores: normalize(nodes, scores)
        body["normalize_is_pointwise"] = pointwise
    return type(name, (), body)


def run(plugins: list[type], weights: dict[str, int], *, keep_raw: bool = False) -> ScoreOutcome:
    registry = Registry([Sort, Binder, *plugins])
    spec = {
        "queueSort": [("Sort", 1)],
        "bind": [("Binder", 1)],
        "score": [(p.name, weights.get(p.name, 1)) for p in plugins],  # type: ignore[attr-defined]
    }
    fwk = Framework("test", spec, {}, registry, handle=None)  # type: ignore[arg-type]
    return fwk.run_score(CycleState(), POD, NODES, keep_raw=keep_raw)


def reverse(nodes: NodeSet, scores: Any) -> None:
    default_normalize_score(scores, reverse=True)


def by_count(nodes: NodeSet, scores: Any) -> None:
    """Not pointwise: reads how many nodes there are."""
    scores[...] = scores + len(nodes)


def per_node(nodes: NodeSet) -> np.ndarray[Any, np.dtype[np.int64]]:
    return np.arange(len(nodes), dtype=np.int64) * 10


def varied(name: str) -> type:
    return type(name, (), {"name": name, "score_nodes": lambda self, state, pod, nodes: per_node(nodes)})


@pytest.mark.parametrize("pointwise", [True, False])
def test_uniform_and_per_node_scores_give_the_same_outcome(pointwise: bool) -> None:
    weights = {"Taints": 3, "Images": 2, "Count": 2}

    def plugins(same: bool) -> list[type]:
        return [
            varied("Varied"),
            scorer("Taints", 0, same=same, normalize=reverse, pointwise=pointwise),
            scorer("Images", 7, same=same),
            scorer("Count", 4, same=same, normalize=by_count),
        ]

    one, many = run(plugins(True), weights, keep_raw=True), run(plugins(False), weights, keep_raw=True)
    assert one.error is None and many.error is None
    assert one.totals.tolist() == many.totals.tolist() == [300 + 14 + 18 + 10 * i for i in range(5)]
    for name in ("Varied", "Taints", "Images", "Count"):
        assert one.by_plugin[name].tolist() == many.by_plugin[name].tolist()
        assert one.raw[name].tolist() == many.raw[name].tolist()
    assert is_uniform(one.by_plugin["Images"]) and is_uniform(one.by_plugin["Taints"]) is pointwise
    assert one.raw["Taints"].tolist() == [0] * 5  # the scores before normalization stay as given
    assert not is_uniform(one.by_plugin["Count"])  # a normalization that is not pointwise sees every node


@pytest.mark.parametrize("bad", [-3, 101])
def test_a_uniform_score_out_of_range_is_named(bad: int) -> None:
    outcome = run([scorer("Out", bad, same=True)], {})
    assert outcome.error is not None
    assert f'plugin "Out" returns an invalid score {bad},' in outcome.error.message()


def test_uniform_scores_are_one_read_only_value() -> None:
    scores = uniform(50_000, 7)
    assert is_uniform(scores) and scores.tolist() == [7] * 50_000
    assert scores.strides == (0,) and not scores.flags.writeable
    assert not is_uniform(np.full(3, 7, dtype=np.int64))
    assert not is_uniform(uniform(0, 7))


def test_uniform_arrays_are_shared_and_cannot_be_written() -> None:
    # Handed out again to every plugin asking for the same (n, value): a write would reach them all.
    a, b = uniform(7, 3), uniform(7, 3)
    assert a is b and is_uniform(a) and a.tolist() == [3] * 7
    assert uniform(7, 4).tolist() == [4] * 7 and uniform(8, 3).tolist() == [3] * 8
    with pytest.raises(ValueError):
        a[0] = 5
    with pytest.raises(ValueError):
        a.flags.writeable = True
