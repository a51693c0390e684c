"""The incremental hot path: full NodeSets read columns as views, the pod change log, per-row
counters that replay it, PodInfo sharing, and host selection in rotated order."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework import NodeInfo, NodeTable, PodInfo
from kubesched.framework.node_table import NO_POD_PRIORITY, POD_LOG_LIMIT, NodeSet, PodRowCounts
from kubesched.testing.builders import make_node, make_pod, make_table


def test_full_set_reads_views_and_a_subset_gathers() -> None:
    table = make_table([make_node(n, cpu=c) for n, c in (("a", "1"), ("b", "2"), ("c", "3"))])
    cpu = table.resource_index["cpu"]
    full = table.all()
    assert full.full and full.column(table.allocatable, cpu).tolist() == [1000, 2000, 3000]
    assert np.shares_memory(full.column(table.allocatable, cpu), table.allocatable)
    with pytest.raises(ValueError):
        full.gather(table.pod_count)[0] = 5  # views are read-only: the table stays intact
    assert table.pod_count.tolist() == [0, 0, 0]
    subset = table.subset(["c", "a"])
    assert not subset.full and subset.column(table.allocatable, cpu).tolist() == [1000, 3000]
    assert subset.gather(table.allowed_pods).tolist() == [110, 110]
    assert not NodeSet(table, np.arange(3, dtype=np.intp)).full  # only table.all() claims it


def test_pod_changes_are_logged_until_dropped() -> None:
    table = make_table([make_node("a"), make_node("b")])
    start = table.pod_log_position
    pi = PodInfo(make_pod("x", node_name="b"))
    table.add_pod(1, pi)
    table.remove_pod(1, pi.key)
    assert table.pod_changes(start) == [(1, pi, 1), (1, pi, -1)]
    assert table.pod_changes(table.pod_log_position) == []
    for i in range(POD_LOG_LIMIT):
        table.add_pod(0, PodInfo(make_pod(f"p{i}", node_name="a")))
    assert table.pod_changes(start) is None  # too old: the reader must rescan


def _web_pods(info: NodeInfo) -> int:
    return sum(1 for pi in info.pods.values() if pi.pod.metadata.labels.get("app") == "web")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.booleans(), st.booleans()), max_size=40))
def test_row_counts_follow_the_table(ops: list[tuple[int, bool, bool, bool]]) -> None:
    table = NodeTable([NodeInfo(make_node(f"n{i}")) for i in range(4)])
    counter = PodRowCounts(table, _web_pods)
    placed: dict[str, int] = {}
    for i, (row, web, remove, read) in enumerate(ops):
        if remove and placed:
            key = sorted(placed)[0]
            table.remove_pod(placed.pop(key), key)
        else:
            pod = make_pod(f"p{i}", labels={"app": "web" if web else "db"}, node_name=f"n{row}")
            table.add_pod(row, PodInfo(pod))
            placed[PodInfo(pod).key] = row
        if read:
            wanted = table.pod_count > 0
            got = counter.current(wanted)
            assert [int(got[r]) for r in np.flatnonzero(wanted)] == [
                _web_pods(table.infos[r]) for r in np.flatnonzero(wanted)
            ]
    assert counter.current().tolist() == [_web_pods(ni) for ni in table.infos]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(-3, 3), st.booleans()), max_size=40))
def test_lowest_priority_column_follows_the_pods(ops: list[tuple[int, int, bool]]) -> None:
    table = NodeTable([NodeInfo(make_node(f"n{i}")) for i in range(3)])
    placed: dict[str, int] = {}
    for i, (row, priority, remove) in enumerate(ops):
        if remove and placed:
            key = sorted(placed)[i % len(placed)]
            table.remove_pod(placed.pop(key), key)
        else:
            pi = PodInfo(make_pod(f"p{i}", priority=priority, node_name=f"n{row}"))
            table.add_pod(row, pi)
            placed[pi.key] = row
        expected = [
            min((p.priority for p in ni.pods.values()), default=NO_POD_PRIORITY) for ni in table.infos
        ]
        assert table.lowest_priority.tolist() == expected
        if i % 2:  # read now and then, so that a remembered minimum has to follow the changes
            assert table.lowest_pod_priority == min(expected)
    rebuilt = NodeTable(table.infos)  # a new table reads the same from the pods
    assert rebuilt.lowest_priority.tolist() == table.lowest_priority.tolist()


def test_row_counts_recount_only_changed_rows() -> None:
    table = make_table([make_node(f"n{i}") for i in range(3)])
    seen: list[str] = []

    def count(info: NodeInfo) -> int:
        seen.append(info.name)
        return len(info.pods)

    table.add_pod(1, PodInfo(make_pod("w", node_name="n1")))
    counter = PodRowCounts(table, count)
    # Rows without pods count 0 without a visit.
    assert counter.current().tolist() == [0, 1, 0] and seen == ["n1"]
    assert counter.current().tolist() == [0, 1, 0] and seen == ["n1"]
    table.add_pod(2, PodInfo(make_pod("x", node_name="n2")))
    assert counter.current().tolist() == [0, 1, 1] and seen == ["n1", "n2"]
    table.remove_pod(1, next(iter(table.infos[1].pods)))
    assert counter.current().tolist() == [0, 0, 1] and seen == ["n1", "n2", "n1"]


def test_row_counts_for_some_rows_then_all() -> None:
    table = make_table([make_node(f"n{i}") for i in range(4)])
    for row in (0, 2, 3):
        table.add_pod(row, PodInfo(make_pod(f"p{row}", node_name=f"n{row}")))
    seen: list[str] = []

    def count(info: NodeInfo) -> int:
        seen.append(info.name)
        return len(info.pods)

    counter = PodRowCounts(table, count)
    wanted = np.array([True, True, False, False])
    assert counter.current(wanted)[:2].tolist() == [1, 0] and seen == ["n0", "n1"]
    table.add_pod(0, PodInfo(make_pod("q", node_name="n0")))
    assert counter.current().tolist() == [2, 0, 1, 1] and sorted(seen) == ["n0", "n0", "n1", "n2", "n3"]
    assert counter.current(wanted).tolist() == [2, 0, 1, 1] and len(seen) == 5


def test_pod_info_with_pod_shares_the_precomputed_facts() -> None:
    pending = PodInfo(make_pod("x", cpu="250m", memory="1Gi", host_ports=[80]))
    bound = make_pod("x", cpu="250m", memory="1Gi", host_ports=[80], node_name="n1")
    shared = pending.with_pod(bound)
    fresh = PodInfo(bound)
    assert shared.pod is bound and shared.key == fresh.key
    for slot in PodInfo.__slots__:
        if slot != "pod":
            assert getattr(shared, slot) == getattr(fresh, slot), slot


@pytest.mark.parametrize("seed", range(20))
def test_host_selection_indexes_ties_in_rotated_order(seed: int) -> None:
    """`select_host(totals, rng, wrap)` on table-ordered nodes draws what the rotated order would."""
    from kubesched.scheduler.schedule_one import select_host

    rnd = random.Random(seed)
    n = rnd.randint(2, 30)
    totals = np.array([rnd.choice([5, 7]) for _ in range(n)], dtype=np.int64)
    wrap = rnd.randrange(n)
    rotated = np.concatenate((totals[wrap:], totals[:wrap]))
    order = np.concatenate((np.arange(wrap, n), np.arange(wrap)))
    chosen = select_host(totals, random.Random(seed), wrap)
    assert chosen == int(order[select_host(rotated, random.Random(seed))])


@pytest.mark.parametrize("explain", [False, True])
@pytest.mark.parametrize(("count", "percentage", "small"), [(12, 100, -1), (20, 100, 3), (150, 30, 3)])
def test_feasible_nodes_keep_the_rotated_evaluation_order(
    explain: bool, count: int, percentage: int, small: int
) -> None:
    """Filters run in table order; which nodes are kept, and in which order they are read, is still
    that of evaluating from the rotating start (upstream's numFeasibleNodesToFind)."""
    import msgspec

    from kubesched.api.loader import LoadedObjects
    from kubesched.cluster.memory import MemoryCluster
    from kubesched.config import default_config
    from kubesched.framework.cycle_state import CycleState
    from kubesched.framework.sampling import num_feasible_nodes_to_find
    from kubesched.plugins import default_registry
    from kubesched.scheduler.clock import VirtualClock
    from kubesched.scheduler.profiles import options_from_config, profiles_from_config
    from kubesched.scheduler.scheduler import Scheduler

    registry = default_registry(entry_points=False)
    config = msgspec.structs.replace(default_config(registry), percentage_of_nodes_to_score=percentage)
    nodes = [make_node(f"n{i}", cpu="1" if i % 7 == small else "4") for i in range(count)]
    cluster = MemoryCluster(LoadedObjects(nodes=nodes, pods=[make_pod("p", cpu="2")]))
    scheduler = Scheduler(
        profiles_from_config(config, registry),
        registry,
        cluster,
        VirtualClock(),
        options_from_config(config, explain=explain),
    )
    cluster.subscribe(scheduler)
    qpi = scheduler.queue.pop()
    assert qpi is not None
    fwk = scheduler.frameworks[qpi.pod.spec.scheduler_name]
    table = scheduler.cache.snapshot()
    to_find = num_feasible_nodes_to_find(percentage, 0, count)
    for start in (0, 1, 5, count - 1):
        cycle = scheduler._cycle
        cycle._next_start = start
        state = CycleState()
        fwk.run_pre_filter(state, qpi.pod, table.all())
        feasible, wrap, evaluated, _ = cycle._find_nodes_that_pass_filters(fwk, state, qpi, table.all())
        rotated = table.names[start:] + table.names[:start]
        fits = [name for name in rotated if table.infos[table.index[name]].allocatable["cpu"] >= 2000]
        kept = fits[:to_find]
        assert feasible.names[wrap:] + feasible.names[:wrap] == kept
        assert evaluated == (rotated.index(kept[-1]) + 1 if len(fits) > to_find else count)
        if explain:
            assert wrap == 0  # --explain reads the order itself
