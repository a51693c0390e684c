"""Synthetic scenario timelines of any size, for tests and `benchmarks/replay_throughput.py`.

A working day compressed into a few virtual hours: the nodes exist at 0s; pods arrive all day with
a rush in the morning; batch pods run for a while (`runFor`) and complete, service pods run until a
later delete event; a few percent of the nodes are removed at midday (their pods are lost, as
PodGC would delete them) and new ones join in the afternoon; a small share of the pods has a high
priority and preempts when the cluster is full. Deterministic for a given seed.
"""

from __future__ import annotations

import random
from typing import Any

from kubesched.simulate.scenario import API_VERSION, KIND

__all__ = ["synthetic_scenario"]

ZONE = "topology.kubernetes.io/zone"
#: (cores, memory GiB) of the node sizes, picked in equal shares.
NODE_SHAPES = ((2, 8), (4, 16), (8, 32))
#: (cpu millicores, memory MiB, weight) of the pod shapes.
POD_SHAPES = ((100, 256, 30), (250, 512, 30), (500, 1024, 20), (1000, 2048, 12), (2000, 4096, 8))
HIGH_PRIORITY = "high"


def synthetic_scenario(
    *,
    nodes: int,
    events: int,
    seed: int = 0,
    hours: float = 4.0,
    load: float = 1.0,
) -> dict[str, Any]:
    """A scenario document (plain data) with exactly `events` timeline events over `hours`.

    `load` scales how long pods live: about 1.0 fills the cluster's CPU at the morning rush, so that
    some pods wait and high-priority pods preempt; lower values leave room for everyone.
    """
    if nodes <= 0 or events < nodes + 3:
        raise ValueError("need at least one node and room for pod events")
    rng = random.Random(seed)
    span = hours * 3600.0
    churn = max(1, nodes // 100)
    timeline: list[dict[str, Any]] = [_priority_class_event()]
    timeline += [_node_event(0.0, f"node-{i:05d}", i, rng) for i in range(nodes)]
    for j in range(churn):  # a midday scale-down and an afternoon scale-up
        timeline.append(
            {"at": _t(span * 0.5 + j), "delete": {"kind": "Node", "name": f"node-{rng.randrange(nodes):05d}"}}
        )
        timeline.append(_node_event(span * 0.6 + j, f"node-late-{j:05d}", j, rng))
    budget = events - len(timeline) + 1  # the PriorityClass is an object, not a timeline event
    creates = max(1, round(budget / 1.4))
    # Pod lifetimes are chosen so that demand at the rush is about `load` times the cluster's CPU:
    # demand ~ peak arrival rate x mean lifetime x mean request.
    cores = sum(NODE_SHAPES[i % len(NODE_SHAPES)][0] for i in range(nodes))
    mean_cpu = sum(c * w for c, _, w in POD_SHAPES) / sum(w for *_, w in POD_SHAPES) / 1000
    peak_rate = creates * (0.4 / 0.15 + 0.6 / 0.9) / span
    lifetime = 2.5 * load * cores / (peak_rate * mean_cpu)  # 2.5: measured, the rush is short
    deletes: list[dict[str, Any]] = []
    for k in range(creates):
        rush = rng.random() < 0.4
        at = rng.uniform(0.25, 0.4) * span if rush else rng.uniform(0.0, 0.9) * span
        name = f"pod-{k:06d}"
        event: dict[str, Any] = {"at": _t(at), "create": _pod(name, rng)}
        if k % 2 == 0:  # batch: completes on its own
            event["runFor"] = _t(min(max(30.0, rng.expovariate(1 / lifetime)), 2 * span))
        elif len(deletes) < budget - creates:  # service: deleted later (if the budget allows)
            ends = at + rng.uniform(0.5, 1.5) * lifetime
            deletes.append({"at": _t(min(ends, 2 * span)), "delete": {"kind": "Pod", "name": name}})
        timeline.append(event)
    while len(timeline) - 1 + len(deletes) < events:  # top up with deletes of pods that never existed
        deletes.append({"at": _t(span), "delete": {"kind": "Pod", "name": f"gone-{len(deletes)}"}})
    timeline += deletes[: events - (len(timeline) - 1)]
    timeline.sort(key=lambda e: e["at"])
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": f"synthetic-{nodes}-nodes-{events}-events"},
        "spec": {"events": timeline},
    }


def _t(seconds: float) -> float:
    return round(seconds, 3)


def _priority_class_event() -> dict[str, Any]:
    return {
        "at": 0,
        "create": {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": HIGH_PRIORITY},
            "value": 1000,
        },
    }


def _node_event(at: float, name: str, i: int, rng: random.Random) -> dict[str, Any]:
    cores, gib = NODE_SHAPES[i % len(NODE_SHAPES)]
    resources = {"cpu": str(cores), "memory": f"{gib}Gi", "pods": "110"}
    return {
        "at": _t(at),
        "create": {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, ZONE: f"zone-{rng.randrange(3)}"},
            },
            "status": {
                "capacity": resources,
                "allocatable": resources,
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
    }


def _pod(name: str, rng: random.Random) -> dict[str, Any]:
    cpu, mem, _ = rng.choices(POD_SHAPES, weights=[w for *_, w in POD_SHAPES])[0]
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "app",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}},
            }
        ]
    }
    if rng.random() < 0.05:
        spec["priorityClassName"] = HIGH_PRIORITY
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name[:-3]}},
        "spec": spec,
    }
