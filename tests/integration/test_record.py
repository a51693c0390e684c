"""`kubesched record` against the real kube-apiserver: record nodes and pods changing over time,
then replay the recording and check that the replay does what the cluster did.

The test plays the scheduler itself (Binding requests) and the kubelet (pod status Succeeded), so
the pods name a profile no running scheduler serves; the replay uses a config with that profile.
Each step waits until the recorder has seen the previous one, so the recorded order is the order
of the steps whatever the machine's load.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched.cli import main
from kubesched.cluster.kube.client import KubeClient
from kubesched.config import load_config
from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import (
    ApiClient,
    ApiError,
    bind_pod,
    create_node,
    create_pod,
    delete_pod,
    fake_node,
    pod_manifest,
)
from kubesched.plugins import default_registry
from kubesched.simulate.record.run import Recorder, record_cluster
from kubesched.simulate.replay.run import replay
from kubesched.simulate.scenario import dump_scenario, load_scenario, parse_scenario, scenario_document

PROFILE = "record-it"
SECRET = "s3cr3t-value-never-written"
WAIT = 30.0


def wait_for(what: str, condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"the recorder never saw {what}"
        time.sleep(0.02)


@pytest.fixture
def kube(control_plane: ControlPlane) -> Iterator[KubeClient]:
    with KubeClient.from_kubeconfig(str(control_plane.kubeconfig_path), name="record-test") as client:
        yield client


def test_record_then_replay_reproduces_the_cluster(
    api: ApiClient, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    taint = {"key": "kubesched.test/record", "value": namespace, "effect": "NoSchedule"}
    toleration = {"key": "kubesched.test/record", "operator": "Equal", "value": namespace}
    node_a, node_b = f"rec-a-{namespace}", f"rec-b-{namespace}"

    def pod(name: str, on: str = "", **kwargs: Any) -> dict[str, Any]:
        """A 1-CPU pod of the test's profile for the test's nodes (`on`: only that node)."""
        selector = {"kubesched.test/record": namespace} | ({"kubernetes.io/hostname": on} if on else {})
        manifest = pod_manifest(
            name,
            namespace=namespace,
            cpu="1",
            scheduler_name=PROFILE,
            node_selector=selector,
            tolerations=[toleration],
            **kwargs,
        )
        manifest["spec"]["containers"][0]["env"] = [{"name": "TOKEN", "value": SECRET}]
        manifest["metadata"]["annotations"] = {
            "kubectl.kubernetes.io/last-applied-configuration": f'{{"env": "{SECRET}"}}',
            "team": "shop",
        }
        return manifest

    labels = {"kubesched.test/record": namespace}
    # The cluster when the recording starts: node A with a running pod, and a gated pending pod.
    create_node(api, fake_node(node_a, cpu="2", labels=labels, taints=[taint]))
    create_pod(api, pod("running", node_name=node_a))
    create_pod(api, pod("gated", spec_overrides={"schedulingGates": [{"name": "example.com/wait"}]}))

    recorder = Recorder()
    stop = threading.Event()
    recorded: list[float] = []
    thread = threading.Thread(
        target=lambda: recorded.append(record_cluster(kube, recorder, duration=None, stop=stop)), daemon=True
    )
    thread.start()
    try:
        assert recorder.started.wait(WAIT), "the recorder never finished its first list"
        entries = recorder.timeline

        def seen(action: str, kind: str, name: str) -> Callable[[], bool]:
            return lambda: any(
                e.action == action and e.ref.kind == kind and e.ref.name == name for e in entries()
            )

        def observed(name: str) -> Any:
            return next(o for o in recorder.observations if o.key == f"{namespace}/{name}")

        time.sleep(0.2)
        create_node(api, fake_node(node_b, cpu="2", labels=labels, taints=[taint]))
        wait_for("node B", seen("create", "Node", node_b))
        create_pod(api, pod("batch", on=node_b))
        wait_for("batch", seen("create", "Pod", "batch"))
        bind_pod(api, "batch", node_b, namespace)
        wait_for("batch bound", lambda: observed("batch").bound_at is not None)
        create_pod(api, pod("web", on=node_a))
        wait_for("web", seen("create", "Pod", "web"))
        bind_pod(api, "web", node_a, namespace)
        wait_for("web bound", lambda: observed("web").bound_at is not None)
        kube.patch(f"/api/v1/nodes/{node_b}", {"metadata": {"labels": {"tier": "gold"}}})
        wait_for("node B labelled", seen("update", "Node", node_b))
        # A heartbeat changes nothing the scheduler reads: no update is recorded for it.
        kube.patch(f"/api/v1/nodes/{node_b}/status", {"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady",
             "lastHeartbeatTime": "2030-01-01T00:00:00Z"}]}})  # fmt: skip
        time.sleep(0.3)
        kube.patch(f"/api/v1/namespaces/{namespace}/pods/batch/status", {"status": {"phase": "Succeeded"}})
        wait_for("batch completed", lambda: observed("batch").ended == "Completed")
        kube.patch(f"/api/v1/namespaces/{namespace}/pods/gated", {"spec": {"schedulingGates": None}})
        wait_for("gate removed", seen("update", "Pod", "gated"))
        bind_pod(api, "gated", node_b, namespace)
        wait_for("gated bound", lambda: observed("gated").bound_at is not None)
        delete_pod(api, "web", namespace)
        wait_for("web deleted", seen("delete", "Pod", "web"))
        api.request("DELETE", f"/api/v1/nodes/{node_a}")
        wait_for("node A deleted", seen("delete", "Node", node_a))
        delete_pod(api, "running", namespace)  # what PodGC does after a node is gone
        wait_for("running deleted", lambda: observed("running").ended is not None)
        time.sleep(0.2)
    finally:
        stop.set()
        thread.join(WAIT)
        # Other modules count the session's nodes: leave none of ours behind (A is deleted above).
        for node in (node_a, node_b):
            with contextlib.suppress(ApiError):
                api.request("DELETE", f"/api/v1/nodes/{node}")
    assert not thread.is_alive() and recorded, "record_cluster did not return after stop"

    ours = [e for e in recorder.timeline() if node_a in e.ref.name or node_b in e.ref.name
            or e.ref.namespace == namespace]  # fmt: skip
    steps = [(e.action, e.ref.kind, e.ref.name) for e in ours]
    # The cluster at 0s (nodes first: the node informer lists before pods arrive), then each step.
    assert steps[0] == ("create", "Node", node_a)
    assert set(steps[1:3]) == {("create", "Pod", "running"), ("create", "Pod", "gated")}
    assert steps[3:] == [
        ("create", "Node", node_b),
        ("create", "Pod", "batch"),
        ("create", "Pod", "web"),
        ("update", "Node", node_b),
        ("update", "Pod", "gated"),
        ("delete", "Pod", "web"),
        ("delete", "Node", node_a),
    ]
    at = {(e.action, e.ref.name): e.at for e in ours}
    assert at[("create", node_a)] == at[("create", "running")] == at[("create", "gated")] == 0
    times = [e.at for e in ours]
    assert times == sorted(times) and times[3] > 0
    by_name = {e.ref.name: e for e in ours if e.action == "create"}
    assert by_name["running"].obj.spec.node_name == node_a  # type: ignore[union-attr]
    assert by_name["batch"].obj.spec.node_name == ""  # type: ignore[union-attr]
    batch = observed("batch")
    assert batch.bound_at is not None and batch.ended_at is not None
    assert by_name["batch"].run_for == pytest.approx(batch.ended_at - batch.bound_at, abs=0.002)
    assert by_name["web"].run_for is None
    assert observed("running").ended == "NodeDeleted"

    # Written and read back: valid, and nothing secret in it.
    document = scenario_document("it", recorder.timeline(), until=recorded[0])
    text = dump_scenario(document, json=False)
    assert SECRET.encode() not in text and b"last-applied-configuration" not in text
    assert b"team: shop" in text
    scenario = parse_scenario(text.decode(), "recorded.yaml")

    # Replayed: the same pods, created at the recorded times, bound in the recorded order.
    config_file = tmp_path / "config.yaml"
    config_file.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"profiles:\n- schedulerName: {PROFILE}\n"
    )
    registry = default_registry()
    report = replay(scenario, load_config(str(config_file), registry), registry)
    pods = {p.name: p for p in report.pods if p.namespace == namespace}
    assert set(pods) == {"gated", "batch", "web"}  # "running" was created bound
    assert all(p.result == "Scheduled" for p in pods.values())
    assert pods["batch"].created_at == pytest.approx(at[("create", "batch")], abs=0.002)
    assert pods["batch"].node == node_b and pods["web"].node == node_a
    assert pods["batch"].bound_at == pods["batch"].created_at  # room on node B at once, as live
    assert pods["batch"].ended == "Completed"
    bound_at = {name: p.bound_at or 0.0 for name, p in pods.items()}
    assert pods["batch"].ended_at == pytest.approx(
        bound_at["batch"] + (by_name["batch"].run_for or 0), abs=0.002
    )
    assert pods["gated"].bound_at == pytest.approx(at[("update", "gated")], abs=0.002)
    assert pods["web"].ended == "Deleted"
    assert pods["web"].ended_at == pytest.approx(at[("delete", "web")], abs=0.002)
    live_order = sorted(("batch", "web", "gated"), key=lambda n: observed(n).bound_at or 0.0)
    replay_order = sorted(("batch", "web", "gated"), key=bound_at.__getitem__)
    assert replay_order == live_order == ["batch", "web", "gated"]
    assert report.summary.skipped_events == {}


def test_record_command_writes_a_scenario_file(
    api: ApiClient,
    control_plane: ControlPlane,
    namespace: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    node = f"rec-cli-{uuid.uuid4().hex[:8]}"
    create_node(api, fake_node(node, cpu="2"))
    out = tmp_path / "recorded.json"
    code = main(["record", "--duration", "1s", "--kubeconfig", str(control_plane.kubeconfig_path),
                 "--name", "cli-it", str(out)])  # fmt: skip
    assert code == 0
    scenario = load_scenario(out)
    assert scenario.name == "cli-it"
    assert scenario.until is not None and scenario.until >= 1.0
    assert any(e.action == "create" and e.ref.name == node and e.at == 0 for e in scenario.events)
    assert "events over" in capsys.readouterr().err
    api.request("DELETE", f"/api/v1/nodes/{node}")


def test_record_command_refuses_an_unwritable_file_before_recording(
    control_plane: ControlPlane, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["record", "--duration", "1h", "--kubeconfig", str(control_plane.kubeconfig_path),
                 str(tmp_path / "missing-dir" / "x.yaml")])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "missing-dir/x.yaml: cannot write here" in err and len(err.strip().splitlines()) == 1
