"""Metrics carry kube-scheduler's names, labels and buckets; the health server answers as kube
components do."""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any

import pytest

from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code, Status
from kubesched.metrics import (
    SchedulerMetrics,
    exponential_buckets,
    instrument_plugins,
    parse_listen,
)
from kubesched.serving.health import HealthServer


def test_upstream_names_labels_and_buckets() -> None:
    m = SchedulerMetrics()
    m.observe_attempt("Scheduled", "kubesched", 0.004)
    m.observe_attempt("Unschedulable", "kubesched", 0.002)
    m.observe_attempt("Error", "other", 0.0)
    m.observe_attempt("Waiting", "kubesched", 1.0)  # not a finished attempt
    m.set_pending({"active": 3, "backoff": 1, "unschedulable": 2, "gated": 0})
    m.set_cache_size(10, 20, 1)
    m.sync_incoming({("active", "PodAdd"): 5})
    m.sync_incoming({("active", "PodAdd"): 7, ("unschedulable", "ScheduleAttemptFailure"): 1})
    m.preemption_attempts.inc()
    m.sync_dropped({"events": 2, "pod-status": 0})
    m.sync_dropped({"events": 5, "pod-status": 0})
    text = m.render().decode()
    for line in (
        'scheduler_schedule_attempts_total{profile="kubesched",result="scheduled"} 1.0',
        'scheduler_schedule_attempts_total{profile="kubesched",result="unschedulable"} 1.0',
        'scheduler_schedule_attempts_total{profile="other",result="error"} 1.0',
        'scheduler_scheduling_attempt_duration_seconds_bucket{le="0.004",profile="kubesched",'
        'result="scheduled"} 1.0',
        'scheduler_pending_pods{queue="active"} 3.0',
        'scheduler_scheduler_cache_size{type="assumed_pods"} 1.0',
        'scheduler_queue_incoming_pods_total{event="PodAdd",queue="active"} 7.0',
        'scheduler_queue_incoming_pods_total{event="ScheduleAttemptFailure",queue="unschedulable"} 1.0',
        "scheduler_preemption_attempts_total 1.0",
        'kubesched_calls_dropped_total{queue="events"} 5.0',
    ):
        assert line in text, line
    assert "_created" not in text
    assert "# TYPE scheduler_plugin_execution_duration_seconds histogram" in text


def test_batching_metrics_are_the_v1_37_2_binarys() -> None:
    """Names, labels, help and buckets as the kube-scheduler v1.37.2 binary's /metrics shows them."""
    m = SchedulerMetrics()
    m.observe_batch_attempt("p", "hint_used")
    m.observe_batch_flush("p", "pod_not_batchable")
    m.observe_node_hint("p", True, 0.00003)
    m.observe_node_hint("p", False, 0.00003)
    m.observe_store_results("p", 0.00003)
    m.observe_rescore("p", 0.0001)
    text = m.render().decode()
    for line in (
        "# HELP scheduler_batch_attempts_total [ALPHA] Counts of results when we attempt to use batching.",
        'scheduler_batch_attempts_total{profile="p",result="hint_used"} 1.0',
        "# HELP scheduler_batch_cache_flushed_total [ALPHA] Counts of cache flushes by reason.",
        'scheduler_batch_cache_flushed_total{profile="p",reason="pod_not_batchable"} 1.0',
        'scheduler_get_node_hint_duration_seconds_bucket{hinted="hint",le="4e-05",profile="p"} 1.0',
        'scheduler_get_node_hint_duration_seconds_bucket{hinted="no_hint",le="2e-05",profile="p"} 0.0',
        'scheduler_store_schedule_results_duration_seconds_bucket{le="0.02048",profile="p"} 1.0',
        'scheduler_batch_rescore_attempts_total{profile="p"} 1.0',
        'scheduler_batch_rescore_duration_seconds_bucket{le="0.00016",profile="p"} 1.0',
    ):
        assert line in text, line
    assert 'le="0.04096"' not in text  # 12 buckets: 1e-05 doubling to 0.02048


def test_buckets_are_prometheus_exponential_buckets() -> None:
    b = exponential_buckets(0.001, 2, 15)
    assert len(b) == 15 and b[0] == 0.001 and b[-1] == pytest.approx(16.384)


class Plugin:
    def pre_filter(self, state: Any, pod: Any, nodes: Any) -> tuple[None, Status]:
        return None, Status(Code.UNSCHEDULABLE, "no")

    def filter(self, state: Any, pod: Any, node: Any) -> None:  # per node: left untimed
        return None

    def bind(self, state: Any, pod: Any, node: str) -> None:
        raise RuntimeError("bind bug")


def test_plugin_calls_are_timed_with_point_and_status_labels() -> None:
    m = SchedulerMetrics()
    plugin = Plugin()
    assert instrument_plugins({"Mine": plugin}, m) == 2
    plugin.pre_filter(None, None, None)
    plugin.filter(None, None, None)
    with pytest.raises(RuntimeError):
        plugin.bind(None, None, "n")
    text = m.render().decode()
    assert (
        'scheduler_plugin_execution_duration_seconds_count{extension_point="PreFilter",plugin="Mine",'
        'status="Unschedulable"} 1.0'
    ) in text
    assert 'extension_point="Bind",plugin="Mine",status="Error"} 1.0' in text
    assert 'extension_point="Filter"' not in text


def test_a_cycle_not_sampled_is_not_timed() -> None:
    m = SchedulerMetrics()
    plugin = Plugin()
    instrument_plugins({"Mine": plugin}, m)
    sampled, skipped = CycleState(), CycleState()
    sampled.record_plugin_metrics = True
    for state in (sampled, skipped, skipped):
        plugin.pre_filter(state, None, None)
    assert (
        'scheduler_plugin_execution_duration_seconds_count{extension_point="PreFilter",plugin="Mine",'
        'status="Unschedulable"} 1.0'
    ) in m.render().decode()


def test_parse_listen() -> None:
    assert parse_listen("127.0.0.1:10259") == ("127.0.0.1", 10259)
    assert parse_listen(":8080") == ("0.0.0.0", 8080)
    assert parse_listen("[::1]:9") == ("::1", 9)
    with pytest.raises(InputError, match="HOST:PORT"):
        parse_listen("localhost")


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_health_server_endpoints() -> None:
    ready: list[str | None] = ["informers not synced: Pod"]
    m = SchedulerMetrics()
    m.observe_attempt("Scheduled", "kubesched", 0.01)
    server = HealthServer(
        "127.0.0.1:0", m, live_checks={"ping": lambda: None}, ready_checks={"informer-sync": lambda: ready[0]}
    )
    server.start()
    try:
        assert _get(f"{server.url}/healthz") == (200, "ok")
        assert _get(f"{server.url}/livez") == (200, "ok")
        code, body = _get(f"{server.url}/readyz")
        assert code == 500 and "[-]informer-sync failed: informers not synced: Pod" in body
        ready[0] = None
        assert _get(f"{server.url}/readyz") == (200, "ok")
        code, body = _get(f"{server.url}/readyz?verbose")
        assert code == 200 and "[+]informer-sync ok" in body
        code, body = _get(f"{server.url}/metrics")
        assert code == 200 and "scheduler_schedule_attempts_total" in body
    finally:
        server.stop()


def test_health_server_reports_a_taken_port() -> None:
    first = HealthServer("127.0.0.1:0", SchedulerMetrics())
    first.start()
    try:
        with pytest.raises(OSError, match="cannot serve"):
            HealthServer(f"127.0.0.1:{first.port}", SchedulerMetrics()).start()
    finally:
        first.stop()
