"""A burst of identical pods scheduled by a scheduler started after they exist: where opportunistic
batching (KEP-5598) shows.

The one-pod-at-a-time differential run never batches (each pod is its own scenario). Here the nodes
and every pod of the burst are created first, then a scheduler process is started for the burst's
profile: its informers list all the pods at once, so it schedules them back to back in consecutive
cycles, well within the 500 ms a batch may be reused, on a loaded machine too. What is compared is
what does not depend on the order in which identical pods are popped: how many pods each node got,
and the batching counters (attempts by result, flushes by reason, rescores) from its /metrics.
"""

from __future__ import annotations

import ssl
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from kubesched.harness.controlplane import ControlPlane, ManagedProcess, http_get
from kubesched.harness.differential.cluster import pod_path, wait_until
from kubesched.harness.fake_nodes import ApiClient, ApiError
from kubesched.harness.ports import free_port

__all__ = ["BurstOutcome", "batching_profile", "run_burst", "start_kubesched", "start_upstream"]

Obj = dict[str, Any]

#: Seconds a burst may take to be bound (it takes well under one on an idle machine).
BURST_TIMEOUT = 120.0


def batching_profile(scheduler_name: str) -> Obj:
    """The default profile with PodTopologySpread's system defaults off: with them (v1.37.2's
    default) no pod is signable, so nothing would batch."""
    return {
        "schedulerName": scheduler_name,
        "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
    }


def _config(scheduler_name: str, batching: bool) -> Obj:
    profile = batching_profile(scheduler_name) if batching else {"schedulerName": scheduler_name}
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 100,
        "leaderElection": {"leaderElect": False},
        "profiles": [profile],
    }


@dataclass
class Scraper:
    """How to read one scheduler's /metrics."""

    url: str
    context: ssl.SSLContext | None

    def samples(self) -> list[tuple[str, dict[str, str], float]]:
        status, text = http_get(self.url, self.context)
        if status != 200:
            raise RuntimeError(f"GET {self.url}: HTTP {status}")
        return [
            (s.name, dict(s.labels), s.value)
            for family in text_string_to_metric_families(text)
            for s in family.samples
        ]


def start_upstream(
    cp: ControlPlane, scheduler_name: str, *, batching: bool = True
) -> tuple[ManagedProcess, Scraper]:
    """kube-scheduler v1.37.2 with the batching profile, or the default one (its /metrics:
    self-signed HTTPS)."""
    proc = cp.start_kube_scheduler(_config(scheduler_name, batching))
    unverified = ssl.create_default_context()
    unverified.check_hostname = False
    unverified.verify_mode = ssl.CERT_NONE
    return proc, Scraper(f"https://127.0.0.1:{proc.port}/metrics", unverified)


def start_kubesched(
    cp: ControlPlane, workdir: Path, scheduler_name: str, *, batching: bool = True
) -> tuple[ManagedProcess, Scraper]:
    """`kubesched run` with the same profile, metrics on a plain loopback port."""
    port = free_port()
    config = workdir / f"{scheduler_name}.yaml"
    config.write_text(yaml.safe_dump(_config(scheduler_name, batching)))
    proc = ManagedProcess(
        scheduler_name,
        [
            sys.executable, "-m", "kubesched.cli", "run",
            "--config", str(config),
            "--kubeconfig", str(cp.kubeconfig_path),
            "--secure-port", "0",
            "--insecure-listen", f"127.0.0.1:{port}",
        ],
        workdir / f"{scheduler_name}.log",
        port=port,
    )  # fmt: skip
    return proc, Scraper(f"http://127.0.0.1:{port}/metrics", None)


@dataclass
class BurstOutcome:
    """Pods per node (every pod of the burst bound), and the batching counters of the profile."""

    per_node: dict[str, int]
    attempts: dict[str, int] = field(default_factory=dict)
    flushes: dict[str, int] = field(default_factory=dict)
    rescores: int = 0
    hint_latencies: int = 0
    stores: int = 0


def _counters(samples: list[tuple[str, dict[str, str], float]], profile: str) -> BurstOutcome:
    out = BurstOutcome({})
    for name, labels, value in samples:
        if labels.get("profile") != profile:
            continue
        if name == "scheduler_batch_attempts_total":
            out.attempts[labels["result"]] = int(value)
        elif name == "scheduler_batch_cache_flushed_total":
            out.flushes[labels["reason"]] = int(value)
        elif name == "scheduler_batch_rescore_attempts_total":
            out.rescores = int(value)
        elif name == "scheduler_get_node_hint_duration_seconds_count":
            out.hint_latencies += int(value)
        elif name == "scheduler_store_schedule_results_duration_seconds_count":
            out.stores = int(value)
    return out


def run_burst(
    api: ApiClient,
    pods: list[Obj],
    start: Callable[[], tuple[ManagedProcess, Scraper]],
    *,
    namespace: str = "default",
) -> BurstOutcome:
    """Create `pods` (all naming the profile `start` serves), start the scheduler, wait until every
    pod is bound, read its counters, stop it and delete the pods."""
    names = [p["metadata"]["name"] for p in pods]
    for p in pods:
        api.post(pod_path(namespace), p)
    proc, scraper = start()
    profile = pods[0]["spec"]["schedulerName"]
    try:

        def bound() -> dict[str, str]:
            return {
                p["metadata"]["name"]: p["spec"].get("nodeName", "")
                for p in api.list_all(pod_path(namespace))
                if p["metadata"]["name"] in names
            }

        wait_until(f"the burst bound by {profile}", lambda: all(bound().values()), timeout=BURST_TIMEOUT)
        # Its last cycle's counters are written before the bind it sends; read them once all are in.
        wait_until(
            f"{profile}'s batching metrics",
            lambda: _counters(scraper.samples(), profile).stores == len(pods),
            timeout=30,
        )
        outcome = _counters(scraper.samples(), profile)
        outcome.per_node = dict(Counter(bound().values()))
        return outcome
    finally:
        proc.stop()
        for name in names:
            try:
                api.request("DELETE", pod_path(namespace, name), {"gracePeriodSeconds": 0})
            except ApiError as err:
                if err.reason != "NotFound":
                    raise
        wait_until("the burst's deletion", lambda: not any(_exists(api, namespace, n) for n in names))


def _exists(api: ApiClient, namespace: str, name: str) -> bool:
    try:
        api.get(pod_path(namespace, name))
    except ApiError as err:
        if err.reason == "NotFound":
            return False
        raise
    return True
