"""NodeTable columns stay equal to the NodeInfos they summarise as pods and nodes change."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Taint
from kubesched.framework import NodeInfo, NodeTable, PodInfo
from kubesched.framework.node_table import sum_per_value
from kubesched.testing.builders import make_node, make_pod, make_table


def test_resources_are_columns_in_scheduler_units() -> None:
    table = make_table(
        [make_node("a", cpu="2", memory="1Gi"), make_node("b", extra={"nvidia.com/gpu": 4})],
        [make_pod("x", cpu="250m", memory="100Mi", node_name="a")],
    )
    cpu, mem, gpu = (table.resource_index[r] for r in ("cpu", "memory", "nvidia.com/gpu"))
    assert table.allocatable[:, cpu].tolist() == [2000, 4000]
    assert table.allocatable[:, gpu].tolist() == [0, 4]
    assert table.requested[0, mem] == 100 * 2**20 and table.pod_count.tolist() == [1, 0]
    assert table.allowed_pods.tolist() == [110, 110]


def test_label_columns_intern_values_and_mark_missing() -> None:
    table = make_table(
        [make_node("a", labels={"zone": "z1"}), make_node("b", labels={"zone": "z2"}), make_node("c")]
    )
    col = table.label_column("zone")
    assert col.ids.tolist() == [0, 1, -1] and col.values == ["z1", "z2"]
    assert col.value_in(["z2", "nope"]).tolist() == [False, True, False]
    assert col.present().tolist() == [True, True, False]
    assert col.matching(lambda v: v.endswith("1")).tolist() == [True, False, False]


def test_taint_sets_are_evaluated_once_per_distinct_list() -> None:
    t = Taint(key="k", value="v", effect="NoSchedule")
    table = make_table([make_node(f"n{i}", taints=[t] if i % 2 else []) for i in range(6)])
    calls: list[tuple[Taint, ...]] = []
    mask = table.match_taint_sets(lambda taints: calls.append(taints) or not taints)
    assert len(calls) == 2 and mask.tolist() == [True, False] * 3


def test_add_and_remove_pod_update_rows_and_infos() -> None:
    table = make_table([make_node("a"), make_node("b")])
    pi = PodInfo(make_pod("x", cpu="1", memory="1Gi", extra={"example.com/foo": 3}, node_name="b"))
    table.add_pod(1, pi)
    foo = table.resource_index["example.com/foo"]  # a column added on demand
    assert table.requested[1, foo] == 3 and table.infos[1].requested["example.com/foo"] == 3
    assert table.non_zero_requested[1].tolist() == [1000, 2**30]
    table.remove_pod(1, pi.key)
    assert not table.requested.any() and table.pod_count.tolist() == [0, 0] and not table.infos[1].pods


def test_update_node_in_place_only_without_label_or_taint_changes() -> None:
    table = make_table([make_node("a", cpu="2")])
    assert table.update_node(make_node("a", cpu="8"))
    assert table.allocatable[0, table.resource_index["cpu"]] == 8000 and table.node_generation == 1
    assert not table.update_node(make_node("a", cpu="8", labels={"new": "label"}))


def test_subset_keeps_table_order_and_drops_unknown_names() -> None:
    table = make_table([make_node(n) for n in "abcd"])
    assert table.subset(["d", "b", "zz"]).names == ["b", "d"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4000), st.booleans()), max_size=30))
def test_incremental_rows_equal_a_fresh_table(ops: list[tuple[int, int, bool]]) -> None:
    nodes = [make_node(f"n{i}") for i in range(4)]
    table = NodeTable([NodeInfo(n) for n in nodes])
    placed: dict[str, int] = {}
    for i, (row, milli, remove) in enumerate(ops):
        if remove and placed:
            key = sorted(placed)[0]
            table.remove_pod(placed.pop(key), key)
            continue
        pi = PodInfo(
            make_pod(f"p{i}", cpu=f"{milli}m", node_name=f"n{row}", host_ports=(8000 + i,) * (milli % 2))
        )
        table.add_pod(row, pi)
        placed[pi.key] = row
    fresh = NodeTable([NodeInfo(ni.node, ni.pods.values()) for ni in table.infos])
    assert np.array_equal(table.requested[:, : len(fresh.resources)], fresh.requested)
    assert np.array_equal(table.non_zero_requested, fresh.non_zero_requested)
    assert np.array_equal(table.pod_count, fresh.pod_count)
    assert np.array_equal(table.host_port_pods, fresh.host_port_pods)


def test_sum_per_value_is_exact_in_int64_and_counts_every_slot() -> None:
    big = 2**53 + 1  # a float64 sum (a weighted np.bincount) would round this to 2**53
    ids = np.array([2, 0, 2, 2], dtype=np.int32)
    amounts = np.array([big, 5, 1, -1], dtype=np.int64)
    sums = sum_per_value(ids, amounts, 4)
    assert sums.dtype == np.int64
    assert sums.tolist() == [5, 0, big, 0]
    assert sum_per_value(np.array([], dtype=np.intp), np.array([], dtype=np.int64), 2).tolist() == [0, 0]
