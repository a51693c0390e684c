"""The cache: assumed pods hold capacity until confirmed or forgotten; nodes come zone-interleaved."""

from __future__ import annotations

import pytest

from kubesched.framework import PodInfo
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


def test_pods_seen_before_their_node_are_counted_when_it_arrives() -> None:
    cache = Cache()
    cache.add_pod(PodInfo(make_pod("early", cpu="1", node_name="late-node")))
    cache.add_node(make_node("late-node"))
    table = cache.snapshot()
    assert table.pod_count.tolist() == [1]
    cache.remove_node("late-node")
    assert len(cache.snapshot()) == 0 and cache.pod_node("default-early") == "late-node"


def test_node_update_keeps_the_table_when_only_allocatable_changes() -> None:
    cache = Cache()
    cache.add_node(make_node("n1", cpu="2"))
    before = cache.snapshot()
    cache.update_node(make_node("n1", cpu="4"))
    assert cache.snapshot() is before and before.allocatable[0, before.resource_index["cpu"]] == 4000
    cache.update_node(make_node("n1", cpu="4", labels={"x": "y"}))
    assert cache.snapshot() is not before
