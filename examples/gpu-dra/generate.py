"""Generate the GPU cluster with Dynamic Resource Allocation in `examples/gpu-dra/cluster/`.

Run from the repository root:

    .venv/bin/python examples/gpu-dra/generate.py

Deterministic: the committed YAML only changes when this file does. The cluster is what NVIDIA's DRA
driver (`gpu.nvidia.com`) publishes on a small mixed fleet in two zones:

* `nodes.yaml` — two H100 nodes (8 GPUs each, on-demand), two A100 nodes (4x A100 80GB, MIG
  enabled), two L4 nodes (4 GPUs each, spot capacity);
* `slices.yaml` — one ResourceSlice per node. GPUs carry the driver's attributes (`type`, `uuid`,
  `productName`, `brand`, `architecture`, `cudaComputeCapability` and `driverVersion` as versions,
  `index`) and `memory` capacity. Each A100 is offered whole *and* as MIG partitions (seven
  `1g.10gb`, two `3g.40gb`): partitionable devices sharing the GPU's `memory` and `multiprocessors`
  counters, so taking the whole GPU leaves no partition and partitions never exceed the GPU;
* `classes.yaml` — DeviceClasses `gpu.nvidia.com` (whole GPUs) and `mig.nvidia.com` (partitions);
* `templates.yaml` — ResourceClaimTemplates: `training` (one H100, else two A100s of one product:
  `firstAvailable`), `inference` (a `1g.10gb` partition, else an L4), `four-h100` (four H100s of
  one product: `matchAttribute`);
* `pods.yaml` — training and inference pods, and a gang of four 4-GPU training pods
  (`scheduling.x-k8s.io/pod-group`, run by the `gpu-scheduler` profile of scheduler-config.yaml).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).parent / "cluster"
DRIVER = "gpu.nvidia.com"
NAMESPACE = "ml"
ZONE = "topology.kubernetes.io/zone"

#: (node, product, architecture, compute capability, GPUs, memory, zone, capacity type)
NODES = [
    ("h100-0", "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 8, "80Gi", "us-east-1a", "on-demand"),
    ("h100-1", "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 8, "80Gi", "us-east-1b", "on-demand"),
    ("a100-0", "NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", 4, "80Gi", "us-east-1a", "on-demand"),
    ("a100-1", "NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", 4, "80Gi", "us-east-1b", "on-demand"),
    ("l4-0", "NVIDIA L4", "Ada Lovelace", "8.9.0", 4, "24Gi", "us-east-1a", "spot"),
    ("l4-1", "NVIDIA L4", "Ada Lovelace", "8.9.0", 4, "24Gi", "us-east-1b", "spot"),
]
#: MIG profiles of an A100 80GB: (profile, how many, memory, multiprocessors)
MIG_PROFILES = [("1g.10gb", 7, "10Gi", 14), ("3g.40gb", 2, "40Gi", 42)]
A100_MULTIPROCESSORS = 98


def uuid(*parts: str) -> str:
    h = hashlib.sha256("/".join(parts).encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def node(name: str, zone: str, capacity_type: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                ZONE: zone,
                "karpenter.sh/capacity-type": capacity_type,
                "nvidia.com/dra-driver": "true",
            },
        },
        "status": {"allocatable": {"cpu": "96", "memory": "1Ti", "pods": "110", "ephemeral-storage": "2Ti"}},
    }


def gpu(name: str, product: str, arch: str, cc: str, index: int, memory: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": f"gpu-{index}",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": uuid(name, str(index))},
            "productName": {"string": product},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": arch},
            "cudaComputeCapability": {"version": cc},
            "driverVersion": {"version": "570.124.6"},
            "index": {"int": index},
        },
        "capacity": {"memory": {"value": memory}},
        **extra,
    }


def slice_for(name: str, product: str, arch: str, cc: str, count: int, memory: str) -> dict[str, Any]:
    devices: list[dict[str, Any]] = []
    counters: list[dict[str, Any]] = []
    mig = product.startswith("NVIDIA A100")
    for i in range(count):
        if not mig:
            devices.append(gpu(name, product, arch, cc, i, memory))
            continue
        counter_set = f"gpu-{i}-counter-set"
        counters.append(
            {
                "name": counter_set,
                "counters": {
                    "memory": {"value": memory},
                    "multiprocessors": {"value": str(A100_MULTIPROCESSORS)},
                },
            }
        )
        whole = {"memory": {"value": memory}, "multiprocessors": {"value": str(A100_MULTIPROCESSORS)}}
        devices.append(
            gpu(
                name,
                product,
                arch,
                cc,
                i,
                memory,
                consumesCounters=[{"counterSet": counter_set, "counters": whole}],
            )
        )
        for profile, many, mig_memory, sms in MIG_PROFILES:
            for j in range(many):
                devices.append(
                    {
                        "name": f"gpu-{i}-mig-{profile}-{j}",
                        "attributes": {
                            "type": {"string": "mig"},
                            "uuid": {"string": uuid(name, str(i), profile, str(j))},
                            "profile": {"string": profile},
                            "parentUUID": {"string": uuid(name, str(i))},
                            "parentIndex": {"int": i},
                            "productName": {"string": product},
                            "architecture": {"string": arch},
                            "driverVersion": {"version": "570.124.6"},
                        },
                        "capacity": {"memory": {"value": mig_memory}},
                        "consumesCounters": [
                            {
                                "counterSet": counter_set,
                                "counters": {
                                    "memory": {"value": mig_memory},
                                    "multiprocessors": {"value": str(sms)},
                                },
                            }
                        ],
                    }
                )
    spec: dict[str, Any] = {
        "driver": DRIVER,
        "nodeName": name,
        "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
        "devices": devices,
    }
    if counters:
        spec["sharedCounters"] = counters
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-{DRIVER}"},
        "spec": spec,
    }


def device_class(name: str, kind: str) -> dict[str, Any]:
    expression = f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].type == "{kind}"'
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def product(prefix: str) -> list[dict[str, Any]]:
    return [{"cel": {"expression": f'device.attributes["{DRIVER}"].productName.startsWith("{prefix}")'}}]


def template(name: str, devices: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"spec": {"devices": devices}},
    }


TEMPLATES = [
    template(
        "training",
        {
            "requests": [
                {
                    "name": "gpu",
                    "firstAvailable": [
                        {
                            "name": "h100",
                            "deviceClassName": "gpu.nvidia.com",
                            "selectors": product("NVIDIA H100"),
                        },
                        {
                            "name": "two-a100",
                            "deviceClassName": "gpu.nvidia.com",
                            "selectors": product("NVIDIA A100"),
                            "count": 2,
                        },
                    ],
                }
            ],
            "constraints": [{"requests": ["gpu"], "matchAttribute": f"{DRIVER}/productName"}],
        },
    ),
    template(
        "inference",
        {
            "requests": [
                {
                    "name": "gpu",
                    "firstAvailable": [
                        {
                            "name": "mig",
                            "deviceClassName": "mig.nvidia.com",
                            "selectors": [
                                {"cel": {"expression": f'device.attributes["{DRIVER}"].profile == "1g.10gb"'}}
                            ],
                        },
                        {
                            "name": "l4",
                            "deviceClassName": "gpu.nvidia.com",
                            "selectors": product("NVIDIA L4"),
                        },
                    ],
                }
            ]
        },
    ),
    template(
        "four-h100",
        {
            "requests": [
                {
                    "name": "gpus",
                    "exactly": {
                        "deviceClassName": "gpu.nvidia.com",
                        "selectors": product("NVIDIA H100"),
                        "count": 4,
                    },
                }
            ],
            "constraints": [{"matchAttribute": f"{DRIVER}/productName"}],
        },
    ),
]


def pod(
    name: str,
    claim_template: str,
    *,
    scheduler: str = "default-scheduler",
    labels: dict[str, str] | None = None,
    cpu: str = "4",
    memory: str = "32Gi",
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels or {}},
        "spec": {
            "schedulerName": scheduler,
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": claim_template}],
            "containers": [
                {
                    "name": "main",
                    "image": f"registry.example.com/{claim_template}:1",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}, "claims": [{"name": "gpu"}]},
                }
            ],
        },
    }


def pods() -> list[dict[str, Any]]:
    out = [pod(f"train-{i:02d}", "training") for i in range(6)]
    out += [pod(f"infer-{i:02d}", "inference", cpu="2", memory="8Gi") for i in range(20)]
    gang = {"scheduling.x-k8s.io/pod-group": "llm-pretrain"}
    out += [
        pod(f"llm-pretrain-{i}", "four-h100", scheduler="gpu-scheduler", labels=gang, cpu="32")
        for i in range(4)
    ]
    return out


PODGROUP = {
    "apiVersion": "scheduling.x-k8s.io/v1alpha1",
    "kind": "PodGroup",
    "metadata": {"name": "llm-pretrain", "namespace": NAMESPACE},
    "spec": {"minMember": 4, "scheduleTimeoutSeconds": 60},
}


def write(name: str, docs: list[dict[str, Any]]) -> None:
    text = "---\n".join(yaml.safe_dump(d, sort_keys=True) for d in docs)
    (OUT / name).write_text(text)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    write("namespace.yaml", [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    write("nodes.yaml", [node(n, zone, ct) for n, _, _, _, _, _, zone, ct in NODES])
    write("slices.yaml", [slice_for(n, p, a, cc, c, m) for n, p, a, cc, c, m, _, _ in NODES])
    write("classes.yaml", [device_class("gpu.nvidia.com", "gpu"), device_class("mig.nvidia.com", "mig")])
    write("templates.yaml", TEMPLATES)
    write("pods.yaml", pods())
    write("podgroups.yaml", [PODGROUP])


if __name__ == "__main__":
    main()
