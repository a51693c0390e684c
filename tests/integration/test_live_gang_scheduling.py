"""Gang scheduling live, GenericWorkload on: `kubesched run` and the v1.37.2 kube-scheduler each
schedule the issue's three gangs on a fresh control plane serving scheduling.k8s.io/v1beta1, and
must leave the same pods bound, the same FailedScheduling messages and the same PodGroup conditions.

Four 4-CPU nodes; gangs of 4 x 3 CPU (minCount 4), 2 x 2 CPU (minCount 2) and 5 x 1 CPU (minCount 5)
are created in turn, each once the one before has had its cycle.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import ApiClient, create_node, create_pod, fake_node, pod_manifest

GATES = {"GenericWorkload": True}
RUNTIME_CONFIG = ("scheduling.k8s.io/v1beta1=true",)
GATE_FLAG = "--feature-gates=GenericWorkload=true"
PODGROUPS = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups"
#: (group, pods, cpu each, minCount)
GANGS = (("g1", 4, "3", 4), ("g2", 2, "2", 2), ("g3", 5, "1", 5))
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""


@dataclass(frozen=True)
class Outcome:
    bound: dict[str, str | None]
    #: pod -> the distinct FailedScheduling messages it got
    messages: dict[str, set[str]]
    #: PodGroup -> (status, reason, message) of PodGroupInitiallyScheduled
    conditions: dict[str, tuple[str, str, str]]


def _wait(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _condition(api: ApiClient, group: str) -> tuple[str, str, str] | None:
    pg = api.get(f"{PODGROUPS}/{group}")
    for c in (pg.get("status") or {}).get("conditions") or []:
        if c["type"] == "PodGroupInitiallyScheduled":
            return c["status"], c["reason"], c.get("message", "")
    return None


def _failed(api: ApiClient) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    events = api.list_all("/api/v1/namespaces/default/events", {"fieldSelector": "reason=FailedScheduling"})
    for e in events:
        out.setdefault(e["involvedObject"]["name"], set()).add(e.get("message", ""))
    return out


def _decided(api: ApiClient, names: list[str]) -> bool:
    pods = {p["metadata"]["name"]: p for p in api.list_all("/api/v1/namespaces/default/pods", {})}
    failed = _failed(api)
    return all(name in failed or (pods.get(name) or {}).get("spec", {}).get("nodeName") for name in names)


def _three_gangs(api: ApiClient) -> Outcome:
    for i in range(4):
        create_node(api, fake_node(f"n{i}", cpu="4"))
    for group, count, cpu, min_count in GANGS:
        policy = {"gang": {"minCount": min_count}}
        api.post(PODGROUPS, {"metadata": {"name": group}, "spec": {"schedulingPolicy": policy}})
        names = [f"{group}-{i}" for i in range(count)]
        for name in names:
            spec: dict[str, Any] = {"schedulingGroup": {"podGroupName": group}}
            create_pod(api, pod_manifest(name, cpu=cpu, memory=None, spec_overrides=spec))
        _wait(lambda g=group: _condition(api, g) is not None, 60, f"the condition of {group}")
        # The condition can come before the binds (they go out in the background): each pod must be
        # bound or told why not before the next gang comes, and before the outcome is read.
        _wait(
            lambda n=names: _decided(api, n), 60, f"a bind or a FailedScheduling for each of {group}'s pods"
        )
        if group != "g1":
            failed = f"FailedScheduling of {group}'s pods"
            _wait(lambda n=names: all(x in _failed(api) for x in n), 60, failed)
    pods = api.list_all("/api/v1/namespaces/default/pods", {})
    bound = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}
    conditions = {g: c for g, *_ in GANGS if (c := _condition(api, g)) is not None}
    return Outcome(bound, _failed(api), conditions)


@pytest.fixture(scope="module")
def upstream() -> Iterator[Outcome]:
    with ControlPlane(runtime_config=RUNTIME_CONFIG, feature_gates=GATES) as cp:
        cp.start_kube_scheduler(extra_args=(GATE_FLAG,))
        yield _three_gangs(ApiClient.for_control_plane(cp))


@pytest.fixture(scope="module")
def kubesched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    workdir: Path = tmp_path_factory.mktemp("gang")
    config = workdir / "config.yaml"
    config.write_text(CONFIG)
    with ControlPlane(runtime_config=RUNTIME_CONFIG, feature_gates=GATES) as cp:
        api = ApiClient.for_control_plane(cp)
        log_path = workdir / "kubesched.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kubesched.cli", "run", "--config", str(config),
                 "--kubeconfig", str(cp.kubeconfig_path), "--secure-port", "0", GATE_FLAG],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )  # fmt: skip
            try:
                synced = b"informers synced"
                _wait(lambda: synced in log_path.read_bytes() or proc.poll() is not None, 60, "sync")
                assert proc.poll() is None, log_path.read_text(errors="replace")
                yield _three_gangs(api)
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(30)


def test_the_same_pods_bind(upstream: Outcome, kubesched: Outcome) -> None:
    assert sorted(n for n in upstream.bound.values() if n) == ["n0", "n1", "n2", "n3"]
    assert {p for p, n in kubesched.bound.items() if n} == {p for p, n in upstream.bound.items() if n}
    assert sorted(n for n in kubesched.bound.values() if n) == ["n0", "n1", "n2", "n3"]


def test_the_same_failed_scheduling_messages(upstream: Outcome, kubesched: Outcome) -> None:
    assert upstream.messages["g2-1"] == {"minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"}
    assert kubesched.messages == upstream.messages


def test_the_same_pod_group_conditions(upstream: Outcome, kubesched: Outcome) -> None:
    assert upstream.conditions["g1"] == ("True", "Scheduled", "")
    assert kubesched.conditions == upstream.conditions
