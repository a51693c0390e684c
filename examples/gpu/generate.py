"""Generate the GPU cluster scenario in `examples/gpu/cluster/`.

Run from the repository root:

    .venv/bin/python examples/gpu/generate.py

The output is deterministic (`random.Random(SEED)`, keys sorted as `kubectl get -o yaml` prints
them), so the committed YAML only changes when this file does. The scenario is an EKS-style GPU
cluster in three zones of us-east-1, oversubscribed about 1.8x so that placement quality decides
how much work runs:

* `nodes.yaml`            GPU nodes with NVIDIA GPU Feature Discovery labels and the usual
                          `nvidia.com/gpu=present:NoSchedule` taint — p4d.24xlarge (8x A100 40GB),
                          g5.12xlarge (4x A10G), g4dn.xlarge (1x T4) — as on-demand EKS managed node
                          groups (`eks.amazonaws.com/capacityType=ON_DEMAND`) and spot capacity (EKS
                          `SPOT`, Karpenter `karpenter.sh/capacity-type=spot`), plus CPU nodes;
* `priorityclasses.yaml`  inference > training > research, all `preemptionPolicy: Never` so the
                          comparison is about placement, not eviction;
* `running-pods.yaml`     what already runs: device-plugin / DCGM daemons on every GPU node and a few
                          GPU pods that leave some nodes partly used;
* `pending-pods.yaml`     1-, 2-, 4- and 8-GPU pods (inference ReplicaSets, notebooks, sweeps,
                          fine-tunes) and the members of five training gangs, sorted by name, all
                          with `schedulerName: gpu-scheduler`;
* `podgroups.yaml`        the gangs' `scheduling.x-k8s.io/v1alpha1` PodGroups (one gang, `rl-agents`,
                          has none and sizes itself with the `scheduling.x-k8s.io/min-available`
                          annotation instead).

Hard GPU needs (a product) are node selectors, which every profile honours; GPU memory minimums are
GPUScheduler's `gpu.kubesched.io/min-memory-mib` annotation, which the stock profile cannot see —
benchmarks/gpu_packing.py counts such placements as misplaced.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]

HERE = Path(__file__).resolve().parent
OUT = HERE / "cluster"
SEED = 7
SCHEDULER = "gpu-scheduler"

REGION = "us-east-1"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")

GPU = "nvidia.com/gpu"
ZONE = "topology.kubernetes.io/zone"
EKS_CAPACITY = "eks.amazonaws.com/capacityType"
EKS_NODEGROUP = "eks.amazonaws.com/nodegroup"
KARPENTER_CAPACITY = "karpenter.sh/capacity-type"
KARPENTER_POOL = "karpenter.sh/nodepool"
GPU_PRODUCT = "nvidia.com/gpu.product"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
MIN_AVAILABLE = "scheduling.x-k8s.io/min-available"
MIN_MEMORY = "gpu.kubesched.io/min-memory-mib"
SPOT_POLICY = "spot.kubesched.io/policy"
PREFERRED_ZONES = "zone.kubesched.io/preferred"

GPU_TAINT: Obj = {"key": GPU, "value": "present", "effect": "NoSchedule"}
TOLERATE_GPU: Obj = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}

A100 = "NVIDIA-A100-SXM4-40GB"
A10G = "NVIDIA-A10G"
T4 = "Tesla-T4"

PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "gpu-inference": (1000, "Latency-critical model serving: scheduled first."),
    "gpu-training": (500, "Training jobs and gangs."),
    "gpu-research": (100, "Notebooks, sweeps and fine-tunes: best effort, often on spot."),
}


@dataclass(frozen=True)
class GPUShape:
    """An instance type and what NVIDIA GPU Feature Discovery labels it with."""

    instance_type: str
    cpus: int
    memory_gib: int
    gpus: int
    product: str
    memory_mib: int
    family: str
    compute: tuple[int, int]

    def labels(self) -> dict[str, str]:
        return {
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.count": str(self.gpus),
            GPU_PRODUCT: self.product,
            "nvidia.com/gpu.memory": str(self.memory_mib),
            "nvidia.com/gpu.family": self.family,
            "nvidia.com/gpu.compute.major": str(self.compute[0]),
            "nvidia.com/gpu.compute.minor": str(self.compute[1]),
            "nvidia.com/gpu.machine": self.instance_type,
            "nvidia.com/gpu.sharing-strategy": "none",
            "nvidia.com/gpu.replicas": "1",
            "nvidia.com/cuda.driver.major": "550",
            "nvidia.com/cuda.driver.minor": "90",
            "nvidia.com/cuda.driver.rev": "07",
            "nvidia.com/cuda.runtime.major": "12",
            "nvidia.com/cuda.runtime.minor": "4",
            "nvidia.com/mig.capable": "true" if self.product == A100 else "false",
        }


P4D = GPUShape("p4d.24xlarge", 96, 1152, 8, A100, 40960, "ampere", (8, 0))
G5 = GPUShape("g5.12xlarge", 48, 192, 4, A10G, 23028, "ampere", (8, 6))
G4DN = GPUShape("g4dn.xlarge", 4, 16, 1, T4, 15360, "turing", (7, 5))


@dataclass
class GPUNode:
    name: str
    zone: str
    shape: GPUShape | None  # None: a CPU node
    spot: bool = False
    capacity_labels: dict[str, str] = field(default_factory=dict)
    used_gpus: int = 0


def build_nodes() -> list[GPUNode]:
    """Per zone: 3 A100 nodes (1 spot), 4 A10G nodes (2 spot), 1 T4 node, 2 CPU nodes."""
    nodes: list[GPUNode] = []
    for zone in ZONES:
        z = zone[-2:]  # "1a"
        for i in (1, 2):
            nodes.append(GPUNode(f"a100-od-{z}-{i}", zone, P4D, False, _eks("gpu-a100", "ON_DEMAND")))
        nodes.append(GPUNode(f"a100-spot-{z}-1", zone, P4D, True, _karpenter("gpu-spot", "spot")))
        for i in (1, 2):
            nodes.append(GPUNode(f"a10g-od-{z}-{i}", zone, G5, False, _eks("gpu-a10g", "ON_DEMAND")))
        for i in (1, 2):
            nodes.append(GPUNode(f"a10g-spot-{z}-{i}", zone, G5, True, _eks("gpu-a10g-spot", "SPOT")))
        nodes.append(GPUNode(f"t4-od-{z}-1", zone, G4DN, False, _eks("gpu-t4", "ON_DEMAND")))
        for i in (1, 2):
            nodes.append(GPUNode(f"cpu-{z}-{i}", zone, None, False, _eks("general", "ON_DEMAND")))
    return nodes


def _eks(nodegroup: str, capacity: str) -> dict[str, str]:
    return {EKS_NODEGROUP: nodegroup, EKS_CAPACITY: capacity}


def _karpenter(pool: str, capacity: str) -> dict[str, str]:
    return {KARPENTER_POOL: pool, KARPENTER_CAPACITY: capacity}


def node_object(node: GPUNode) -> Obj:
    shape = node.shape
    cpus, memory_gib, instance = (
        (shape.cpus, shape.memory_gib, shape.instance_type) if shape else (16, 64, "m6i.4xlarge")
    )
    labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": node.name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": instance,
        "topology.kubernetes.io/region": REGION,
        ZONE: node.zone,
        **node.capacity_labels,
    }
    capacity: Obj = {"cpu": str(cpus), "memory": f"{memory_gib * 1024 * 1024}Ki", "pods": "110"}
    allocatable: Obj = {
        "cpu": f"{cpus * 1000 - 80 - cpus * 10}m",
        "memory": f"{memory_gib * 1024 * 1024 * 92 // 100}Ki",
        "pods": "110",
    }
    spec: Obj = {}
    if shape is not None:
        labels.update(shape.labels())
        capacity[GPU] = str(shape.gpus)
        allocatable[GPU] = str(shape.gpus)
        spec["taints"] = [GPU_TAINT]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": labels},
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


# --------------------------------------------------------------------------- pods


@dataclass
class PodSpec:
    """One pod to write: resources, placement hints and ownership."""

    name: str
    namespace: str
    app: str
    gpus: int
    cpu: str
    memory: str
    priority_class: str
    image: str
    owner: tuple[str, str] | None = None  # (kind, name)
    node_selector: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    tolerate_gpu: bool = True
    scheduler: str = SCHEDULER


def pod_object(p: PodSpec, *, node_name: str = "") -> Obj:
    requests: Obj = {"cpu": p.cpu, "memory": p.memory}
    limits: Obj = {"memory": p.memory}
    if p.gpus:
        requests[GPU] = str(p.gpus)
        limits[GPU] = str(p.gpus)
    metadata: Obj = {
        "name": p.name,
        "namespace": p.namespace,
        "labels": {"app.kubernetes.io/name": p.app, **p.labels},
    }
    if p.annotations:
        metadata["annotations"] = dict(p.annotations)
    if p.owner is not None:
        kind, owner = p.owner
        metadata["ownerReferences"] = [
            {
                "apiVersion": "batch/v1" if kind == "Job" else "apps/v1",
                "kind": kind,
                "name": owner,
                "uid": f"{kind.lower()}-{p.namespace}-{owner}",
                "controller": True,
            }
        ]
    spec: Obj = {
        "schedulerName": p.scheduler,
        "priorityClassName": p.priority_class,
        "containers": [
            {"name": p.app, "image": p.image, "resources": {"requests": requests, "limits": limits}}
        ],
    }
    if p.node_selector:
        spec["nodeSelector"] = dict(p.node_selector)
    if p.tolerate_gpu:
        spec["tolerations"] = [TOLERATE_GPU]
    status: Obj = {"phase": "Pending"}
    if node_name:
        spec["nodeName"] = node_name
        status = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def _suffix(rng: random.Random, n: int = 5) -> str:
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))


def replicas(
    rng: random.Random,
    namespace: str,
    app: str,
    count: int,
    gpus: int,
    *,
    priority: str,
    image: str,
    cpu: str = "4",
    memory: str = "32Gi",
    node_selector: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> list[PodSpec]:
    """`count` pods of one ReplicaSet (same owner, so AZScheduler spreads them over zones)."""
    rs = f"{app}-{_suffix(rng, 10)}"
    return [
        PodSpec(
            f"{rs}-{_suffix(rng)}",
            namespace,
            app,
            gpus,
            cpu,
            memory,
            priority,
            image,
            owner=("ReplicaSet", rs),
            node_selector=dict(node_selector or {}),
            annotations=dict(annotations or {}),
        )
        for _ in range(count)
    ]


def jobs(
    rng: random.Random,
    namespace: str,
    app: str,
    count: int,
    gpus: int,
    *,
    priority: str,
    image: str,
    cpu: str = "8",
    memory: str = "64Gi",
    node_selector: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> list[PodSpec]:
    """`count` single-pod Jobs (each its own owner)."""
    out = []
    for i in range(count):
        job = f"{app}-{i + 1:02d}"
        out.append(
            PodSpec(
                f"{job}-{_suffix(rng)}",
                namespace,
                app,
                gpus,
                cpu,
                memory,
                priority,
                image,
                owner=("Job", job),
                node_selector=dict(node_selector or {}),
                annotations=dict(annotations or {}),
            )
        )
    return out


@dataclass(frozen=True)
class Gang:
    """A training job whose workers must start together."""

    name: str
    workers: int
    gpus: int
    node_selector: Mapping[str, str]
    min_member: int
    pod_group: bool = True  # False: sized by the min-available annotation instead
    launcher: bool = False  # an MPI launcher pod (no GPU) that is part of the gang
    timeout: int | None = None


GANGS = (
    Gang("llm-pretrain", 4, 8, {GPU_PRODUCT: A100}, 4, timeout=120),
    Gang("moe-giant", 6, 8, {GPU_PRODUCT: A100}, 6),
    Gang("vit-train", 4, 4, {GPU_PRODUCT: A10G}, 4),
    Gang("bert-ddp", 3, 2, {}, 4, launcher=True),
    Gang("rl-agents", 6, 2, {}, 6, pod_group=False),
)


def gang_pods(gang: Gang) -> list[PodSpec]:
    labels = {POD_GROUP_LABEL: gang.name, "training.kubeflow.org/job-name": gang.name}
    annotations = {} if gang.pod_group else {MIN_AVAILABLE: str(gang.min_member)}
    pods = [
        PodSpec(
            f"{gang.name}-worker-{i}",
            "training",
            gang.name,
            gang.gpus,
            "16",
            "128Gi",
            "gpu-training",
            "nvcr.io/nvidia/pytorch:24.08-py3",
            owner=("Job", gang.name),
            node_selector=dict(gang.node_selector),
            annotations=dict(annotations),
            labels=dict(labels),
        )
        for i in range(gang.workers)
    ]
    if gang.launcher:
        pods.append(
            PodSpec(
                f"{gang.name}-launcher",
                "training",
                gang.name,
                0,
                "1",
                "2Gi",
                "gpu-training",
                "mpioperator/mpi-operator:0.6.0",
                owner=("Job", gang.name),
                annotations=dict(annotations),
                labels=dict(labels),
                tolerate_gpu=False,
            )
        )
    return pods


def pod_group_object(gang: Gang) -> Obj:
    spec: Obj = {"minMember": gang.min_member}
    if gang.timeout is not None:
        spec["scheduleTimeoutSeconds"] = gang.timeout
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": gang.name, "namespace": "training"},
        "spec": spec,
    }


def pending_pods(rng: random.Random) -> list[PodSpec]:
    serve, torch = "vllm/vllm-openai:v0.6.1", "nvcr.io/nvidia/pytorch:24.08-py3"
    pods: list[PodSpec] = []
    # Inference: spread over zones by AZScheduler (same ReplicaSet), on-demand by SpotScheduler.
    pods += replicas(
        rng,
        "inference",
        "llm-serve",
        6,
        2,
        priority="gpu-inference",
        image=serve,
        node_selector={GPU_PRODUCT: A100},
    )
    pods += replicas(
        rng,
        "inference",
        "embed",
        12,
        1,
        priority="gpu-inference",
        image=serve,
        cpu="2",
        memory="12Gi",
        annotations={MIN_MEMORY: "16000"},  # not a T4 (15360 MiB): only GPUScheduler knows
    )
    pods += replicas(
        rng, "inference", "whisper", 6, 1, priority="gpu-inference", image=serve, cpu="2", memory="12Gi"
    )
    # Research: interruptible, so it prefers spot; sweeps and fine-tunes are single-pod Jobs.
    spot = {SPOT_POLICY: "prefer"}
    pods += jobs(
        rng,
        "research",
        "notebook",
        8,
        1,
        priority="gpu-research",
        image=torch,
        cpu="4",
        memory="32Gi",
        annotations=spot,
    )
    pods += jobs(
        rng,
        "research",
        "sweep",
        6,
        4,
        priority="gpu-research",
        image=torch,
        annotations={**spot, MIN_MEMORY: "20000", PREFERRED_ZONES: "us-east-1a"},
    )
    pods += jobs(
        rng,
        "research",
        "finetune",
        4,
        8,
        priority="gpu-research",
        image=torch,
        node_selector={GPU_PRODUCT: A100},
    )
    for gang in GANGS:
        pods += gang_pods(gang)
    return sorted(pods, key=lambda p: (p.namespace, p.name))


def running_pods(rng: random.Random, nodes: Sequence[GPUNode]) -> list[Obj]:
    """Daemons on every GPU node, and some GPU pods already running (partly used nodes)."""
    out: list[Obj] = []
    for node in nodes:
        if node.shape is None:
            continue
        for app, image in (
            ("nvidia-device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.16.2"),
            ("dcgm-exporter", "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.7-3.5.0-ubuntu22.04"),
        ):
            daemon = PodSpec(
                f"{app}-{_suffix(rng)}",
                "gpu-operator",
                app,
                0,
                "50m",
                "128Mi",
                "system-node-critical",
                image,
                owner=("DaemonSet", app),
                scheduler="default-scheduler",
            )
            out.append(pod_object(daemon, node_name=node.name))
    busy = {"a100-od-1b-1": 3, "a10g-od-1a-1": 1, "a10g-od-1c-2": 2, "a10g-spot-1b-1": 1, "t4-od-1c-1": 1}
    by_name = {n.name: n for n in nodes}
    for name, gpus in busy.items():
        node = by_name[name]
        for i in range(gpus):
            pod = PodSpec(
                f"legacy-batch-{node.name}-{i}",
                "research",
                "legacy-batch",
                1,
                "2",
                "8Gi",
                "gpu-research",
                "nvcr.io/nvidia/pytorch:24.08-py3",
                owner=("Job", f"legacy-batch-{node.name}-{i}"),
            )
            out.append(pod_object(pod, node_name=name))
            node.used_gpus += 1
    return out


def priority_class_objects() -> list[Obj]:
    out = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "system-node-critical"},
            "value": 2000001000,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": "Used for system critical pods that must not be moved from their current node.",
        }
    ]
    for name, (value, description) in PRIORITY_CLASSES.items():
        out.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "preemptionPolicy": "Never",
                "description": description,
            }
        )
    return out


# --------------------------------------------------------------------------- output

HEADER = "# Generated by examples/gpu/generate.py; edit that file and re-run it instead of editing this.\n"


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=True, default_flow_style=False, width=120)


def write_list(path: Path, kind: str, items: Iterable[Obj]) -> None:
    path.write_text(HEADER + _dump({"apiVersion": "v1", "kind": kind, "items": list(items)}))


def write_documents(path: Path, items: Iterable[Obj]) -> None:
    path.write_text(HEADER + "---\n".join(_dump(item) for item in items))


def main() -> None:
    rng = random.Random(SEED)
    OUT.mkdir(parents=True, exist_ok=True)
    nodes = build_nodes()
    running = running_pods(rng, nodes)
    pending = pending_pods(rng)
    write_list(OUT / "nodes.yaml", "NodeList", (node_object(n) for n in nodes))
    write_list(OUT / "running-pods.yaml", "PodList", running)
    write_list(OUT / "pending-pods.yaml", "PodList", (pod_object(p) for p in pending))
    write_documents(OUT / "podgroups.yaml", (pod_group_object(g) for g in GANGS if g.pod_group))
    write_documents(OUT / "priorityclasses.yaml", priority_class_objects())
    gpus = sum(n.shape.gpus for n in nodes if n.shape is not None)
    used = sum(n.used_gpus for n in nodes)
    demand = sum(p.gpus for p in pending)
    print(
        f"{len(nodes)} nodes ({sum(1 for n in nodes if n.shape)} with GPUs: {gpus} GPUs, {used} in use), "
        f"{len(running)} running pods, {len(pending)} pending pods asking for {demand} GPUs, "
        f"{sum(1 for g in GANGS)} gangs"
    )


if __name__ == "__main__":
    main()
