"""End to end: `kubesched extender` with the upstream kube-scheduler, and kubesched calling extenders.

Everything is real: kube-apiserver + etcd, the kube-scheduler binary built from the project's pin,
`kubesched extender` as a separate process (listening on 127.0.0.1), and Pods created through the
API. The extender serves NodeFilterLabel configured to reject `kubesched.test/forbidden=yes`; each
test makes its own nodes (two allowed, two forbidden) and selects them with a per-test label, so
without the extender about half the pods would land on forbidden nodes.

The same profile also runs GPUScheduler (filter + score). The GPU test gives kube-scheduler an
extender entry that manages `nvidia.com/gpu` with `ignoredByScheduler: true`, as a GPU extender is
deployed: kube-scheduler's own NodeResourcesFit then leaves GPUs to the extender, so GPU pods are
placed (and rejected) by GPUScheduler's count, product and memory checks, with its reasons.
"""

from __future__ import annotations

import json
import ssl
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kubesched.harness.controlplane import ControlPlane, ManagedProcess
from kubesched.harness.fake_nodes import (
    ApiClient,
    create_node,
    create_pod,
    fake_node,
    get_pod,
    list_events,
    pod_manifest,
)
from kubesched.harness.pki import TestCA
from kubesched.harness.ports import free_port
from kubesched.plugins.contrib.gpu_scheduler import (
    DEFAULT_PRODUCT_ANNOTATION,
    GPU_RESOURCE,
    LABEL_GPU_MEMORY,
    LABEL_GPU_PRODUCT,
    insufficient_gpus_reason,
)

T = TypeVar("T")

FORBIDDEN = "kubesched.test/forbidden"
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
      - {{name: GPUScheduler}}
      - {{name: NodeResourcesFit}}
  pluginConfig:
  - name: NodeFilterLabel
    args: {{labels: {{"{FORBIDDEN}": ["yes"]}}}}
"""
PODS = 6

GPU_RUN = "kubesched.test/extender-gpu-run"
A100 = "NVIDIA-A100-SXM4-80GB"
H100 = "NVIDIA-H100-80GB-HBM3"
GPU_PODS = 3  # two GPUs each: with the `any` pod's one they fit on the allowed H100 node (8 GPUs)


def wait_for(fetch: Callable[[], T], done: Callable[[T], bool], timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}; last value: {value!r}")
        time.sleep(0.2)


def http_get(url: str, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as resp:
            return resp.status, resp.read().decode()
    except OSError as exc:
        return getattr(exc, "code", 0) or 0, str(exc)


class ExtenderProcess:
    """`kubesched extender` as its own process; stopped by pid.

    With a kubeconfig it holds cluster credentials and binds, so it is run as shipped: HTTPS, and
    only callers with a client certificate from its CA get past the probes. kube-scheduler then
    calls it with `enableHTTPS` and a `tlsConfig` naming that certificate (`tls_config`).
    """

    def __init__(self, workdir: Path, *, kubeconfig: Path | None) -> None:
        self.port = free_port()
        config = workdir / f"extender-{self.port}.yaml"
        config.write_text(EXTENDER_CONFIG)
        args = [sys.executable, "-m", "kubesched.cli", "extender", "--config", str(config)]
        args += ["--listen", f"127.0.0.1:{self.port}", "--prefix", "/scheduler"]
        self.url = f"http://127.0.0.1:{self.port}"
        self.context: ssl.SSLContext | None = None
        self.tls_config: dict[str, str] | None = None
        if kubeconfig is not None:
            args += ["--kubeconfig", str(kubeconfig), *self._tls(workdir / f"extender-{self.port}-pki")]
            self.url = f"https://127.0.0.1:{self.port}"
        self.proc = ManagedProcess(
            f"extender-{self.port}", args, workdir / "logs" / f"extender-{self.port}.log"
        )
        try:
            wait_for(
                lambda: http_get(f"{self.url}/readyz", self.context)[0],
                lambda c: c == 200 or not self.proc.alive(),
                60,
                "readyz",
            )
        except AssertionError:
            self.proc.stop()
            raise
        assert self.proc.alive(), self.proc.log_tail()

    def _tls(self, pki: Path) -> list[str]:
        pki.mkdir()
        ca = TestCA(pki)
        cert, key = ca.server("extender", "127.0.0.1")
        client_cert, client_key = ca.client("kube-scheduler")
        self.tls_config = {
            "caFile": str(ca.ca_file),
            "certFile": str(client_cert),
            "keyFile": str(client_key),
        }
        self.context = ssl.create_default_context(cafile=str(ca.ca_file))
        self.context.load_cert_chain(str(client_cert), str(client_key))
        return [f"--tls-cert-file={cert}", f"--tls-private-key-file={key}", f"--client-ca-file={ca.ca_file}"]

    def metric(self, name: str) -> float:
        _, text = http_get(f"{self.url}/metrics", self.context)
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))

    def stop(self) -> None:
        self.proc.stop()


@pytest.fixture
def nodes(api: ApiClient) -> Iterator[tuple[str, list[str], list[str]]]:
    """(selector value, allowed node names, forbidden node names) of four fresh nodes."""
    run = uuid.uuid4().hex[:8]
    allowed = [f"ext-{run}-ok-{i}" for i in range(2)]
    forbidden = [f"ext-{run}-no-{i}" for i in range(2)]
    for name in allowed:
        create_node(api, fake_node(name, labels={"kubesched.test/extender-run": run}))
    for name in forbidden:
        create_node(api, fake_node(name, labels={"kubesched.test/extender-run": run, FORBIDDEN: "yes"}))
    yield run, allowed, forbidden
    for name in allowed + forbidden:
        api.request("DELETE", f"/api/v1/nodes/{name}")


@pytest.fixture
def gpu_nodes(api: ApiClient) -> Iterator[tuple[str, dict[str, str]]]:
    """(selector value, role -> node name) of three fresh GPU nodes with GFD labels.

    `a100`: 4 A100s, allowed; `h100`: 8 H100s, allowed; `h100-forbidden`: 8 H100s, forbidden by
    NodeFilterLabel. Only `h100` has both the product and the label an H100 pod needs.
    """
    run = uuid.uuid4().hex[:8]
    specs = {
        "a100": (4, A100, "81920", False),
        "h100": (8, H100, "81559", False),
        "h100-forbidden": (8, H100, "81559", True),
    }
    names = {role: f"ext-{run}-gpu-{role}" for role in specs}
    for role, (count, product, memory, forbidden) in specs.items():
        labels = {GPU_RUN: run, LABEL_GPU_PRODUCT: product, LABEL_GPU_MEMORY: memory}
        if forbidden:
            labels[FORBIDDEN] = "yes"
        create_node(api, fake_node(names[role], extra_resources={GPU_RESOURCE: count}, labels=labels))
    yield run, names
    for name in names.values():
        api.request("DELETE", f"/api/v1/nodes/{name}")


def extender_entry(extender: ExtenderProcess, mode: str) -> dict[str, Any]:
    """kube-scheduler's `extenders:` entry for `extender`; NodeNames mode also binds through it."""
    cache_capable = mode == "node-names"
    entry: dict[str, Any] = {
        "urlPrefix": f"{extender.url}/scheduler/",
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "weight": 1,
        "nodeCacheCapable": cache_capable,
        "httpTimeout": "5s",
    }
    if cache_capable:
        entry["bindVerb"] = "bind"  # our extender binds through the API instead of DefaultBinder
    if extender.tls_config is not None:
        entry["enableHTTPS"] = True
        entry["tlsConfig"] = extender.tls_config
    return entry


def create_gpu_pod(
    api: ApiClient, name: str, *, namespace: str, scheduler: str, run: str, gpus: int, product: str | None
) -> None:
    """A pod requesting `gpus` of `nvidia.com/gpu` (and a little CPU), optionally asking for a product."""
    manifest = pod_manifest(name, namespace=namespace, scheduler_name=scheduler, node_selector={GPU_RUN: run})
    resources = manifest["spec"]["containers"][0]["resources"]
    resources["requests"][GPU_RESOURCE] = str(gpus)
    resources["limits"] = {GPU_RESOURCE: str(gpus)}  # extended resources need limit == request
    if product is not None:
        manifest["metadata"]["annotations"] = {DEFAULT_PRODUCT_ANNOTATION: product}
    create_pod(api, manifest)


def make_pods(api: ApiClient, namespace: str, scheduler: str, run: str, count: int) -> list[str]:
    names = [f"p{i}" for i in range(count)]
    for name in names:
        create_pod(
            api,
            name,
            namespace=namespace,
            scheduler_name=scheduler,
            node_selector={"kubesched.test/extender-run": run},
        )
    return names


def placements(api: ApiClient, namespace: str, names: list[str]) -> dict[str, str]:
    return {n: get_pod(api, n, namespace)["spec"].get("nodeName", "") for n in names}


def failed_scheduling_note(api: ApiClient, namespace: str, pod: str) -> str:
    events = list_events(api, namespace, involved_object=pod, reason="FailedScheduling")
    return " | ".join(str(e.get("message") or e.get("note") or "") for e in events)


def assert_allowed_nodes_only(
    api: ApiClient, namespace: str, scheduler: str, run: str, allowed: list[str], who: str
) -> None:
    """PODS pods of `scheduler` land on allowed nodes only; a pod needing a forbidden node stays
    unbound with the extender's reason in `who`'s FailedScheduling event."""
    names = make_pods(api, namespace, scheduler, run, PODS)
    placed = wait_for(
        lambda: placements(api, namespace, names), lambda p: all(p.values()), 60, "pods to be bound"
    )
    assert set(placed.values()) <= set(allowed), placed
    create_pod(
        api,
        "impossible",
        namespace=namespace,
        scheduler_name=scheduler,
        node_selector={"kubesched.test/extender-run": run, FORBIDDEN: "yes"},
    )
    note = wait_for(
        lambda: failed_scheduling_note(api, namespace, "impossible"),
        lambda text: "had label" in text,
        60,
        f"{who}'s FailedScheduling event",
    )
    assert f"2 node(s) had label {FORBIDDEN}=yes" in note
    assert get_pod(api, "impossible", namespace)["spec"].get("nodeName") is None


@pytest.mark.parametrize("mode", ["node-names", "nodes"])
def test_kube_scheduler_uses_kubesched_extender(
    control_plane: ControlPlane,
    api: ApiClient,
    namespace: str,
    nodes: tuple[str, list[str], list[str]],
    mode: str,
) -> None:
    run, allowed, _ = nodes
    cache_capable = mode == "node-names"
    extender = ExtenderProcess(
        control_plane.workdir, kubeconfig=control_plane.kubeconfig_path if cache_capable else None
    )
    scheduler = f"upstream-ext-{mode}-{run}"
    kube_scheduler = control_plane.start_kube_scheduler(
        {"profiles": [{"schedulerName": scheduler}], "extenders": [extender_entry(extender, mode)]}
    )
    try:
        assert_allowed_nodes_only(api, namespace, scheduler, run, allowed, "kube-scheduler")
        assert extender.metric('kubesched_extender_requests_total{code="200",verb="filter"}') >= PODS
        if cache_capable:
            assert extender.metric('kubesched_extender_requests_total{code="200",verb="bind"}') >= PODS
    finally:
        kube_scheduler.stop()
        extender.stop()


@pytest.mark.parametrize("mode", ["node-names", "nodes"])
def test_kube_scheduler_uses_kubesched_extender_for_gpus(
    control_plane: ControlPlane,
    api: ApiClient,
    namespace: str,
    gpu_nodes: tuple[str, dict[str, str]],
    mode: str,
) -> None:
    """GPU pods through kube-scheduler + GPUScheduler (and NodeFilterLabel) in `kubesched extender`."""
    run, nodes = gpu_nodes
    cache_capable = mode == "node-names"
    extender = ExtenderProcess(
        control_plane.workdir, kubeconfig=control_plane.kubeconfig_path if cache_capable else None
    )
    scheduler = f"upstream-ext-gpu-{mode}-{run}"
    entry = extender_entry(extender, mode)
    # Only pods requesting GPUs reach this extender, and kube-scheduler leaves the GPU count to it.
    entry["managedResources"] = [{"name": GPU_RESOURCE, "ignoredByScheduler": True}]
    kube_scheduler = control_plane.start_kube_scheduler(
        {"profiles": [{"schedulerName": scheduler}], "extenders": [entry]}
    )
    gpus: dict[str, int] = {}

    def gpu_pod(name: str, count: int, product: str | None) -> str:
        gpus[name] = count
        create_gpu_pod(
            api, name, namespace=namespace, scheduler=scheduler, run=run, gpus=count, product=product
        )
        return name

    def bound(names: list[str]) -> dict[str, str]:
        return wait_for(
            lambda: placements(api, namespace, names), lambda p: all(p.values()), 60, "GPU pods to be bound"
        )

    try:
        # Any product: both allowed GPU nodes are feasible, so kube-scheduler also asks for scores.
        placed = bound([gpu_pod("any", 1, None)])
        assert placed["any"] in {nodes["a100"], nodes["h100"]}, placed
        assert extender.metric('kubesched_extender_requests_total{code="200",verb="prioritize"}') >= 1

        # The A100 node fails the product, the other H100 node NodeFilterLabel: one node is left.
        h100_pods = [gpu_pod(f"h100-{i}", 2, "NVIDIA-H100-*") for i in range(GPU_PODS)]
        placed |= bound([*h100_pods, gpu_pod("a100", 3, "NVIDIA-A100-*")])
        assert {placed[n] for n in h100_pods} == {nodes["h100"]}, placed
        assert placed["a100"] == nodes["a100"], placed

        # 16 GPUs: no node has that many. kube-scheduler ignores nvidia.com/gpu, so every node the
        # selector picks reaches the extender, whose GPUScheduler rejects the allowed ones. The free
        # count subtracts the GPUs of bound pods when the extender has a pod cache (NodeNames mode).
        gpu_pod("impossible", 16, None)
        note = wait_for(
            lambda: failed_scheduling_note(api, namespace, "impossible"),
            lambda text: "Insufficient free GPUs" in text,
            60,
            "kube-scheduler's FailedScheduling event with GPUScheduler's reason",
        )
        for role, total in (("a100", 4), ("h100", 8)):
            used = sum(gpus[pod] for pod, node in placed.items() if node == nodes[role])
            assert used > 0, placed
            free = total - used if cache_capable else total
            assert f"1 {insufficient_gpus_reason(GPU_RESOURCE, 16, free)}" in note, note
        assert f"1 node(s) had label {FORBIDDEN}=yes" in note, note
        assert f"Insufficient {GPU_RESOURCE}" not in note, note  # not kube-scheduler's own reason
        assert get_pod(api, "impossible", namespace)["spec"].get("nodeName") is None

        # One GPU, which both H100 nodes have free, but the wrong product everywhere.
        gpu_pod("wrong-product", 1, "Tesla-T4")
        note = wait_for(
            lambda: failed_scheduling_note(api, namespace, "wrong-product"),
            lambda text: "GPU product mismatch" in text,
            60,
            "kube-scheduler's FailedScheduling event with GPUScheduler's product reason",
        )
        # (With a pod cache the full A100 node also reports `Insufficient free GPUs: need 1, have 0`.)
        assert f"GPU product mismatch: need Tesla-T4, node has {A100}" in note, note
        assert f"1 GPU product mismatch: need Tesla-T4, node has {H100}" in note, note
        assert get_pod(api, "wrong-product", namespace)["spec"].get("nodeName") is None
        filters = extender.metric('kubesched_extender_requests_total{code="200",verb="filter"}')
        assert filters >= GPU_PODS + 4
        if cache_capable:
            binds = extender.metric('kubesched_extender_requests_total{code="200",verb="bind"}')
            assert binds >= GPU_PODS + 2
    finally:
        kube_scheduler.stop()
        extender.stop()


def test_kubesched_live_scheduler_calls_an_extender_process(
    control_plane: ControlPlane, api: ApiClient, namespace: str, nodes: tuple[str, list[str], list[str]]
) -> None:
    """kubesched's own live scheduler (LiveCluster) calling `kubesched extender`, plus one that is down."""
    from kubesched.cluster.kube.client import KubeClient
    from kubesched.cluster.kube.live import LiveCluster, LiveOptions
    from kubesched.config import decode_config
    from kubesched.plugins import default_registry

    run, allowed, _ = nodes
    extender = ExtenderProcess(control_plane.workdir, kubeconfig=control_plane.kubeconfig_path)
    scheduler = f"kubesched-ext-{run}"
    text = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: {scheduler}
extenders:
- urlPrefix: {extender.url}/scheduler
  filterVerb: filter
  prioritizeVerb: prioritize
  weight: 2
  nodeCacheCapable: true
  enableHTTPS: true
  tlsConfig: {json.dumps(extender.tls_config)}
- urlPrefix: http://127.0.0.1:{free_port()}
  filterVerb: filter
  ignorable: true
  httpTimeout: 1s
"""
    registry = default_registry()
    cfg = decode_config(text, "sched.yaml", registry)
    client = KubeClient.from_kubeconfig(str(control_plane.kubeconfig_path), qps=0, burst=1)
    cluster = LiveCluster(cfg, registry, client, options=LiveOptions(kinds=()))
    assert cluster.scheduler.extenders is not None  # the live cluster wires the config's extenders
    try:
        cluster.start_informers()
        assert cluster.wait_for_sync(60)
        cluster.start_loop()
        cluster.set_leading(True)
        assert_allowed_nodes_only(api, namespace, scheduler, run, allowed, "kubesched")
        assert extender.metric('kubesched_extender_requests_total{code="200",verb="prioritize"}') >= 1
    finally:
        cluster.stop()  # closes the extender clients after in-flight binds
        client.close()
        extender.stop()
