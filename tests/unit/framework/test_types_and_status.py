"""Status codes, CycleState, the FailedScheduling message and Permit waits."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework import Code, CycleState, NodeInfo, NotFoundError, PodInfo, Status, pre_filter_state
from kubesched.framework.types import (
    Diagnosis,
    FitError,
    NodeStatuses,
    StatusColumns,
    distinct_statuses,
    fit_error_message,
    reason_counts,
    truncate_note,
)
from kubesched.framework.waiting_pods import WaitingPod, WaitingPods
from kubesched.testing.builders import make_node, make_pod, make_table


@pytest.mark.parametrize(
    ("code", "name", "rejected"),
    [
        (Code.SUCCESS, "Success", False),
        (Code.ERROR, "Error", False),
        (Code.UNSCHEDULABLE, "Unschedulable", True),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "UnschedulableAndUnresolvable", True),
        (Code.WAIT, "Wait", False),
        (Code.SKIP, "Skip", False),
        (Code.PENDING, "Pending", True),
    ],
)
def test_codes_have_upstream_names_values_and_rejection(code: Code, name: str, rejected: bool) -> None:
    assert str(code) == name
    assert Status(code, "r").is_rejected() is rejected
    assert int(code) == list(Code).index(code)


def test_status_message_puts_the_error_first() -> None:
    st = Status(Code.ERROR, "second", error=RuntimeError("first"))
    assert st.all_reasons() == ["first", "second"] and st.message() == "first, second"
    assert Status.unschedulable("a", "b").message() == "a, b"


def test_with_plugin_keeps_the_first_plugin() -> None:
    st = Status.unschedulable("x").with_plugin("A").with_plugin("B")
    assert st.plugin == "A"


class Counter:
    def __init__(self, n: int) -> None:
        self.n = n

    def clone(self) -> Counter:
        return Counter(self.n)


def test_cycle_state_clone_is_deep_for_state_data() -> None:
    state = CycleState()
    state.write("k", Counter(1))
    state.skip_filter_plugins.add("P")
    copy = state.clone()
    copy.read_as("k", Counter).n = 5
    copy.skip_filter_plugins.add("Q")
    assert state.read_as("k", Counter).n == 1 and state.skip_filter_plugins == {"P"}
    with pytest.raises(NotFoundError, match="not found"):
        state.read("missing")
    with pytest.raises(TypeError):
        state.read_as("k", CycleState)  # type: ignore[type-var]


def test_fit_error_counts_each_reason_and_sorts_as_strings() -> None:
    d = Diagnosis(
        node_to_status={
            **{f"a{i}": Status.unschedulable("Insufficient cpu") for i in range(10)},
            **{f"b{i}": Status.unschedulable("Insufficient cpu", "Insufficient memory") for i in range(2)},
            "c": Status.unschedulable_and_unresolvable("node(s) had untolerated taint(s)"),
        }
    )
    assert fit_error_message(13, d) == (
        "0/13 nodes are available: 1 node(s) had untolerated taint(s), 12 Insufficient cpu, "
        "2 Insufficient memory."
    )


def test_fit_error_absent_nodes_and_post_filter_message() -> None:
    d = Diagnosis(
        node_to_status={"n1": Status.unschedulable("Too many pods")},
        absent_nodes_status=Status.unschedulable_and_unresolvable(
            "node(s) didn't satisfy plugin(s) [NodeAffinity]"
        ),
        post_filter_msg="preemption: not eligible due to preemptionPolicy=Never.",
    )
    assert fit_error_message(4, d) == (
        "0/4 nodes are available: 1 Too many pods, 3 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
        "preemption: not eligible due to preemptionPolicy=Never."
    )


def test_fit_error_prefilter_message_replaces_node_reasons() -> None:
    d = Diagnosis(
        node_to_status={"n1": Status.unschedulable("ignored")}, pre_filter_msg="pod has unbound PVCs"
    )
    assert fit_error_message(2, d) == "0/2 nodes are available: pod has unbound PVCs."


def test_event_note_is_truncated_to_1024_bytes() -> None:
    assert truncate_note("short") == "short"
    long = "x" * 2000
    note = truncate_note(long)
    assert len(note.encode()) == 1024 and note.endswith(" ...") and note.startswith("x" * 1020)


def test_waiting_pod_allows_only_when_every_plugin_allowed() -> None:
    wp = WaitingPod(make_pod("p"), "n1", {"A": 10.0, "B": 20.0}, started_at=0.0)
    wp.allow("A")
    assert wp.result is None and wp.pending_plugins == ["B"]
    wp.allow("B")
    assert wp.result is not None and wp.result.is_success()


def test_waiting_pod_reject_and_timeout() -> None:
    wp = WaitingPod(make_pod("p"), "n1", {"A": 10.0}, started_at=0.0)
    wp.reject("A", "gang broken")
    assert (
        wp.result is not None
        and wp.result.code == Code.UNSCHEDULABLE
        and wp.result.message() == "gang broken"
    )
    timed = WaitingPod(make_pod("q"), "n1", {"A": 90.0, "B": 30.0}, started_at=0.0)
    timed.expire(29.0)
    assert timed.result is None
    timed.expire(30.0)
    assert timed.result is not None
    assert timed.result.message() == "rejected due to timeout after waiting 30s at plugin B"
    assert timed.result.plugin == "B"


def test_waiting_pods_next_deadline() -> None:
    pods = WaitingPods()
    assert pods.next_deadline() is None
    pods.add("a", WaitingPod(make_pod("a"), "n", {"A": 40.0}, 0.0))
    pods.add("b", WaitingPod(make_pod("b"), "n", {"A": 15.0}, 0.0))
    assert pods.next_deadline() == 15.0
    pods.remove("b")
    assert pods.next_deadline() == 40.0 and len(pods) == 1


def test_a_status_shared_by_many_nodes_counts_once_per_node() -> None:
    shared = Status(Code.UNSCHEDULABLE, "Insufficient cpu", "Insufficient memory")
    d = Diagnosis(
        node_to_status={"a": shared, "b": shared, "c": Status(Code.UNSCHEDULABLE, "Insufficient cpu")},
        absent_nodes_status=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) didn't match"),
    )
    assert reason_counts(5, d) == {"Insufficient cpu": 3, "Insufficient memory": 2, "node(s) didn't match": 2}
    fit = FitError(make_pod("p"), 5, d)
    assert fit.reason_counts() is fit.reason_counts()  # counted once for the message and the report
    assert (
        str(fit)
        == fit_error_message(5, d)
        == ("0/5 nodes are available: 2 Insufficient memory, 2 node(s) didn't match, 3 Insufficient cpu.")
    )


def test_lowest_priority_follows_the_pods_on_the_node() -> None:
    info = NodeInfo(make_node("n"))
    assert info.lowest_priority() is None
    info.add_pod(PodInfo(make_pod("high", priority=100)))
    assert info.lowest_priority() == 100
    info.add_pod(PodInfo(make_pod("low", priority=-5)))
    clone = info.clone()
    assert info.lowest_priority() == clone.lowest_priority() == -5
    clone.remove_pod(PodInfo(make_pod("low")).key)
    assert clone.lowest_priority() == 100 and info.lowest_priority() == -5


def test_node_statuses_count_from_columns_as_the_dict_would() -> None:
    table = make_table([make_node(f"n{i}") for i in range(5)])
    cpu, taint = (
        Status(Code.UNSCHEDULABLE, "Insufficient cpu"),
        Status(Code.UNSCHEDULABLE, "untolerated taint"),
    )
    # Rows in rotated order; status 1 is met first, and status 2 is the same object as status 0.
    columns = StatusColumns(
        table,
        np.array([3, 4, 0, 1], dtype=np.intp),
        np.array([1, 0, 2, 1], dtype=np.int32),
        [cpu, taint, cpu],
    )
    statuses = NodeStatuses.from_columns(columns)
    assert statuses == {"n3": taint, "n4": cpu, "n0": cpu, "n1": taint}
    plain = dict(statuses)
    assert distinct_statuses(statuses) == distinct_statuses(plain) == [(taint, 2), (cpu, 2)]
    d = Diagnosis(node_to_status=statuses)
    assert list(reason_counts(5, d).items()) == list(
        reason_counts(5, Diagnosis(node_to_status=plain)).items()
    )


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m.__setitem__("n2", Status(Code.UNSCHEDULABLE, "extender")),
        lambda m: m.pop("n0"),
        lambda m: m.update({"n2": Status(Code.UNSCHEDULABLE, "x")}),
        lambda m: m.setdefault("n2", Status(Code.UNSCHEDULABLE, "x")),
        lambda m: m.__delitem__("n0"),
    ],
)
def test_node_statuses_drop_their_columns_once_changed(change: object) -> None:
    table = make_table([make_node(f"n{i}") for i in range(3)])
    cpu = Status(Code.UNSCHEDULABLE, "Insufficient cpu")
    statuses = NodeStatuses.from_columns(
        StatusColumns(table, np.array([0, 1], dtype=np.intp), np.array([0, 0], dtype=np.int32), [cpu])
    )
    assert statuses.columns is not None
    change(statuses)  # type: ignore[operator]
    assert statuses.columns is None
    assert distinct_statuses(statuses) == distinct_statuses(dict(statuses))


def _unfilled() -> tuple[NodeStatuses, dict[str, Status]]:
    table = make_table([make_node(f"n{i}") for i in range(3)])
    cpu, taint = Status(Code.UNSCHEDULABLE, "Insufficient cpu"), Status(Code.UNSCHEDULABLE, "taint")
    columns = StatusColumns(
        table, np.array([2, 0], dtype=np.intp), np.array([1, 0], dtype=np.int32), [cpu, taint]
    )
    return NodeStatuses.from_columns(columns), {"n2": taint, "n0": cpu}


@pytest.mark.parametrize(
    "read",
    [
        dict,
        lambda m: {**m},
        list,
        lambda m: list(m.items()),
        lambda m: list(m.values()),
        lambda m: list(m.keys()),
        lambda m: [m.get("n0"), m.get("n1"), "n2" in m, m["n2"]],
        lambda m: (len(m), bool(m)),
        lambda m: m.copy(),
        lambda m: m | {},
        lambda m: {} | m,
        lambda m: list(reversed(m)),
        lambda m: copy.copy(m),
        lambda m: pickle.loads(pickle.dumps(m)),
        lambda m: json.loads(json.dumps({k: v.message() for k, v in m.items()})),
        lambda m: sorted(m),
        lambda m: m == {"n2": m["n2"], "n0": m["n0"]},
    ],
)
def test_node_statuses_read_as_the_dict_they_stand_for(read: Any) -> None:
    lazy, plain = _unfilled()
    assert read(lazy) == read(plain)
    lazy2, _ = _unfilled()
    assert (lazy2 == plain) and repr(lazy2) == repr(plain)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.lists(st.integers(0, 11), min_size=0, max_size=30))
def test_column_counts_match_the_dict_for_any_codes(kinds: int, picks: list[int]) -> None:
    table = make_table([make_node(f"n{i}") for i in range(30)])
    made = [Status(Code.UNSCHEDULABLE, f"reason {i}") for i in range(kinds)]
    statuses = [made[i % kinds] for i in range(kinds + 2)]  # the last two repeat earlier objects
    codes = np.array([p % len(statuses) for p in picks], dtype=np.int32)
    rows = np.arange(len(picks), dtype=np.intp)[::-1].copy()
    lazy = NodeStatuses.from_columns(StatusColumns(table, rows, codes, statuses))
    assert distinct_statuses(lazy) == distinct_statuses(dict(lazy))


def test_pre_filter_state_is_read_or_computed_and_kept_only_when_asked() -> None:
    made: list[int] = []

    def compute() -> Counter:
        made.append(1)
        return Counter(len(made))

    state = CycleState()
    assert pre_filter_state(state, "k", Counter, compute, keep=False).n == 1
    assert state.get("k") is None  # not kept: the next read computes again
    assert pre_filter_state(state, "k", Counter, compute, keep=True).n == 2
    assert pre_filter_state(state, "k", Counter, compute, keep=True).n == 2 and len(made) == 2
    state.write("other", Counter(7))
    assert pre_filter_state(state, "other", Counter, compute, keep=True).n == 7 and len(made) == 2
    stop = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "no")
    assert pre_filter_state(state, "s", Counter, lambda: stop, keep=True) is stop
    assert state.get("s") is None  # only a state of the asked kind is kept


def test_skip_is_one_shared_status_that_cannot_be_changed() -> None:
    skip = Status.skip()
    assert skip is Status.skip() and skip.is_skip() and skip == Status(Code.SKIP)
    named = skip.with_plugin("NodePorts")
    assert named is not skip and named.plugin == "NodePorts" and named.is_skip()
    assert skip.plugin == "" and Status.skip().plugin == ""
    with pytest.raises(AttributeError, match="cannot be changed"):
        skip.reasons = ("x",)
    assert copy.copy(skip) is skip and copy.deepcopy(skip) is skip
    assert pickle.loads(pickle.dumps(skip)) is skip
