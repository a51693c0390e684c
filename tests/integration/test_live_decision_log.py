"""`kubesched run --v=4 --logging-format=json` logs one structured line per scheduling attempt.

A real `kubesched run` subprocess against the real API server: a pod that fits and a pod that fits
nowhere each get their decision line (pod, profile, result, node or top reasons, duration,
attempts), every stderr line is a JSON object, and debug level shows decisions, not HTTP traces.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_live_scheduler import Kubesched, bound, pod_events, wait_for

from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import ApiClient, create_pod


@pytest.fixture
def verbose(control_plane: ControlPlane, fake_node_names: list[str], tmp_path: Path) -> Iterator[Kubesched]:
    ks = Kubesched(control_plane, tmp_path, extra_args=["--v=4", "--logging-format=json"], name="verbose")
    try:
        ks.wait_ready()
        yield ks
    finally:
        ks.stop()


def test_one_json_line_per_attempt(api: ApiClient, namespace: str, verbose: Kubesched) -> None:
    create_pod(api, "fits", namespace=namespace, cpu="100m", scheduler_name="kubesched")
    create_pod(api, "too-big", namespace=namespace, cpu="1000", scheduler_name="kubesched")
    wait_for(lambda: bound(api, namespace), lambda b: "fits" in b, 60, "fits to be bound")
    wait_for(lambda: pod_events(api, namespace, reason="FailedScheduling"), bool, 60, "FailedScheduling")
    node = bound(api, namespace)["fits"]
    assert verbose.terminate() == 0
    lines = [line for line in verbose.log_text().splitlines() if line.strip()]
    records: list[dict[str, Any]] = [json.loads(line) for line in lines]  # every line is JSON
    assert all({"ts", "level", "logger", "msg"} <= set(r) for r in records)
    assert not [r for r in records if r["logger"].startswith(("httpx", "httpcore"))]
    decisions = [r for r in records if r["logger"] == "kubesched.decisions"]
    (fits,) = [r for r in decisions if r["pod"] == f"{namespace}/fits"]
    assert (fits["level"], fits["msg"], fits["profile"]) == ("debug", "scheduling attempt", "kubesched")
    assert (fits["result"], fits["node"], fits["attempts"]) == ("Scheduled", node, 1)
    assert fits["durationMs"] > 0 and fits["feasibleNodes"] >= 1
    stuck = [r for r in decisions if r["pod"] == f"{namespace}/too-big"]
    assert stuck and stuck[0]["result"] == "Unschedulable" and stuck[0]["attempts"] == 1
    assert "Insufficient cpu" in stuck[0]["reasons"]
