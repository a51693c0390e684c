"""Extended resources backed by DRA: `example.com/gpu: 2` from ResourceSlices where no device plugin is."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import yaml
from test_dynamic_resources import by_name, load, nodes_with_gpus

from kubesched.api.objects import Pod
from kubesched.api.resource import DeviceClass
from kubesched.config import default_config
from kubesched.plugins import default_registry
from kubesched.plugins.dynamic_resources.extended import backing_classes, requests_and_mappings
from kubesched.plugins.dynamic_resources.extended_claim import pod_extended_claim
from kubesched.simulate.snapshot.run import simulate_cluster

CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  extendedResourceName: example.com/gpu
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
"""


def gpu_pod(name: str, amount: int, resource: str = "example.com/gpu", **more: int) -> str:
    extra = {k.replace("_", "."): v for k, v in more.items()}  # other_com__fpga -> other.com/fpga
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {resource: amount, "cpu": "1", **extra}}}],
        },
    }
    return yaml.safe_dump(body)


def device_plugin_node(name: str, gpus: int) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110", "example.com/gpu": gpus}},
        }
    )


def stored_pod(cluster: Any, name: str) -> Pod:
    return next(p for p in cluster.pods.values() if p.metadata.name == name)


def run(*texts: str) -> tuple[dict[str, Any], Any]:
    registry = default_registry(entry_points=False)
    report, cluster = simulate_cluster(load(*texts), default_config(registry), registry)
    return by_name(report), cluster


def test_dra_serves_the_extended_resource_and_the_scheduler_creates_the_claim() -> None:
    pods, cluster = run(CLASS, nodes_with_gpus(count=2, gpus=2), gpu_pod("a", 2), gpu_pod("b", 2))
    assert {pods["a"].node, pods["b"].node} == {"node-0", "node-1"}
    for name in ("a", "b"):
        p = pods[name]
        assert p.result == "Scheduled"
        assert sorted(d.device for d in p.devices) == ["gpu-0", "gpu-1"] and {d.pool for d in p.devices} == {
            p.node
        }
        stored = stored_pod(cluster, name).status.extended_resource_claim_status
        assert stored is not None and stored.resource_claim_name.startswith(f"{name}-extended-resources-")
        assert [(m.container_name, m.resource_name, m.request_name) for m in stored.request_mappings] == [
            ("c", "example.com/gpu", "container-0-request-1")  # requests sorted: cpu, example.com/gpu
        ]
        claim = cluster.claims.get(f"default/{stored.resource_claim_name}")
        assert claim.metadata.annotations == {"resource.kubernetes.io/extended-resource-claim": "true"}
        assert [(r.name, r.controller) for r in claim.metadata.owner_references] == [(name, True)]
        (request,) = claim.spec.devices.requests
        assert request.name == "container-0-request-1" and request.exactly is not None
        assert (request.exactly.device_class_name, request.exactly.count) == ("gpu.example.com", 2)
        assert [r.uid for r in claim.status.reserved_for] == [f"uid-{name}"]
        assert claim.metadata.finalizers == ["resource.kubernetes.io/delete-protection"]
    # Deleting a pod deletes its claim (owned by the pod), so its devices are free again.
    cluster.delete_pod(stored_pod(cluster, "a"), reason="Preempted", message="")
    assert [c.metadata.name for c in cluster.claims.all()] == [
        stored_pod(cluster, "b").status.extended_resource_claim_status.resource_claim_name
    ]


def test_no_device_left_is_upstreams_message() -> None:
    pods, _ = run(CLASS, nodes_with_gpus(count=2, gpus=2), *(gpu_pod(f"p{i}", 1) for i in range(5)))
    failed = [p for p in pods.values() if p.result != "Scheduled"]
    assert len(failed) == 1 and failed[0].message == (
        "0/2 nodes are available: 2 cannot allocate all claims. preemption: 0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling."
    )


def test_implicit_class_resource_name() -> None:
    pods, _ = run(
        CLASS,
        nodes_with_gpus(count=1, gpus=1),
        gpu_pod("p", 1, "deviceclass.resource.kubernetes.io/gpu.example.com"),
    )
    assert pods["p"].result == "Scheduled" and len(pods["p"].devices) == 1


def test_device_plugin_nodes_keep_node_resources_fit_accounting() -> None:
    # dp-0 serves 1 GPU by device plugin (too few for 2: Insufficient); node-0 has 2 DRA GPUs.
    pods, cluster = run(
        CLASS, nodes_with_gpus(count=1, gpus=2), device_plugin_node("dp-0", 1), gpu_pod("p", 2)
    )
    assert pods["p"].node == "node-0" and len(pods["p"].devices) == 2
    pods, cluster = run(
        CLASS, device_plugin_node("dp-0", 4), gpu_pod("p", 2), gpu_pod("q", 2), gpu_pod("r", 1)
    )
    assert [pods[n].node for n in "pqr"] == ["dp-0", "dp-0", None]
    assert pods["r"].message.startswith("0/1 nodes are available: 1 Insufficient example.com/gpu.")
    assert cluster.claims.all() == [] and all(p.devices == [] for p in pods.values())


def test_a_resource_no_class_backs_is_left_to_node_resources_fit() -> None:
    pods, _ = run(CLASS, nodes_with_gpus(count=1, gpus=1), gpu_pod("p", 1, "other.com/fpga"))
    assert pods["p"].message.startswith("0/1 nodes are available: 1 Insufficient other.com/fpga.")


IGNORE_FPGA = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args: {ignoredResources: [other.com/fpga]}
"""


def test_a_backed_and_an_unserved_resource_cannot_fit() -> None:
    from kubesched.config import decode_config

    text = gpu_pod("p", 1, **{"other_com/fpga": 1})
    pods, _ = run(CLASS, nodes_with_gpus(count=1, gpus=1), text)
    assert pods["p"].message.startswith("0/1 nodes are available: 1 Insufficient other.com/fpga.")
    # NodeResourcesFit told to ignore it: DynamicResources finds nothing serves it on the node.
    registry = default_registry(entry_points=False)
    config = decode_config(IGNORE_FPGA, "config.yaml", registry)
    report, _ = simulate_cluster(load(CLASS, nodes_with_gpus(count=1, gpus=1), text), config, registry)
    assert report.pods[0].message.startswith("0/1 nodes are available: 1 cannot fit resource.")


def _classes() -> Any:
    return backing_classes(
        [
            msgspec.convert(
                {"metadata": {"name": "gpu"}, "spec": {"extendedResourceName": "x.com/gpu"}}, DeviceClass
            )
        ]
    )


def test_requests_and_mappings_for_init_containers_and_sidecars() -> None:
    pod = msgspec.convert(
        {
            "metadata": {"name": "p"},
            "spec": {
                "initContainers": [
                    {"name": "init-a", "resources": {"requests": {"x.com/gpu": 4}}},
                    {"name": "init-b", "resources": {"requests": {"x.com/gpu": 5}}},
                    {"name": "sidecar", "restartPolicy": "Always", "resources": {"limits": {"x.com/gpu": 1}}},
                ],
                "containers": [{"name": "main", "resources": {"requests": {"cpu": "1", "x.com/gpu": 2}}}],
            },
        },
        Pod,
    )
    requests, mappings = requests_and_mappings(pod, ["x.com/gpu"], _classes())
    # Init containers first reuse the long-lived containers' devices (sidecar 1 + main 2), then ask
    # for the rest; they run one at a time, so they share the largest such request.
    assert [(r.name, r.exactly.count if r.exactly else None) for r in requests] == [
        ("container-1-request-0", 2),
        ("container-2-request-0", 1),  # the sidecar (its limit is its request)
        ("container-3-request-1", 2),  # cpu sorts before x.com/gpu
    ]
    long_lived = [("sidecar", "container-2-request-0"), ("main", "container-3-request-1")]
    assert [(m.container_name, m.request_name) for m in mappings] == [
        *long_lived,
        ("init-a", "container-2-request-0"),
        ("init-a", "container-3-request-1"),
        ("init-a", "container-1-request-0"),  # its own container-0-request-0, merged into the largest
        ("init-b", "container-2-request-0"),
        ("init-b", "container-3-request-1"),
        ("init-b", "container-1-request-0"),
    ]


@pytest.mark.parametrize(
    ("classes", "winner"),
    [
        ([("a", "2026-01-02T00:00:00Z"), ("b", "2026-01-01T00:00:00Z")], "a"),  # the newer wins
        ([("b", "2026-01-01T00:00:00Z"), ("a", "2026-01-01T00:00:00Z")], "a"),  # tie: the lower name
    ],
)
def test_several_classes_naming_one_resource(classes: list[tuple[str, str]], winner: str) -> None:
    resolved = backing_classes(
        [
            msgspec.convert(
                {
                    "metadata": {"name": n, "creationTimestamp": t},
                    "spec": {"extendedResourceName": "x.com/gpu"},
                },
                DeviceClass,
            )
            for n, t in classes
        ]
    )
    found = resolved.get("x.com/gpu")
    assert found is not None and found.metadata.name == winner
    assert resolved.get("deviceclass.resource.kubernetes.io/b") is not None


def test_a_new_list_of_classes_is_read_anew() -> None:
    # A live informer hands out a new list on every call; a freed list's id is often reused by the
    # next one, so the memo must not go by id alone.
    for resource in ("x.com/a", "x.com/b", "x.com/a", "x.com/b"):
        cls = msgspec.convert(
            {"metadata": {"name": "gpu"}, "spec": {"extendedResourceName": resource}}, DeviceClass
        )
        found = backing_classes([cls])
        assert found.get(resource) is cls
        assert found.get({"x.com/a": "x.com/b", "x.com/b": "x.com/a"}[resource]) is None


def test_a_pod_naming_no_extended_resource_lists_no_device_class() -> None:
    def unlisted() -> list[DeviceClass]:
        raise AssertionError("the DeviceClasses were listed")

    plain = msgspec.convert(yaml.safe_load(gpu_pod("plain", 1, resource="memory")), Pod)
    assert pod_extended_claim(plain, unlisted, dict) is None
    classes = [msgspec.convert(yaml.safe_load(CLASS), DeviceClass)]
    gpu = msgspec.convert(yaml.safe_load(gpu_pod("gpu", 2)), Pod)
    found = pod_extended_claim(gpu, lambda: classes, dict)
    assert found is not None and found.amounts == {"example.com/gpu": 2}
