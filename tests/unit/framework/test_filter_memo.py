"""FilterMemo: a retry's patched verdicts equal a full Filter pass, and anything it cannot see
(other plugins, other objects, another pod or table) makes it filter everything again."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.framework.test_runtime import Binder, Sort

from kubesched.api.objects import Pod
from kubesched.framework import CycleState, NodeInfo, NodeSet, PodInfo, Status
from kubesched.framework.filter_memo import FilterMemo
from kubesched.framework.node_info import pod_key
from kubesched.framework.node_table import NodeTable
from kubesched.framework.outcomes import FilterOutcome
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import PER_NODE_FILTER_MAX, Framework
from kubesched.plugins.node_ports import NodePorts
from kubesched.plugins.node_resources_fit import NodeResourcesFit
from kubesched.plugins.node_unschedulable import NodeUnschedulable
from kubesched.plugins.taint_toleration import TaintToleration
from kubesched.testing.builders import make_node, make_pod, make_table

SEEN: list[int] = []  # how many nodes each call of the counting plugins was given


class Spread:
    """Judges a node by the whole table (as PodTopologySpread does): it promises nothing."""

    name = "Spread"

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Any:
        from kubesched.framework.node_table import BatchFilterResult

        SEEN.append(len(nodes))
        return BatchFilterResult.all_pass(len(nodes))


class BothForms:
    """Node-local with a batch and a per-node form: which one runs is what the test watches."""

    name = "BothForms"
    filter_reads_only_the_node = True

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        SEEN.append(-1)
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Any:
        from kubesched.framework.node_table import BatchFilterResult

        SEEN.append(len(nodes))
        return BatchFilterResult.all_pass(len(nodes))


LOCAL = ["NodeUnschedulable", "TaintToleration", "NodePorts", "NodeResourcesFit"]


def framework(filters: list[str]) -> Framework:
    registry = Registry(
        [Sort, Binder, Spread, BothForms, NodeUnschedulable, TaintToleration, NodePorts, NodeResourcesFit]
    )
    spec = {
        "queueSort": [("Sort", 1)],
        "bind": [("Binder", 1)],
        "preFilter": [(n, 1) for n in filters if n in ("NodePorts", "NodeResourcesFit")],
        "filter": [(n, 1) for n in filters],
    }
    return Framework("test", spec, {}, registry, handle=None)  # type: ignore[arg-type]


def verdicts(outcome: FilterOutcome) -> list[tuple[str, str, int] | None]:
    """Per node: (plugin, message, code) of the status it got, or None when it passed."""
    out: list[tuple[str, str, int] | None] = []
    for code in outcome.status_idx.tolist():
        st_ = outcome.statuses[code] if code >= 0 else None
        out.append(None if st_ is None else (st_.plugin, st_.message(), int(st_.code)))
    return out


def pre_filtered(fwk: Framework, pod: Pod, table: NodeTable) -> CycleState:
    state = CycleState()
    _, status, _ = fwk.run_pre_filter(state, pod, table.all())
    assert status is None
    return state


def full_table(nodes: int = 6) -> NodeTable:
    names = [f"n{i}" for i in range(nodes)]
    ns = [make_node(n, cpu="2", memory="4Gi", pods=3) for n in names]
    fill = [make_pod(f"fill-{n}", cpu="1500m", memory="1Gi", node_name=n) for n in names]
    table: NodeTable = make_table(ns, fill)
    return table


WAITING = make_pod("waiting", cpu="1", memory="1Gi")


# ------------------------------------------------------------------ patched == full


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 5),
            st.sampled_from(["100m", "500m", "1", "1500m", "2"]),
            st.sampled_from(["256Mi", "1Gi", "3Gi"]),
            st.booleans(),
        ),
        max_size=25,
    )
)
def test_a_patched_retry_equals_a_full_filter_pass(ops: list[tuple[int, str, str, bool]]) -> None:
    """Pods come and go on random nodes between retries; after each, the memo's verdicts (re-filtered
    on the changed rows only) equal every plugin run on every node."""
    fwk = framework(LOCAL)
    table = full_table()
    memo = FilterMemo()
    placed: list[tuple[int, str]] = []
    for k, (row, cpu, memory, add) in enumerate(ops):
        if add or not placed:
            pod = make_pod(f"p{k}", cpu=cpu, memory=memory, node_name=table.names[row])
            table.add_pod(row, PodInfo(pod))
            placed.append((row, pod_key(pod)))
        else:
            row_, key = placed.pop(len(placed) // 2)
            table.remove_pod(row_, key)
        state = pre_filtered(fwk, WAITING, table)
        remembered = memo.run_filter(fwk, state, WAITING, "default/waiting", table.all())
        fresh = fwk.run_filter(pre_filtered(fwk, WAITING, table), WAITING, table.all())
        assert verdicts(remembered) == verdicts(fresh)
        assert len(remembered.statuses) <= 40  # equal verdicts share one Status; the list is compacted
        assert len(memo) == (0 if (fresh.status_idx < 0).any() else 1)


def test_a_retry_refilters_only_the_rows_that_changed() -> None:
    fwk = framework([*LOCAL, "BothForms"])
    table = full_table(nodes=40)
    memo = FilterMemo()
    SEEN.clear()
    memo.run_filter(fwk, pre_filtered(fwk, WAITING, table), WAITING, "default/waiting", table.all())
    assert SEEN == []  # every node failed Fit first: BothForms was never asked
    table.remove_pod(3, pod_key(make_pod("fill-n3", node_name="n3")))  # room for the pod on n3 only
    SEEN.clear()
    outcome = memo.run_filter(fwk, pre_filtered(fwk, WAITING, table), WAITING, "default/waiting", table.all())
    assert SEEN == [-1]  # BothForms saw n3 alone, through its per-node form
    assert np.flatnonzero(outcome.status_idx < 0).tolist() == [3]
    assert len(memo) == 0  # its own verdicts (BothForms cannot sign: no shape) serve no one once it fits


# ------------------------------------------------------------------ when it must filter everything


def test_a_plugin_without_the_promise_means_full_passes() -> None:
    fwk = framework([*LOCAL, "Spread"])
    # Spread runs after Fit, which rejects every node of a full table: give it a roomy one.
    names = [f"n{i}" for i in range(6)]
    table = make_table([make_node(n, cpu="2", pods=3) for n in names])
    big = make_pod("big", cpu="3")  # fits nowhere: Fit rejects all, Spread is never reached
    memo = FilterMemo()
    state = pre_filtered(fwk, big, table)
    assert not fwk.filters_read_only_the_node(state.skip_filter_plugins)
    memo.run_filter(fwk, state, big, "default/big", table.all())
    assert len(memo) == 0


def counted(fwk: Framework) -> list[int]:
    """The sizes of the node sets `fwk.run_filter` is called with from now on."""
    calls: list[int] = []
    real = fwk.run_filter

    def counting(state: CycleState, pod: Pod, nodes: NodeSet) -> FilterOutcome:
        calls.append(len(nodes))
        return real(state, pod, nodes)

    fwk.run_filter = counting  # type: ignore[method-assign]
    return calls


def test_pods_of_one_shape_share_verdicts_and_others_do_not() -> None:
    fwk = framework(LOCAL)
    table = full_table()
    memo = FilterMemo()
    calls = counted(fwk)

    def retry(pod: Pod) -> None:
        memo.run_filter(fwk, pre_filtered(fwk, pod, table), pod, pod_key(pod), table.all())

    retry(WAITING)
    retry(make_pod("twin", cpu="1", memory="1Gi", labels={"other": "labels"}))  # same shape: no pass
    table.remove_pod(0, pod_key(make_pod("fill-n0", node_name="n0")))
    table.add_pod(0, PodInfo(make_pod("again", cpu="1500m", node_name="n0")))
    retry(WAITING)  # one row re-filtered, for both
    retry(make_pod("twin", cpu="1", memory="1Gi"))
    retry(make_pod("bigger", cpu="2", memory="1Gi"))  # another shape: its own full pass
    assert calls == [6, 1, 6]
    table.remove_pod(1, pod_key(make_pod("fill-n1", node_name="n1")))  # room on n1: the shape fits
    retry(WAITING)  # n1 re-filtered
    retry(make_pod("replica", cpu="1", memory="1Gi"))  # kept though it fit: nothing to re-filter
    assert calls == [6, 1, 6, 1]


def test_without_a_shape_only_the_same_pod_object_on_the_same_table_is_patched() -> None:
    fwk = framework([*LOCAL, "BothForms"])  # BothForms cannot sign pods: verdicts are per pod
    assert fwk.filter_shape(WAITING) is None
    table = full_table()
    memo = FilterMemo()
    calls = counted(fwk)

    def retry(pod: Pod, on: NodeTable) -> None:
        memo.run_filter(fwk, pre_filtered(fwk, pod, on), pod, "default/waiting", on.all())

    retry(WAITING, table)
    retry(WAITING, table)  # nothing changed: no filtering at all
    table.remove_pod(0, pod_key(make_pod("fill-n0", node_name="n0")))
    table.add_pod(0, PodInfo(make_pod("again", cpu="1500m", node_name="n0")))
    retry(WAITING, table)  # one row re-filtered
    assert calls == [6, 1]
    calls.clear()
    updated = make_pod("waiting", cpu="1", memory="1Gi", labels={"v": "2"})
    retry(updated, table)  # another pod object (an update): full pass
    node = table.infos[2].node
    table.update_node(node)  # a Node changed in place: full pass
    retry(updated, table)
    other = full_table()  # another table (a node added or removed): full pass
    retry(updated, other)
    memo.forget_all()  # another kind of object changed: full pass
    retry(updated, other)
    memo.forget("default/waiting")  # the pod left the queue
    assert len(memo) == 0
    assert calls == [6, 6, 6, 6]


def test_memory_is_bounded_by_remembered_status_codes() -> None:
    fwk = framework(LOCAL)
    table = full_table(nodes=10)
    memo = FilterMemo(memory_codes=30)  # three shapes' worth of 10 nodes
    for i in range(8):
        pod = make_pod(f"w{i}", cpu=f"{600 + i}m")  # eight shapes, none fits
        memo.run_filter(fwk, pre_filtered(fwk, pod, table), pod, f"default/w{i}", table.all())
    assert len(memo) == 3


def test_few_nodes_are_filtered_per_node_and_many_in_one_batch() -> None:
    fwk = framework(["BothForms"])
    table = make_table([make_node(f"n{i}") for i in range(PER_NODE_FILTER_MAX + 1)])
    pod = make_pod("p", cpu="1")
    SEEN.clear()
    fwk.run_filter(CycleState(), pod, NodeSet(table, np.arange(PER_NODE_FILTER_MAX)))
    assert SEEN == [-1] * PER_NODE_FILTER_MAX
    SEEN.clear()
    fwk.run_filter(CycleState(), pod, table.all())
    assert SEEN == [PER_NODE_FILTER_MAX + 1]


def test_a_bound_pod_leaves_no_shape_behind() -> None:
    fwk = framework(LOCAL)
    table = full_table()
    memo = FilterMemo()
    key = pod_key(WAITING)
    for _ in range(2):  # the second retry finds verdicts kept, so it works out the pod's shape
        memo.run_filter(fwk, pre_filtered(fwk, WAITING, table), WAITING, key, table.all())
    assert key in memo._shapes
    memo.bound(key)
    assert key not in memo._shapes
    assert len(memo) == 1  # the shape's verdicts stay for the next pod of that shape
