"""The local control plane behaves like a real cluster in the ways kubesched relies on.

These are the assumptions the live scheduler and the benchmarks build on: fake nodes are schedulable,
a Binding sets spec.nodeName exactly once (the API server itself refuses a second binding, which is
what makes "a pod is never bound twice" enforceable), and the upstream kube-scheduler built from the
same pin schedules onto our fake nodes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from kubesched.harness.controlplane import ControlPlane, ControlPlaneError
from kubesched.harness.fake_nodes import (
    ApiClient,
    ApiError,
    bind_pod,
    create_pod,
    delete_pod,
    get_pod,
    list_events,
    list_nodes,
    list_pods,
    node_is_ready,
)

T = TypeVar("T")

#: A schedulerName no scheduler serves: pods that tests bind by hand must never race a scheduler.
NO_SCHEDULER = "kubesched-test-nobody"


def wait_for(fetch: Callable[[], T], done: Callable[[T], bool], timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}; last value: {value!r}")
        time.sleep(0.2)


def test_readyz_ok(control_plane: ControlPlane) -> None:
    req = urllib.request.Request(f"{control_plane.server}/readyz")
    with urllib.request.urlopen(req, context=control_plane.ssl_context(), timeout=10) as resp:
        assert resp.status == 200
        assert resp.read() == b"ok"


def test_version_is_the_pinned_one(api: ApiClient) -> None:
    version = api.get("/version")
    assert version["gitVersion"] == "v1.37.2"
    assert (version["major"], version["minor"]) == ("1", "37")


def test_token_is_required(control_plane: ControlPlane) -> None:
    wrong = ApiClient(control_plane.server, "not-the-token", control_plane.ca_file)
    with pytest.raises(ApiError) as err:
        wrong.get("/api/v1/nodes")
    assert err.value.status == 401


def test_kubeconfig_names_server_token_and_ca(control_plane: ControlPlane) -> None:
    text = control_plane.kubeconfig_path.read_text()
    assert control_plane.server in text
    assert control_plane.token in text
    assert "certificate-authority-data" in text
    assert "insecure-skip-tls-verify" not in text


def test_fifty_fake_nodes_list_back_ready(api: ApiClient, fake_node_names: list[str]) -> None:
    nodes = list_nodes(api, label_selector="kubesched.test/fake=true")
    assert sorted(n["metadata"]["name"] for n in nodes) == sorted(fake_node_names)
    assert len(nodes) == 50
    for node in nodes:
        assert node_is_ready(node)
        name = node["metadata"]["name"]
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == name
        assert node["status"]["allocatable"] == {"cpu": "4", "memory": "32Gi", "pods": "110"}
        # TaintNodesByCondition admission is off: otherwise every node would carry not-ready:NoSchedule.
        assert not node["spec"].get("taints")


def test_binding_sets_node_name_once(api: ApiClient, namespace: str, fake_node_names: list[str]) -> None:
    first, second = fake_node_names[0], fake_node_names[1]
    create_pod(api, "bind-me", namespace=namespace, scheduler_name=NO_SCHEDULER)
    assert get_pod(api, "bind-me", namespace)["spec"].get("nodeName") is None

    bind_pod(api, "bind-me", first, namespace)
    pod = get_pod(api, "bind-me", namespace)
    assert pod["spec"]["nodeName"] == first
    conditions = {c["type"]: c["status"] for c in pod["status"].get("conditions", [])}
    assert conditions.get("PodScheduled") == "True"

    with pytest.raises(ApiError) as err:
        bind_pod(api, "bind-me", second, namespace)
    assert err.value.status == 409
    assert err.value.reason == "Conflict"
    assert get_pod(api, "bind-me", namespace)["spec"]["nodeName"] == first

    assert [p["metadata"]["name"] for p in list_pods(api, namespace)] == ["bind-me"]
    delete_pod(api, "bind-me", namespace)  # bound, yet gone at once thanks to gracePeriodSeconds=0
    with pytest.raises(ApiError) as gone:
        get_pod(api, "bind-me", namespace)
    assert gone.value.status == 404


def test_upstream_kube_scheduler_binds_a_pending_pod(
    control_plane: ControlPlane, api: ApiClient, namespace: str, fake_node_names: list[str]
) -> None:
    scheduler = control_plane.start_kube_scheduler(
        """
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        leaderElection: {leaderElect: false}
        profiles:
        - schedulerName: default-scheduler
        """
    )
    try:
        create_pod(api, "schedule-me", namespace=namespace)
        pod = wait_for(
            lambda: get_pod(api, "schedule-me", namespace),
            lambda p: bool(p["spec"].get("nodeName")),
            30,
            "kube-scheduler to bind the pod",
        )
        assert pod["spec"]["nodeName"] in set(fake_node_names) | {
            n["metadata"]["name"] for n in list_nodes(api)
        }
        events = wait_for(
            lambda: list_events(api, namespace, involved_object="schedule-me", reason="Scheduled"),
            bool,
            10,
            "the Scheduled event",
        )
        assert pod["spec"]["nodeName"] in events[0]["message"]
        assert scheduler.alive(), scheduler.log_tail()
    finally:
        scheduler.stop()


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if text.encode() in (proc / "cmdline").read_bytes():
                    pids.append(int(proc.name))
            except OSError:
                continue
    return pids


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs /proc")
def test_failed_start_reports_log_and_leaves_nothing_behind(tmp_path: Path) -> None:
    cp = ControlPlane(workdir_parent=tmp_path, extra_apiserver_args=["--no-such-flag"])
    with pytest.raises(ControlPlaneError) as err:
        cp.start()
    assert "kube-apiserver exited" in str(err.value)
    assert "no-such-flag" in str(err.value)  # the tail of the apiserver log is in the message
    assert os.listdir(tmp_path) == []  # temp dir removed
    assert _processes_mentioning(str(tmp_path)) == []  # etcd stopped too


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs /proc")
def test_ctrl_c_stops_the_helper_even_when_started_with_sigint_ignored() -> None:
    """`python -m kubesched.harness.controlplane` run as a background job of a script inherits an
    ignored SIGINT (POSIX shells do that without job control); Ctrl-C / SIGINT must still stop it
    and its servers, or they outlive whoever started them."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesched.harness.controlplane"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        while not lines or lines[-1] != "Ctrl-C to stop.":
            line = proc.stdout.readline()
            assert line, "the control plane exited:\n" + "\n".join(lines)
            lines.append(line.rstrip("\n"))
        workdir = next(line.split()[-1] for line in lines if line.strip().startswith("logs:"))
        workdir = str(Path(workdir).parent)  # etcd's and the API server's command lines name it
        assert len(_processes_mentioning(workdir)) >= 2
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0 and proc.stdout.read().strip() == "stopped"
        assert _processes_mentioning(workdir) == [] and not Path(workdir).exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
