"""Coscheduling: gang scheduling on the real scheduler, in virtual time.

QueueSort is checked as a table and as a strict weak ordering; PreFilter's early rejections by
their exact reasons; the gang behaviour end to end on a MemoryCluster with the built-in plugins
(all members bind together; a gang that cannot complete is released, never partly bound; two
gangs competing for the same GPUs); PodGroup versus annotation sizing; the CLI's JSON report.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.loader import LoadedObjects, load_documents
from kubesched.api.objects import Pod
from kubesched.api.scheduler_plugins import PodGroup
from kubesched.cli import main
from kubesched.cluster.memory import MemoryCluster
from kubesched.config import load_config
from kubesched.errors import InputError
from kubesched.framework import CycleState, QueuedPodInfo, Status
from kubesched.framework.events import ActionType, ClusterEvent, QueueingHint, Resource
from kubesched.framework.node_info import PodInfo, pod_key
from kubesched.framework.registry import Registry, decode_args
from kubesched.framework.status import Code
from kubesched.framework.waiting_pods import WaitingPod
from kubesched.plugins import IN_TREE_PLUGINS, default_registry
from kubesched.plugins.contrib.coscheduling import (
    MIN_AVAILABLE_ANNOTATION,
    POD_GROUP_LABEL,
    Coscheduling,
    CoschedulingArgs,
)
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.scheduler import Attempt, ProfileSpec, Scheduler, SchedulerOptions
from kubesched.simulate.virtual_time import run_until_settled
from kubesched.testing.builders import make_node, make_pod, make_table

GPU = "nvidia.com/gpu"
ROOT = Path(__file__).resolve().parents[4]


# =========================================================================== builders


def member(
    name: str,
    group: str,
    *,
    gpus: int = 1,
    namespace: str = "default",
    min_available: int | str | None = None,
    priority: int | None = None,
    node: str = "",
    gated: bool = False,
    node_selector: dict[str, str] | None = None,
    cpu: str | None = None,
) -> Pod:
    """A pod of `group` (label scheduling.x-k8s.io/pod-group) asking for `gpus` GPUs."""
    annotations = {} if min_available is None else {MIN_AVAILABLE_ANNOTATION: str(min_available)}
    extra = {GPU: gpus} if gpus else {}
    spec = {"schedulingGates": [{"name": "example.com/wait"}]} if gated else None
    return make_pod(
        name,
        namespace=namespace,
        extra=extra,
        cpu=cpu,
        labels={POD_GROUP_LABEL: group},
        annotations=annotations,
        priority=priority,
        node_name=node,
        node_selector=node_selector,
        spec=spec,
    )


def lone(name: str, *, gpus: int = 1, priority: int | None = None, namespace: str = "default") -> Pod:
    return make_pod(name, namespace=namespace, extra={GPU: gpus}, priority=priority)


def pod_group(
    name: str,
    min_member: int,
    *,
    namespace: str = "default",
    timeout: int | None = None,
    min_resources: dict[str, str] | None = None,
    api_version: str = "scheduling.x-k8s.io/v1alpha1",
) -> PodGroup:
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    if min_resources:
        spec["minResources"] = min_resources
    return msgspec.convert(
        {"apiVersion": api_version, "metadata": {"name": name, "namespace": namespace}, "spec": spec},
        PodGroup,
    )


def gpu_nodes(count: int, gpus: int = 1, **labels: str) -> list[Any]:
    return [make_node(f"n{i}", extra={GPU: gpus}, labels=labels) for i in range(count)]


class Fifo:
    """A QueueSort that keeps arrival order: lets a test interleave two gangs on purpose."""

    name = "Fifo"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return False


class Recorder:
    """A Reserve plugin that logs reserve/unreserve, to see that every member was unreserved."""

    name = "Recorder"
    log: list[str] = []

    def reserve(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        Recorder.log.append(f"reserve {pod.metadata.name}")
        return None

    def unreserve(self, state: CycleState, pod: Pod, node: str) -> None:
        Recorder.log.append(f"unreserve {pod.metadata.name}")


@pytest.fixture(autouse=True)
def _reset_recorder() -> None:
    Recorder.log = []


class GangHarness:
    """The scheduler on a MemoryCluster with Coscheduling and the built-in resource plugins."""

    def __init__(
        self,
        nodes: Sequence[Any],
        pods: Sequence[Pod],
        *,
        pod_groups: Sequence[PodGroup] = (),
        sort: str = "Coscheduling",
        post_filter: bool = True,
        args: dict[str, Any] | None = None,
    ) -> None:
        self.clock = VirtualClock()
        objects = LoadedObjects(nodes=list(nodes), pods=list(pods), pod_groups=list(pod_groups))
        self.cluster = MemoryCluster(objects, self.clock.now)
        points: dict[str, list[tuple[str, int]]] = {
            "queueSort": [(sort, 1)],
            "preEnqueue": [("SchedulingGates", 1)],
            "preFilter": [("NodeResourcesFit", 1), ("NodeAffinity", 1), ("Coscheduling", 1)],
            "filter": [("NodeResourcesFit", 1), ("NodeAffinity", 1)],
            "postFilter": [("Coscheduling", 1)] if post_filter else [],
            "reserve": [("Recorder", 1), ("Coscheduling", 1)],
            "permit": [("Coscheduling", 1)],
            "bind": [("DefaultBinder", 1)],
        }
        registry = Registry([*IN_TREE_PLUGINS, Coscheduling, Fifo, Recorder])
        plugin_args = {"Coscheduling": decode_args(Coscheduling, args)} if args else {}
        self.attempts: list[Attempt] = []
        self.scheduler = Scheduler(
            [ProfileSpec("default-scheduler", points, plugin_args)],
            registry,
            self.cluster,
            self.clock,
            SchedulerOptions(),
            observer=self.attempts.append,
        )
        self.cluster.subscribe(self.scheduler)

    @property
    def plugin(self) -> Coscheduling:
        plugin = self.scheduler.frameworks["default-scheduler"].plugins["Coscheduling"]
        assert isinstance(plugin, Coscheduling)
        return plugin

    def pod(self, name: str) -> Pod:
        return next(p for p in self.cluster.pods.values() if p.metadata.name == name)

    def drain(self) -> None:
        """Run every scheduling cycle the active queue holds now (no time passes)."""
        while self.scheduler.schedule_one():
            pass

    def run(self) -> None:
        run_until_settled(self.scheduler, self.clock, self.cluster, retry_unschedulable=True)

    def bound(self) -> dict[str, str]:
        return {p.metadata.name: p.spec.node_name for p in self.cluster.pods.values() if p.spec.node_name}

    def waiting(self) -> list[str]:
        return sorted(wp.pod.metadata.name for wp in self.scheduler.waiting)

    def results(self, name: str) -> list[str]:
        return [a.result for a in self.attempts if a.pod.metadata.name == name]

    def last_message(self, name: str) -> str:
        return next(a.message or "" for a in reversed(self.attempts) if a.pod.metadata.name == name)

    def gpus_in_use(self) -> int:
        return sum(info.requested.get(GPU, 0) for info in self.scheduler.cache.snapshot().infos)

    def pre_filter(self, name: str) -> Status | None:
        table = self.scheduler.cache.snapshot()
        return self.plugin.pre_filter(CycleState(), self.pod(name), table.all())


# =========================================================================== QueueSort


def qpi(pod: Pod, timestamp: float = 0.0, initial: float | None = None) -> QueuedPodInfo:
    return QueuedPodInfo(PodInfo(pod), timestamp=timestamp, initial_attempt_timestamp=initial)


SORT_CASES = [
    pytest.param(
        qpi(member("a", "late", priority=10), 100.0),
        qpi(lone("b"), 0.0),
        (True, False),
        id="higher priority first, even for a later group",
    ),
    pytest.param(
        qpi(member("a", "x"), 1.0), qpi(member("b", "y"), 2.0), (True, False), id="earlier group first"
    ),
    pytest.param(
        qpi(member("a", "beta"), 0.0),
        qpi(member("b", "alpha"), 0.0),
        (False, True),
        id="same time: the group name decides, not the pod name",
    ),
    pytest.param(
        qpi(member("m1", "g"), 0.0),
        qpi(member("m2", "g"), 5.0),
        (False, False),
        id="members of one group are equivalent (the queue keeps arrival order)",
    ),
    pytest.param(
        qpi(member("m", "g", namespace="a"), 0.0),
        qpi(member("m", "g", namespace="b"), 0.0),
        (True, False),
        id="same group name in two namespaces: two groups",
    ),
    pytest.param(qpi(lone("z"), 1.0), qpi(lone("a"), 2.0), (True, False), id="lone pods: earlier first"),
    pytest.param(qpi(lone("b"), 1.0), qpi(lone("a"), 1.0), (False, True), id="lone pods: then by name"),
    pytest.param(
        qpi(lone("a"), 10.0, initial=1.0),
        qpi(lone("b"), 5.0),
        (True, False),
        id="a requeued pod keeps the time of its first attempt",
    ),
    pytest.param(
        qpi(member("a", "g"), 3.0),
        qpi(lone("b"), 2.0),
        (False, True),
        id="group and lone pod share a timeline",
    ),
    pytest.param(
        qpi(member("a", "g", priority=5), 0.0),
        qpi(member("b", "g", priority=1), 0.0),
        (True, False),
        id="members with different priorities are ordered by priority",
    ),
]


@pytest.mark.parametrize(("a", "b", "expected"), SORT_CASES)
def test_queue_sort(a: QueuedPodInfo, b: QueuedPodInfo, expected: tuple[bool, bool]) -> None:
    plugin = Coscheduling()
    assert (plugin.less(a, b), plugin.less(b, a)) == expected


def test_queue_sort_group_time_is_that_of_the_first_member_seen() -> None:
    plugin = Coscheduling()
    first, later, other = qpi(member("m1", "g"), 1.0), qpi(member("m2", "g"), 9.0), qpi(lone("x"), 5.0)
    assert plugin.less(first, other)
    # m2 arrived at 9 but sorts with its group (first seen at 1), so before x (5).
    assert plugin.less(later, other) and not plugin.less(other, later)


_sort_pods = st.builds(
    lambda prio, group, ns, name, t, initial: qpi(
        member(name, group, namespace=ns, priority=prio)
        if group
        else lone(name, namespace=ns, priority=prio),
        t,
        initial,
    ),
    st.sampled_from([None, 0, 10]),
    st.sampled_from([None, "g1", "g2", "g3"]),
    st.sampled_from(["default", "ml"]),
    st.sampled_from(["p1", "p2", "p3", "g1"]),
    st.sampled_from([0.0, 1.0, 2.0]),
    st.sampled_from([None, 0.5, 3.0]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_sort_pods, min_size=1, max_size=12))
def test_queue_sort_is_a_strict_weak_ordering_that_keeps_groups_together(pods: list[QueuedPodInfo]) -> None:
    plugin = Coscheduling()
    less = plugin.less
    for a in pods:
        assert not less(a, a)  # irreflexive
        for b in pods:
            assert not (less(a, b) and less(b, a))  # asymmetric
            for c in pods:
                if less(a, b) and less(b, c):
                    assert less(a, c)  # transitive
                incomparable = not less(a, b) and not less(b, a) and not less(b, c) and not less(c, b)
                if incomparable:
                    assert not less(a, c) and not less(c, a)  # equivalence is transitive

    def compare(x: QueuedPodInfo, y: QueuedPodInfo) -> int:
        return -1 if less(x, y) else int(less(y, x))

    order = sorted(pods, key=functools.cmp_to_key(compare))
    # Members of one group with one priority are adjacent in queue order.
    keys = [
        (q.pod.metadata.namespace, q.pod.metadata.labels.get(POD_GROUP_LABEL), q.pod.spec.priority or 0)
        for q in order
    ]
    for i, k in enumerate(keys):
        if k[1] is None:
            continue
        last = max(j for j, other in enumerate(keys) if other == k)
        assert all(keys[j] == k for j in range(i, last + 1)), keys


def test_the_queue_pops_a_gang_as_a_block() -> None:
    pods = [
        member("b-0", "b"),
        lone("solo-1"),
        member("a-0", "a"),
        member("b-1", "b"),
        lone("solo-0"),
        member("a-1", "a"),
    ]
    h = GangHarness(gpu_nodes(6), pods, pod_groups=[pod_group("a", 2), pod_group("b", 2)])
    h.drain()
    popped = [a.pod.metadata.name for a in h.attempts if a.result in ("Waiting", "Scheduled")][:6]
    assert popped[:2] == ["a-0", "a-1"]  # group "default/a" sorts before "default/b"
    assert popped.index("b-1") == popped.index("b-0") + 1


# =========================================================================== PreFilter


def test_prefilter_ignores_pods_outside_a_group() -> None:
    h = GangHarness(gpu_nodes(1), [lone("solo", gpus=4)])
    assert h.pre_filter("solo") is None


@pytest.mark.parametrize(
    ("nodes", "pods", "groups", "code", "message"),
    [
        pytest.param(
            gpu_nodes(4),
            [member(f"m{i}", "train") for i in range(2)],
            [pod_group("train", 3)],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "pod group default/train has 2 pod(s), fewer than minMember 3",
            id="fewer pods than minMember",
        ),
        pytest.param(
            gpu_nodes(4),
            [member("m0", "train")],
            [],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "pod group default/train not found: create a PodGroup (scheduling.x-k8s.io/v1alpha1) named "
            "train in namespace default, or set the pod annotation scheduling.x-k8s.io/min-available",
            id="no PodGroup and no annotation",
        ),
        pytest.param(
            gpu_nodes(4),
            [member("m0", "train", min_available="three")],
            [],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "pod group default/train: annotation scheduling.x-k8s.io/min-available must be a positive "
            "integer, got 'three'",
            id="invalid annotation",
        ),
        pytest.param(
            gpu_nodes(4, gpus=8),
            [make_pod("running", extra={GPU: 8}, node_name="n0")]
            + [member(f"w{i}", "train-a", gpus=8, namespace="ml") for i in range(4)],
            [pod_group("train-a", 4, namespace="ml")],
            Code.UNSCHEDULABLE,
            "pod group ml/train-a needs 32 nvidia.com/gpu, the cluster has 24 free",
            id="total request above the free GPUs",
        ),
        pytest.param(
            gpu_nodes(2, gpus=8),
            [member(f"w{i}", "train", gpus=8) for i in range(3)],
            [pod_group("train", 3)],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "pod group default/train needs 24 nvidia.com/gpu, the cluster has 16 in total",
            id="more than the whole cluster",
        ),
        pytest.param(
            gpu_nodes(4, gpus=4),
            [member(f"w{i}", "train", gpus=8) for i in range(2)],
            [pod_group("train", 2)],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "pod group default/train needs 2 more pod(s) placed, even empty, the nodes hold 0 "
            "(each needs 8 nvidia.com/gpu)",
            id="enough GPUs in total but no node large enough",
        ),
        pytest.param(
            gpu_nodes(3, gpus=8),
            [make_pod(f"r{i}", extra={GPU: 4}, node_name=f"n{i}") for i in range(3)]
            + [member(f"w{i}", "train", gpus=6) for i in range(2)],
            [pod_group("train", 2)],
            Code.UNSCHEDULABLE,
            "pod group default/train needs 2 more pod(s) placed, the nodes have room for 0 "
            "(each needs 6 nvidia.com/gpu)",
            id="free GPUs fragmented over nodes",
        ),
        pytest.param(
            [make_node(f"n{i}", cpu="2") for i in range(2)],
            [member(f"w{i}", "train", gpus=0, cpu="2") for i in range(3)],
            [pod_group("train", 3)],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "pod group default/train needs 6 cpu, the cluster has 4 in total",
            id="cpu, formatted as a quantity",
        ),
        pytest.param(
            gpu_nodes(4, gpus=8),
            [make_pod("r", extra={GPU: 8}, node_name="n0"), member("w0", "train", gpus=1)],
            [pod_group("train", 1, min_resources={GPU: "30"})],
            Code.UNSCHEDULABLE,
            "pod group default/train needs minResources 30 nvidia.com/gpu, the cluster has 24 free",
            id="PodGroup minResources above the free GPUs",
        ),
        pytest.param(
            gpu_nodes(4, gpus=8),
            [member("w0", "train", gpus=1)],
            [pod_group("train", 1, min_resources={GPU: "40"})],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "pod group default/train needs minResources 40 nvidia.com/gpu, the cluster has 32 in total",
            id="PodGroup minResources above the cluster",
        ),
        pytest.param(
            gpu_nodes(4),
            [member("w0", "train")],
            [pod_group("train", 1, min_resources={"cpu": "lots"})],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'pod group default/train: spec.minResources[cpu]: invalid quantity "lots"',
            id="invalid minResources quantity",
        ),
    ],
)
def test_prefilter_rejects_early_with_a_reason(
    nodes: list[Any], pods: list[Pod], groups: list[PodGroup], code: Code, message: str
) -> None:
    h = GangHarness(nodes, pods, pod_groups=groups)
    name = next(p.metadata.name for p in pods if p.metadata.labels and not p.spec.node_name)
    status = h.pre_filter(name)
    assert status is not None
    assert (status.code, status.message()) == (code, message)


def test_prefilter_passes_a_gang_that_fits_and_members_of_a_complete_gang() -> None:
    fits = GangHarness(gpu_nodes(3), [member(f"w{i}", "g") for i in range(3)], pod_groups=[pod_group("g", 3)])
    assert fits.pre_filter("w0") is None
    # Two members bound: the gang is complete, so a third member is an ordinary pod, even on a full cluster.
    done = GangHarness(
        gpu_nodes(2),
        [member("w0", "g", node="n0"), member("w1", "g", node="n1"), member("w2", "g")],
        pod_groups=[pod_group("g", 2)],
    )
    assert done.pre_filter("w2") is None


def test_prefilter_counts_waiting_members_as_placed() -> None:
    h = GangHarness(
        gpu_nodes(3), [member(f"w{i}", "g", gated=(i == 2)) for i in range(3)], pod_groups=[pod_group("g", 3)]
    )
    h.drain()
    assert h.waiting() == ["w0", "w1"]
    # Two of three hold their GPUs already: one more is needed and one GPU is free.
    assert h.pre_filter("w2") is None


def test_prefilter_turns_a_recently_rejected_group_away_during_its_backoff() -> None:
    pods = [member("w0", "g"), member("w1", "g"), member("w2", "g", node_selector={"gpu": "none"})]
    h = GangHarness(gpu_nodes(3), pods, pod_groups=[pod_group("g", 3)], args={"podGroupBackoffSeconds": 30})
    h.drain()  # w2 fits no node: PostFilter rejects w0 and w1 and starts the group's backoff
    h.scheduler.release_waiting_pods()
    status = h.pre_filter("w0")
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.message() == "pod group default/g was rejected recently, retrying in 30s"
    h.clock.advance(30)
    assert h.pre_filter("w0") is None


# =========================================================================== gangs end to end


def test_gang_of_three_binds_all_members_together() -> None:
    h = GangHarness(
        gpu_nodes(3), [member(f"w{i}", "train") for i in range(3)], pod_groups=[pod_group("train", 3)]
    )
    h.scheduler.schedule_one()
    h.scheduler.schedule_one()
    assert h.bound() == {} and h.waiting() == ["w0", "w1"]  # two reserved, none bound yet
    assert h.gpus_in_use() == 2
    h.scheduler.schedule_one()  # the third member completes the gang: all are allowed at once
    h.scheduler.release_waiting_pods()
    assert sorted(h.bound()) == ["w0", "w1", "w2"]
    assert len(set(h.bound().values())) == 3
    assert [a.result for a in h.attempts] == ["Waiting", "Waiting", "Scheduled", "Scheduled", "Scheduled"]
    assert h.clock.now() == 0.0  # nobody had to wait for a timer
    assert set(h.cluster.bind_count.values()) == {1}


def test_gang_that_can_place_two_of_three_times_out_and_releases_everything() -> None:
    # The third member is held by a scheduling gate, so only two members ever reach Permit.
    pods = [member("w0", "train"), member("w1", "train"), member("w2", "train", gated=True)]
    h = GangHarness(gpu_nodes(3), pods, pod_groups=[pod_group("train", 3)])
    h.drain()
    h.scheduler.release_waiting_pods()
    assert h.waiting() == ["w0", "w1"] and h.gpus_in_use() == 2 and h.bound() == {}

    h.clock.advance_to(59.0)
    h.scheduler.release_waiting_pods()
    assert h.waiting() == ["w0", "w1"]  # still within permitWaitingTimeSeconds (60)

    h.clock.advance_to(60.0)
    h.scheduler.release_waiting_pods()
    assert h.waiting() == []
    assert sorted(e for e in Recorder.log if e.startswith("unreserve")) == ["unreserve w0", "unreserve w1"]
    assert h.gpus_in_use() == 0  # capacity released
    assert not any(h.scheduler.cache.is_assumed(pod_key(h.pod(n))) for n in ("w0", "w1"))
    assert h.last_message("w0") == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 1m0s at plugin Coscheduling."
    )
    assert h.last_message("w1") == (
        "0/1 nodes are available: 1 pod group default/train rejected: member w0 was unreserved."
    )

    h.run()  # retries keep timing out; the run still ends, and no member was ever bound
    assert h.bound() == {} and h.cluster.bind_count == {}
    assert h.clock.now() > 60.0


def test_member_that_fits_nowhere_releases_the_waiting_members_at_once() -> None:
    pods = [
        member("w0", "train"),
        member("w1", "train"),
        member("w2", "train", node_selector={"gpu": "h100"}),
    ]
    h = GangHarness(gpu_nodes(3), pods, pod_groups=[pod_group("train", 3)])
    h.drain()
    h.scheduler.release_waiting_pods()
    assert h.clock.now() == 0.0  # no timer needed: PostFilter released the gang
    assert h.waiting() == [] and h.gpus_in_use() == 0 and h.bound() == {}
    assert (
        "pod group default/train: released 2 waiting member(s) because w2 is unschedulable"
        in h.last_message("w2")
    )
    assert h.last_message("w0") == (
        "0/1 nodes are available: 1 pod group default/train rejected: member w2 is unschedulable."
    )


def test_without_postfilter_the_timeout_still_releases_the_gang() -> None:
    pods = [
        member("w0", "train"),
        member("w1", "train"),
        member("w2", "train", node_selector={"gpu": "h100"}),
    ]
    h = GangHarness(gpu_nodes(3), pods, pod_groups=[pod_group("train", 3)], post_filter=False)
    h.drain()
    assert h.waiting() == ["w0", "w1"]
    h.clock.advance_to(60.0)
    h.scheduler.release_waiting_pods()
    assert h.waiting() == [] and h.gpus_in_use() == 0 and h.bound() == {}


def test_two_gangs_competing_one_completes_the_other_is_turned_away_early() -> None:
    # 4 GPUs, two gangs of 3: only one can run. QueueSort keeps each gang together, so gang "a"
    # is assembled first; gang "b" is rejected in PreFilter without holding a GPU.
    pods = [member(f"{g}{i}", g) for i in range(3) for g in "ba"]
    h = GangHarness(gpu_nodes(4), pods, pod_groups=[pod_group("a", 3), pod_group("b", 3)])
    h.run()
    assert sorted(h.bound()) == ["a0", "a1", "a2"]
    assert h.waiting() == [] and h.gpus_in_use() == 3
    assert h.last_message("b0") == (
        "0/4 nodes are available: pod group default/b needs 3 nvidia.com/gpu, the cluster has 1 free."
    )
    assert all(r == "Unschedulable" for r in h.results("b0"))


def test_two_interleaved_gangs_do_not_deadlock() -> None:
    # A queue order that interleaves the gangs (a0 b0 a1 b1 a2 b2) lets both hold GPUs: a0, b0 and
    # a1 wait; b1 is then rejected by PreFilter (gang b needs 2 more GPUs, 1 is free) and its
    # PostFilter releases b0 at once; a2 completes gang a. Neither gang waits on the other: gang a
    # binds without any timer running, gang b holds nothing and is never partly bound.
    pods = [member(f"{g}{i}", g) for i in range(3) for g in "ab"]
    h = GangHarness(gpu_nodes(4), pods, pod_groups=[pod_group("a", 3), pod_group("b", 3)], sort="Fifo")
    h.drain()
    h.scheduler.release_waiting_pods()
    assert [(a.pod.metadata.name, a.result) for a in h.attempts[:5]] == [
        ("a0", "Waiting"),
        ("b0", "Waiting"),
        ("a1", "Waiting"),
        ("b1", "Unschedulable"),
        ("a2", "Scheduled"),
    ]
    assert h.last_message("b1") == (
        "0/4 nodes are available: pod group default/b needs 2 nvidia.com/gpu, the cluster has 1 free. "
        "pod group default/b: released 1 waiting member(s) because b1 is unschedulable"
    )
    assert h.clock.now() == 0.0
    assert sorted(h.bound()) == ["a0", "a1", "a2"]
    assert h.waiting() == [] and h.gpus_in_use() == 3
    h.run()  # gang b keeps being turned away early; nothing changes and the run ends
    assert sorted(h.bound()) == ["a0", "a1", "a2"] and h.waiting() == []


# =========================================================================== sizing: PodGroup vs annotation


def test_podgroup_min_member_wins_over_the_annotation() -> None:
    pods = [member(f"w{i}", "g", min_available=3) for i in range(2)]
    h = GangHarness(gpu_nodes(2), pods, pod_groups=[pod_group("g", 2)])
    h.run()
    assert sorted(h.bound()) == ["w0", "w1"]


def test_annotation_sizes_a_group_without_podgroup() -> None:
    ok = GangHarness(gpu_nodes(2), [member(f"w{i}", "g", min_available=2) for i in range(2)])
    ok.run()
    assert sorted(ok.bound()) == ["w0", "w1"]
    short = GangHarness(gpu_nodes(3), [member(f"w{i}", "g", min_available=3) for i in range(2)])
    short.run()
    assert short.bound() == {}
    assert short.last_message("w0").endswith("pod group default/g has 2 pod(s), fewer than minMember 3.")


@pytest.mark.parametrize(
    "group",
    [
        pod_group("g", 2, api_version="scheduling.k8s.io/v1alpha2"),
        pod_group("g", 2, namespace="other"),
        pod_group("h", 2),
    ],
    ids=["native PodGroup API", "other namespace", "other name"],
)
def test_podgroups_that_are_not_the_pods_are_ignored(group: PodGroup) -> None:
    pods = [member(f"w{i}", "g", min_available=3) for i in range(2)]
    h = GangHarness(gpu_nodes(3), pods, pod_groups=[group])
    status = h.pre_filter("w0")
    assert status is not None and "fewer than minMember 3" in status.message()


@pytest.mark.parametrize(
    ("groups", "annotation", "expected"),
    [([pod_group("g", 3, timeout=30)], None, 30.0), ([], 3, 60.0), ([pod_group("g", 3)], None, 60.0)],
    ids=["PodGroup scheduleTimeoutSeconds", "annotation: args default", "PodGroup without timeout"],
)
def test_timeout_from_podgroup_or_args(
    groups: list[PodGroup], annotation: int | None, expected: float
) -> None:
    pods = [member(f"w{i}", "g", min_available=annotation, gated=(i == 2)) for i in range(3)]
    h = GangHarness(gpu_nodes(3), pods, pod_groups=groups)
    h.drain()
    assert h.waiting() == ["w0", "w1"]
    h.clock.advance_to(expected - 1)
    h.scheduler.release_waiting_pods()
    assert h.waiting() == ["w0", "w1"]
    h.clock.advance_to(expected)
    h.scheduler.release_waiting_pods()
    assert h.waiting() == []


def test_permit_waiting_time_from_args() -> None:
    pods = [member(f"w{i}", "g", min_available=3, gated=(i == 2)) for i in range(3)]
    h = GangHarness(gpu_nodes(3), pods, args={"permitWaitingTimeSeconds": 5})
    h.drain()
    h.clock.advance_to(5.0)
    h.scheduler.release_waiting_pods()
    assert h.waiting() == []
    assert "after waiting 5s at plugin Coscheduling" in h.last_message("w0")


# =========================================================================== plugin units


class FakeHandle:
    """Just enough of the Handle for Permit/Unreserve: pods, a snapshot, waiting pods, activations."""

    def __init__(
        self, pods: Sequence[Pod], nodes: Sequence[Any] = (), groups: Sequence[PodGroup] = ()
    ) -> None:
        self.pods = list(pods)
        self.groups = list(groups)
        self.table = make_table(list(nodes) or gpu_nodes(4), self.pods)
        self.waiting: list[WaitingPod] = []
        self.activated: list[str] = []

    @property
    def snapshot(self) -> Any:
        return self.table

    def now(self) -> float:
        return 0.0

    def lister(self, kind: str) -> Sequence[Any]:
        objects: dict[str, Sequence[Any]] = {"Pod": self.pods, "PodGroup": self.groups}
        return objects.get(kind, [])

    def iterate_waiting_pods(self) -> Sequence[WaitingPod]:
        return list(self.waiting)

    def reject_waiting_pod(self, uid: str, plugin: str, message: str) -> bool:
        for wp in self.waiting:
            if pod_key(wp.pod) == uid:
                wp.reject(plugin, message)
                return True
        return False

    def activate(self, pods: Sequence[Pod]) -> None:
        self.activated.extend(p.metadata.name for p in pods)

    def park(self, pod: Pod, node: str = "n0") -> WaitingPod:
        """A member waiting at Permit: assumed on `node` (in the snapshot) and in the waiting list."""
        assumed = msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))
        self.table.add_pod(self.table.index[node], PodInfo(assumed))
        wp = WaitingPod(assumed, node, {"Coscheduling": 60.0}, 0.0)
        self.waiting.append(wp)
        return wp


def test_permit_waits_and_activates_the_pending_siblings() -> None:
    pods = [member(f"w{i}", "g", min_available=3) for i in range(3)]
    handle = FakeHandle(pods)
    plugin = Coscheduling(handle=handle)  # type: ignore[arg-type]
    out = plugin.permit(CycleState(), pods[0], "n0")
    assert isinstance(out, tuple)
    status, timeout = out
    assert status is not None and status.is_wait() and timeout == 60.0
    assert status.message() == "pod group default/g: 1/3 members reserved"
    assert handle.activated == ["w1", "w2"]


def test_permit_allows_every_waiting_member_of_the_group_and_no_other() -> None:
    pods = [member(f"w{i}", "g", min_available=2) for i in range(2)]
    other = member("x0", "h", min_available=2)
    handle = FakeHandle([*pods, other])
    mine, theirs = handle.park(pods[0]), handle.park(other)
    plugin = Coscheduling(handle=handle)  # type: ignore[arg-type]
    assert plugin.permit(CycleState(), pods[1], "n1") is None
    assert mine.result is not None and mine.result.is_success()
    assert theirs.result is None


def test_unreserve_rejects_waiting_siblings_only_and_is_idempotent() -> None:
    pods = [member(f"w{i}", "g", min_available=3) for i in range(3)]
    other = member("x0", "h", min_available=2)
    handle = FakeHandle([*pods, other])
    sibling, theirs = handle.park(pods[1]), handle.park(other)
    plugin = Coscheduling(handle=handle)  # type: ignore[arg-type]
    plugin.unreserve(CycleState(), pods[0], "n0")
    plugin.unreserve(CycleState(), pods[0], "n0")
    assert sibling.result is not None and sibling.result.code == Code.UNSCHEDULABLE
    assert sibling.result.message() == "pod group default/g rejected: member w0 was unreserved"
    assert theirs.result is None
    plugin.unreserve(CycleState(), lone("solo"), "n0")  # a pod outside any group: nothing happens
    assert theirs.result is None


def test_postfilter_says_nothing_for_pods_outside_a_group_or_of_a_complete_gang() -> None:
    done = [member("w0", "g", min_available=1, node="n0"), member("w1", "g", min_available=1)]
    handle = FakeHandle(done)
    plugin = Coscheduling(handle=handle)  # type: ignore[arg-type]
    for pod in (lone("solo"), done[1]):
        result, status = plugin.post_filter(CycleState(), pod, {})
        assert result is None and status is not None
        assert (status.code, status.message()) == (Code.UNSCHEDULABLE, "")


def test_events_to_register_and_their_hints() -> None:
    registered = Coscheduling().events_to_register()
    events = {reg.event.resource: reg for reg in registered}
    assert [(reg.event.resource, reg.event.action) for reg in registered] == [
        (Resource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL),
        (Resource.ASSIGNED_POD, ActionType.DELETE),
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
        (Resource.POD_GROUP, ActionType.ADD | ActionType.UPDATE),
    ]
    rejected = member("w0", "g", namespace="ml")
    sibling_hint = events[Resource.POD].hint
    assert sibling_hint is not None
    assert sibling_hint(rejected, None, member("w1", "g", namespace="ml")) is QueueingHint.QUEUE
    assert sibling_hint(rejected, None, member("w1", "g")) is QueueingHint.SKIP  # other namespace
    assert sibling_hint(rejected, None, lone("x", namespace="ml")) is QueueingHint.SKIP
    group_hint = events[Resource.POD_GROUP].hint
    assert group_hint is not None
    assert group_hint(rejected, None, pod_group("g", 2, namespace="ml")) is QueueingHint.QUEUE
    assert group_hint(rejected, None, pod_group("g", 2)) is QueueingHint.SKIP
    assert events[Resource.POD_GROUP].event.matches(ClusterEvent(Resource.POD_GROUP, ActionType.ADD))


# =========================================================================== args, objects, config


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        ({"permitWaitingTimeSeconds": 0}, "args.permitWaitingTimeSeconds", "must be between 1 and 900"),
        ({"permitWaitingTimeSeconds": 901}, "args.permitWaitingTimeSeconds", "must be between 1 and 900"),
        ({"podGroupBackoffSeconds": -1}, "args.podGroupBackoffSeconds", "must not be negative, got -1"),
        (
            {"permitWaitingTime": 5},
            "args.permitWaitingTime",
            'unknown field (did you mean "permitWaitingTimeSeconds"?)',
        ),
    ],
)
def test_args_are_validated(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        decode_args(Coscheduling, raw)
    assert err.value.path == path and message in err.value.message


def test_default_args() -> None:
    assert decode_args(Coscheduling, None) == CoschedulingArgs(
        permit_waiting_time_seconds=60, pod_group_backoff_seconds=0
    )


def test_podgroups_load_from_yaml_and_the_memory_cluster_lists_them() -> None:
    text = """
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroupList
items:
- metadata: {name: train, namespace: ml, creationTimestamp: "2026-01-02T03:04:05Z"}
  spec: {minMember: 4, scheduleTimeoutSeconds: 120, minResources: {nvidia.com/gpu: "32"}}
  status: {phase: Pending, scheduled: 1}
"""
    (pg,) = load_documents(text, "groups.yaml")
    assert isinstance(pg, PodGroup)
    assert (pg.metadata.namespace, pg.metadata.name, pg.spec.min_member) == ("ml", "train", 4)
    assert pg.spec.schedule_timeout_seconds == 120 and pg.spec.min_resources == {GPU: "32"}
    objects = LoadedObjects()
    objects.add(pg)
    assert MemoryCluster(objects).lister("PodGroup") == [pg]


def test_the_gpu_example_configs_are_valid_and_share_the_gang_queue_sort() -> None:
    registry = default_registry()
    config = load_config(str(ROOT / "examples/gpu/scheduler-config.yaml"), registry)
    names = [p.scheduler_name for p in config.profiles]
    assert names == ["default-scheduler", "gpu-scheduler"]
    from kubesched.scheduler.profiles import profiles_from_config

    specs = {s.scheduler_name: s for s in profiles_from_config(config, registry)}
    assert all(s.points["queueSort"] == [("Coscheduling", 1)] for s in specs.values())
    gpu = specs["gpu-scheduler"]
    weights = dict(gpu.points["score"])
    assert (weights["GPUScheduler"], weights["SpotScheduler"], weights["AZScheduler"]) == (2, 5, 3)
    for point in ("preFilter", "postFilter", "reserve", "permit"):
        assert "Coscheduling" in dict(gpu.points[point])
    assert "NodeFilterLabel" in dict(gpu.points["filter"])
    baseline = load_config(str(ROOT / "examples/gpu/baseline-config.yaml"), registry)
    assert [p.scheduler_name for p in baseline.profiles] == names


def test_the_generated_gpu_scenario_is_up_to_date(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("gpu_generate", ROOT / "examples/gpu/generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "gpu_generate", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "OUT", tmp_path)
    module.main()
    committed = ROOT / "examples/gpu/cluster"
    for path in sorted(tmp_path.iterdir()):
        assert path.read_text() == (committed / path.name).read_text(), (
            f"re-run examples/gpu/generate.py ({path.name})"
        )


# =========================================================================== CLI


TINY = """
apiVersion: v1
kind: NodeList
items:
- metadata: {name: gpu-1}
  status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "4"}}
- metadata: {name: gpu-2}
  status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "4"}}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: first, namespace: ml}
spec: {minMember: 2}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: second, namespace: ml}
spec: {minMember: 3}
"""

GANG_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    queueSort: {enabled: [{name: Coscheduling}], disabled: [{name: "*"}]}
    preFilter: {enabled: [{name: Coscheduling}]}
    postFilter: {enabled: [{name: Coscheduling}]}
    reserve: {enabled: [{name: Coscheduling}]}
    permit: {enabled: [{name: Coscheduling}]}
"""


def _pod_doc(name: str, group: str, gpus: int) -> str:
    return (
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ml, labels: "
        f"{{scheduling.x-k8s.io/pod-group: {group}}}}}\nspec:\n  containers:\n  - name: c\n    image: i\n"
        f"    resources: {{requests: {{nvidia.com/gpu: '{gpus}'}}, limits: {{nvidia.com/gpu: '{gpus}'}}}}\n"
    )


def test_cli_simulate_json_never_reports_a_partial_gang(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 8 GPUs on 2 nodes. Gang "first" (2 x 3 GPUs) takes 6, one node each; gang "second"
    # (3 x 1 GPU) would then fit only 2 of its 3 members, so none of them may be bound.
    pods = "".join(_pod_doc(f"first-{i}", "first", 3) for i in range(2))
    pods += "".join(_pod_doc(f"second-{i}", "second", 1) for i in range(3))
    (tmp_path / "cluster.yaml").write_text(TINY + pods)
    (tmp_path / "sched.yaml").write_text(GANG_CONFIG)
    argv = ["simulate", "--config", str(tmp_path / "sched.yaml"), str(tmp_path / "cluster.yaml")]
    code = main([*argv, "-o", "json"])
    out = capsys.readouterr().out
    assert code == 0
    report = json.loads(out)
    results = {p["name"]: p for p in report["pods"]}
    assert {n: r["result"] for n, r in results.items()} == {
        "first-0": "Scheduled",
        "first-1": "Scheduled",
        "second-0": "Unschedulable",
        "second-1": "Unschedulable",
        "second-2": "Unschedulable",
    }
    for group, need in {"first": 2, "second": 3}.items():
        bound = sum(1 for n, r in results.items() if n.startswith(group) and r["result"] == "Scheduled")
        assert bound == 0 or bound >= need, f"gang {group} partly placed: {bound}/{need}"
    assert results["second-0"]["message"] == (
        "0/2 nodes are available: pod group ml/second needs 3 nvidia.com/gpu, the cluster has 2 free. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    assert report["summary"]["waiting"] == 0
    assert {n["name"]: n["requested"]["nvidia.com/gpu"] for n in report["nodes"]} == {
        "gpu-1": "3",
        "gpu-2": "3",
    }


def test_every_profile_must_share_the_gang_queue_sort(tmp_path: Path) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: default-scheduler\n- schedulerName: gpu-scheduler\n  plugins:\n"
        "    queueSort: {enabled: [{name: Coscheduling}], disabled: [{name: '*'}]}\n"
    )
    with pytest.raises(InputError) as err:
        load_config(str(path), default_registry())
    assert str(err.value).endswith(
        'profiles[1].plugins.queueSort: must be the same for all profiles: "Coscheduling" here, '
        '"PrioritySort" in profiles[0]'
    )


def test_queue_sort_forgets_only_groups_with_no_pending_member(monkeypatch: pytest.MonkeyPatch) -> None:
    import kubesched.plugins.contrib.coscheduling as cos

    monkeypatch.setattr(cos, "_FIRST_SEEN_SWEEP", 2)
    done, pending = member("d0", "done", node="n0"), member("p0", "pending")
    handle = FakeHandle([done, pending])
    plugin = Coscheduling(handle=handle)  # type: ignore[arg-type]
    plugin.less(qpi(done, 1.0), qpi(pending, 2.0))
    assert plugin._first_seen == {"default/done": 1.0, "default/pending": 2.0}
    plugin.less(qpi(member("n0", "new"), 3.0), qpi(pending, 9.0))  # a third group triggers the sweep
    assert plugin._first_seen == {"default/pending": 2.0, "default/new": 3.0}


def test_members_rejected_but_not_yet_released_do_not_count_as_placed() -> None:
    # min 3 of 4 members. w0 and w1 wait; w2 fits nowhere, so PostFilter rejects w0 and w1 — they
    # stay assumed until their binding cycles run. w3 comes next in the same burst: counting the
    # doomed w0 and w1 as placed would let w3 complete the "gang" and bind alone.
    pods = [
        member("w0", "g"),
        member("w1", "g"),
        member("w2", "g", node_selector={"gpu": "h100"}),
        member("w3", "g"),
    ]
    h = GangHarness(gpu_nodes(4), pods, pod_groups=[pod_group("g", 3)])
    h.drain()
    h.scheduler.release_waiting_pods()
    assert h.bound() == {}
    h.run()  # w0, w1 and w3 are then placed together
    assert sorted(h.bound()) == ["w0", "w1", "w3"]
