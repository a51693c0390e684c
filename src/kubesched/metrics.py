"""Prometheus metrics with kube-scheduler's names, and the health/metrics HTTP endpoint.

Metric names, labels and buckets are upstream's (upstream `pkg/scheduler/metrics/metrics.go`), so existing
dashboards and alerts work unchanged:

* `scheduler_schedule_attempts_total{result,profile}` - result `scheduled`/`unschedulable`/`error`
* `scheduler_scheduling_attempt_duration_seconds{result,profile}` - buckets exp(0.001, 2, 15)
* `scheduler_pending_pods{queue}` - `active`, `backoff`, `unschedulable`, `gated`
* `scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}` - exp(0.00001, 1.5, 20);
  coarse: plugins that filter/score node by node are timed per call only at the other points; one
  scheduling cycle in ten is timed (its binding cycle too), as upstream samples 10 % of cycles
* `scheduler_preemption_attempts_total` - failed attempts of profiles that run PostFilter plugins
* `scheduler_queue_incoming_pods_total{queue,event}`
* `scheduler_scheduler_cache_size{type}` - `nodes`, `pods`, `assumed_pods`
* `leader_election_master_status{name}` - 1 while this instance leads
* opportunistic batching (v1.37, KEP-5598): `scheduler_batch_attempts_total{profile,result}` (result
  `no_hint`/`hint_used`/`hint_not_used`), `scheduler_batch_cache_flushed_total{profile,reason}`,
  `scheduler_batch_rescore_attempts_total{profile}`, and the histograms (exp(0.00001, 2, 12))
  `scheduler_get_node_hint_duration_seconds{hinted,profile}`,
  `scheduler_store_schedule_results_duration_seconds{profile}`,
  `scheduler_batch_rescore_duration_seconds{profile}`

kubesched's own, for what upstream has no name for:

* `kubesched_binds_abandoned_total{reason,profile}` - decisions dropped just before their bind was
  sent and their pods requeued: `NodeGone`, `NoLongerFits`, `PodGone`, `Refused` (not leading or
  shutting down)
* `kubesched_calls_dropped_total{queue}` - Events (`events`) and pod status writes (`pod-status`)
  never sent: their queue was full, or they were still queued when a shutdown's time ran out

The registry is our own (not prometheus-client's global one), so two schedulers in one process, as
in tests, do not collide. `_created` series are turned off: kube-scheduler has none.

The HTTP side, `/healthz`, `/livez`, `/readyz` and `/metrics`, is `kubesched.serving.health`: apart,
so that building the metrics does not import the ASGI stack.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kubesched.errors import InputError
from kubesched.framework.interfaces import EXTENSION_POINT_METHODS, defines
from kubesched.framework.status import Status

__all__ = [
    "SchedulerMetrics",
    "exponential_buckets",
    "instrument_plugins",
    "parse_listen",
]

log = logging.getLogger(__name__)

prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

#: Attempt results as upstream labels them, keyed by `Attempt.result`.
RESULT_LABELS = {"Scheduled": "scheduled", "Unschedulable": "unschedulable", "Error": "error"}


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """Prometheus' ExponentialBuckets: `count` bounds from `start`, each `factor` times the last."""
    return [start * factor**i for i in range(count)]


class SchedulerMetrics:
    """The metric objects, in their own registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=r,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=exponential_buckets(0.001, 2, 15),
            registry=r,
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type.",
            ["queue"],
            registry=r,
        )
        self.plugin_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            buckets=exponential_buckets(0.00001, 1.5, 20),
            registry=r,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts_total",
            "Total preemption attempts in the cluster till now",
            registry=r,
        )
        self.queue_incoming = Counter(
            "scheduler_queue_incoming_pods_total",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            registry=r,
        )
        self.cache_size = Gauge(
            "scheduler_scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ["type"],
            registry=r,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
            "1 indicates master. 'name' is the string used to identify the lease.",
            ["name"],
            registry=r,
        )
        self.binds_abandoned = Counter(
            "kubesched_binds_abandoned_total",
            "Scheduling decisions dropped just before their bind was sent (the node went away, the pod no "
            "longer fits it, the pod went away, or this scheduler may not bind now); the pods are requeued.",
            ["reason", "profile"],
            registry=r,
        )
        self.calls_dropped = Counter(
            "kubesched_calls_dropped_total",
            "Events and pod status writes never sent: their queue was full, or they were still queued "
            "when a shutdown's time ran out.",
            ["queue"],
            registry=r,
        )
        # Opportunistic batching (KEP-5598); names, labels, help and buckets as kube-scheduler v1.37.2.
        self.batch_attempts = Counter(
            "scheduler_batch_attempts_total",
            "[ALPHA] Counts of results when we attempt to use batching.",
            ["profile", "result"],
            registry=r,
        )
        self.batch_cache_flushed = Counter(
            "scheduler_batch_cache_flushed_total",
            "[ALPHA] Counts of cache flushes by reason.",
            ["profile", "reason"],
            registry=r,
        )
        self.node_hint_duration = Histogram(
            "scheduler_get_node_hint_duration_seconds",
            "[ALPHA] Latency for getting a node hint.",
            ["hinted", "profile"],
            buckets=exponential_buckets(0.00001, 2, 12),
            registry=r,
        )
        self.store_results_duration = Histogram(
            "scheduler_store_schedule_results_duration_seconds",
            "[ALPHA] Latency for storing scheduling results.",
            ["profile"],
            buckets=exponential_buckets(0.00001, 2, 12),
            registry=r,
        )
        self.batch_rescore_attempts = Counter(
            "scheduler_batch_rescore_attempts_total",
            "[ALPHA] Counts of rescore attempts during opportunistic batching.",
            ["profile"],
            registry=r,
        )
        self.batch_rescore_duration = Histogram(
            "scheduler_batch_rescore_duration_seconds",
            "[ALPHA] Latency for rescoring a node during opportunistic batching.",
            ["profile"],
            buckets=exponential_buckets(0.00001, 2, 12),
            registry=r,
        )
        for queue in ("active", "backoff", "unschedulable", "gated"):
            self.pending_pods.labels(queue)
        for kind in ("nodes", "pods", "assumed_pods"):
            self.cache_size.labels(kind)
        self._incoming_seen: dict[tuple[str, str], int] = {}
        self._dropped_seen: dict[str, int] = {}
        self._children: dict[tuple[object, tuple[str, ...]], Any] = {}

    def _child(self, metric: Counter | Histogram, *values: str) -> Any:
        """`metric.labels(*values)`, kept: each cycle updates half a dozen labelled metrics, and
        `labels` (its checks and its lock) cost more than the update itself."""
        key = (metric, values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    # ------------------------------------------------------------------ updates

    def observe_attempt(self, result: str, profile: str, duration: float) -> None:
        """One finished attempt (`Attempt.result`: Scheduled / Unschedulable / Error)."""
        label = RESULT_LABELS.get(result)
        if label is None:
            return  # "Waiting" (at Permit) is not a finished attempt
        self._child(self.schedule_attempts, label, profile).inc()
        self._child(self.attempt_duration, label, profile).observe(max(0.0, duration))

    def set_pending(self, counts: Mapping[str, int]) -> None:
        for queue, n in counts.items():
            self.pending_pods.labels(queue).set(n)

    def set_cache_size(self, nodes: int, pods: int, assumed: int) -> None:
        self.cache_size.labels("nodes").set(nodes)
        self.cache_size.labels("pods").set(pods)
        self.cache_size.labels("assumed_pods").set(assumed)

    def sync_incoming(self, incoming: Mapping[tuple[str, str], int]) -> None:
        """Mirror the queue's running counter (queue, event) -> n into the Prometheus counter."""
        for key, total in incoming.items():
            delta = total - self._incoming_seen.get(key, 0)
            if delta > 0:
                self.queue_incoming.labels(*key).inc(delta)
                self._incoming_seen[key] = total

    def sync_dropped(self, dropped: Mapping[str, int]) -> None:
        """Mirror the asynchronous call queues' drop counters (queue -> n) into the Prometheus counter."""
        for queue, total in dropped.items():
            delta = total - self._dropped_seen.get(queue, 0)
            if delta > 0:
                self.calls_dropped.labels(queue).inc(delta)
                self._dropped_seen[queue] = total

    def observe_abandoned_bind(self, reason: str, profile: str) -> None:
        self.binds_abandoned.labels(reason, profile).inc()

    # -- opportunistic batching (kubesched.scheduler.batch.BatchMetrics)
    def observe_batch_attempt(self, profile: str, result: str) -> None:
        self._child(self.batch_attempts, profile, result).inc()

    def observe_batch_flush(self, profile: str, reason: str) -> None:
        self._child(self.batch_cache_flushed, profile, reason).inc()

    def observe_node_hint(self, profile: str, hinted: bool, seconds: float) -> None:
        self._child(self.node_hint_duration, "hint" if hinted else "no_hint", profile).observe(seconds)

    def observe_store_results(self, profile: str, seconds: float) -> None:
        self._child(self.store_results_duration, profile).observe(seconds)

    def observe_rescore(self, profile: str, seconds: float) -> None:
        self.batch_rescore_attempts.labels(profile).inc()
        self.batch_rescore_duration.labels(profile).observe(seconds)

    def observe_preemption_attempt(self) -> None:
        self.preemption_attempts.inc()

    def instrument(self, plugins: Mapping[str, Any]) -> int:
        """Time these plugin instances' calls (see `instrument_plugins`)."""
        return instrument_plugins(plugins, self)

    def render(self) -> bytes:
        return prometheus_client.generate_latest(self.registry)


# --------------------------------------------------------------------------- plugin timing

#: Methods timed per extension point. Per-node `filter`/`score` run once per node, so timing them
#: would cost more than the plugin; their batch forms and every once-per-cycle method are timed.
_TIMED_METHODS: dict[str, tuple[str, ...]] = {
    point: tuple(m for m in methods if m not in ("filter", "score", "less", "pre_enqueue"))
    for point, methods in EXTENSION_POINT_METHODS.items()
}
_POINT_LABELS = {
    "preFilter": "PreFilter",
    "filter": "Filter",
    "postFilter": "PostFilter",
    "preScore": "PreScore",
    "score": "Score",
    "reserve": "Reserve",
    "permit": "Permit",
    "preBind": "PreBind",
    "bind": "Bind",
    "postBind": "PostBind",
}


def _status_label(result: Any) -> str:
    if isinstance(result, tuple):  # (PreFilterResult, Status), (Status, timeout), ...
        result = next((x for x in result if isinstance(x, Status)), None)
    if isinstance(result, Status):
        return str(result.code)
    return "Success"


def instrument_plugins(plugins: Mapping[str, Any], metrics: SchedulerMetrics) -> int:
    """Time plugin calls into `scheduler_plugin_execution_duration_seconds`. Returns methods wrapped.

    The wrapper is set on the plugin *instance*, so the framework's dispatch (which inspects the
    class) is unchanged; plugins whose instances take no attributes (`__slots__`) are left untimed.
    An exception is timed with status `Error` and re-raised for the framework to handle. Only
    calls whose cycle state has `record_plugin_metrics` set (one cycle in ten) are timed.
    """
    wrapped = 0
    for name, plugin in plugins.items():
        for point, methods in _TIMED_METHODS.items():
            label = _POINT_LABELS.get(point)
            if label is None:
                continue
            for method in methods:
                if not defines(type(plugin), method):
                    continue
                original = getattr(plugin, method)
                timed = _timed(original, metrics.plugin_duration, name, label)
                try:
                    setattr(plugin, method, timed)
                except (AttributeError, TypeError):
                    continue
                wrapped += 1
    return wrapped


def _timed(fn: Callable[..., Any], hist: Histogram, plugin: str, point: str) -> Callable[..., Any]:
    children: dict[str, Any] = {}

    def child(status: str) -> Any:
        c = children.get(status)
        if c is None:
            c = children[status] = hist.labels(plugin, point, status)
        return c

    def call(*args: Any, **kwargs: Any) -> Any:
        # The cycle's state (every timed method's first argument) says whether this cycle is
        # sampled; a call without one (a test) is timed.
        if args and not getattr(args[0], "record_plugin_metrics", True):
            return fn(*args, **kwargs)
        start = time.perf_counter()
        try:
            result = fn(*args, **kwargs)
        except BaseException:
            child("Error").observe(time.perf_counter() - start)
            raise
        child(_status_label(result)).observe(time.perf_counter() - start)
        return result

    call.__wrapped__ = fn  # type: ignore[attr-defined]
    return call


# --------------------------------------------------------------------------- HTTP


def parse_listen(address: str, *, flag: str = "--insecure-listen") -> tuple[str, int]:
    """`HOST:PORT`, `[v6]:PORT` or `:PORT` (all interfaces) -> (host, port); InputError otherwise."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise InputError(f"expected HOST:PORT, got {address!r}", source=flag)
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port_text)
