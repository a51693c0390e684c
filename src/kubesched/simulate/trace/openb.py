"""The openb trace as a scenario: nodes with their GPUs, and one pod per arriving task.

Two ways to give a task its GPUs (`gpu_as`):

- `dra` (the default): each GPU is a DRA device of the driver `gpu.kubesched.io` in the node's
  ResourceSlice, with its `model` as an attribute and a consumable `share` capacity of 1000 that
  several claims may take parts of (`allowMultipleAllocations`). A task asks through a
  ResourceClaimTemplate: whole GPUs are `count` devices with no capacity request (which consumes a
  device's whole share), a shared GPU is one device with `capacity.requests.share`, and `gpu_spec`
  is a CEL selector on the model. One template per distinct request, so the file stays small.
- `extended`: `nvidia.com/gpu` counts, for clusters without DRA. A count cannot be shared, so a task
  wanting part of a GPU asks for a whole one (the importer says how many did); `gpu_spec` becomes a
  node affinity on the label `gpu.kubesched.io/model`, which every GPU node carries.

The objects are what a v1.37 API server accepts (pods have an image; extended resources have
limits equal to requests), so the scenario can also be applied to a real cluster piece by piece.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.simulate.replay.gpu import GPU_DRIVER, GPU_SHARE, MODEL_LABEL, NVIDIA_GPU
from kubesched.simulate.scenario import API_VERSION, KIND
from kubesched.simulate.trace.openb_csv import GPU_MILLI, TraceNode, TraceTask
from kubesched.simulate.trace.openb_workload import Workload

__all__ = [
    "DRIVER",
    "GPU_AS",
    "MODEL_LABEL",
    "NAMESPACE",
    "NVIDIA_GPU",
    "SHARE",
    "Imported",
    "scenario_for",
]

#: The DRA driver (and DeviceClass) of the imported GPUs, their consumable capacity (1000 is the
#: whole GPU, as the trace counts it), and the node label naming the GPU model: what the replay's
#: GPU metrics look for.
DRIVER, SHARE = GPU_DRIVER, GPU_SHARE
NAMESPACE = "default"
GPU_AS = ("dra", "extended")
#: Pods a node may hold: the trace's limits are CPU, memory and GPUs, never the pod count.
_MAX_PODS = "1000"
_IMAGE = "registry.k8s.io/pause:3.10"


@dataclass(frozen=True, slots=True)
class Imported:
    """The scenario document and what the import had to say about it."""

    document: dict[str, Any]
    nodes: int
    gpus: int
    pods: int
    #: Shared-GPU tasks that asked for a whole `nvidia.com/gpu` instead (`extended` only).
    rounded_up: int


def scenario_for(
    name: str,
    nodes: Sequence[TraceNode],
    workload: Workload,
    *,
    gpu_as: str = "dra",
    annotations: dict[str, str] | None = None,
) -> Imported:
    """The Scenario document (plain data, ready for JSON or YAML) replaying `workload` on `nodes`."""
    if gpu_as not in GPU_AS:
        raise ValueError(f"gpu_as must be one of {', '.join(GPU_AS)}, not {gpu_as!r}")
    dra = gpu_as == "dra"
    events: list[dict[str, Any]] = []
    if dra:
        events.append(_create(0, _device_class()))
    for node in nodes:
        events.append(_create(0, _node(node, extended=not dra)))
        if dra and node.gpus:
            events.append(_create(0, _slice(node)))
    pods: list[dict[str, Any]] = []
    templates: dict[tuple[int, int, tuple[str, ...]], dict[str, Any]] = {}
    rounded_up = 0
    for arrival in workload.arrivals:
        task = arrival.task
        pod = _pod(arrival.name, task)
        if task.num_gpu and dra:
            key = (task.num_gpu, task.gpu_milli, task.models)
            template = templates.get(key)
            if template is None:
                template = templates[key] = _template(
                    task, taken={t["metadata"]["name"] for t in templates.values()}
                )
            _claim(pod, template["metadata"]["name"])
        elif task.num_gpu:
            rounded_up += task.shared
            _extended(pod, task)
        pods.append(_create(arrival.at, pod))
    events += [_create(0, t) for t in templates.values()]
    events += sorted(pods, key=lambda e: e["at"])  # stable: arrival order within one instant
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = dict(annotations)
    spec: dict[str, Any] = {"events": events}
    if workload.arrivals:
        # Nothing leaves, so nothing frees room: a pod that did not fit when it arrived never will,
        # and retrying it after the last arrival would only cost time. Stop one second after it.
        spec["until"] = _seconds(max(a.at for a in workload.arrivals) + 1)
    document = {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}
    return Imported(
        document,
        nodes=len(nodes),
        gpus=sum(n.gpus for n in nodes),
        pods=len(pods),
        rounded_up=rounded_up,
    )


def _create(at: float, obj: dict[str, Any]) -> dict[str, Any]:
    return {"at": _seconds(at), "create": obj}


def _seconds(at: float) -> int | float:
    rounded = round(at, 3)
    return int(rounded) if rounded == int(rounded) else rounded


def _cpu(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def _node(node: TraceNode, *, extended: bool) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": node.name}
    if node.gpus:
        labels[MODEL_LABEL] = node.model
    resources = {"cpu": _cpu(node.cpu_milli), "memory": f"{node.memory_mib}Mi", "pods": _MAX_PODS}
    if extended and node.gpus:
        resources[NVIDIA_GPU] = str(node.gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": labels},
        "status": {
            "capacity": resources,
            "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _device_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == {json.dumps(DRIVER)}"}}]},
    }


def _slice(node: TraceNode) -> dict[str, Any]:
    device = {
        "attributes": {"model": {"string": node.model}},
        "capacity": {SHARE: {"value": str(GPU_MILLI)}},
        "allowMultipleAllocations": True,
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node.name}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node.name,
            "pool": {"name": node.name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", **device} for i in range(node.gpus)],
        },
    }


def _pod(name: str, task: TraceTask) -> dict[str, Any]:
    requests: dict[str, str] = {}
    if task.cpu_milli:
        requests["cpu"] = _cpu(task.cpu_milli)
    if task.memory_mib:
        requests["memory"] = f"{task.memory_mib}Mi"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"containers": [{"name": "task", "image": _IMAGE, "resources": {"requests": requests}}]},
    }


def _template(task: TraceTask, *, taken: set[str]) -> dict[str, Any]:
    """The claim template of a task's GPU request, named after what it asks for (not one of `taken`)."""
    exactly: dict[str, Any] = {"deviceClassName": DRIVER}
    if task.shared:
        name = f"gpu-share-{task.gpu_milli}"
        exactly["capacity"] = {"requests": {SHARE: str(task.gpu_milli)}}
    else:
        name = f"gpu-{task.num_gpu}"
        exactly["count"] = task.num_gpu
    if task.models:
        models = ", ".join(json.dumps(m) for m in task.models)
        expression = f"device.attributes[{json.dumps(DRIVER)}].model in [{models}]"
        exactly["selectors"] = [{"cel": {"expression": expression}}]
        name += "-" + "-".join(_dns_part(m) for m in task.models)
    unique, n = name, 1
    while unique in taken:  # two model lists that read the same once lowercased
        n += 1
        unique = f"{name}-{n}"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": unique, "namespace": NAMESPACE},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
    }


def _dns_part(model: str) -> str:
    """A model code as part of an object name (lowercase letters, digits and dashes)."""
    return re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-") or "x"


def _claim(pod: dict[str, Any], template: str) -> None:
    spec = pod["spec"]
    spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    spec["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]


def _extended(pod: dict[str, Any], task: TraceTask) -> None:
    resources = pod["spec"]["containers"][0]["resources"]
    resources["requests"][NVIDIA_GPU] = str(task.num_gpu)
    resources["limits"] = {NVIDIA_GPU: str(task.num_gpu)}
    if task.models:
        term = {"matchExpressions": [{"key": MODEL_LABEL, "operator": "In", "values": list(task.models)}]}
        pod["spec"]["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
