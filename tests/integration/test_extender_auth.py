"""`kubesched extender` with cluster credentials is safe by default, on the real API server.

An attacker on the cluster network who reaches the extender's port must not be able to bind pods
with the extender's credentials: without credentials, or with a wrong token, `POST /bind` is a 401
and the pod stays unbound (checked in the API server, not in the extender's answer); metrics and the
OpenAPI document are behind the same door; and an extender that would serve bind unauthenticated
while holding credentials does not start at all.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesched.harness.controlplane import ControlPlane, ManagedProcess
from kubesched.harness.fake_nodes import ApiClient, create_pod, get_pod
from kubesched.harness.ports import free_port

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: extender
  plugins:
    multiPoint:
      disabled: [{name: "*"}]
      enabled: [{name: PrioritySort}, {name: DefaultBinder}, {name: NodeFilterLabel}]
"""
TOKEN = "extender-test-token-" + uuid.uuid4().hex


def call(url: str, body: dict[str, object] | None = None, token: str | None = None) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if data:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture(scope="module")
def extender(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("extender-auth")
    (tmp / "config.yaml").write_text(CONFIG)
    (tmp / "token").write_text(TOKEN + "\n")
    port = free_port()
    args = [sys.executable, "-m", "kubesched.cli", "extender", f"--config={tmp / 'config.yaml'}"]
    args += [
        f"--kubeconfig={control_plane.kubeconfig_path}",
        f"--listen=127.0.0.1:{port}",
        "--prefix=/scheduler",
    ]
    args += [f"--token-file={tmp / 'token'}"]
    proc = ManagedProcess("extender-auth", args, tmp / "extender.log", port=port)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.alive(), proc.log_tail()
            try:
                if call(f"{url}/readyz")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, proc.log_tail()
            time.sleep(0.2)
        yield url
    finally:
        proc.stop()


def test_an_unauthenticated_bind_is_401_and_binds_nothing(
    extender: str, api: ApiClient, namespace: str, fake_node_names: list[str]
) -> None:
    pod = f"victim-{uuid.uuid4().hex[:6]}"
    # A scheduler name nobody serves: only the extender's bind could place this pod.
    create_pod(api, pod, namespace=namespace, scheduler_name="nobody")
    uid = get_pod(api, pod, namespace)["metadata"]["uid"]
    args = {"PodName": pod, "PodNamespace": namespace, "PodUID": uid, "Node": fake_node_names[0]}
    assert call(f"{extender}/scheduler/bind", args)[0] == 401
    assert call(f"{extender}/scheduler/bind", args, token="guessed")[0] == 401
    time.sleep(1.0)  # had a bind been sent, the API server would show it by now
    assert get_pod(api, pod, namespace)["spec"].get("nodeName") is None
    code, body = call(f"{extender}/scheduler/bind", args, token=TOKEN)
    assert (code, json.loads(body)) == (200, {"Error": ""})
    assert get_pod(api, pod, namespace)["spec"]["nodeName"] == fake_node_names[0]


@pytest.mark.parametrize("path", ["/metrics", "/openapi.json"])
def test_metrics_and_openapi_need_the_same_credentials(extender: str, path: str) -> None:
    assert call(f"{extender}{path}")[0] == 401
    assert call(f"{extender}{path}", token=TOKEN)[0] == 200


def test_probes_stay_open_for_kubelet(extender: str) -> None:
    assert call(f"{extender}/healthz") == (200, "ok")
    assert call(f"{extender}/readyz") == (200, "ok")


def test_it_will_not_start_serving_bind_unauthenticated_with_credentials(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    (tmp_path / "config.yaml").write_text(CONFIG)
    args = [sys.executable, "-m", "kubesched.cli", "extender", f"--config={tmp_path / 'config.yaml'}"]
    args += [f"--kubeconfig={control_plane.kubeconfig_path}", f"--listen=127.0.0.1:{free_port()}"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "refusing to serve bind and preempt without authentication" in line
