"""`kubesched run` calls the extenders of its config, on the real API server.

Both sides are real processes started the way a user starts them: `kubesched extender` serving
NodeFilterLabel (rejects `kubesched.test/forbidden=yes`) in stateless mode (full Nodes in each
request), and `kubesched run` whose config lists it under `extenders:` with a filterVerb. The test's
own nodes are two allowed and two forbidden ones selected by a per-test label; kubesched's profile
has no NodeFilterLabel, so only the extender can keep pods off the forbidden half. An impossible pod
(selecting only forbidden nodes) gets kubesched's FailedScheduling Event carrying the extender's
reason, which proves the verdict came from the extender call in the live scheduling cycle.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_live_scheduler import bound, free_port, pod_events, wait_for

from kubesched.harness.controlplane import ControlPlane, ManagedProcess
from kubesched.harness.fake_nodes import ApiClient, create_node, create_pod, fake_node

FORBIDDEN = "kubesched.test/forbidden"
RUN_LABEL = "kubesched.test/live-extender-run"
PODS = 6

EXTENDER_CONFIG = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: extender
  plugins:
    multiPoint:
      disabled: [{{name: "*"}}]
      enabled:
      - {{name: PrioritySort}}
      - {{name: DefaultBinder}}
      - {{name: NodeFilterLabel}}
  pluginConfig:
  - name: NodeFilterLabel
    args: {{labels: {{"{FORBIDDEN}": ["yes"]}}}}
"""

RUN_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{qps: 5000, burst: 10000}}
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: {scheduler}
extenders:
- urlPrefix: {url}/scheduler
  filterVerb: filter
  httpTimeout: 10s
"""


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def start_ready(name: str, args: list[str], log: Path, ready_url: str) -> ManagedProcess:
    """A process stopped by pid by the caller; waits for its readiness endpoint (or its exit)."""
    proc = ManagedProcess(name, args, log)
    try:
        wait_for(
            lambda: http_status(ready_url), lambda code: code == 200 or not proc.alive(), 60, f"{name} ready"
        )
        assert proc.alive(), f"{name} exited:\n{proc.log_tail()}"
    except BaseException:
        proc.stop()
        raise
    return proc


@pytest.fixture
def extender(control_plane: ControlPlane) -> Iterator[str]:
    """`kubesched extender` on 127.0.0.1 (stateless: no kubeconfig); yields its base URL."""
    port = free_port()
    config = control_plane.workdir / f"live-extender-{port}.yaml"
    config.write_text(EXTENDER_CONFIG)
    args = [sys.executable, "-m", "kubesched.cli", "extender", "--config", str(config)]
    args += ["--listen", f"127.0.0.1:{port}", "--prefix", "/scheduler"]
    url = f"http://127.0.0.1:{port}"
    log = control_plane.workdir / "logs" / f"live-extender-{port}.log"
    proc = start_ready("extender", args, log, f"{url}/readyz")
    try:
        yield url
    finally:
        proc.stop()


def test_kubesched_run_filters_through_the_extender_of_its_config(
    control_plane: ControlPlane, api: ApiClient, namespace: str, extender: str
) -> None:
    run = uuid.uuid4().hex[:8]
    allowed = [f"live-ext-{run}-ok-{i}" for i in range(2)]
    forbidden = [f"live-ext-{run}-no-{i}" for i in range(2)]
    for name in allowed:
        create_node(api, fake_node(name, labels={RUN_LABEL: run}))
    for name in forbidden:
        create_node(api, fake_node(name, labels={RUN_LABEL: run, FORBIDDEN: "yes"}))

    scheduler = f"kubesched-ext-{run}"
    port = free_port()
    config = control_plane.workdir / f"live-run-{port}.yaml"
    config.write_text(RUN_CONFIG.format(scheduler=scheduler, url=extender))
    args = [sys.executable, "-m", "kubesched.cli", "run", "--config", str(config)]
    args += ["--kubeconfig", str(control_plane.kubeconfig_path), "--secure-port", "0"]
    args += ["--insecure-listen", f"127.0.0.1:{port}"]
    log = control_plane.workdir / "logs" / f"live-run-{port}.log"
    proc = start_ready("kubesched", args, log, f"http://127.0.0.1:{port}/readyz")
    try:
        names = [f"p{i}" for i in range(PODS)]
        for name in names:
            create_pod(
                api, name, namespace=namespace, scheduler_name=scheduler, node_selector={RUN_LABEL: run}
            )
        placed = wait_for(lambda: bound(api, namespace), lambda b: len(b) == PODS, 60, "pods to be bound")
        assert set(placed.values()) <= set(allowed), placed

        create_pod(
            api,
            "impossible",
            namespace=namespace,
            scheduler_name=scheduler,
            node_selector={RUN_LABEL: run, FORBIDDEN: "yes"},
        )

        def note() -> str:
            events = pod_events(api, namespace, reason="FailedScheduling")
            return " | ".join(e.get("note", "") for e in events if e["regarding"]["name"] == "impossible")

        text = wait_for(note, lambda t: "had label" in t, 60, "kubesched's FailedScheduling event")
        assert f"2 node(s) had label {FORBIDDEN}=yes" in text, text
        assert all(e["reportingController"] == scheduler for e in pod_events(api, namespace))
        assert proc.alive(), proc.log_tail()
    finally:
        proc.stop()
