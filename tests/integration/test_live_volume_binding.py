"""VolumeBinding's PreBind in live mode against the real kube-apiserver.

A pod with a WaitForFirstConsumer claim and one matching static local PV: kubesched (an in-process
`LiveCluster`) writes the PV's claimRef in PreBind and waits for the PV controller before binding
the pod. The local control plane runs no kube-controller-manager, so the test plays the PV controller
(`FakePvController`); without it, a short `bindTimeoutSeconds` fails PreBind and the pod stays unbound.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from kubesched.cluster.kube.client import KubeClient
from kubesched.cluster.kube.live import LiveCluster
from kubesched.config import decode_config
from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import (
    ApiClient,
    ApiError,
    create_node,
    create_pod,
    fake_node,
    get_pod,
    list_events,
)
from kubesched.plugins import default_registry

T = TypeVar("T")

RUN = uuid.uuid4().hex[:8]
PATIENT = f"vb-{RUN}"  # default bindTimeoutSeconds (600)
HASTY = f"vb-short-{RUN}"  # bindTimeoutSeconds: 2
CONFIG = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: {PATIENT}
- schedulerName: {HASTY}
  pluginConfig:
  - name: VolumeBinding
    args: {{bindTimeoutSeconds: 2}}
"""
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"


def wait_for(fetch: Callable[[], T], done: Callable[[T], bool], timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; last value: {value!r}")
        time.sleep(0.1)


class FakePvController(threading.Thread):
    """What kube-controller-manager's PV controller does for a PV the scheduler claimed: bind the claim
    (`spec.volumeName`, `pv.kubernetes.io/bind-completed`, phase Bound) and mark the PV Bound."""

    def __init__(self, api: ApiClient, namespace: str) -> None:
        super().__init__(name="fake-pv-controller", daemon=True)
        self.api = api
        self.namespace = namespace
        self.stopping = threading.Event()
        #: The claimRef of each PV this controller completed, as the scheduler wrote it.
        self.claim_refs: dict[str, dict[str, Any]] = {}

    def run(self) -> None:
        while not self.stopping.wait(0.1):
            with contextlib.suppress(ApiError):  # a conflict with the scheduler's write: read again
                self.step()

    def step(self) -> None:
        for pv in self.api.list_all("/api/v1/persistentvolumes"):
            ref = pv["spec"].get("claimRef") or {}
            if ref.get("namespace") != self.namespace or (pv.get("status") or {}).get("phase") == "Bound":
                continue
            name = pv["metadata"]["name"]
            path = f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims/{ref['name']}"
            pvc = self.api.get(path)
            if not pvc["spec"].get("volumeName"):
                pvc["spec"]["volumeName"] = name
                pvc["metadata"].setdefault("annotations", {})[BIND_COMPLETED] = "yes"
                pvc = self.api.request("PUT", path, pvc)
            pvc["status"] = {
                "phase": "Bound",
                "accessModes": pv["spec"]["accessModes"],
                "capacity": pv["spec"]["capacity"],
            }
            self.api.request("PUT", f"{path}/status", pvc)
            pv["status"] = {"phase": "Bound"}
            self.api.request("PUT", f"/api/v1/persistentvolumes/{name}/status", pv)
            self.claim_refs[name] = ref

    def stop(self) -> None:
        self.stopping.set()
        self.join(5)


@pytest.fixture(scope="module")
def cluster(control_plane: ControlPlane) -> Iterator[LiveCluster]:
    registry = default_registry()
    cfg = decode_config(CONFIG, "sched.yaml", registry)
    client = KubeClient.from_kubeconfig(str(control_plane.kubeconfig_path), qps=0, burst=1)
    live = LiveCluster(cfg, registry, client)
    try:
        live.start_informers()
        assert live.wait_for_sync(60)
        live.start_loop()
        live.set_leading(True)
        yield live
    finally:
        live.stop()
        client.close()


def local_volume_setup(api: ApiClient, namespace: str, tag: str) -> tuple[str, str]:
    """A node, a WaitForFirstConsumer no-provisioner class, a local PV on that node and a claim of that
    class; returns (node name, PV name)."""
    node = f"vb-node-{tag}-{RUN}"
    create_node(api, fake_node(node, labels={"kubesched.test/volume-binding": RUN}))
    sc = f"vb-local-{tag}-{RUN}"
    api.post(
        "/apis/storage.k8s.io/v1/storageclasses",
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": sc},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
    )
    pv = f"vb-pv-{tag}-{RUN}"
    hostname = {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
    volume = api.post(
        "/api/v1/persistentvolumes",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": pv},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": sc,
                "local": {"path": "/mnt/disks/vol1"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [hostname]}]}},
            },
        },
    )
    # The API server creates it Pending; the PV controller makes it Available (only those are matched).
    volume["status"] = {"phase": "Available"}
    api.request("PUT", f"/api/v1/persistentvolumes/{pv}/status", volume)
    api.post(
        f"/api/v1/namespaces/{namespace}/persistentvolumeclaims",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": namespace},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": sc,
                "resources": {"requests": {"storage": "500Mi"}},
            },
        },
    )
    return node, pv


def create_pod_with_claim(api: ApiClient, namespace: str, scheduler: str) -> None:
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    create_pod(api, "app", namespace=namespace, scheduler_name=scheduler, spec_overrides={"volumes": volumes})


def test_the_pv_gets_the_claim_ref_and_the_pod_binds_once_the_pv_controller_bound_the_claim(
    cluster: LiveCluster, api: ApiClient, namespace: str
) -> None:
    node, pv = local_volume_setup(api, namespace, "ok")
    claim = api.get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/data")
    controller = FakePvController(api, namespace)
    controller.start()
    try:
        create_pod_with_claim(api, namespace, PATIENT)
        pod = wait_for(
            lambda: get_pod(api, "app", namespace),
            lambda p: bool(p["spec"].get("nodeName")),
            60,
            "the pod to be bound",
        )
    finally:
        controller.stop()
    assert pod["spec"]["nodeName"] == node
    ref = controller.claim_refs[pv]  # the PV controller saw the scheduler's claimRef before the pod bound
    assert {k: ref.get(k) for k in ("kind", "namespace", "name", "uid")} == {
        "kind": "PersistentVolumeClaim",
        "namespace": namespace,
        "name": "data",
        "uid": claim["metadata"]["uid"],
    }
    volume = api.get(f"/api/v1/persistentvolumes/{pv}")
    assert volume["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert volume["spec"]["local"] == {"path": "/mnt/disks/vol1"}  # the PUT kept the whole object
    bound = api.get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/data")
    assert bound["spec"]["volumeName"] == pv and bound["status"]["phase"] == "Bound"


def test_without_a_pv_controller_prebind_times_out_and_the_pod_stays_unbound(
    cluster: LiveCluster, api: ApiClient, namespace: str
) -> None:
    _, pv = local_volume_setup(api, namespace, "timeout")
    create_pod_with_claim(api, namespace, HASTY)
    events = wait_for(
        lambda: list_events(api, namespace, involved_object="app", reason="FailedScheduling"),
        lambda evs: any("binding volumes" in (e.get("message") or "") for e in evs),
        60,
        "a FailedScheduling event from PreBind",
    )
    message = next(e["message"] for e in events if "binding volumes" in (e.get("message") or ""))
    assert message.startswith('running PreBind plugin "VolumeBinding": binding volumes: timed out after 2s')
    assert get_pod(api, "app", namespace)["spec"].get("nodeName") is None
    # The claimRef stays (as upstream leaves it), so a retry finds the same PV and waits again.
    ref = api.get(f"/api/v1/persistentvolumes/{pv}")["spec"]["claimRef"]
    assert ref["namespace"] == namespace and ref["name"] == "data"
    time.sleep(3)  # another full attempt's worth of time: still not bound
    assert get_pod(api, "app", namespace)["spec"].get("nodeName") is None
