"""ImageLocality (upstream `pkg/scheduler/framework/plugins/imagelocality/image_locality.go`): image name
normalization, thresholds, spread factor, init containers, the snapshot-wide image summary, and batch == per
node."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Node, Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import Handle
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.status import Code, Status
from kubesched.plugins.image_locality import (
    MAX_CONTAINER_THRESHOLD,
    MIN_THRESHOLD,
    ImageLocality,
    image_priority,
    normalized_image_name,
)
from kubesched.testing.builders import make_node, make_pod, make_table

MIB = 1024 * 1024


class _Handle:
    """Just enough of a Handle: the snapshot the per-node form counts nodes in."""

    def __init__(self, table: NodeTable) -> None:
        self.snapshot = table


def _plugin(table: NodeTable) -> ImageLocality:
    return ImageLocality(handle=cast(Handle, _Handle(table)))


def _pod(*images: str, init: Sequence[str] = ()) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}", "image": im} for i, im in enumerate(images)]}
    if init:
        spec["initContainers"] = [{"name": f"i{i}", "image": im} for i, im in enumerate(init)]
    return make_pod("p", spec=spec)


def _node(name: str, *images: tuple[Sequence[str], int]) -> Node:
    return make_node(name, images=images)


def _scores(table: NodeTable, pod: Pod, nodes: NodeSet | None = None) -> list[int]:
    """Per-node and batch scores; they must agree."""
    nodes = nodes if nodes is not None else table.all()
    plugin = _plugin(table)
    state = CycleState()
    per_node = []
    for ni in nodes:
        got = plugin.score(state, pod, ni)
        assert isinstance(got, int)
        per_node.append(got)
    batch = _plugin(table).score_nodes(CycleState(), pod, nodes)
    assert batch.dtype == np.int64
    assert batch.tolist() == per_node
    return per_node


@pytest.mark.parametrize(
    ("image", "normalized"),
    [
        ("nginx", "nginx:latest"),
        ("nginx:1.25", "nginx:1.25"),
        ("library/nginx", "library/nginx:latest"),
        ("registry.example:5000/team/app", "registry.example:5000/team/app:latest"),
        ("registry.example:5000/team/app:v2", "registry.example:5000/team/app:v2"),
        ("nginx@sha256:0123abcd", "nginx@sha256:0123abcd"),
        ("registry.example:5000/app@sha256:0123abcd", "registry.example:5000/app@sha256:0123abcd"),
        ("", ":latest"),
    ],
)
def test_normalized_image_name(image: str, normalized: str) -> None:
    assert normalized_image_name(image) == normalized


@pytest.mark.parametrize(
    ("total", "containers", "expected"),
    [
        (0, 1, 0),
        (MIN_THRESHOLD, 1, 0),
        (MIN_THRESHOLD + 1, 1, 0),
        (500 * MIB, 1, 48),  # 100 * 477 // 977
        (MAX_CONTAINER_THRESHOLD, 1, 100),
        (5000 * MIB, 1, 100),
        (1000 * MIB, 2, 49),  # 100 * 977 // 1977
        (0, 0, 0),
    ],
)
def test_image_priority(total: int, containers: int, expected: int) -> None:
    assert image_priority(total, containers) == expected


CASES: list[tuple[str, list[Node], Pod, list[int]]] = [
    ("no image anywhere", [_node("a"), _node("b")], _pod("nginx"), [0, 0]),
    ("below the minimum threshold", [_node("a", (["small:1"], 10 * MIB))], _pod("small:1"), [0]),
    ("above the maximum threshold", [_node("a", (["big:1"], 2000 * MIB))], _pod("big:1"), [100]),
    # 500MiB on every node: spread 1 -> 100 * (500-23) // (1000-23) = 48
    (
        "image on every node",
        [_node("a", (["app:1"], 500 * MIB)), _node("b", (["app:1"], 500 * MIB))],
        _pod("app:1"),
        [48, 48],
    ),
    # 800MiB on 2 of 4 nodes: int(800MiB * 0.5) = 400MiB -> 100 * 377 // 977 = 38
    (
        "spread factor",
        [_node("a", (["app:1"], 800 * MIB)), _node("b"), _node("c", (["app:1"], 800 * MIB)), _node("d")],
        _pod("app:1"),
        [38, 0, 38, 0],
    ),
    # an untagged pod image matches the node's `:latest` name only
    (
        "untagged image means latest",
        [_node("a", (["nginx:latest"], 900 * MIB)), _node("b", (["nginx:1.0"], 900 * MIB))],
        _pod("nginx"),
        [int(100 * (int(900 * MIB * 0.5) - MIN_THRESHOLD) // (MAX_CONTAINER_THRESHOLD - MIN_THRESHOLD)), 0],
    ),
    # any of the node image's names matches
    (
        "second name of a node image",
        [_node("a", (["docker.io/library/nginx:latest", "nginx:latest"], 1500 * MIB))],
        _pod("nginx"),
        [100],
    ),
    # init containers count, and the maximum scales with the container count:
    # 900 + 600 = 1500MiB of 2000MiB -> 100 * (1500-23) // (2000-23) = 74
    (
        "init containers included",
        [_node("a", (["init:1"], 900 * MIB), (["app:1"], 600 * MIB))],
        _pod("app:1", init=["init:1"]),
        [74],
    ),
    # the same image in two containers counts twice: 2 * 600MiB of 2000MiB -> 59
    ("image used by two containers", [_node("a", (["app:1"], 600 * MIB))], _pod("app:1", "app:1"), [59]),
    # one image present, one absent: 600MiB of 2000MiB -> 100 * 577 // 1977 = 29
    (
        "two containers, one image present",
        [_node("a", (["app:1"], 600 * MIB))],
        _pod("app:1", "other:1"),
        [29],
    ),
    # digests are compared as written
    (
        "digest reference",
        [_node("a", (["app@sha256:aa"], 700 * MIB)), _node("b", (["app:latest"], 700 * MIB))],
        _pod("app@sha256:aa"),
        [int(100 * (350 * MIB - MIN_THRESHOLD) // (MAX_CONTAINER_THRESHOLD - MIN_THRESHOLD)), 0],
    ),
]


@pytest.mark.parametrize(("nodes", "pod", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_score(nodes: list[Node], pod: Pod, expected: list[int]) -> None:
    assert _scores(make_table(nodes), pod) == expected


def test_spread_counts_the_whole_snapshot_not_the_scored_subset() -> None:
    table = make_table([_node("a", (["app:1"], 800 * MIB)), _node("b"), _node("c"), _node("d")])
    subset = NodeSet(table, np.array([0], dtype=np.intp))
    # 1 of 4 nodes: int(800MiB / 4) = 200MiB -> 100 * 177 // 977 = 18
    assert _scores(table, _pod("app:1"), subset) == [18]


def test_summary_size_is_the_first_nodes() -> None:
    # Upstream keeps one size per image name; the same name reported with another size elsewhere
    # does not change it. 1000MiB on both nodes (spread 1) -> 100.
    table = make_table([_node("a", (["app:1"], 1000 * MIB)), _node("b", (["app:1"], 10 * MIB))])
    assert _scores(table, _pod("app:1")) == [100, 100]


def test_per_node_without_snapshot_is_an_error() -> None:
    table = make_table([_node("a", (["app:1"], 800 * MIB))])
    got = ImageLocality().score(CycleState(), _pod("app:1"), table.infos[0])
    assert isinstance(got, tuple)
    score, status = got
    assert score == 0
    assert isinstance(status, Status)
    assert status.code == Code.ERROR


def test_state_is_shared_within_a_cycle() -> None:
    table = make_table([_node("a", (["app:1"], 800 * MIB)), _node("b")])
    state = CycleState()
    plugin = _plugin(table)
    assert plugin.score_nodes(state, _pod("app:1"), table.all()).tolist() == [38, 0]
    data = state.read("PreScoreImageLocality")
    assert data.clone() is data
    # A handle-less instance can score per node from the state the batch form left behind.
    assert ImageLocality().score(state, _pod("app:1"), table.infos[0]) == 38


def test_image_summary_follows_node_updates() -> None:
    table = make_table([_node("a", (["app:1"], 800 * MIB)), _node("b")])
    plugin = _plugin(table)
    assert plugin.score_nodes(CycleState(), _pod("app:1"), table.all()).tolist() == [38, 0]
    # Node b pulls the image: same labels/taints, so the table updates the row in place.
    assert table.update_node(_node("b", (["app:1"], 800 * MIB)))
    assert plugin.score_nodes(CycleState(), _pod("app:1"), table.all()).tolist() == [79, 79]
    other = make_table([_node("x", (["app:1"], 2000 * MIB))])
    assert plugin.score_nodes(CycleState(), _pod("app:1"), other.all()).tolist() == [100]


def test_registered_as_score_only() -> None:
    from kubesched.framework.interfaces import extension_points_of

    assert extension_points_of(ImageLocality) == ["score"]


# --------------------------------------------------------------------------- batch == per node

_IMAGES = ["a", "a:1", "b:2", "reg:5000/c", "reg:5000/c:latest", "d@sha256:ff"]


@st.composite
def _cluster(draw: st.DrawFn) -> tuple[NodeTable, NodeSet, Pod]:
    n = draw(st.integers(1, 7))
    nodes = []
    for i in range(n):
        images = draw(
            st.lists(
                st.tuples(
                    st.lists(
                        st.sampled_from([normalized_image_name(x) for x in _IMAGES] + _IMAGES),
                        min_size=1,
                        max_size=2,
                    ),
                    st.integers(0, 3000).map(lambda m: m * MIB + 17),
                ),
                max_size=4,
            )
        )
        nodes.append(make_node(f"n{i}", images=images))
    table = make_table(nodes)
    rows = draw(st.lists(st.integers(0, n - 1), unique=True).map(sorted))
    pod = _pod(
        *draw(st.lists(st.sampled_from(_IMAGES), min_size=1, max_size=3)),
        init=draw(st.lists(st.sampled_from(_IMAGES), max_size=2)),
    )
    return table, NodeSet(table, np.asarray(rows, dtype=np.intp)), pod


@settings(max_examples=200, deadline=None)
@given(_cluster())
def test_batch_agrees_with_per_node(cluster: tuple[NodeTable, NodeSet, Pod]) -> None:
    table, nodes, pod = cluster
    assert all(0 <= s <= 100 for s in _scores(table, pod, nodes))
