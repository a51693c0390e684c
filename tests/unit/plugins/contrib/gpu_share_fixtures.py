"""A small DRA cluster of shareable GPUs (the openb representation) and a one-policy profile."""

from __future__ import annotations

from typing import Any

import yaml

from kubesched.api.loader import LoadedObjects, load_documents
from kubesched.config import decode_config, default_config
from kubesched.plugins import default_registry
from kubesched.simulate.snapshot.run import simulate

DRIVER = "gpu.kubesched.io"

CLASS = f"""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: {DRIVER}}}
spec:
  selectors: [{{cel: {{expression: 'device.driver == "{DRIVER}"'}}}}]
"""

PROFILE = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 100
profiles:
- schedulerName: default-scheduler
  plugins:
    preFilter: {enabled: [{name: %(policy)s}]}
    score:
      disabled: [{name: '*'}]
      enabled: [{name: %(policy)s, weight: 1}]
  pluginConfig:
  - name: %(policy)s
    args: %(args)s
"""


def gpu_node(name: str, gpus: int, *, cpu: str = "32", model: str = "V100") -> list[dict[str, Any]]:
    devices = [
        {
            "name": f"gpu-{j}",
            "attributes": {"model": {"string": model}},
            "capacity": {"share": {"value": "1000"}},
            "allowMultipleAllocations": True,
        }
        for j in range(gpus)
    ]
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "256Gi", "pods": "110"}},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-gpus"},
            "spec": {
                "driver": DRIVER,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "nodeName": name,
                "devices": devices,
            },
        },
    ]


def task(name: str, *, cpu: str = "1", share: int | None = None, gpus: int = 0) -> list[dict[str, Any]]:
    """A pod asking `share` of one GPU, `gpus` whole GPUs, or none, through its own claim."""
    container: dict[str, Any] = {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
    spec: dict[str, Any] = {"containers": [container]}
    docs: list[dict[str, Any]] = []
    if share is not None or gpus:
        request: dict[str, Any] = {"deviceClassName": DRIVER}
        if share is not None:
            request["capacity"] = {"requests": {"share": str(share)}}
        else:
            request["count"] = gpus
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"{name}-gpu", "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}},
            }
        )
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"{name}-gpu"}]
        container["resources"]["claims"] = [{"name": "gpu"}]
    docs.append(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}
    )
    return docs


def placements(policy: str | None, *objects: list[dict[str, Any]], args: str = "{}") -> dict[str, str | None]:
    """Pod name -> node (None: not scheduled) after one simulated run, in the order given."""
    registry = default_registry(entry_points=False)
    if policy is None:
        config = default_config(registry)
    else:
        config = decode_config(PROFILE % {"policy": policy, "args": args}, "config.yaml", registry)
    loaded = LoadedObjects()
    text = CLASS + "---\n" + yaml.safe_dump_all([d for group in objects for d in group])
    for obj in load_documents(text, "test.yaml"):
        loaded.add(obj)
    report = simulate(loaded, config, registry)
    return {p.name: p.node for p in report.pods}
