"""Scenario replays in virtual time: each test pins one behaviour of the real queue or the timeline
(completions freeing room, backoff, preemption, node loss, deletes, the sampling grid) to exact times."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from tests.unit.simulate.simulate_helpers import replay_json

from kubesched.api.objects import Node, Pod
from kubesched.api.quantity import parse_quantity
from kubesched.config import default_config
from kubesched.framework import filter_memo, runtime
from kubesched.framework.filter_memo import FilterMemo
from kubesched.plugins import default_registry
from kubesched.scheduler.failure_memo import RepeatedFailures
from kubesched.simulate.replay.model import ReplayPod, ReplayReport
from kubesched.simulate.replay.run import replay
from kubesched.simulate.replay.timeline import MAX_SAMPLES, latency, nearest_rank
from kubesched.simulate.scenario import ObjectRef, Scenario, TimelineEvent, parse_scenario
from kubesched.testing.builders import make_node, make_pod
from kubesched.testing.scenarios import synthetic_scenario


def create(at: float, obj: Node | Pod, run_for: float | None = None) -> TimelineEvent:
    ns = obj.metadata.namespace or "default" if isinstance(obj, Pod) else ""
    return TimelineEvent(at, "create", ObjectRef(obj.kind, obj.metadata.name, ns), obj=obj, run_for=run_for)


def delete(at: float, kind: str, name: str) -> TimelineEvent:
    return TimelineEvent(at, "delete", ObjectRef(kind, name, "default" if kind == "Pod" else ""))


def run(*events: TimelineEvent, **options: Any) -> ReplayReport:
    registry = default_registry()
    scenario = Scenario("t", sorted(events, key=lambda e: e.at), **options)
    return replay(scenario, default_config(registry), registry)


def pod(report: ReplayReport, name: str) -> ReplayPod:
    return next(p for p in report.pods if p.name == name)


def test_a_completion_frees_room_and_the_waiting_pod_binds_at_that_instant() -> None:
    report = run(
        create(0, make_node("n1", cpu="2")),
        create(0, make_pod("first", cpu="2"), run_for=60),
        create(0, make_pod("second", cpu="2"), run_for=30),
    )
    first, second = pod(report, "first"), pod(report, "second")
    assert (first.bound_at, first.ended_at, first.ended) == (0.0, 60.0, "Completed")
    # Requeued by the AssignedPodDelete event the completion sends, not by a periodic flush.
    assert (second.bound_at, second.wait_seconds, second.ended_at) == (60.0, 60.0, 90.0)
    assert report.summary.completed == 2
    assert report.summary.latency.max == 60.0


def test_a_node_add_retries_a_rejected_pod_at_once_popping_it_from_backoff() -> None:
    report = run(
        create(0, make_node("small", cpu="1")),
        create(0, make_pod("big", cpu="2")),
        create(0.25, make_node("large", cpu="4")),
    )
    big = pod(report, "big")
    # The node add moves the pod to backoffQ (its 1 s backoff runs until 1.0), and with activeQ empty
    # the scheduler pops it from there at once (SchedulerPopFromBackoffQ, on by default since v1.33).
    assert (big.bound_at, big.node, big.attempts) == (0.25, "large", 2)


def test_without_events_an_unschedulable_pod_is_retried_by_the_five_minute_flush() -> None:
    report = run(
        create(0, make_node("n1", cpu="1")),
        create(0, make_pod("big", cpu="2")),
        until=700.0,
    )
    assert pod(report, "big").attempts == 3  # at 0 s, 300 s and 600 s
    assert report.summary.pending == 1


def test_a_high_priority_pod_preempts_and_the_victim_is_counted_as_evicted() -> None:
    report = run(
        create(0, make_node("n1", cpu="2")),
        create(0, make_pod("batch", cpu="2", priority=0)),
        create(10, make_pod("urgent", cpu="2", priority=1000)),
    )
    batch, urgent = pod(report, "batch"), pod(report, "urgent")
    assert (batch.ended, batch.ended_at) == ("Preempted", 10.0)
    assert urgent.victims == ["default/batch"]
    assert urgent.node == "n1"
    assert urgent.bound_at is not None and 10.0 <= urgent.bound_at <= 11.0
    assert report.summary.evictions == {"Preempted": 1, "NodeDeleted": 0}
    assert report.timeline[-1].evicted == 1


def test_deleting_a_node_loses_its_pods_and_their_demand_comes_back_only_as_new_pods() -> None:
    report = run(
        create(0, make_node("n1", cpu="2")),
        create(0, make_node("n2", cpu="2")),
        create(0, make_pod("a", cpu="2")),
        create(0, make_pod("b", cpu="2")),
        delete(5, "Node", "n1"),
        delete(6, "Node", "missing"),
    )
    lost = [p for p in report.pods if p.ended == "NodeDeleted"]
    assert len(lost) == 1 and lost[0].ended_at == 5.0
    assert report.summary.evictions["NodeDeleted"] == 1
    assert [n.name for n in report.nodes] == ["n2"]
    assert report.summary.skipped_events == {"delete of a node that does not exist": 1}


def test_deleting_a_pending_pod_ends_it_and_it_stops_counting_as_pending() -> None:
    report = run(
        create(0, make_node("n1", cpu="1")),
        create(0, make_pod("too-big", cpu="2")),
        delete(30, "Pod", "too-big"),
        delete(40, "Pod", "too-big"),
        sample_interval=10.0,
    )
    gone = pod(report, "too-big")
    assert (gone.result, gone.ended, gone.ended_at, gone.bound_at) == ("Unschedulable", "Deleted", 30.0, None)
    assert [(s.t, s.pending) for s in report.timeline] == [(0, 1), (10, 1), (20, 1), (30, 0), (40, 0)]
    assert report.summary.pending == 0
    assert report.summary.deleted == 1
    assert list(report.summary.skipped_events.values()) == [1]


def test_samples_follow_the_grid_and_until_stops_the_replay() -> None:
    report = run(
        create(0, make_node("n1", cpu="4")),
        create(5, make_pod("a", cpu="1"), run_for=10),
        create(25, make_pod("b", cpu="2")),
        create(500, make_pod("never", cpu="1")),
        sample_interval=5.0,
        until=30.0,
    )
    assert report.summary.virtual_seconds == 30.0
    assert [s.t for s in report.timeline] == [0, 5, 10, 15, 20, 25, 30]
    assert [s.utilization["cpu"] for s in report.timeline] == [0, 0.25, 0.25, 0, 0, 0.5, 0.5]
    assert [s.running for s in report.timeline] == [0, 1, 1, 0, 0, 1, 1]
    assert [s.created for s in report.timeline] == [0, 1, 1, 1, 1, 2, 2]
    assert all(p.name != "never" for p in report.pods)


def test_the_heat_map_follows_each_node_over_time() -> None:
    report = run(
        create(0, make_node("n1", cpu="4")),
        create(0, make_pod("a", cpu="3"), run_for=10),
        create(10, make_node("n2", cpu="2")),
        create(10, make_pod("b", cpu="1")),
        sample_interval=5.0,
        until=15.0,
    )
    cpu = next(h for h in report.heatmaps if h.resource == "cpu")
    assert cpu.times == [0, 5, 10, 15]
    assert cpu.rows == ["n1", "n2"]
    by_node = dict(zip(cpu.rows, cpu.values, strict=True))
    assert by_node["n1"] == [75, 75, 0, 0] or by_node["n1"] == [75, 75, 25, 25]
    assert by_node["n2"][:2] == [None, None]
    assert sum(v or 0 for v in (by_node["n1"][2], by_node["n2"][2])) in (25, 50)


def test_same_seed_same_replay() -> None:
    doc = synthetic_scenario(nodes=10, events=150, seed=3, hours=1)
    assert replay_json(doc) == replay_json(doc)


def test_remembered_filter_verdicts_and_per_node_filters_change_no_decision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Retries that re-filter only the nodes whose pods changed (FilterMemo), and Filter plugins
    called per node on few nodes, decide exactly as full batch passes do: same report, pod by pod."""
    doc = synthetic_scenario(nodes=12, events=500, seed=5, hours=1, load=1.3)

    patched: list[int] = []
    real_patch = filter_memo._patched

    def counting_patch(*args: Any) -> Any:
        out = real_patch(*args)
        patched.append(out is not None)
        return out

    monkeypatch.setattr(filter_memo, "_patched", counting_patch)
    # Every retry runs its own Filter pass here (no failure repeated for a sibling pod).
    monkeypatch.setattr(RepeatedFailures, "_repeatable_content", lambda self, fwk, qpi: None)
    remembered = replay_json(doc)
    assert sum(patched) > 1000  # the full cluster made pods wait and retry
    assert remembered["summary"]["evictions"]["Preempted"] > 0

    def full_pass(self: FilterMemo, fwk: Any, state: Any, pod: Any, key: str, nodes: Any) -> Any:
        return fwk.run_filter(state, pod, nodes)

    monkeypatch.setattr(FilterMemo, "run_filter", full_pass)
    monkeypatch.setattr(runtime, "PER_NODE_FILTER_MAX", 0)
    assert replay_json(doc) == remembered


def test_a_pod_with_a_bad_quantity_is_an_error_and_the_others_go_on() -> None:
    bad = make_pod("bad", cpu="lots")
    report = run(create(0, make_node("n1")), create(0, bad), create(0, make_pod("good", cpu="1")))
    assert pod(report, "bad").result == "Error"
    assert pod(report, "good").result == "Scheduled"
    assert (report.summary.errors, report.summary.pending) == (1, 0)


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [([1.0], 50, 1.0), ([1.0, 2.0], 50, 1.0), ([1.0, 2.0, 3.0, 4.0], 90, 4.0), (list(range(1, 101)), 99, 99)],
)
def test_nearest_rank_percentiles(values: list[float], q: float, expected: float) -> None:
    assert nearest_rank(values, q) == expected


def test_latency_of_nothing_is_null() -> None:
    assert latency([]).p99 is None
    assert latency([3.0, 1.0, 2.0]).p50 == 2.0


def test_a_long_replay_keeps_a_bounded_grid() -> None:
    report = run(
        create(0, make_node("n1", cpu="1")),
        create(0, make_pod("a", cpu="1"), run_for=(MAX_SAMPLES + 10) * 1.0),
        sample_interval=1.0,
    )
    assert len(report.timeline) <= MAX_SAMPLES
    assert report.timeline[-1].t == report.summary.virtual_seconds
    assert report.timeline[1].t - report.timeline[0].t == 2.0


def test_a_generated_5000_node_cluster_replays_with_nothing_overcommitted() -> None:
    doc = synthetic_scenario(nodes=5000, events=6000, seed=7, hours=1, load=2.0)
    registry = default_registry()
    report = replay(
        parse_scenario(msgspec.json.encode(doc).decode(), "big.json"), default_config(registry), registry
    )
    s = report.summary
    assert s.events == 6000
    assert len(report.nodes) == 5000
    assert s.scheduled + s.pending + sum(1 for p in report.pods if p.bound_at is None and p.ended) == s.pods
    for node in report.nodes:
        for resource, used in node.requested.items():
            assert parse_quantity(used) <= parse_quantity(node.allocatable[resource]), node.name
    bound = [p for p in report.pods if p.bound_at is not None]
    assert all(p.wait_seconds == pytest.approx(p.bound_at - p.created_at, abs=1e-3) for p in bound)
    assert report.timeline[-1].bound == s.scheduled
