"""Generate the demo cluster in `examples/demo/cluster/`.

Run from the repository root:

    .venv/bin/python examples/demo/generate.py

The output is deterministic (`random.Random(42)`, keys sorted as `kubectl get -o yaml` prints them),
so the committed YAML only changes when this file does. It writes:

* `nodes.yaml`            a `kind: List` of ~60 Nodes in 3 zones: control plane, general workers (some
                          labelled `node=hello`, one cordoned), NVIDIA GPU nodes with GPU feature-discovery
                          labels, spot nodes from an EKS managed node group and a Karpenter node pool;
* `running-pods.yaml`     a `PodList` of ~120 pods already bound (`spec.nodeName`);
* `pending-pods.yaml`     ~300 pending pods, one YAML document each, of every shape the demo should show;
* `priorityclasses.yaml`  the PriorityClasses the pods name (the two built-in system classes too).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]

HERE = Path(__file__).resolve().parent
OUT = HERE / "cluster"

REGION = "us-east-1"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

# Well-known label keys and taints.
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
INGRESS_ROLE = "node-role.kubernetes.io/ingress"
EKS_CAPACITY = "eks.amazonaws.com/capacityType"
KARPENTER_CAPACITY = "karpenter.sh/capacity-type"
GPU = "nvidia.com/gpu"
GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_MEMORY = "nvidia.com/gpu.memory"
GPU_FAMILY = "nvidia.com/gpu.family"

CONTROL_PLANE_TAINT: Obj = {"key": CONTROL_PLANE, "effect": "NoSchedule"}
GPU_TAINT: Obj = {"key": GPU, "value": "present", "effect": "NoSchedule"}
SPOT_TAINT: Obj = {"key": "spot", "value": "true", "effect": "NoSchedule"}
CORDON_TAINT: Obj = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}

TOLERATE_CONTROL_PLANE: Obj = {"key": CONTROL_PLANE, "operator": "Exists", "effect": "NoSchedule"}
TOLERATE_GPU: Obj = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
TOLERATE_SPOT: Obj = {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}

# Priority classes: name -> (value, preemptionPolicy, description).
PRIORITY_CLASSES: dict[str, tuple[int, str, str]] = {
    "system-node-critical": (
        2000001000,
        "PreemptLowerPriority",
        "Used for system critical pods that must not be moved from their current node.",
    ),
    "system-cluster-critical": (
        2000000000,
        "PreemptLowerPriority",
        "Used for system critical pods that must run in the cluster, but can be moved to another node "
        "if necessary.",
    ),
    "high-priority": (
        100000,
        "PreemptLowerPriority",
        "User-facing services: scheduled first, may preempt lower-priority pods.",
    ),
    "low-priority": (-100, "Never", "Best-effort batch work: scheduled last and never preempts other pods."),
}

# Kubernetes' alphabet for generated name suffixes (no vowels, no confusable digits).
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


@dataclass(frozen=True)
class Image:
    name: str
    size_bytes: int


def _images(*items: tuple[str, str, float]) -> dict[str, Image]:
    return {key: Image(name, int(mb * 1_000_000)) for key, name, mb in items}


IMAGES = _images(
    ("pause", "registry.k8s.io/pause:3.10", 0.32),
    ("kube-proxy", "registry.k8s.io/kube-proxy:v1.31.1", 30.2),
    ("coredns", "registry.k8s.io/coredns/coredns:v1.11.3", 18.6),
    ("metrics-server", "registry.k8s.io/metrics-server/metrics-server:v0.7.2", 19.5),
    ("etcd", "registry.k8s.io/etcd:3.5.15-0", 56.9),
    ("kube-apiserver", "registry.k8s.io/kube-apiserver:v1.31.1", 28.1),
    ("cloud-controller", "registry.k8s.io/provider-aws/cloud-controller-manager:v1.31.1", 38.4),
    ("ingress-nginx", "registry.k8s.io/ingress-nginx/controller:v1.11.2", 105.3),
    ("nginx", "docker.io/library/nginx:1.27", 72.9),
    ("redis", "docker.io/library/redis:7.4", 45.1),
    ("postgres", "docker.io/library/postgres:16.4", 157.6),
    ("python", "docker.io/library/python:3.12-slim", 48.7),
    ("busybox", "docker.io/library/busybox:1.36", 2.2),
    ("spark", "docker.io/apache/spark:3.5.1", 682.4),
    ("storefront", "ghcr.io/acme/storefront:2.4.1", 212.5),
    ("checkout", "ghcr.io/acme/checkout-api:1.18.0", 168.3),
    ("search", "ghcr.io/acme/search:3.2.0", 486.0),
    ("recommend", "ghcr.io/acme/recommendations:0.7.4", 934.8),
    ("edge-cache", "ghcr.io/acme/edge-cache:1.3.0", 96.4),
    ("legacy-api", "ghcr.io/acme/legacy-api:5.12.2", 377.1),
    ("etl", "ghcr.io/acme/etl-worker:0.9.3", 842.7),
    ("reports", "ghcr.io/acme/report-builder:2.0.1", 264.9),
    ("device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.16.2", 127.4),
    ("cuda", "nvcr.io/nvidia/cuda:12.6.1-base-ubuntu22.04", 88.6),
    ("pytorch", "nvcr.io/nvidia/pytorch:24.08-py3", 9871.2),
    ("triton", "nvcr.io/nvidia/tritonserver:24.08-py3", 7420.5),
)
#: App images pre-pulled at random on general and spot workers, so ImageLocality has something to score.
WORKER_APP_IMAGES = (
    "nginx", "redis", "postgres", "python", "busybox", "spark", "storefront", "checkout", "search",
    "recommend", "edge-cache", "legacy-api", "etl", "reports",
)  # fmt: skip


# ----------------------------------------------------------------------------------------- nodes


@dataclass(frozen=True)
class Shape:
    """An EC2 instance type as a node: vCPUs, memory, local disk and (optionally) NVIDIA GPUs."""

    instance_type: str
    cpu: int
    memory_gib: int
    disk_gib: int = 100
    gpus: int = 0
    gpu_product: str = ""
    gpu_memory_mib: int = 0
    gpu_family: str = ""
    compute: str = ""


M5_XLARGE = Shape("m5.xlarge", 4, 16)
M5_2XLARGE = Shape("m5.2xlarge", 8, 32)
M5_4XLARGE = Shape("m5.4xlarge", 16, 64)
M5A_2XLARGE = Shape("m5a.2xlarge", 8, 32)
C5_2XLARGE = Shape("c5.2xlarge", 8, 16)
R5_XLARGE = Shape("r5.xlarge", 4, 32)
M6I_2XLARGE = Shape("m6i.2xlarge", 8, 32)
G4DN_XLARGE = Shape("g4dn.xlarge", 4, 16, 125, 1, "Tesla-T4", 15360, "turing", "7.5")
G4DN_12XLARGE = Shape("g4dn.12xlarge", 48, 192, 900, 4, "Tesla-T4", 15360, "turing", "7.5")
G5_12XLARGE = Shape("g5.12xlarge", 48, 192, 3800, 4, "NVIDIA-A10G", 23028, "ampere", "8.6")
P4DE_24XLARGE = Shape("p4de.24xlarge", 96, 1152, 8000, 8, "NVIDIA-A100-SXM4-80GB", 81920, "ampere", "8.0")
P5_48XLARGE = Shape("p5.48xlarge", 192, 2048, 8000, 8, "NVIDIA-H100-80GB-HBM3", 81559, "hopper", "9.0")


@dataclass
class DemoNode:
    """A node being built, with the free capacity left for placing running pods."""

    name: str
    zone: str
    shape: Shape
    labels: dict[str, str]
    taints: list[Obj] = field(default_factory=list)
    unschedulable: bool = False
    images: set[str] = field(default_factory=set)
    free_cpu_m: int = 0
    free_memory: int = 0
    free_gpus: int = 0
    free_pods: int = 110
    host_ports: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.free_cpu_m = allocatable_cpu_m(self.shape.cpu)
        self.free_memory = allocatable_memory_ki(self.shape.memory_gib) * KIB
        self.free_gpus = self.shape.gpus


def allocatable_cpu_m(cpus: int) -> int:
    """Capacity minus a kube-reserved CPU that grows slowly with the core count (as on EKS)."""
    return cpus * 1000 - (70 + 5 * min(cpus - 2, 2) + (cpus - 4) * 5 // 2)


def capacity_memory_ki(gib: int) -> int:
    return gib * 1024 * 97 // 100 * KIB  # firmware and kernel keep ~3%; whole MiB, for readable reports


def allocatable_memory_ki(gib: int) -> int:
    return capacity_memory_ki(gib) - (255 + 11 * 110 + 100) * KIB  # kube-reserved + eviction threshold


def build_nodes(rng: random.Random) -> list[DemoNode]:
    nodes: list[DemoNode] = []

    def add(name: str, zone: str, shape: Shape, extra: Mapping[str, str] | None = None) -> DemoNode:
        labels = {
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            HOSTNAME: name,
            INSTANCE_TYPE: shape.instance_type,
            "topology.kubernetes.io/region": REGION,
            ZONE: zone,
            **(extra or {}),
        }
        node = DemoNode(name, zone, shape, labels)
        node.images |= {"pause", "kube-proxy"}
        nodes.append(node)
        return node

    # Control plane: one per zone, tainted.
    for zone in ZONES:
        cp = add(f"cp-{zone[-2:]}", zone, M5_XLARGE, {CONTROL_PLANE: ""})
        cp.taints.append(CONTROL_PLANE_TAINT)
        cp.images |= {"etcd", "kube-apiserver", "coredns"}

    # General workers: 13 per zone in three sizes; two per zone labelled node=hello, one per zone
    # an ingress node, one cordoned in us-east-1c.
    general = [M5_XLARGE] * 4 + [M5_2XLARGE] * 5 + [M5_4XLARGE] * 4
    for zone in ZONES:
        for i, shape in enumerate(general, start=1):
            extra: dict[str, str] = {}
            if i in (3, 8):
                extra["node"] = "hello"
            if i == 1:
                extra[INGRESS_ROLE] = ""
            node = add(f"worker-{zone[-2:]}-{i:02d}", zone, shape, extra)
            if zone == ZONES[2] and i == 6:
                node.unschedulable = True
                node.taints.append(CORDON_TAINT)
    # A fourth ingress node, so that one of the two pending ingress replicas still fits.
    next(n for n in nodes if n.name == "worker-1b-02").labels[INGRESS_ROLE] = ""

    # NVIDIA GPU nodes; all but the two single-T4 nodes carry the nvidia.com/gpu taint.
    gpu_nodes = [
        ("gpu-t4-1a-1", ZONES[0], G4DN_XLARGE, False),
        ("gpu-t4-1b-1", ZONES[1], G4DN_XLARGE, False),
        ("gpu-t4x4-1b-1", ZONES[1], G4DN_12XLARGE, True),
        ("gpu-t4x4-1c-1", ZONES[2], G4DN_12XLARGE, True),
        ("gpu-a10g-1c-1", ZONES[2], G5_12XLARGE, True),
        ("gpu-a100-1a-1", ZONES[0], P4DE_24XLARGE, True),
        ("gpu-a100-1c-1", ZONES[2], P4DE_24XLARGE, True),
        ("gpu-h100-1a-1", ZONES[0], P5_48XLARGE, True),
    ]
    for name, zone, shape, tainted in gpu_nodes:
        major, minor = shape.compute.split(".")
        node = add(
            name,
            zone,
            shape,
            {
                "nvidia.com/gpu.present": "true",
                GPU_PRODUCT: shape.gpu_product,
                "nvidia.com/gpu.count": str(shape.gpus),
                GPU_MEMORY: str(shape.gpu_memory_mib),
                GPU_FAMILY: shape.gpu_family,
                "nvidia.com/gpu.compute.major": major,
                "nvidia.com/gpu.compute.minor": minor,
                "nvidia.com/cuda.driver.major": "550",
                "nvidia.com/mig.capable": "true" if shape.gpu_family in ("ampere", "hopper") else "false",
            },
        )
        if tainted:
            node.taints.append(GPU_TAINT)
        node.images |= {"device-plugin", "cuda"}
        node.images.add("triton" if shape.gpu_product == "Tesla-T4" else "pytorch")

    # Spot: an EKS managed node group (untainted) and a Karpenter node pool (tainted spot=true).
    eks_spot = [M5A_2XLARGE, C5_2XLARGE, M6I_2XLARGE, M5A_2XLARGE, R5_XLARGE]
    for i, shape in enumerate(eks_spot):
        zone = ZONES[i % 3]
        add(
            f"spot-eks-{zone[-2:]}-{i + 1}",
            zone,
            shape,
            {EKS_CAPACITY: "SPOT", "eks.amazonaws.com/nodegroup": "spot-general"},
        )
    karpenter_spot = [M5A_2XLARGE, M6I_2XLARGE, C5_2XLARGE, R5_XLARGE, M5A_2XLARGE]
    for i, shape in enumerate(karpenter_spot):
        zone = ZONES[(i + 1) % 3]
        node = add(
            f"spot-kp-{zone[-2:]}-{i + 1}",
            zone,
            shape,
            {KARPENTER_CAPACITY: "spot", "karpenter.sh/nodepool": "spot-batch"},
        )
        node.taints.append(SPOT_TAINT)

    # Pre-pulled application images on workers.
    for node in nodes:
        if node.name.startswith(("worker-", "spot-")):
            node.images |= {key for key in WORKER_APP_IMAGES if rng.random() < 0.3}
    return nodes


def node_object(node: DemoNode) -> Obj:
    shape = node.shape
    capacity: Obj = {
        "cpu": str(shape.cpu),
        "ephemeral-storage": f"{shape.disk_gib * MIB - 2_580}Ki",
        "memory": f"{capacity_memory_ki(shape.memory_gib)}Ki",
        "pods": "110",
    }
    allocatable: Obj = {
        "cpu": f"{allocatable_cpu_m(shape.cpu)}m",
        "ephemeral-storage": str(shape.disk_gib * GIB * 9 // 10),
        "memory": f"{allocatable_memory_ki(shape.memory_gib)}Ki",
        "pods": "110",
    }
    if shape.gpus:
        capacity[GPU] = allocatable[GPU] = str(shape.gpus)
    images = sorted((IMAGES[key] for key in node.images), key=lambda im: (-im.size_bytes, im.name))
    spec: Obj = {}
    if node.taints:
        spec["taints"] = node.taints
    if node.unschedulable:
        spec["unschedulable"] = True
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": node.labels},
        "spec": spec,
        "status": {
            "allocatable": allocatable,
            "capacity": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "images": [{"names": [im.name], "sizeBytes": im.size_bytes} for im in images],
        },
    }
    if not spec:
        del obj["spec"]
    return obj


# ------------------------------------------------------------------------------------------ pods


def suffix(rng: random.Random, n: int = 5) -> str:
    return "".join(rng.choice(NAME_ALPHABET) for _ in range(n))


def quantity_cpu(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def quantity_memory(nbytes: int) -> str:
    return f"{nbytes // GIB}Gi" if nbytes % GIB == 0 else f"{nbytes // MIB}Mi"


@dataclass
class PodShape:
    """What a pod asks for; `pod_object` turns it into a manifest."""

    app: str
    namespace: str
    image: str
    cpu_m: int
    memory: int
    gpus: int = 0
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: Obj | None = None
    tolerations: list[Obj] = field(default_factory=list)
    host_ports: list[int] = field(default_factory=list)
    priority_class: str = ""
    scheduler_name: str = ""
    gates: list[str] = field(default_factory=list)
    owner_kind: str = "ReplicaSet"
    bad_memory: str = ""  # an invalid quantity, written instead of `memory`


class Namer:
    """Pod names as controllers make them: `<deploy>-<template-hash>-<x>`, `<job>-<x>`, `<sts>-<i>`."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.hashes: dict[str, str] = {}
        self.ordinals: dict[str, int] = {}
        self.used: set[str] = set()

    def template_hash(self, app: str) -> str:
        if app not in self.hashes:
            self.hashes[app] = suffix(self.rng, 10)
        return self.hashes[app]

    def name(self, shape: PodShape) -> tuple[str, str]:
        """(pod name, owner name)."""
        if shape.owner_kind == "StatefulSet":
            i = self.ordinals.get(shape.app, 0)
            self.ordinals[shape.app] = i + 1
            return f"{shape.app}-{i}", shape.app
        if shape.owner_kind == "ReplicaSet":
            owner = f"{shape.app}-{self.template_hash(shape.app)}"
        else:
            owner = shape.app
        while True:
            name = f"{owner}-{suffix(self.rng)}"
            if name not in self.used:
                self.used.add(name)
                return name, owner


def pod_object(shape: PodShape, namer: Namer, *, node_name: str = "", running: bool = False) -> Obj:
    name, owner = namer.name(shape)
    labels: dict[str, str] = {"app": shape.app}
    if shape.owner_kind == "ReplicaSet":
        labels["pod-template-hash"] = owner.rsplit("-", 1)[1]
    elif shape.owner_kind == "Job":
        labels["job-name"] = owner
    elif shape.owner_kind == "StatefulSet":
        labels["statefulset.kubernetes.io/pod-name"] = name
    owner_ref: Obj = {
        "apiVersion": "batch/v1" if shape.owner_kind == "Job" else "apps/v1",
        "kind": shape.owner_kind,
        "name": owner,
        "controller": True,
    }
    requests: Obj = {
        "cpu": quantity_cpu(shape.cpu_m),
        "memory": shape.bad_memory or quantity_memory(shape.memory),
    }
    resources: Obj = {"requests": requests}
    if shape.gpus:
        requests[GPU] = str(shape.gpus)
        resources["limits"] = {GPU: str(shape.gpus)}
    container: Obj = {"name": shape.app, "image": IMAGES[shape.image].name, "resources": resources}
    if shape.host_ports:
        container["ports"] = [
            {"containerPort": port, "hostPort": port, "name": f"port-{port}", "protocol": "TCP"}
            for port in shape.host_ports
        ]
    spec: Obj = {"containers": [container]}
    if node_name:
        spec["nodeName"] = node_name
    if shape.node_selector:
        spec["nodeSelector"] = shape.node_selector
    if shape.affinity:
        spec["affinity"] = shape.affinity
    if shape.tolerations:
        spec["tolerations"] = shape.tolerations
    if shape.priority_class:
        value, policy, _ = PRIORITY_CLASSES[shape.priority_class]
        spec["priorityClassName"] = shape.priority_class
        spec["priority"] = value  # filled in by the Priority admission plugin
        spec["preemptionPolicy"] = policy
    if shape.scheduler_name:
        spec["schedulerName"] = shape.scheduler_name
    if shape.gates:
        spec["schedulingGates"] = [{"name": gate} for gate in shape.gates]
    status: Obj = {"phase": "Running" if running else "Pending"}
    if shape.gates:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": shape.namespace,
            "labels": labels,
            "ownerReferences": [owner_ref],
        },
        "spec": spec,
        "status": status,
    }


def required_affinity(*terms: Sequence[tuple[str, str, Sequence[str]]]) -> Obj:
    """requiredDuringScheduling...: terms are ORed, each a list of (key, operator, values) ANDed."""
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [_expr(*e) for e in term]} for term in terms]
        }
    }


def preferred_affinity(*prefs: tuple[int, str, str, Sequence[str]]) -> Obj:
    return {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": w, "preference": {"matchExpressions": [_expr(key, op, values)]}}
            for w, key, op, values in prefs
        ]
    }


def node_affinity(*parts: Obj) -> Obj:
    merged: Obj = {}
    for part in parts:
        merged.update(part)
    return {"nodeAffinity": merged}


def _expr(key: str, operator: str, values: Sequence[str]) -> Obj:
    expr: Obj = {"key": key, "operator": operator}
    if values:
        expr["values"] = list(values)
    return expr


# -------------------------------------------------------------------------------- running pods


def tolerates(node: DemoNode, tolerations: Iterable[Obj]) -> bool:
    tols = list(tolerations)
    for taint in node.taints:
        if taint is CORDON_TAINT:
            continue  # running pods were there before the node was cordoned
        if not any(
            t["key"] == taint["key"] and t.get("value", taint.get("value")) == taint.get("value")
            for t in tols
        ):
            return False
    return True


def place(
    rng: random.Random, nodes: Sequence[DemoNode], shape: PodShape, where: Callable[[DemoNode], bool]
) -> DemoNode:
    """Pick a random node that the pod fits on, keeping ~30% headroom, and account for the pod."""
    candidates = [
        n
        for n in nodes
        if where(n)
        and tolerates(n, shape.tolerations)
        and all(n.labels.get(k) == v for k, v in shape.node_selector.items())
        and n.free_cpu_m - shape.cpu_m >= allocatable_cpu_m(n.shape.cpu) * 3 // 10
        and n.free_memory - shape.memory >= allocatable_memory_ki(n.shape.memory_gib) * KIB * 3 // 10
        and n.free_gpus >= shape.gpus
        and n.free_pods > 0
        and not n.host_ports & set(shape.host_ports)
    ]
    if not candidates:
        raise SystemExit(f"generate.py: no node left for running pod of {shape.namespace}/{shape.app}")
    node = rng.choice(candidates)
    node.free_cpu_m -= shape.cpu_m
    node.free_memory -= shape.memory
    node.free_gpus -= shape.gpus
    node.free_pods -= 1
    node.host_ports |= set(shape.host_ports)
    node.images.add(shape.image)
    return node


def build_running_pods(rng: random.Random, nodes: list[DemoNode], namer: Namer) -> list[Obj]:
    def worker(n: DemoNode) -> bool:
        return n.name.startswith("worker-")

    def spot(n: DemoNode) -> bool:
        return n.name.startswith("spot-")

    def gpu(product: str) -> Callable[[DemoNode], bool]:
        return lambda n: n.labels.get(GPU_PRODUCT) == product

    critical = "system-cluster-critical"
    plan: list[tuple[int, PodShape, Callable[[DemoNode], bool]]] = [
        (2, PodShape("coredns", "kube-system", "coredns", 100, 70 * MIB, priority_class=critical), worker),
        (
            1,
            PodShape(
                "metrics-server", "kube-system", "metrics-server", 100, 200 * MIB, priority_class=critical
            ),
            worker,
        ),
        (
            3,
            PodShape(
                "ingress-nginx-controller",
                "kube-system",
                "ingress-nginx",
                100,
                90 * MIB,
                node_selector={INGRESS_ROLE: ""},
                host_ports=[80, 443],
            ),
            worker,
        ),
        (24, PodShape("storefront", "web", "storefront", 250, 256 * MIB), worker),
        (
            16,
            PodShape("checkout-api", "web", "checkout", 500, 512 * MIB, priority_class="high-priority"),
            worker,
        ),
        (9, PodShape("search", "web", "search", 1000, 2 * GIB), worker),
        (6, PodShape("redis-cache", "web", "redis", 250, 1 * GIB), worker),
        (13, PodShape("static-assets", "web", "nginx", 100, 128 * MIB), worker),
        (3, PodShape("postgres", "default", "postgres", 1000, 4 * GIB, owner_kind="StatefulSet"), worker),
        (8, PodShape("docs-site", "default", "nginx", 100, 128 * MIB), worker),
        (4, PodShape("webhook", "default", "python", 200, 256 * MIB), worker),
        (
            14,
            PodShape("etl-worker", "batch", "etl", 2000, 4 * GIB, tolerations=[TOLERATE_SPOT]),
            lambda n: worker(n) or spot(n),
        ),
        (10, PodShape("spark-executor", "batch", "spark", 2000, 6 * GIB, tolerations=[TOLERATE_SPOT]), spot),
        (2, PodShape("jupyter", "ml", "python", 1000, 4 * GIB), worker),
        (
            2,
            PodShape("inference-t4", "ml", "triton", 2000, 8 * GIB, gpus=1, tolerations=[TOLERATE_GPU]),
            lambda n: n.shape is G4DN_XLARGE,
        ),
        (
            2,
            PodShape("inference-t4x4", "ml", "triton", 4000, 16 * GIB, gpus=1, tolerations=[TOLERATE_GPU]),
            gpu("Tesla-T4"),
        ),
        (
            1,
            PodShape(
                "llm-pretrain",
                "ml",
                "pytorch",
                32000,
                256 * GIB,
                gpus=4,
                tolerations=[TOLERATE_GPU],
                priority_class="high-priority",
                owner_kind="Job",
            ),
            gpu("NVIDIA-A100-SXM4-80GB"),
        ),
    ]
    pods: list[Obj] = []
    for count, shape, where in plan:
        for _ in range(count):
            node = place(rng, nodes, shape, where)
            pods.append(pod_object(shape, namer, node_name=node.name, running=True))
    return pods


# -------------------------------------------------------------------------------- pending pods


def build_pending_pods(rng: random.Random, namer: Namer) -> list[Obj]:
    spot_only = required_affinity([(KARPENTER_CAPACITY, "In", ["spot"])], [(EKS_CAPACITY, "In", ["SPOT"])])
    prefer_spot = preferred_affinity(
        (50, KARPENTER_CAPACITY, "In", ["spot"]), (50, EKS_CAPACITY, "In", ["SPOT"])
    )
    big_workers = required_affinity([(INSTANCE_TYPE, "In", ["m5.2xlarge", "m5.4xlarge"])])
    low, high = "low-priority", "high-priority"

    def workload(
        app: str, image: str, cpus: Sequence[int], mems_mib: Sequence[int], namespace: str = "web", **kw: Any
    ) -> Callable[[], PodShape]:
        """A workload: each pod draws its cpu (milli) and memory (MiB) request from the choices."""
        return lambda: PodShape(app, namespace, image, rng.choice(cpus), rng.choice(mems_mib) * MIB, **kw)

    plan: list[tuple[int, Callable[[], PodShape]]] = [
        # Web deployments scaling up.
        (50, workload("storefront", "storefront", [100, 250], [128, 256])),
        (20, workload("checkout-api", "checkout", [500], [512, 1024], priority_class=high)),
        (
            10,
            workload(
                "search",
                "search",
                [500, 1000],
                [1024, 2048],
                affinity=node_affinity(big_workers, preferred_affinity((80, ZONE, "In", ["us-east-1b"]))),
            ),
        ),
        (
            20,
            workload(
                "recommendations",
                "recommend",
                [250, 500],
                [512, 768],
                affinity=node_affinity(
                    preferred_affinity(
                        (20, INSTANCE_TYPE, "In", ["m5.4xlarge"]), (10, ZONE, "In", ["us-east-1a"])
                    )
                ),
            ),
        ),
        (10, workload("frontend-canary", "nginx", [100], [128], node_selector={ZONE: "us-east-1a"})),
        (20, workload("docs-site", "nginx", [100], [128], namespace="default")),
        # The nodelabelfilter profile keeps these off nodes labelled node=hello.
        (25, workload("edge-cache", "edge-cache", [200], [256], scheduler_name="nodelabelfilter")),
        (
            15,
            workload(
                "legacy-api",
                "legacy-api",
                [250, 500],
                [512],
                namespace="default",
                scheduler_name="nodelabelfilter",
            ),
        ),
        # Pods for another scheduler: listed as Ignored.
        (
            5,
            workload(
                "volcano-job",
                "busybox",
                [500],
                [256],
                namespace="batch",
                scheduler_name="some-other-scheduler",
                owner_kind="Job",
            ),
        ),
        # Batch jobs: low priority, half of them happy to run on tainted spot nodes.
        (
            25,
            workload(
                "etl-nightly",
                "etl",
                [2000, 3000, 4000],
                [4096, 6144, 8192],
                namespace="batch",
                owner_kind="Job",
                priority_class=low,
            ),
        ),
        (
            25,
            workload(
                "etl-backfill",
                "etl",
                [2000, 3000, 4000],
                [4096, 6144, 8192],
                namespace="batch",
                owner_kind="Job",
                priority_class=low,
                tolerations=[TOLERATE_SPOT],
                affinity=node_affinity(prefer_spot),
            ),
        ),
        (
            12,
            workload(
                "spark-executor",
                "spark",
                [2000],
                [8192],
                namespace="batch",
                tolerations=[TOLERATE_SPOT],
                affinity=node_affinity(spot_only),
            ),
        ),
        (
            10,
            workload(
                "queue-worker", "python", [500], [1024], namespace="default", tolerations=[TOLERATE_SPOT]
            ),
        ),
        (
            10,
            workload(
                "report-builder",
                "reports",
                [1000],
                [2048],
                namespace="batch",
                owner_kind="Job",
                node_selector={ZONE: "us-east-1c"},
            ),
        ),
        # Memory-heavy analytics.
        (8, workload("analytics", "python", [2000], [24576, 32768, 40960, 49152], namespace="default")),
        # Scheduling gates: stay Gated.
        (
            3,
            workload(
                "gated-train",
                "pytorch",
                [4000],
                [16384],
                namespace="batch",
                owner_kind="Job",
                gates=["example.com/quota-check"],
            ),
        ),
        # Control-plane daemons.
        (
            2,
            workload(
                "cloud-controller-manager",
                "cloud-controller",
                [200],
                [256],
                namespace="kube-system",
                node_selector={CONTROL_PLANE: ""},
                tolerations=[TOLERATE_CONTROL_PLANE],
                priority_class="system-cluster-critical",
            ),
        ),
        # Two more ingress replicas want hostPorts 80/443 on the four ingress nodes; three are taken.
        (
            2,
            workload(
                "ingress-nginx-controller",
                "ingress-nginx",
                [100],
                [90],
                namespace="kube-system",
                node_selector={INGRESS_ROLE: ""},
                host_ports=[80, 443],
            ),
        ),
        # GPU work: more GPUs are asked for than are free.
        (
            10,
            workload(
                "inference",
                "triton",
                [2000],
                [8192],
                namespace="ml",
                gpus=1,
                tolerations=[TOLERATE_GPU],
                affinity=node_affinity(preferred_affinity((60, GPU_PRODUCT, "In", ["Tesla-T4"]))),
            ),
        ),
        (
            4,
            workload(
                "finetune",
                "pytorch",
                [8000],
                [65536],
                namespace="ml",
                gpus=2,
                owner_kind="Job",
                tolerations=[TOLERATE_GPU],
                affinity=node_affinity(required_affinity([(GPU_MEMORY, "Gt", ["20000"])])),
            ),
        ),
        (
            3,
            workload(
                "train-a100",
                "pytorch",
                [16000],
                [131072],
                namespace="ml",
                gpus=4,
                owner_kind="Job",
                tolerations=[TOLERATE_GPU],
                priority_class=high,
                affinity=node_affinity(
                    required_affinity(
                        [(GPU_PRODUCT, "In", ["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"])]
                    )
                ),
            ),
        ),
        (
            2,
            workload(
                "train-8gpu",
                "pytorch",
                [48000],
                [524288],
                namespace="ml",
                gpus=8,
                owner_kind="Job",
                tolerations=[TOLERATE_GPU],
                affinity=node_affinity(required_affinity([(GPU_FAMILY, "In", ["ampere", "hopper"])])),
            ),
        ),
        # Pods that cannot fit anywhere, so the report shows FailedScheduling messages.
        (1, workload("huge-cpu", "python", [64000], [8192], namespace="batch", owner_kind="Job")),
        (
            1,
            workload(
                "train-16gpu",
                "pytorch",
                [64000],
                [262144],
                namespace="ml",
                gpus=16,
                owner_kind="Job",
                tolerations=[TOLERATE_GPU],
            ),
        ),
        (1, workload("huge-memory", "python", [4000], [307200], namespace="default")),
        # An invalid quantity: this pod alone gets result Error.
        (1, workload("bad-quantity", "busybox", [100], [128], namespace="default", bad_memory="12XB")),
    ]
    pods = [pod_object(make(), namer) for count, make in plan for _ in range(count)]
    rng.shuffle(pods)  # arrival order: a realistic mix, not grouped by workload
    return pods


# ------------------------------------------------------------------------------------- output


class _Dumper(yaml.SafeDumper):
    """kubectl's YAML style: block style, sequences not indented, ambiguous strings in double quotes."""

    def ignore_aliases(self, data: Any) -> bool:
        return True  # shared toleration dicts are written out in full, never as &anchors

    def represent_str(self, data: str) -> yaml.ScalarNode:
        tag = self.resolve(yaml.ScalarNode, data, (True, False))  # type: ignore[no-untyped-call]
        plain_is_str = tag == "tag:yaml.org,2002:str"
        return self.represent_scalar(
            "tag:yaml.org,2002:str", data, style=None if plain_is_str and data else '"'
        )


_Dumper.add_representer(str, _Dumper.represent_str)


def dump(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=1000)


def write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path.relative_to(HERE.parent.parent)} ({len(text.encode()) // 1024} KiB)")


HEADER = "# Generated by examples/demo/generate.py; edit that file and re-run it instead of editing this.\n"


def main() -> None:
    rng = random.Random(42)
    namer = Namer(rng)
    nodes = build_nodes(rng)
    running = build_running_pods(rng, nodes, namer)
    pending = build_pending_pods(rng, namer)

    OUT.mkdir(parents=True, exist_ok=True)
    node_list = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [node_object(n) for n in nodes],
        "metadata": {"resourceVersion": ""},
    }
    write(OUT / "nodes.yaml", HEADER + dump(node_list))
    pod_list = {"apiVersion": "v1", "kind": "PodList", "items": running, "metadata": {"resourceVersion": ""}}
    write(OUT / "running-pods.yaml", HEADER + dump(pod_list))
    write(OUT / "pending-pods.yaml", HEADER + "---\n".join(dump(p) for p in pending))
    classes = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "preemptionPolicy": policy,
            "description": description,
            **({"globalDefault": False} if not name.startswith("system-") else {}),
        }
        for name, (value, policy, description) in PRIORITY_CLASSES.items()
    ]
    write(
        OUT / "priorityclasses.yaml",
        HEADER
        + dump({"apiVersion": "v1", "kind": "List", "items": classes, "metadata": {"resourceVersion": ""}}),
    )

    gpus = sum(n.shape.gpus for n in nodes)
    by_scheduler: dict[str, int] = {}
    for p in pending:
        name = p["spec"].get("schedulerName", "default-scheduler")
        by_scheduler[name] = by_scheduler.get(name, 0) + 1
    print(
        f"{len(nodes)} nodes ({sum(1 for n in nodes if n.shape.gpus)} with {gpus} GPUs), "
        f"{len(running)} running pods, {len(pending)} pending pods {dict(sorted(by_scheduler.items()))}"
    )


if __name__ == "__main__":
    main()
