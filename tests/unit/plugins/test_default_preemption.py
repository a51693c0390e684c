"""DefaultPreemption (upstream `pkg/scheduler/framework/plugins/defaultpreemption/` and
`pkg/scheduler/framework/preemption/`): eligibility, candidates, the dry run with PDB-aware reprieve,
pickOneNodeForPreemption's criteria in order, preparation (evictions, Events, nominations), args validation,
and the whole flow through the scheduler and `kubesched simulate`."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kubesched.api.cluster_objects import PodDisruptionBudget
from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod, PodCondition, PodStatus
from kubesched.cli import main
from kubesched.cluster.memory import MemoryCluster
from kubesched.errors import FieldErrors, InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import BackgroundEvictionPort
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import NodeTable
from kubesched.framework.registry import Registry, decode_args
from kubesched.framework.status import Code, Status
from kubesched.framework.waiting_pods import WaitingPod
from kubesched.plugins import default_registry
from kubesched.plugins.default_binder import DefaultBinder
from kubesched.plugins.default_preemption import (
    NO_VICTIMS,
    NOT_ELIGIBLE_NEVER,
    NOT_ELIGIBLE_TERMINATING,
    NOT_HELPFUL,
    Candidate,
    DefaultPreemption,
    DefaultPreemptionArgs,
    disruption_budgets,
    pick_one_node_for_preemption,
    potential_rows,
)
from kubesched.plugins.node_resources_fit import NodeResourcesFit
from kubesched.plugins.priority_sort import PrioritySort
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.scheduler import Attempt, ProfileSpec, Scheduler, SchedulerOptions
from kubesched.simulate.virtual_time import run_until_settled
from kubesched.testing.builders import make_node, make_pod, make_table

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
INT32_MIN = -(2**31)


# --------------------------------------------------------------------------- fixtures


def pod(
    name: str,
    *,
    cpu: str = "1",
    priority: int = 0,
    node: str = "",
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    started: str | None = None,
    never: bool = False,
    nominated: str = "",
    terminating: bool = False,
) -> Pod:
    spec: dict[str, Any] = {"preemptionPolicy": "Never"} if never else {}
    p = make_pod(
        name, cpu=cpu, priority=priority, node_name=node, namespace=namespace, labels=labels, spec=spec
    )
    conditions = (
        [PodCondition(type="DisruptionTarget", status="True", reason="PreemptionByScheduler")]
        if terminating
        else []
    )
    status = PodStatus(start_time=started, nominated_node_name=nominated, conditions=conditions)
    p = msgspec.structs.replace(p, status=status)
    if terminating:
        meta = msgspec.structs.replace(p.metadata, deletion_timestamp="2024-01-01T00:00:00Z")
        p = msgspec.structs.replace(p, metadata=meta)
    return p


def pdb(
    name: str, match: Mapping[str, str] | None, allowed: int, namespace: str = "default"
) -> PodDisruptionBudget:
    spec: dict[str, Any] = {} if match is None else {"selector": {"matchLabels": dict(match)}}
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
            "status": {"disruptionsAllowed": allowed},
        },
        PodDisruptionBudget,
    )


class FakeHandle:
    """The Handle surface preemption uses, over a NodeTable, with NodeResourcesFit as the only filter.

    Filters honour nominated pods of equal or higher priority, as the scheduler's handle does, and
    every side effect (deletion, Event, rejection, nomination change) is recorded.
    """

    profile_name = "default-scheduler"

    def __init__(
        self,
        nodes: Sequence[Node],
        pods: Sequence[Pod] = (),
        *,
        pdbs: Sequence[PodDisruptionBudget] = (),
        nominated: Mapping[str, Sequence[Pod]] | None = None,
        waiting: Sequence[Pod] = (),
        seed: int = 0,
    ) -> None:
        self.table: NodeTable = make_table(nodes, pods)
        self.fit = NodeResourcesFit()
        self.pdbs = list(pdbs)
        self.nominated: dict[str, list[PodInfo]] = {
            n: [PodInfo(p) for p in ps] for n, ps in (nominated or {}).items()
        }
        self.waiting = {PodInfo(p).key: WaitingPod(p, p.spec.node_name, {"Gang": 60.0}, 0.0) for p in waiting}
        self.seed = seed
        self.deleted: list[tuple[str, str, str]] = []
        self.events: list[tuple[str, str, str, str, str]] = []
        self.rejected: list[tuple[str, str, str]] = []
        self.nominations: list[tuple[str, str]] = []
        self.filter_calls: list[str] = []
        self.fail_remove_pod = False

    @property
    def snapshot(self) -> NodeTable:
        return self.table

    def now(self) -> float:
        return 0.0

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting.get(uid)

    def iterate_waiting_pods(self) -> Sequence[WaitingPod]:
        return list(self.waiting.values())

    def reject_waiting_pod(self, uid: str, plugin: str, message: str) -> bool:
        self.rejected.append((uid, plugin, message))
        return uid in self.waiting

    def activate(self, pods: Sequence[Pod]) -> None:
        pass

    def bind(self, pod: Pod, node_name: str) -> None:
        raise AssertionError("preemption never binds")

    def lister(self, kind: str) -> Sequence[Any]:
        return self.pdbs if kind == "PodDisruptionBudget" else []

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None:
        self.filter_calls.append(node_info.name)
        me = PodInfo(pod)
        others = [
            p for p in self.nominated.get(node_info.name, []) if p.priority >= me.priority and p.key != me.key
        ]
        if others:
            with_nominated = node_info.clone()
            for other in others:
                with_nominated.add_pod(other)
            st = self.fit.filter(state, pod, with_nominated)
            if st is not None:
                return st
        return self.fit.filter(state, pod, node_info)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return None

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return Status.as_error("state out of sync") if self.fail_remove_pod else None

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self.nominated.get(node_name, []))

    def set_nominated_node(self, pod: Pod, node_name: str) -> None:
        key = PodInfo(pod).key
        for infos in self.nominated.values():
            infos[:] = [p for p in infos if p.key != key]
        if node_name:
            self.nominated.setdefault(node_name, []).append(PodInfo(pod))
        self.nominations.append((pod.key, node_name))

    def delete_pod(self, pod: Pod, *, reason: str, message: str) -> None:
        self.deleted.append((pod.key, reason, message))

    def record_event(self, pod: Pod, *, type: str, reason: str, action: str, note: str) -> None:
        self.events.append((pod.key, type, reason, action, note))

    def background_eviction(self) -> BackgroundEvictionPort | None:
        return None  # evicts within the cycle, as the simulator does


def statuses(handle: FakeHandle, preemptor: Pod) -> dict[str, Status]:
    """What the Filter phase reported for each node (nodes that fit are left out)."""
    out: dict[str, Status] = {}
    for info in handle.table.infos:
        st = handle.run_filter_plugins_with_nominated_pods(CycleState(), preemptor, info)
        if st is not None:
            out[info.name] = st
    handle.filter_calls.clear()
    return out


def preempt(
    handle: FakeHandle,
    preemptor: Pod,
    args: DefaultPreemptionArgs | None = None,
    node_to_status: dict[str, Status] | None = None,
) -> tuple[str | None, list[str], Status | None]:
    plugin = DefaultPreemption(args, handle)
    nts = statuses(handle, preemptor) if node_to_status is None else node_to_status
    result, status = plugin.post_filter(CycleState(), preemptor, nts)
    if result is None:
        return None, [], status
    return result.nominated_node_name, result.victims, status


def found(node: str, victims: int) -> Status:
    """v1.37.2's PostFilter success status, whose message ends the preemptor's FailedScheduling one."""
    return Status(
        Code.SUCCESS,
        f"preemption: found a potential placement for pod on node {node}, preempting {victims} victims",
    )


def nodes(*names: str, cpu: str = "2") -> list[Node]:
    return [make_node(n, cpu=cpu) for n in names]


# --------------------------------------------------------------------------- eligibility / no candidates


def test_preemption_policy_never_is_not_eligible_and_keeps_nomination() -> None:
    h = FakeHandle(nodes("n1"), [pod("low", cpu="2", node="n1")])
    nominated, victims, status = preempt(h, pod("p", priority=10, never=True))
    assert nominated is None and victims == []  # no result: the nomination (if any) is left alone
    assert status is not None and status.code == U
    assert status.message() == f"preemption: {NOT_ELIGIBLE_NEVER}"
    assert h.deleted == [] and h.events == []


def test_terminating_victim_on_nominated_node_makes_the_pod_wait() -> None:
    running = [
        pod("dying", cpu="1", priority=1, node="n1", terminating=True),
        pod("low", cpu="1", priority=1, node="n1"),
        pod("low2", cpu="2", priority=1, node="n2"),
    ]
    h = FakeHandle(nodes("n1", "n2"), running)
    _, _, status = preempt(h, pod("p", cpu="2", priority=10, nominated="n1"))
    assert status is not None and status.message() == f"preemption: {NOT_ELIGIBLE_TERMINATING}"
    assert h.deleted == []


@pytest.mark.parametrize(
    ("case", "nominated_status"),
    [
        pytest.param("not nominated there", None, id="nominated elsewhere: eligible"),
        pytest.param("unresolvable", Status(UU, "node(s) had untolerated taint(s)"), id="nominated node UU"),
    ],
)
def test_terminating_pod_does_not_block_when_nomination_cannot_help(
    case: str, nominated_status: Status | None
) -> None:
    running = [
        pod("dying", priority=2, node="n1", terminating=True),
        pod("low", cpu="2", priority=1, node="n2"),
    ]
    h = FakeHandle(nodes("n1", "n2"), running)
    preemptor = pod("p", cpu="2", priority=10, nominated="n1" if nominated_status else "n3")
    nts = statuses(h, preemptor)
    if nominated_status is not None:
        nts["n1"] = nominated_status
    nominated, victims, status = preempt(h, preemptor, node_to_status=nts)
    assert status == found("n2", 1) and nominated == "n2" and victims == ["default/low"]


def test_higher_priority_terminating_pod_does_not_block() -> None:
    running = [
        pod("dying", cpu="1", priority=50, node="n1", terminating=True),
        pod("low", priority=1, node="n1"),
    ]
    h = FakeHandle(nodes("n1"), running)
    nominated, victims, status = preempt(h, pod("p", cpu="2", priority=10, nominated="n1"))
    # Only lower-priority terminating pods can be this pod's earlier victims: the dry run goes on
    # (and finds that evicting "low" is not enough while "dying" still holds its cpu).
    assert nominated == "" and victims == []
    assert (
        status is not None and status.message() == "preemption: 0/1 nodes are available: 1 Insufficient cpu."
    )


def test_no_lower_priority_pods_anywhere_gives_fit_error_over_all_nodes() -> None:
    running = [
        pod("a", cpu="2", priority=10, node="n1"),
        pod("b", cpu="2", priority=10, node="n2"),
        pod("c", cpu="2", priority=5, node="n3"),
    ]
    h = FakeHandle(nodes("n1", "n2", "n3", "n4"), running)
    preemptor = pod("p", cpu="2", priority=10)
    nts = statuses(h, preemptor)
    nts["n3"] = Status(UU, "node(s) had untolerated taint(s)")  # n3 cannot be helped by evictions
    nts["n4"] = Status(UU, "node(s) didn't match Pod's node affinity/selector")
    nominated, victims, status = preempt(h, preemptor, node_to_status=nts)
    assert nominated == ""  # clears any earlier nomination
    assert victims == [] and h.deleted == []
    assert status is not None and status.code == U
    assert status.message() == (f"preemption: 0/4 nodes are available: 2 {NO_VICTIMS}, 2 {NOT_HELPFUL}.")


def test_dry_run_filter_failure_is_counted_with_its_own_reason() -> None:
    # Evicting the priority-1 pod from n1 still leaves too little cpu: n1 reports the filter reason.
    running = [pod("mid", cpu="2", priority=50, node="n1"), pod("low", cpu="1", priority=1, node="n1")]
    h = FakeHandle(nodes("n1", "n2", cpu="3"), [*running, pod("top", cpu="3", priority=99, node="n2")])
    _, _, status = preempt(h, pod("p", cpu="2", priority=10))
    assert status is not None
    assert status.message() == f"preemption: 0/2 nodes are available: 1 Insufficient cpu, 1 {NO_VICTIMS}."


def test_no_potential_nodes_means_every_node_is_not_helpful() -> None:
    h = FakeHandle(nodes("n1", "n2"), [pod("low", cpu="2", node="n1")])
    nts = {"n1": Status(UU, "Insufficient cpu"), "n2": Status(UU, "Insufficient cpu")}
    nominated, _, status = preempt(h, pod("p", cpu="3", priority=10), node_to_status=nts)
    assert nominated == ""
    assert status is not None and status.message() == f"preemption: 0/2 nodes are available: 2 {NOT_HELPFUL}."
    assert h.filter_calls == []  # nothing was dry-run


def test_potential_rows_are_the_unschedulable_nodes_in_table_order() -> None:
    h = FakeHandle(nodes("n1", "n2", "n3", "n4"))
    shared = Status(U, "Insufficient cpu")
    nts = {"n4": shared, "n2": Status(UU, "node(s) had untolerated taint"), "n1": shared, "gone": shared}
    assert potential_rows(h.table, nts).tolist() == [0, 3]
    assert potential_rows(h.table, {"n1": Status(UU, "x")}).tolist() == []


def test_dry_run_visits_only_nodes_with_lower_priority_pods() -> None:
    # n1 and n3 hold only pods the preemptor may not evict: they are reported, never dry-run.
    running = [
        pod("top1", cpu="2", priority=10, node="n1"),
        pod("low", cpu="2", priority=1, node="n2"),
        pod("top3", cpu="2", priority=20, node="n3"),
    ]
    h = FakeHandle(nodes("n1", "n2", "n3", cpu="2"), running)
    nominated, victims, _ = preempt(h, pod("p", cpu="2", priority=10))
    assert nominated == "n2" and victims == ["default/low"]
    assert set(h.filter_calls) == {"n2"}
    h = FakeHandle(nodes("n1", "n3", cpu="2"), [running[0], running[2]])
    _, _, status = preempt(h, pod("p", cpu="2", priority=10))
    assert status is not None and status.message() == f"preemption: 0/2 nodes are available: 2 {NO_VICTIMS}."
    assert h.filter_calls == []


def test_extension_error_without_candidates_is_an_error_status() -> None:
    h = FakeHandle(nodes("n1"), [pod("low", cpu="2", node="n1")])
    h.fail_remove_pod = True
    _, _, status = preempt(h, pod("p", cpu="2", priority=10))
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "preemption: state out of sync"


# --------------------------------------------------------------------------- victims on one node


def test_reprieve_keeps_the_most_important_pods() -> None:
    running = [
        pod("p1", priority=1, node="n1", started="2024-01-01T00:00:00Z"),
        pod("p4", priority=4, node="n1"),
        pod("p2-old", priority=2, node="n1", started="2024-01-01T00:00:00Z"),
        pod("p2-young", priority=2, node="n1", started="2024-03-01T00:00:00Z"),
    ]
    h = FakeHandle(nodes("n1", cpu="4"), running)
    nominated, victims, status = preempt(h, pod("p", cpu="2", priority=10))
    assert status == found("n1", len(victims)) and nominated == "n1"
    # p4 and the older p2 are reprieved; victims most important first.
    assert victims == ["default/p2-young", "default/p1"]


def test_pods_of_equal_or_higher_priority_are_never_victims() -> None:
    running = [pod("same", priority=10, node="n1"), pod("low", priority=9, node="n1")]
    h = FakeHandle(nodes("n1"), running)
    nominated, victims, status = preempt(h, pod("p", cpu="1", priority=10))
    assert (nominated, victims, status) == ("n1", ["default/low"], found("n1", 1))


def test_pdb_violating_pods_are_reprieved_first() -> None:
    # Without PDBs "important" (prio 5) would be kept and "guarded" (prio 1) evicted. Evicting
    # "guarded" exceeds its budget, so it is reprieved first and "important" goes instead.
    running = [
        pod("important", priority=5, node="n1"),
        pod("guarded", priority=1, node="n1", labels={"app": "db"}),
    ]
    plain = FakeHandle(nodes("n1"), running)
    assert preempt(plain, pod("p", priority=10))[1] == ["default/guarded"]
    guarded = FakeHandle(nodes("n1"), running, pdbs=[pdb("db", {"app": "db"}, allowed=0)])
    assert preempt(guarded, pod("p", priority=10))[1] == ["default/important"]


@pytest.mark.parametrize(
    ("budgets", "expected"),
    [
        pytest.param([pdb("db", {"app": "db"}, 1)], 1, id="1 allowed, 2 evicted: one violation"),
        pytest.param([pdb("db", {"app": "db"}, 2)], 0, id="2 allowed: none"),
        pytest.param([pdb("db", {"app": "db"}, 0)], 2, id="0 allowed: both"),
        pytest.param([pdb("db", {"app": "db"}, 0, namespace="other")], 0, id="other namespace"),
        pytest.param([pdb("db", {"app": "web"}, 0)], 0, id="selector does not match"),
        pytest.param([pdb("db", None, 0)], 0, id="nil selector selects nothing"),
        pytest.param([pdb("db", {}, 0)], 0, id="empty selector selects nothing"),
        pytest.param([pdb("a", {"app": "db"}, 1), pdb("b", {"tier": "x"}, 5)], 1, id="two PDBs"),
    ],
)
def test_pdb_violations_are_counted_per_budget(budgets: list[PodDisruptionBudget], expected: int) -> None:
    running = [
        pod("db-1", cpu="1", priority=1, node="n1", labels={"app": "db", "tier": "x"}),
        pod("db-2", cpu="1", priority=1, node="n1", labels={"app": "db", "tier": "x"}),
    ]
    h = FakeHandle(nodes("n1"), running, pdbs=budgets)
    plugin = DefaultPreemption(handle=h)
    info = h.table.infos[0].clone()
    preemptor = PodInfo(pod("p", cpu="2", priority=10))
    victims, violations, status = plugin.select_victims_on_node(
        h, CycleState(), preemptor, info, disruption_budgets(h.pdbs)
    )
    assert status is None and len(victims) == 2
    assert violations == expected


def test_pod_without_labels_matches_no_pdb() -> None:
    h = FakeHandle(
        nodes("n1"), [pod("bare", cpu="2", priority=1, node="n1")], pdbs=[pdb("all", {"a": "b"}, 0)]
    )
    plugin = DefaultPreemption(handle=h)
    preemptor = PodInfo(pod("p", cpu="2", priority=10))
    victims, violations, _ = plugin.select_victims_on_node(
        h, CycleState(), preemptor, h.table.infos[0].clone(), disruption_budgets(h.pdbs)
    )
    assert [v.name for v in victims] == ["bare"] and violations == 0


def test_dry_run_works_on_clones() -> None:
    h = FakeHandle(nodes("n1"), [pod("low", cpu="2", priority=1, node="n1")])
    before = dict(h.table.infos[0].requested)
    plugin = DefaultPreemption(handle=h)
    nts = statuses(h, pod("p", cpu="2", priority=10))
    plugin.dry_run_preemption(
        h,
        CycleState(),
        PodInfo(pod("p", cpu="2", priority=10)),
        h.table,
        potential_rows(h.table, nts),
        [],
        0,
        1,
    )
    assert h.table.infos[0].requested == before and len(h.table.infos[0].pods) == 1
    assert nts["n1"].code == U and h.filter_calls == ["n1", "n1"]  # without all, then with "low" back


# --------------------------------------------------------------------------- picking the node


def _cand(name: str, *victims: tuple[int, str | None], pdb_violations: int = 0) -> Candidate:
    infos = [PodInfo(pod(f"{name}-v{i}", priority=p, started=s)) for i, (p, s) in enumerate(victims)]
    return Candidate(name, infos, pdb_violations)


T1 = "2024-01-01T00:00:00Z"
T2 = "2024-06-01T00:00:00Z"


@pytest.mark.parametrize(
    ("candidates", "expected"),
    [
        pytest.param(
            [_cand("a", (1, T1), pdb_violations=1), _cand("b", (100, T1))], "b", id="1 fewest PDB violations"
        ),
        pytest.param(
            [_cand("a", (5, T1)), _cand("b", (3, T1), (3, T1))], "b", id="2 lowest highest priority"
        ),
        pytest.param([_cand("a", (3, T1), (2, T1)), _cand("b", (3, T1), (1, T1))], "b", id="3 smallest sum"),
        pytest.param(
            [_cand("a", (-10, T1), (-10, T1), (-10, T1)), _cand("b", (-10, T1))],
            "b",
            id="3 sum offsets negative priorities",
        ),
        pytest.param(
            [_cand("a", (5, T1), (INT32_MIN, T1)), _cand("b", (5, T1))],
            "b",
            id="4 fewest victims (equal sums)",
        ),
        pytest.param([_cand("a", (5, T1)), _cand("b", (5, T2))], "b", id="5 latest start time"),
        pytest.param(
            [_cand("b", (5, T1), (1, T2)), _cand("a", (5, T2), (1, T1))],
            "a",
            id="5 start time of the most important victims only",
        ),
        pytest.param([_cand("a", (5, None)), _cand("b", (5, T2))], "a", id="5 not started counts as now"),
        pytest.param([_cand("a", (5, T1)), _cand("b", (5, T1))], "a", id="6 tie: first candidate"),
        pytest.param([_cand("b", (5, T1)), _cand("a", (5, T1))], "b", id="6 tie: first, not by name"),
    ],
)
def test_pick_one_node_for_preemption(candidates: list[Candidate], expected: str) -> None:
    best = pick_one_node_for_preemption(candidates)
    assert best is not None and best.name == expected


def test_pick_one_node_without_candidates() -> None:
    assert pick_one_node_for_preemption([]) is None


def test_criteria_apply_in_order_through_the_plugin() -> None:
    # n1: one victim of priority 1 protected by a PDB; n2: one unprotected victim of priority 7;
    # n3: two victims of priority 7. Fewest PDB violations beats lower priorities.
    running = [
        pod("n1-low", cpu="2", priority=1, node="n1", labels={"app": "db"}),
        pod("n2-mid", cpu="2", priority=7, node="n2"),
        pod("n3-a", cpu="1", priority=7, node="n3"),
        pod("n3-b", cpu="1", priority=7, node="n3"),
    ]
    # With the PDB: n2 and n3 tie on violations (0) and highest priority (7); n2's sum is smaller.
    h = FakeHandle(nodes("n1", "n2", "n3"), running, pdbs=[pdb("db", {"app": "db"}, 0)])
    assert preempt(h, pod("p", cpu="2", priority=10))[:2] == ("n2", ["default/n2-mid"])
    # Without the PDB, n1's lower victim priority wins.
    h = FakeHandle(nodes("n1", "n2", "n3"), running)
    assert preempt(h, pod("p", cpu="2", priority=10))[:2] == ("n1", ["default/n1-low"])


# --------------------------------------------------------------------------- candidate counts


@pytest.mark.parametrize(
    ("pct", "absolute", "num_nodes", "expected"),
    [
        (10, 100, 50, 50),  # capped at the number of potential nodes
        (10, 100, 500, 100),  # absolute floor
        (10, 100, 5000, 500),  # percentage
        (0, 5, 20, 5),
        (50, 0, 7, 3),  # integer division
        (100, 0, 10, 10),
        (1, 1, 3, 1),
    ],
)
def test_calculate_num_candidates(pct: int, absolute: int, num_nodes: int, expected: int) -> None:
    args = DefaultPreemptionArgs(min_candidate_nodes_percentage=pct, min_candidate_nodes_absolute=absolute)
    assert DefaultPreemption(args).calculate_num_candidates(num_nodes) == expected


class FixedOffset(DefaultPreemption):
    """Starts the dry run at a chosen potential node instead of a random one."""

    def __init__(self, offset: int, args: DefaultPreemptionArgs, handle: FakeHandle) -> None:
        super().__init__(args, handle)
        self.offset = offset

    def offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.offset % num_nodes, self.calculate_num_candidates(num_nodes)


def _three_nodes() -> FakeHandle:
    running = [
        pod("v-n1", cpu="2", priority=8, node="n1"),
        pod("v-n2", cpu="2", priority=3, node="n2"),
        pod("v-n3", cpu="2", priority=6, node="n3"),
    ]
    return FakeHandle(nodes("n1", "n2", "n3"), running)


def test_dry_run_stops_after_enough_candidates_from_the_offset() -> None:
    few = DefaultPreemptionArgs(min_candidate_nodes_percentage=1, min_candidate_nodes_absolute=1)
    preemptor = pod("p", cpu="2", priority=10)
    for offset, expected in ((0, "n1"), (1, "n2"), (2, "n3")):
        h = _three_nodes()
        plugin = FixedOffset(offset, few, h)
        result, status = plugin.post_filter(CycleState(), preemptor, statuses(h, preemptor))
        assert status == found(expected, 1) and result is not None and result.nominated_node_name == expected
        assert set(h.filter_calls) == {expected}  # started at the offset and stopped there
    # With the default args every potential node is dry-run and the best is taken.
    h = _three_nodes()
    assert preempt(h, pod("p", cpu="2", priority=10))[0] == "n2"


def test_a_pdb_violating_candidate_does_not_stop_the_dry_run() -> None:
    running = [
        pod("guarded", cpu="2", priority=1, node="n1", labels={"app": "db"}),
        pod("free", cpu="2", priority=8, node="n2"),
    ]
    h = FakeHandle(nodes("n1", "n2"), running, pdbs=[pdb("db", {"app": "db"}, 0)])
    few = DefaultPreemptionArgs(min_candidate_nodes_percentage=1, min_candidate_nodes_absolute=1)
    plugin = FixedOffset(0, few, h)
    preemptor = pod("p", cpu="2", priority=10)
    result, _ = plugin.post_filter(CycleState(), preemptor, statuses(h, preemptor))
    assert result is not None and result.nominated_node_name == "n2"


def test_offset_comes_from_a_generator_seeded_by_the_handle() -> None:
    def offsets(seed: int) -> list[int]:
        plugin = DefaultPreemption(handle=FakeHandle(nodes("n1"), seed=seed))
        return [plugin.offset_and_num_candidates(1000)[0] for _ in range(20)]

    assert offsets(3) == offsets(3)
    assert offsets(3) != offsets(4)
    assert all(0 <= o < 1000 for o in offsets(3))


# --------------------------------------------------------------------------- args


def test_default_args() -> None:
    args = decode_args(DefaultPreemption, None)
    assert args == DefaultPreemptionArgs(min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=100)


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (
            {"minCandidateNodesPercentage": 101},
            "args.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]",
        ),
        (
            {"minCandidateNodesPercentage": -1},
            "args.minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]",
        ),
        (
            {"minCandidateNodesAbsolute": -1},
            "args.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
        ),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "args.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
            "minCandidateNodesAbsolute",
        ),
        (
            {"minCandidateNodes": 1},
            'args.minCandidateNodes: unknown field (did you mean "minCandidateNodesAbsolute"?)',
        ),
        (
            {"minCandidateNodesAbsolute": "many"},
            "args.minCandidateNodesAbsolute: Expected `int`, got `str`",
        ),
    ],
)
def test_args_validation(raw: dict[str, Any], error: str) -> None:
    with pytest.raises(InputError) as exc:
        decode_args(DefaultPreemption, raw)
    assert str(exc.value) == error


@pytest.mark.parametrize(("pct", "absolute"), [(0, 1), (1, 0), (100, 0), (0, 1000)])
def test_args_valid_edges(pct: int, absolute: int) -> None:
    raw = {"minCandidateNodesPercentage": pct, "minCandidateNodesAbsolute": absolute}
    assert decode_args(DefaultPreemption, raw).min_candidate_nodes_absolute == absolute


def test_both_zero_reports_both_fields_and_the_constructor_refuses() -> None:
    args = DefaultPreemptionArgs(min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=0)
    assert [e.path for e in args.validate()] == ["minCandidateNodesPercentage", "minCandidateNodesAbsolute"]
    with pytest.raises(FieldErrors):
        DefaultPreemption(args)


# --------------------------------------------------------------------------- prepare


def test_prepare_deletes_victims_records_events_and_clears_lower_nominations() -> None:
    running = [pod("low", cpu="1", priority=1, node="n1"), pod("keep", cpu="1", priority=50, node="n1")]
    lower = pod("lower-nominee", cpu="0", priority=5)
    higher = pod("higher-nominee", cpu="0", priority=100)
    h = FakeHandle(nodes("n1"), running, nominated={"n1": [lower, higher]})
    nominated, victims, status = preempt(h, pod("p", cpu="1", priority=10))
    assert (nominated, victims, status) == ("n1", ["default/low"], found("n1", 1))
    assert h.deleted == [
        (
            "default/low",
            "PreemptionByScheduler",
            "default-scheduler: preempting to accommodate a higher priority pod",
        )
    ]
    assert h.events == [
        ("default/low", "Normal", "Preempted", "Preempting", "Preempted by pod default-p on node n1")
    ]
    assert h.nominations == [("default/lower-nominee", "")]
    assert [p.name for p in h.nominated["n1"]] == ["higher-nominee"]


def test_waiting_victim_is_rejected_not_deleted() -> None:
    waiting = pod("gang-member", cpu="2", priority=1, node="n1")
    h = FakeHandle(nodes("n1"), [waiting], waiting=[waiting])
    nominated, victims, status = preempt(h, pod("p", cpu="2", priority=10))
    assert (nominated, victims, status) == ("n1", ["default/gang-member"], found("n1", 1))
    assert h.rejected == [("default-gang-member", "DefaultPreemption", "preempted")]
    assert h.deleted == []
    assert [e[2] for e in h.events] == ["Preempted"]


def test_nominated_higher_priority_pods_reserve_room_in_the_dry_run() -> None:
    # n1 has 2 cpu; a nominated pod of higher priority needs 1: evicting "low" frees only enough
    # for the nominee, so the preemptor (2 cpu) cannot be helped there.
    h = FakeHandle(
        nodes("n1"), [pod("low", cpu="2", priority=1, node="n1")], nominated={"n1": [pod("vip", priority=99)]}
    )
    nominated, victims, status = preempt(h, pod("p", cpu="2", priority=10))
    assert nominated == "" and victims == []
    assert (
        status is not None and status.message() == "preemption: 0/1 nodes are available: 1 Insufficient cpu."
    )


def test_no_handle_is_an_error() -> None:
    _, status = DefaultPreemption().post_filter(CycleState(), pod("p"), {})
    assert status is not None and status.code == Code.ERROR


# --------------------------------------------------------------------------- through the scheduler


class CountingCluster(MemoryCluster):
    """A MemoryCluster that remembers every deletion request, to prove each victim is evicted once."""

    def __init__(self, objects: LoadedObjects, now: Any) -> None:
        super().__init__(objects, now)
        self.deletions: list[str] = []

    def delete_pod(self, pod: Pod, *, reason: str, message: str) -> None:
        self.deletions.append(pod.key)
        super().delete_pod(pod, reason=reason, message=message)


def preemption_scheduler(
    cluster: MemoryCluster, clock: VirtualClock, attempts: list[Attempt], *, pre_enqueue: bool = False
) -> Scheduler:
    """A scheduler subscribed to `cluster` with one profile of the real PrioritySort,
    NodeResourcesFit, DefaultPreemption (also at PreEnqueue: its async-preemption gate) and
    DefaultBinder, recording every attempt in `attempts`."""
    points = {
        "queueSort": [("PrioritySort", 1)],
        "preFilter": [("NodeResourcesFit", 1)],
        "filter": [("NodeResourcesFit", 1)],
        "postFilter": [("DefaultPreemption", 1)],
        "bind": [("DefaultBinder", 1)],
    }
    if pre_enqueue:
        points["preEnqueue"] = [("DefaultPreemption", 1)]
    scheduler = Scheduler(
        [ProfileSpec("default-scheduler", points, {})],
        Registry([PrioritySort, NodeResourcesFit, DefaultPreemption, DefaultBinder]),
        cluster,
        clock,
        SchedulerOptions(seed=0),
        observer=attempts.append,
    )
    cluster.subscribe(scheduler)
    return scheduler


class Harness:
    """The scheduler on a MemoryCluster with the real PrioritySort, NodeResourcesFit,
    DefaultPreemption and DefaultBinder; counts every deletion the cluster receives."""

    def __init__(self, node_objs: Sequence[Node], pods: Iterable[Pod]) -> None:
        self.clock = VirtualClock()
        self.cluster = CountingCluster(LoadedObjects(nodes=list(node_objs), pods=list(pods)), self.clock.now)
        self.attempts: list[Attempt] = []
        self.scheduler = preemption_scheduler(self.cluster, self.clock, self.attempts)

    def run(self) -> None:
        run_until_settled(self.scheduler, self.clock, self.cluster)

    def node_of(self, name: str) -> str:
        return next(p.spec.node_name for p in self.cluster.pods.values() if p.metadata.name == name)

    def of(self, name: str) -> list[Attempt]:
        return [a for a in self.attempts if a.pod.metadata.name == name]

    def notes(self, reason: str) -> list[tuple[str, str]]:
        return [(e.regarding, e.note) for e in self.cluster.events if e.reason == reason]


def test_high_priority_pod_preempts_then_binds_to_its_nominated_node() -> None:
    running = [
        pod("small-1", cpu="2", priority=1, node="n0"),
        pod("small-2", cpu="2", priority=1, node="n0"),
        *(pod(f"med-{i}", cpu="1", priority=5, node="n1") for i in range(4)),
    ]
    h = Harness(nodes("n0", "n1", cpu="4"), [*running, pod("vip", cpu="2", priority=100)])
    h.run()
    first, last = h.of("vip")[0], h.of("vip")[-1]
    assert (first.result, first.nominated_node) == ("Unschedulable", "n0")
    # v1.37.2 keeps the successful PostFilter's message: the preempting attempt says where it preempts.
    assert first.message == (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: found a potential placement for pod on node n0, preempting 1 victims"
    )
    assert first.victims == ["default/small-2"]
    assert (last.result, last.node) == ("Scheduled", "n0")
    assert h.node_of("vip") == "n0"
    assert h.cluster.deletions == ["default/small-2"]  # exactly one eviction, exactly once
    assert "default-small-2" not in h.cluster.pods and "default-small-1" in h.cluster.pods
    assert h.notes("Preempted") == [("default/small-2", "Preempted by pod default-vip on node n0")]
    assert h.cluster.bind_count == {"default-vip": 1}
    assert h.scheduler.nominator.nominated_node("default-vip") is None  # cleared once bound
    assert sum(1 for a in h.attempts if a.victims) == 1


def test_without_lower_priority_pods_anywhere_no_node_is_dry_run_and_the_offset_is_still_drawn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A full cluster of equally important pods: every Unschedulable node is counted as without
    victims at once, and the random offset a dry run would take is drawn all the same, so the
    preemptions that follow choose their nodes as before."""
    running = [pod(f"r{i}", cpu="3", priority=5, node=f"n{i}") for i in range(3)]
    h = Harness(nodes("n0", "n1", "n2", cpu="4"), [*running, pod("late", cpu="2", priority=5)])
    plugin = next(
        p
        for p in h.scheduler.frameworks["default-scheduler"].plugins.values()
        if isinstance(p, DefaultPreemption)
    )
    dry_runs: list[int] = []
    monkeypatch.setattr(plugin, "dry_run_preemption", lambda *a: dry_runs.append(1))
    expected = random.Random()
    expected.setstate(plugin.rng.getstate())
    h.run()
    assert {a.message for a in h.of("late")} == {
        "0/3 nodes are available: 3 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    }
    assert dry_runs == []
    for _ in h.of("late"):
        expected.randrange(3)
    assert plugin.rng.getstate() == expected.getstate()


def test_lower_priority_pod_cannot_take_the_room_freed_for_the_preemptor() -> None:
    running = [pod("old-1", cpu="2", priority=1, node="n0"), pod("old-2", cpu="2", priority=1, node="n0")]
    # "mid" is popped right after the preemption, while "vip" waits out its backoff: without the
    # nomination, mid would fit in the freed 2 cpu.
    pending = [pod("vip", cpu="2", priority=100), pod("mid", cpu="2", priority=50, never=True)]
    h = Harness(nodes("n0", cpu="4"), [*running, *pending])
    h.run()
    assert h.of("vip")[0].nominated_node == "n0"
    assert h.of("mid")[0].result == "Unschedulable"
    assert h.of("mid")[0].message == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    )
    assert h.of("vip")[-1].result == "Scheduled"
    assert h.node_of("vip") == "n0" and h.node_of("mid") == ""
    assert len(h.cluster.deletions) == 1


def test_preemptor_that_can_no_longer_preempt_loses_its_nomination() -> None:
    running = [pod("old", cpu="2", priority=1, node="n0")]
    h = Harness(nodes("n0"), [*running, pod("vip", cpu="2", priority=100)])
    assert h.scheduler.schedule_one()  # vip preempts "old" and is nominated to n0
    assert h.scheduler.nominator.nominated_node("default-vip") == "n0"
    # Before vip is retried, a pod of even higher priority takes the node.
    blocker = pod("blocker", cpu="2", priority=1000, node="n0")
    h.cluster.pods["default-blocker"] = blocker
    h.scheduler.on_pod_add(blocker)
    h.run()
    last = h.of("vip")[-1]
    assert last.result == "Unschedulable" and last.nominated_node is None
    assert h.scheduler.nominator.nominated_node("default-vip") is None
    assert last.message == (
        f"0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 {NO_VICTIMS}."
    )


# --------------------------------------------------------------------------- kubesched simulate


CLUSTER = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "2", pods: "110"}}}
- {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: "2", pods: "110"}}}
- apiVersion: v1
  kind: Node
  metadata: {name: gpu}
  spec: {taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}
  status: {allocatable: {cpu: "8", memory: 4Gi, pods: "110"}}
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata: {name: batch}
  value: 10
- apiVersion: v1
  kind: Pod
  metadata: {name: batch-1, namespace: jobs}
  spec:
    nodeName: n1
    priorityClassName: batch
    containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]
  status: {startTime: "2024-01-01T00:00:00Z"}
- apiVersion: v1
  kind: Pod
  metadata: {name: web-1, namespace: web}
  spec:
    nodeName: n2
    priority: 20
    containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]
- apiVersion: v1
  kind: Pod
  metadata: {name: critical, namespace: web}
  spec:
    priority: 1000
    containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]
- apiVersion: v1
  kind: Pod
  metadata: {name: filler, namespace: jobs}
  spec:
    priority: 0
    containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: DefaultPreemption
    args: {minCandidateNodesPercentage: 10, minCandidateNodesAbsolute: 100}
"""


def test_simulate_reports_victims_nomination_and_preemption_messages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster_dir = tmp_path / "cluster"
    cluster_dir.mkdir()
    (cluster_dir / "objects.yaml").write_text(CLUSTER)
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(CONFIG)
    assert main(["simulate", str(cluster_dir), "--config", str(cfg), "--output", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    pods = {p["name"]: p for p in report["pods"]}
    critical = pods["critical"]
    assert critical["result"] == "Scheduled"
    assert critical["victims"] == ["jobs/batch-1"]  # lowest victim priority (10 < 20)
    assert critical["nominatedNode"] == "n1"
    assert critical["node"] == "n1"
    filler = pods["filler"]
    assert filler["result"] == "Unschedulable"
    assert filler["victims"] == [] and filler["nominatedNode"] is None
    assert filler["message"] == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod."
    )
    assert {n["name"]: n["pods"] for n in report["nodes"]} == {"gpu": 0, "n1": 1, "n2": 1}
    assert report["summary"]["scheduled"] == 1 and report["summary"]["unschedulable"] == 1


def test_default_registry_enables_default_preemption_by_default() -> None:
    from kubesched.config import default_config
    from kubesched.scheduler.profiles import profiles_from_config

    registry = default_registry(entry_points=False)
    assert registry.resolve("DefaultPreemption") is DefaultPreemption
    (profile,) = profiles_from_config(default_config(registry), registry)
    assert [name for name, _ in profile.points["postFilter"]] == ["DynamicResources", "DefaultPreemption"]
    assert profile.plugin_args["DefaultPreemption"] == DefaultPreemptionArgs()


def test_no_candidates_clears_the_pods_own_nomination() -> None:
    h = FakeHandle(nodes("n1"), [pod("top", cpu="2", priority=99, node="n1")])
    preemptor = pod("p", cpu="2", priority=10, nominated="n1")
    nominated, _, status = preempt(h, preemptor)
    assert nominated == "" and status is not None
    assert h.nominations == [("default/p", "")]
    # Not nominated: nothing to clear, no status patch.
    h = FakeHandle(nodes("n1"), [pod("top", cpu="2", priority=99, node="n1")])
    preempt(h, pod("p", cpu="2", priority=10))
    assert h.nominations == []
