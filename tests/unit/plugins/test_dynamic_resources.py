"""DynamicResources in the simulator: claims from templates, devices per pod, upstream's messages."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import yaml

from kubesched.api.loader import LoadedObjects, load_documents
from kubesched.api.resource import AllocationResult
from kubesched.cluster.memory import MemoryCluster
from kubesched.config import default_config, parse_feature_gates
from kubesched.plugins import default_registry
from kubesched.plugins.dynamic_resources import DynamicResources, DynamicResourcesArgs
from kubesched.simulate.snapshot.model import Report
from kubesched.simulate.snapshot.run import simulate

CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: default}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]
"""


def nodes_with_gpus(count: int = 3, gpus: int = 2, models: tuple[str, ...] = ("a100",)) -> str:
    docs = []
    for i in range(count):
        devices = [
            {"name": f"gpu-{j}", "attributes": {"model": {"string": models[(i + j) % len(models)]}}}
            for j in range(gpus)
        ]
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{i}"},
                "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
            }
        )
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"node-{i}-gpus"},
                "spec": {
                    "driver": "gpu.example.com",
                    "pool": {"name": f"node-{i}", "generation": 1, "resourceSliceCount": 1},
                    "nodeName": f"node-{i}",
                    "devices": devices,
                },
            }
        )
    return yaml.safe_dump_all(docs)


def pod(name: str, *, template: str | None = "one-gpu", claim: str | None = None, **spec: Any) -> str:
    entry: dict[str, Any] = {"name": "gpu"}
    if claim is not None:
        entry["resourceClaimName"] = claim
    elif template is not None:
        entry["resourceClaimTemplateName"] = template
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "resourceClaims": [entry],
            "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}],
            **spec,
        },
    }
    return yaml.safe_dump(body)


def load(*texts: str) -> LoadedObjects:
    objects = LoadedObjects()
    for text in texts:
        for obj in load_documents(text, "test.yaml"):
            objects.add(obj)
    return objects


def run(*texts: str) -> Report:
    registry = default_registry(entry_points=False)
    return simulate(load(*texts), default_config(registry), registry)


def by_name(report: Report) -> dict[str, Any]:
    return {p.name: p for p in report.pods}


def test_template_claims_get_distinct_devices() -> None:
    report = run(CLASS, nodes_with_gpus(), *(pod(f"p{i}") for i in range(6)))
    assert report.summary.scheduled == 6
    devices = [(d.pool, d.device) for p in report.pods for d in p.devices]
    assert len(devices) == 6 and len(set(devices)) == 6
    for p in report.pods:
        (d,) = p.devices
        assert d.pool == p.node and d.request == "gpu" and d.claim.startswith(f"default/{p.name}-gpu-")


def test_claim_that_fits_nowhere_has_the_binarys_message() -> None:
    three = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: three, namespace: default}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com, count: 3}}]
"""
    report = run(CLASS, three, nodes_with_gpus(), pod("big", claim="three"))
    (big,) = report.pods
    assert big.result == "Unschedulable"
    assert big.message == (
        "0/3 nodes are available: 3 cannot allocate all claims. preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling."
    )


def test_seventh_pod_finds_no_free_device() -> None:
    pods = by_name(run(CLASS, nodes_with_gpus(), *(pod(f"p{i}") for i in range(7))))
    failed = [p for p in pods.values() if p.result != "Scheduled"]
    assert len(failed) == 1 and failed[0].message.startswith(
        "0/3 nodes are available: 3 cannot allocate all claims."
    )


def test_missing_class_rejects_one_pod_and_the_run_goes_on() -> None:
    template = CLASS.replace("deviceClassName: gpu.example.com", "deviceClassName: nope").replace(
        "one-gpu", "bad"
    )
    report = run(
        CLASS.split("---")[0],
        template,
        CLASS.split("---")[1],
        nodes_with_gpus(),
        pod("bad", template="bad"),
        pod("good"),
    )
    pods = by_name(report)
    assert pods["good"].result == "Scheduled"
    assert pods["bad"].result == "Unschedulable"
    assert pods["bad"].message == (
        "0/3 nodes are available: request gpu: device class nope does not exist. preemption: 0/3 nodes are "
        "available: 3 Preemption is not helpful for scheduling."
    )


def test_cel_runtime_error_is_an_error_for_that_pod_only() -> None:
    bad_class = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: broken}
spec:
  selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].memory > 1'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: broken, namespace: default}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: broken}}]
"""
    pods = by_name(run(CLASS, bad_class, nodes_with_gpus(), pod("bad", template="broken"), pod("good")))
    assert pods["good"].result == "Scheduled"
    assert pods["bad"].result == "Error"
    assert pods["bad"].message.startswith(
        'running "DynamicResources" filter plugin: class broken: selector #0: '
        "CEL runtime error: no such key: memory."
    )


def test_invalid_cel_is_an_error_naming_the_class() -> None:
    bad = CLASS.replace('device.driver == "gpu.example.com"', "device.driver ==")
    (p,) = run(bad, nodes_with_gpus(), pod("p")).pods
    assert p.result == "Error"
    assert p.message.startswith(
        'running "DynamicResources" filter plugin: class gpu.example.com: selector #0: CEL compile error: '
        "compilation failed: ERROR: <input>:1:"
    )


def test_pod_whose_template_does_not_exist_waits() -> None:
    (p,) = run(CLASS, nodes_with_gpus(), pod("p", template="missing")).pods
    assert p.result in ("Gated", "Unschedulable")
    assert p.node is None


def test_shared_claim_puts_its_pods_on_one_node() -> None:
    shared = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared, namespace: default}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]
"""
    report = run(CLASS, shared, nodes_with_gpus(), pod("a", claim="shared"), pod("b", claim="shared"))
    a, b = report.pods
    assert a.result == b.result == "Scheduled" and a.node == b.node
    assert a.devices == b.devices


def test_allocated_claim_elsewhere_is_not_available() -> None:
    allocated = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: pinned, namespace: default}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]
status:
  allocation:
    devices:
      results: [{request: gpu, driver: gpu.example.com, pool: node-9, device: gpu-0}]
    nodeSelector:
      nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [node-9]}]}]
"""
    # Reserved for someone else: it stays where it is, and so does the pod.
    held = allocated + "  reservedFor: [{resource: pods, name: other, uid: other-uid}]\n"
    (p,) = run(CLASS, held, nodes_with_gpus(), pod("p", claim="pinned")).pods
    assert p.result == "Unschedulable"
    assert p.message.startswith("0/3 nodes are available: 3 resourceclaim not available on the node.")
    # Reserved for nobody: PostFilter deallocates it and the next attempt allocates it anew.
    (p,) = run(CLASS, allocated, nodes_with_gpus(), pod("p", claim="pinned")).pods
    assert p.result == "Scheduled" and p.attempts == 2 and p.devices[0].pool == p.node


def test_first_available_prefers_nodes_where_the_first_choice_fits() -> None:
    template = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: prefer-h100, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        firstAvailable:
        - name: h100
          deviceClassName: gpu.example.com
          selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].model == "h100"'}}]
        - {name: any, deviceClassName: gpu.example.com}
"""
    report = run(
        CLASS,
        template,
        nodes_with_gpus(count=4, gpus=1, models=("a100", "h100")),
        pod("p", template="prefer-h100"),
    )
    (p,) = report.pods
    assert p.result == "Scheduled"
    assert p.devices[0].request == "gpu/h100"
    assert p.node in ("node-1", "node-3")


def test_deleted_pod_frees_its_devices() -> None:
    objects = load(CLASS, nodes_with_gpus(count=1, gpus=1), pod("a"))
    cluster = MemoryCluster(objects)
    (claim,) = cluster.claims.all()
    (victim,) = cluster.pods.values()
    allocation = msgspec.convert(
        {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": "gpu.example.com", "pool": "node-0", "device": "gpu-0"}
                ]
            }
        },
        type=AllocationResult,
    )
    stored = cluster.write_claim_allocation(claim, allocation, victim)
    assert stored.status.allocation is not None and stored.metadata.finalizers == [
        "resource.kubernetes.io/delete-protection"
    ]
    assert [r.uid for r in stored.status.reserved_for] == [victim.metadata.uid]
    cluster.delete_pod(victim, reason="Preempted", message="")
    assert cluster.claims.all() == []  # the pod's generated claim goes with it


def test_two_profiles_never_hand_out_one_device() -> None:
    from kubesched.config import decode_config

    config_text = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: other
"""
    registry = default_registry(entry_points=False)
    config = decode_config(config_text, "config.yaml", registry)
    objects = load(CLASS, nodes_with_gpus(count=1, gpus=1), pod("a"), pod("b", schedulerName="other"))
    report = simulate(objects, config, registry)
    assert sorted(p.result for p in report.pods) == ["Scheduled", "Unschedulable"]


def test_gpu_dra_example_gives_each_device_once() -> None:
    from pathlib import Path

    from kubesched.api.loader import load_paths
    from kubesched.config import load_config

    root = Path(__file__).resolve().parents[3] / "examples" / "gpu-dra"
    registry = default_registry(entry_points=False)
    report = simulate(
        load_paths([root / "cluster"]), load_config(str(root / "scheduler-config.yaml"), registry), registry
    )
    devices = [(d.pool, d.device) for p in report.pods for d in p.devices]
    assert len(devices) == len(set(devices)) > 0
    gang = [p for p in report.pods if p.name.startswith("llm-pretrain")]
    assert len(gang) == 4 and all(p.result == "Scheduled" and len(p.devices) == 4 for p in gang)
    assert report.summary.errors == 0


GPU_SCHEDULER = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled: [{name: GPUScheduler, weight: 50}]
  pluginConfig:
  - name: GPUScheduler
    args: {scoringStrategy: %s, draDrivers: [gpu.example.com]}
"""


def _gpu_scheduler_run(strategy: str, *extra: str) -> dict[str, Any]:
    from kubesched.config import decode_config

    registry = default_registry(entry_points=False)
    config = decode_config(GPU_SCHEDULER % strategy, "config.yaml", registry)
    busy = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: busy, namespace: default}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]
status:
  allocation:
    devices:
      results: [{request: gpu, driver: gpu.example.com, pool: node-1, device: gpu-0}]
  reservedFor: [{resource: pods, name: running, uid: running-uid}]
"""
    return by_name(simulate(load(CLASS, busy, nodes_with_gpus(count=3, gpus=4), *extra), config, registry))


def test_gpu_scheduler_packs_and_spreads_dra_gpus() -> None:
    assert _gpu_scheduler_run("binpack", pod("p"))["p"].node == "node-1"  # the partly used node
    assert _gpu_scheduler_run("spread", pod("p"))["p"].node in ("node-0", "node-2")


def test_gpu_scheduler_matches_dra_products() -> None:
    text = pod("p").replace("name: p\n", "name: p\n  annotations: {gpu.kubesched.io/product: h100}\n", 1)
    slices = nodes_with_gpus(count=2, gpus=2, models=("a100", "h100"))
    # productName attributes: rename the model attribute so GPUScheduler reads it.
    slices = slices.replace("model:", "productName:")
    config_pods = _gpu_scheduler_run_with(slices, text)
    assert config_pods["p"].result == "Scheduled"


def _gpu_scheduler_run_with(slices: str, *pods: str) -> dict[str, Any]:
    from kubesched.config import decode_config

    registry = default_registry(entry_points=False)
    config = decode_config(GPU_SCHEDULER % "binpack", "config.yaml", registry)
    return by_name(simulate(load(CLASS, slices, *pods), config, registry))


def test_gpu_scheduler_rejects_nodes_without_the_dra_product() -> None:
    text = pod("p").replace("name: p\n", "name: p\n  annotations: {gpu.kubesched.io/product: t4}\n", 1)
    slices = nodes_with_gpus(count=1, gpus=1).replace("model:", "productName:")
    (p,) = _gpu_scheduler_run_with(slices, text).values()
    assert p.result == "Unschedulable"
    assert "GPU product mismatch: need t4, node has a100" in p.message


STALE_CLAIM = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: stale, namespace: default}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]
status:
  allocation:
    allocationTimestamp: "2020-01-01T00:00:00Z"
    devices:
      results:
      - {request: gpu, driver: gpu.example.com, pool: node-0, device: gpu-0,
         bindingConditions: [Attached], bindingFailureConditions: [AttachFailed]}
  devices:
  - driver: gpu.example.com
    pool: node-0
    device: gpu-0
    conditions: [{type: AttachFailed, status: "%s", reason: Broken, message: "no link"}]
"""


@pytest.mark.parametrize("failed", ["True", "False"])
def test_claim_whose_binding_failed_or_timed_out_is_deallocated_and_allocated_anew(failed: str) -> None:
    # "True": a failure condition; "False": conditions unmet 10m after allocationTimestamp (2020).
    attempts: list[str] = []
    registry = default_registry(entry_points=False)
    objects = load(CLASS, STALE_CLAIM % failed, nodes_with_gpus(count=1, gpus=2), pod("p", claim="stale"))
    report = simulate(
        objects, default_config(registry), registry, on_attempt=lambda a: attempts.append(a.message or "")
    )
    (p,) = report.pods
    assert p.result == "Scheduled" and p.attempts == 2
    assert attempts[0].startswith("0/1 nodes are available: 1 resourceclaim not available on the node.")
    (device,) = p.devices
    assert device.device == "gpu-0"  # deallocated by PostFilter, then allocated again (first fit)


def test_claim_waiting_for_binding_within_the_timeout_stays_usable() -> None:
    fresh = STALE_CLAIM.replace("2020-01-01T00:00:00Z", "2999-01-01T00:00:00Z") % "False"
    report = run(CLASS, fresh, nodes_with_gpus(count=1, gpus=2), pod("p", claim="stale"))
    (p,) = report.pods
    assert p.result == "Scheduled" and p.attempts == 1


def test_with_the_filter_timeout_gate_off_filter_is_never_bounded() -> None:
    assert DynamicResources().filter_timeout == 10.0
    off = parse_feature_gates(["DRASchedulerFilterTimeout=false"])
    assert DynamicResources(DynamicResourcesArgs(filter_timeout="3s"), features=off).filter_timeout == 0.0
