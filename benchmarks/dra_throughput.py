"""DRA scheduling throughput of `kubesched simulate`: 5000 nodes x 8 GPUs in ResourceSlices.

Each node publishes one ResourceSlice of 8 GPUs (as NVIDIA's DRA driver does: productName, memory,
architecture), all nodes of one model. Two pod shapes, each its own case, with the full default
profile and `percentageOfNodesToScore: 100` (every node filtered and scored):

* `OneGPU`: a claim from a template asking for one GPU of the class (`exactly`, count 1);
* `FirstAvailable`: a claim asking for an H100, else two A100s, else one A100 (`firstAvailable`);
* `NoClaims`: the same pods without claims, on the same cluster: the floor the DRA cases pay on top of.

Prints one JSON object per case:

    {"case": "OneGPU", "nodes": 5000, "devices": 40000, "pods": 2000, "scheduled": 2000,
     "seconds": 2.9, "podsPerSecond": 690.0, "cpuSeconds": 3.4, "podsPerCpuSecond": 590.0,
     "rssMiB": 900.0}

Target (issue 13): >= 500 pods/s. Run: `.venv/bin/python benchmarks/dra_throughput.py [--quick | --smoke]`.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from typing import Any

import msgspec

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod
from kubesched.api.resource import DeviceClass, ResourceClaimTemplate, ResourceSlice
from kubesched.config import default_config
from kubesched.plugins import default_registry
from kubesched.simulate.snapshot.run import simulate

DRIVER = "gpu.nvidia.com"
GPUS_PER_NODE = 8
CLASS_EXPRESSION = f'device.driver == "{DRIVER}"'


def cluster(nodes: int, pods: int, shape: str) -> LoadedObjects:
    objects = LoadedObjects()
    objects.device_classes.append(
        msgspec.convert(
            {
                "metadata": {"name": DRIVER},
                "spec": {"selectors": [{"cel": {"expression": CLASS_EXPRESSION}}]},
            },
            DeviceClass,
        )
    )
    for i in range(nodes):
        name = f"node-{i:05d}"
        model = "H100" if i % 4 == 0 else "A100"
        objects.nodes.append(
            msgspec.convert(
                {
                    "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                    "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"}},
                },
                Node,
            )
        )
        devices = [
            {
                "name": f"gpu-{j}",
                "attributes": {
                    "productName": {"string": f"NVIDIA {model}"},
                    "architecture": {"string": "Hopper" if model == "H100" else "Ampere"},
                    "index": {"int": j},
                },
                "capacity": {"memory": {"value": "80Gi"}},
            }
            for j in range(GPUS_PER_NODE)
        ]
        objects.resource_slices.append(
            msgspec.convert(
                {
                    "metadata": {"name": f"{name}-gpus"},
                    "spec": {
                        "driver": DRIVER,
                        "nodeName": name,
                        "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                        "devices": devices,
                    },
                },
                ResourceSlice,
            )
        )
    h100 = [{"cel": {"expression": f'device.attributes["{DRIVER}"].productName == "NVIDIA H100"'}}]
    a100 = [{"cel": {"expression": f'device.attributes["{DRIVER}"].productName == "NVIDIA A100"'}}]
    requests: dict[str, Any] = {
        "OneGPU": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}],
        "NoClaims": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}],
        "FirstAvailable": [
            {
                "name": "gpu",
                "firstAvailable": [
                    {"name": "h100", "deviceClassName": DRIVER, "selectors": h100},
                    {"name": "two-a100", "deviceClassName": DRIVER, "selectors": a100, "count": 2},
                    {"name": "a100", "deviceClassName": DRIVER, "selectors": a100},
                ],
            }
        ],
    }
    objects.resource_claim_templates.append(
        msgspec.convert(
            {
                "metadata": {"name": "gpu", "namespace": "default"},
                "spec": {"spec": {"devices": {"requests": requests[shape]}}},
            },
            ResourceClaimTemplate,
        )
    )
    claims = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}] if shape != "NoClaims" else []
    for i in range(pods):
        objects.pods.append(
            msgspec.convert(
                {
                    "metadata": {"name": f"pod-{i:05d}", "namespace": "default"},
                    "spec": {
                        "resourceClaims": claims,
                        "containers": [
                            {
                                "name": "c",
                                "resources": {
                                    "requests": {"cpu": "1", "memory": "4Gi"},
                                    "claims": [{"name": "gpu"}],
                                },
                            }
                        ],
                    },
                },
                Pod,
            )
        )
    return objects


def run(case: str, nodes: int, pods: int) -> dict[str, Any]:
    registry = default_registry(entry_points=False)
    config = default_config(registry)
    config.percentage_of_nodes_to_score = 100
    objects = cluster(nodes, pods, case)
    cpu = time.process_time()
    report = simulate(objects, config, registry)
    cpu = time.process_time() - cpu
    return {
        "case": case,
        "nodes": nodes,
        "devices": nodes * GPUS_PER_NODE,
        "pods": pods,
        "scheduled": report.summary.scheduled,
        "seconds": report.summary.seconds,
        "podsPerSecond": report.summary.pods_per_second,
        # On a loaded machine wall time says little: CPU seconds of the whole simulate call (setup
        # included, so pods per CPU second is a lower bound of what an idle core would do).
        "cpuSeconds": round(cpu, 2),
        "podsPerCpuSecond": round(pods / cpu, 1) if cpu > 0 else None,
        "rssMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 nodes, 200 pods")
    parser.add_argument("--smoke", action="store_true", help="20 nodes, 10 pods (CI)")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=2000)
    args = parser.parse_args()
    nodes, pods = (20, 10) if args.smoke else (500, 200) if args.quick else (args.nodes, args.pods)
    for case in ("NoClaims", "OneGPU", "FirstAvailable"):
        print(json.dumps(run(case, nodes, pods)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
