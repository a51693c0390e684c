"""The system PriorityClasses in the queue's order and in preemption, against kube-scheduler v1.37.2.

Three pods that each need the whole of the one node are created before a scheduler starts, so its
informers hand it all three at once: `low` (10), `system-cluster-critical` (2000000000) and
`system-node-critical` (2000001000), created in that order. Popped by priority, the node-critical
pod binds first; the cluster-critical one finds no victim of lower priority (the node-critical pod
is above it) and `low` none at all: nothing is deleted. Popped in any other order, whichever bound
first would be preempted by a higher one, and the lower pods would be gone. The binary and
`kubesched run` (a process of each, started after the pods exist, as test_batching does) must
leave the same pod bound, the same pods in place and the same first FailedScheduling message for
each pod left pending (a later one follows the retries' timing).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from kubesched.harness.controlplane import ManagedProcess
from kubesched.harness.differential.burst import Scraper, start_kubesched, start_upstream
from kubesched.harness.differential.cluster import _delete, gone, pod_path, wait_until
from kubesched.harness.differential.run import Harnesses
from kubesched.harness.fake_nodes import ApiClient

Obj = dict[str, Any]
NODE = "so-n0"
#: Created in this order: the reverse of their priority.
CLASSES = {"low": "low", "cluster": "system-cluster-critical", "node": "system-node-critical"}
#: Seconds with nothing changing before the outcome is read.
QUIET = 1.5


def _node() -> Obj:
    room = {"cpu": "2", "memory": "8Gi", "pods": "110"}
    return {
        "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
        "status": {
            "capacity": room,
            "allocatable": room,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(scheduler: str, key: str) -> Obj:
    container = {"name": "main", "image": "img-a:1", "resources": {"requests": {"cpu": "2"}}}
    return {
        "metadata": {"name": f"{scheduler}-{key}", "namespace": "default"},
        "spec": {
            "schedulerName": scheduler,
            "priorityClassName": CLASSES[key],
            "containers": [container],
            "terminationGracePeriodSeconds": 0,
        },
    }


Outcome = dict[str, tuple[str | None, str | None]]


def _state(api: ApiClient, scheduler: str) -> Outcome:
    """Per pod key still present: its node, and its first FailedScheduling message."""
    notes: dict[str, list[tuple[str, str]]] = {}
    for e in api.list_all(
        "/apis/events.k8s.io/v1/namespaces/default/events", {"fieldSelector": "reason=FailedScheduling"}
    ):
        name = (e.get("regarding") or {}).get("name", "")
        stamp = e.get("eventTime") or e["metadata"].get("creationTimestamp") or ""
        notes.setdefault(name, []).append((stamp, e.get("note", "")))
    out = {}
    for p in api.list_all(pod_path("default")):
        name = p["metadata"]["name"]
        if name.startswith(f"{scheduler}-"):
            key = name.removeprefix(f"{scheduler}-")
            first = min(notes.get(name, []), default=(None, None))[1]
            out[key] = (p["spec"].get("nodeName"), first)
    return out


def _settled(api: ApiClient, scheduler: str) -> Outcome:
    """The outcome once every pod left is bound or has a FailedScheduling message, unchanged for
    `QUIET` seconds."""
    last: list[Outcome] = [{}]
    since = [0.0]

    def quiet() -> bool:
        now = _state(api, scheduler)
        decided = bool(now) and all(node or note for node, note in now.values())
        if now != last[0] or not decided:
            last[0], since[0] = now, time.monotonic()
            return False
        return time.monotonic() - since[0] >= QUIET

    wait_until(f"{scheduler}'s pods to settle", quiet, timeout=90)
    return last[0]


def _play(api: ApiClient, scheduler: str, start: Callable[[], tuple[ManagedProcess, Scraper]]) -> Outcome:
    names = [f"{scheduler}-{key}" for key in CLASSES]
    for key in CLASSES:
        api.post(pod_path("default"), _pod(scheduler, key))
    proc, _ = start()
    try:
        return _settled(api, scheduler)
    finally:
        proc.stop()
        for name in names:
            _delete(api, pod_path("default", name))
        for name in names:
            wait_until(f"deletion of {name}", partial(gone, api, pod_path("default", name)))


def test_the_system_classes_are_popped_first_and_preempt_as_upstream(
    differential: Harnesses, tmp_path: Path
) -> None:
    api, cp = differential.upstream.api, differential.upstream.cp
    api.post("/api/v1/nodes", _node())
    try:
        upstream = _play(api, "so-upstream", lambda: start_upstream(cp, "so-upstream", batching=False))
        mine = _play(
            api, "so-kubesched", lambda: start_kubesched(cp, tmp_path, "so-kubesched", batching=False)
        )
    finally:
        _delete(api, f"/api/v1/nodes/{NODE}")
    print(f"upstream {upstream}\nkubesched {mine}")
    assert set(upstream) == set(CLASSES), upstream  # nothing was preempted
    assert upstream["node"][0] == NODE and upstream["cluster"][0] is None, upstream
    assert mine == upstream
