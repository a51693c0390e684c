"""The cache: assumed pods hold capacity until confirmed or forgotten; nodes come zone-interleaved."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework import NodeTable, PodInfo
from kubesched.framework.node_table import _ROW_COLUMNS
from kubesched.scheduler.cache import Cache, CacheError, interleave_zones
from kubesched.testing.builders import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"


def test_nodes_are_interleaved_by_zone_in_first_seen_order() -> None:
    nodes = [make_node(n, labels={ZONE: n[0]}) for n in ("a1", "a2", "a3", "b1", "c1", "c2")]
    assert [n.metadata.name for n in interleave_zones(nodes)] == ["a1", "b1", "c1", "a2", "c2", "a3"]


def test_assume_reserves_capacity_and_forget_releases_it() -> None:
    cache = Cache()
    cache.add_node(make_node("n1", cpu="1"))
    pi = PodInfo(make_pod("p", cpu="600m", node_name="n1"))
    cache.assume_pod(pi, "n1")
    table = cache.snapshot()
    assert table.requested[0, table.resource_index["cpu"]] == 600 and cache.is_assumed(pi.key)
    with pytest.raises(CacheError, match="can't be assumed"):
        cache.assume_pod(pi, "n1")
    cache.forget_pod(pi.key)
    assert table.requested[0, table.resource_index["cpu"]] == 0 and not cache.has_pod(pi.key)
    with pytest.raises(CacheError, match="wasn't assumed"):
        cache.forget_pod(pi.key)


def test_confirming_an_assumed_pod_on_another_node_moves_it() -> None:
    cache = Cache()
    for n in ("n1", "n2"):
        cache.add_node(make_node(n))
    cache.assume_pod(PodInfo(make_pod("p", cpu="1", node_name="n1")), "n1")
    cache.add_pod(PodInfo(make_pod("p", cpu="1", node_name="n2")))
    table = cache.snapshot()
    cpu = table.resource_index["cpu"]
    assert table.requested[:, cpu].tolist() == [0, 1000] and not cache.is_assumed("default-p")


def test_confirming_an_assumed_pod_in_place_is_a_remove_and_an_add() -> None:
    """The bound copy of a pod assumed on the same node swaps in without recounting; what the table
    and the node show afterwards (pod order, change log, generations) is what remove + add gives."""
    cache = Cache()
    cache.add_node(make_node("n1", cpu="4"))
    cache.add_pod(PodInfo(make_pod("a", cpu="1", node_name="n1", priority=0)))
    assumed = PodInfo(make_pod("p", cpu="500m", node_name="n1", priority=0, host_ports=[80]))
    cache.assume_pod(assumed, "n1")
    cache.add_pod(PodInfo(make_pod("b", cpu="1", node_name="n1", priority=5)))
    table = cache.snapshot()
    position, generation = table.pod_log_position, table.generation
    info_generation = table.infos[0].generation
    bound = assumed.with_pod(make_pod("p", cpu="500m", node_name="n1", priority=0, host_ports=[80]))
    recounted: list[int] = []
    table._account = lambda row, pi, sign: recounted.append(sign)  # type: ignore[method-assign]
    cache.add_pod(bound)
    del table._account
    assert recounted == [] and cache.snapshot() is table and not cache.is_assumed(bound.key)
    assert list(table.infos[0].pods) == ["default-a", "default-b", "default-p"]
    assert table.infos[0].pods["default-p"] is bound and cache.pod_info(bound.key) is bound
    assert table.pod_changes(position) == [(0, assumed, -1), (0, bound, +1)]
    assert (table.generation, table.infos[0].generation) == (generation + 2, info_generation + 2)
    assert list(cache.pods())[-1] is bound
    _assert_same_rows(table, NodeTable(list(table.infos)))
    # Other facts (here more cpu) are recounted.
    cache.add_pod(PodInfo(make_pod("p", cpu="2", node_name="n1", priority=0, host_ports=[80])))
    assert table.requested[0, table.resource_index["cpu"]] == 4000
    _assert_same_rows(table, NodeTable(list(table.infos)))


def test_pods_seen_before_their_node_are_counted_when_it_arrives() -> None:
    cache = Cache()
    cache.add_pod(PodInfo(make_pod("early", cpu="1", node_name="late-node")))
    cache.add_node(make_node("late-node"))
    table = cache.snapshot()
    assert table.pod_count.tolist() == [1]
    cache.remove_node("late-node")
    assert len(cache.snapshot()) == 0 and cache.pod_node("default-early") == "late-node"


def test_a_node_that_comes_back_holds_its_pods_in_the_caches_order() -> None:
    """The pods a returning node gets are those bound or assumed to it, in the order of the cache's
    last change to each (as the scan of every pod found them), not in the order they first came."""
    cache = Cache()
    cache.add_node(make_node("n1", cpu="8"))
    cache.add_node(make_node("other", cpu="8"))
    for name in ("a", "b", "c", "d"):
        cache.add_pod(PodInfo(make_pod(name, cpu="100m", node_name="n1")))
    cache.add_pod(PodInfo(make_pod("x", cpu="100m", node_name="other")))
    cache.remove_node("n1")
    cache.remove_pod("default-b")
    cache.add_pod(PodInfo(make_pod("a", cpu="200m", node_name="n1")))  # changed: last now
    cache.assume_pod(PodInfo(make_pod("e", cpu="100m")), "n1")
    cache.add_pod(PodInfo(make_pod("c", cpu="100m", node_name="other")))  # moved away
    want = [pi.key for pi in cache.pods() if cache.pod_node(pi.key) == "n1"]
    assert want == ["default-d", "default-a", "default-e"]
    cache.add_node(make_node("n1", cpu="8"))
    info = cache.node_info("n1")
    assert info is not None and list(info.pods) == want
    table = cache.snapshot()
    assert table.requested[table.index["n1"], table.resource_index["cpu"]] == 400


def test_node_update_keeps_the_table_when_only_allocatable_changes() -> None:
    cache = Cache()
    cache.add_node(make_node("n1", cpu="2"))
    before = cache.snapshot()
    cache.update_node(make_node("n1", cpu="4"))
    assert cache.snapshot() is before and before.allocatable[0, before.resource_index["cpu"]] == 4000
    cache.update_node(make_node("n1", cpu="4", labels={"x": "y"}))
    assert cache.snapshot() is not before


_ANTI_AFFINITY = {
    "affinity": {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
}


def _assert_same_rows(table: NodeTable, fresh: NodeTable) -> None:
    assert table.names == fresh.names and table.resources[:3] == fresh.resources[:3]
    for r in set(table.resources) | set(fresh.resources):
        for matrix in ("allocatable", "requested"):
            mine, theirs = getattr(table, matrix), getattr(fresh, matrix)
            a = table.resource_index.get(r)
            b = fresh.resource_index.get(r)
            got = mine[:, a].tolist() if a is not None else [0] * len(table)
            want = theirs[:, b].tolist() if b is not None else [0] * len(fresh)
            assert got == want, (matrix, r)
    for column in _ROW_COLUMNS:
        assert getattr(table, column).tolist() == getattr(fresh, column).tolist(), column
    assert table.required_anti_affinity_total == fresh.required_anti_affinity_total
    assert table.affinity_total == fresh.affinity_total == int(fresh.affinity_pods.sum())
    assert table.required_anti_affinity_total == int(fresh.required_anti_affinity_pods.sum())


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["node+", "node-", "relabel", "grow", "pod+", "pod-", "look"]), st.integers(0, 5)
        ),
        max_size=60,
    )
)
def test_a_rebuilt_table_copies_rows_as_a_fresh_load_would_give_them(ops: list[tuple[str, int]]) -> None:
    """A table rebuilt after nodes come, go or change copies the rows the last table kept current;
    whatever happened while none was kept (pods placed, nodes relabelled) is loaded again."""
    cache = Cache()
    pods: dict[str, str] = {}
    for step, (op, i) in enumerate(ops):
        name = f"n{i}"
        zone = {"topology.kubernetes.io/zone": f"z{i % 2}"}
        if op == "node+":
            cache.add_node(make_node(name, labels=zone, extra={"example.com/gpu": 2} if i % 3 == 0 else None))
        elif op == "node-":
            cache.remove_node(name)
        elif op in ("relabel", "grow") and cache.node(name) is not None:
            labels = {**zone, "step": str(step)} if op == "relabel" else zone
            cache.update_node(make_node(name, cpu=str(4 + step), labels=labels, unschedulable=step % 2 == 0))
        elif op == "pod+":
            pod = make_pod(
                f"p{step}",
                cpu="100m",
                extra={"example.com/fpga": 1} if i == 4 else None,
                node_name=name,
                priority=step % 4,
                host_ports=[8000 + step] if i % 2 else (),
                spec=_ANTI_AFFINITY if i == 1 else None,
            )
            cache.add_pod(PodInfo(pod))
            pods[PodInfo(pod).key] = name
        elif op == "pod-" and pods:
            key = sorted(pods)[i % len(pods)]
            del pods[key]
            cache.remove_pod(key)
        elif op == "look":
            table = cache.snapshot()
            _assert_same_rows(table, NodeTable(list(table.infos)))
    table = cache.snapshot()
    _assert_same_rows(table, NodeTable(list(table.infos)))


def test_a_rebuilt_table_copies_the_rows_it_can() -> None:
    cache = Cache()
    for i in range(3):
        cache.add_node(make_node(f"n{i}"))
    cache.add_pod(PodInfo(make_pod("p", cpu="1", node_name="n0")))
    first = cache.snapshot()
    cache.add_node(make_node("n3"))
    cache.add_pod(PodInfo(make_pod("q", cpu="1", node_name="n1")))  # while no table is kept
    loaded: list[list[int]] = []
    real = NodeTable._load_rows

    def spy(self: NodeTable, rows: Sequence[int]) -> None:
        loaded.append(list(rows))
        real(self, rows)

    NodeTable._load_rows = spy  # type: ignore[method-assign]
    try:
        second = cache.snapshot()
    finally:
        NodeTable._load_rows = real  # type: ignore[method-assign]
    assert second is not first and loaded == [[1, 3]]  # n1 (a pod came) and n3 (new); n0, n2 copied
    cpu = second.resource_index["cpu"]
    assert second.requested[:, cpu].tolist() == [1000, 1000, 0, 0]
