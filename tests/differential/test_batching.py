"""Opportunistic batching (KEP-5598) against kube-scheduler v1.37.2 on the real API server.

A burst of identical signable pods is created at once, then scheduled by the binary and, on the
same nodes afterwards, by `kubesched run`, both with the default profile minus PodTopologySpread's
system defaults (with them, v1.37.2 signs no pod at all: `pods with default topology constraints
are not signable`; the `default-profile` case shows it).

What is compared, and why it is deterministic: identical pods are interchangeable, and which of
them is popped first is not (queue timestamps), so per-pod equality would test the queue, not the
placement. The nodes have different sizes, so the scores of every step differ between nodes: the
sequence of chosen nodes, hence **how many pods each node got**, is fixed by the scoring, batched or
not. The burst is scheduled in consecutive cycles, normally well within the 500 ms a batch lives,
so the **batching counters** are fixed too: hints used, rescores of the node just used, flushes by
reason, one hint lookup and one store per pod. A cycle that comes late on a loaded machine expires
its batch on either side; such an expiry is counted back as the hint it would have been.

The cases: bare pods and Job pods; pods so wide most nodes hold one (the node just used leaves
the list instead of being rescored), on plain and on tainted nodes; pods whose volumes are named
per pod (still one signature); nodes with PreferNoSchedule taints and pods with preferred node
affinity, where a rescored node must be normalized together with the nodes kept (TaintToleration
and NodeAffinity normalize over the nodes scored: normalizing it alone lands pods elsewhere).
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kubesched.harness.differential.burst import BurstOutcome, run_burst, start_kubesched, start_upstream
from kubesched.harness.differential.cluster import _delete
from kubesched.harness.differential.run import Harnesses

Obj = dict[str, Any]
JOB = "bt-job"
HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True)
class Case:
    #: (cpus, PreferNoSchedule taints) per node: distinct sizes, so no two nodes tie on score.
    nodes: tuple[tuple[int, int], ...] = ((2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0))
    cpu: str = "1"
    count: int = 12
    spec: Obj = field(default_factory=dict)
    job: bool = False
    per_pod_volumes: bool = False
    batching: bool = True


PREFERRED = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "preference": {"matchExpressions": [{"key": HOSTNAME, "operator": "In",
                                                                  "values": ["bt-n0"]}]}},
            {"weight": 20, "preference": {"matchExpressions": [{"key": HOSTNAME, "operator": "In",
                                                                  "values": ["bt-n0", "bt-n1"]}]}},
        ]
    }
}  # fmt: skip
TAINTED = ((6, 1), (7, 2), (4, 0), (5, 3), (3, 0))

CASES = {
    "bare": Case(),
    "job": Case(job=True),
    # 3.5-cpu pods fit nodes of 4-6 cpus once and of 7 cpus twice: 5 pods fill them
    "wide": Case(cpu="3500m", count=5),
    "volumes": Case(per_pod_volumes=True),
    "prefer-no-schedule-taints": Case(nodes=TAINTED, count=14),
    "preferred-node-affinity": Case(nodes=TAINTED, count=14, spec={"affinity": PREFERRED}),
    # one pod per node on tainted nodes: a full node leaves the list and the rest keep their ranking
    "wide-tainted": Case(nodes=((6, 1), (7, 3), (4, 0), (5, 2), (8, 0)), cpu="3", count=6),
    "default-profile": Case(batching=False),
}


def _node(i: int, cpu: int, taints: int) -> Obj:
    allocatable = {"cpu": str(cpu), "memory": "16Gi", "pods": "110"}
    name = f"bt-n{i}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name}},
        "spec": {
            "taints": [{"key": f"t{k}", "value": "x", "effect": "PreferNoSchedule"} for k in range(taints)]
        },
        "status": {
            "capacity": allocatable,
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pods(kind: str, case: Case, scheduler: str, job: Obj | None) -> list[Obj]:
    template: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "default", "labels": {"app": "burst"}},
        "spec": {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "img-a:1",
                    "resources": {"requests": {"cpu": case.cpu, "memory": "1Gi"}},
                }
            ],
            **copy.deepcopy(case.spec),
        },
    }
    if job is not None:  # what the Job controller creates: its labels, owner reference, restartPolicy
        uid = job["metadata"]["uid"]
        template["metadata"]["labels"] = {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": JOB,
            "controller-uid": uid,
            "job-name": JOB,
        }
        template["metadata"]["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": JOB, "uid": uid,
             "controller": True, "blockOwnerDeletion": True}
        ]  # fmt: skip
        template["spec"]["restartPolicy"] = "Never"
    pods = []
    for i in range(case.count):
        p = copy.deepcopy(template)
        p["metadata"]["name"] = f"bt-{kind}-{scheduler}-{i}"
        if case.per_pod_volumes:  # each pod its own names: v1.37.2 still signs them alike
            p["spec"]["volumes"] = _own_volumes(i)
        pods.append(p)
    return pods


def _own_volumes(i: int) -> list[Obj]:
    """Volumes scheduling does not look at, named per pod as a ServiceAccount's token volume is."""
    labels = {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}
    return [
        {
            "name": f"kube-api-access-{i:05d}",
            "projected": {"sources": [{"downwardAPI": {"items": [labels]}}]},
        },
        {"name": f"scratch-{i}", "emptyDir": {}},
        {"name": f"config-{i}", "configMap": {"name": f"config-{i}"}},
    ]


@pytest.mark.parametrize("kind", list(CASES))
def test_a_burst_batches_and_lands_as_upstream(differential: Harnesses, tmp_path: Path, kind: str) -> None:
    case = CASES[kind]
    api, cp = differential.upstream.api, differential.upstream.cp
    nodes = [api.post("/api/v1/nodes", _node(i, c, t)) for i, (c, t) in enumerate(case.nodes)]
    job = None
    if case.job:
        job = api.post(
            "/apis/batch/v1/namespaces/default/jobs",
            {"metadata": {"name": JOB}, "spec": {"suspend": True, "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "img-a:1"}]}}}},
        )  # fmt: skip
    try:
        upstream = run_burst(
            api,
            _pods(kind, case, "bt-upstream", job),
            lambda: start_upstream(cp, "bt-upstream", batching=case.batching),
        )
        mine = run_burst(
            api,
            _pods(kind, case, "bt-kubesched", job),
            lambda: start_kubesched(cp, tmp_path, "bt-kubesched", batching=case.batching),
        )
    finally:
        for n in nodes:
            _delete(api, f"/api/v1/nodes/{n['metadata']['name']}")
        if job is not None:
            _delete(api, f"/apis/batch/v1/namespaces/default/jobs/{JOB}")
    print(f"{kind}: upstream {upstream}\n{kind}: kubesched {mine}")  # shown with -s, and on failure
    if case.batching:
        _assert_batched(upstream, case.count)
    else:  # PodTopologySpread's System defaults: no pod is signable, every cycle is a full pass
        assert upstream.attempts == {"no_hint": case.count}, upstream
    assert mine.per_node == upstream.per_node, f"pods per node: kubesched {mine} != upstream {upstream}"
    slack = _expired(mine) + _expired(upstream)
    assert abs(mine.rescores - upstream.rescores) <= slack, f"rescores: kubesched {mine} != {upstream}"
    mine, upstream = _as_if_in_time(mine), _as_if_in_time(upstream)
    for what in ("attempts", "flushes", "hint_latencies", "stores"):
        assert getattr(mine, what) == getattr(upstream, what), (
            f"{what}: kubesched {getattr(mine, what)} != upstream {getattr(upstream, what)}"
        )


def _expired(outcome: BurstOutcome) -> int:
    return outcome.flushes.get("expired", 0)


def _as_if_in_time(outcome: BurstOutcome) -> BurstOutcome:
    """The counters had no cycle come more than 500 ms after the one before.

    The batch's age is wall time: on a loaded machine (CI's two cores running the other tests) a
    cycle may come late, either side's, and its batch expires: one `expired` flush and one full pass
    instead of a hint (placement unchanged, since nothing else changed). That is load, not logic, so
    each expiry is counted back as the hint it would have been; a rescore it skipped is the `slack`.
    """
    late = _expired(outcome)
    if not late:
        return outcome
    attempts = dict(outcome.attempts)
    attempts["no_hint"] = attempts.get("no_hint", 0) - late
    attempts["hint_used"] = attempts.get("hint_used", 0) + late
    flushes = {k: v for k, v in outcome.flushes.items() if k != "expired"}
    return dataclasses.replace(outcome, attempts={k: v for k, v in attempts.items() if v}, flushes=flushes)


def _assert_batched(upstream: BurstOutcome, count: int) -> None:
    """What v1.37.2 did with the burst: one full pass, then hints all the way (a late cycle aside)."""
    assert sum(upstream.per_node.values()) == count
    assert upstream.rescores + _expired(upstream) > 0, upstream
    upstream = _as_if_in_time(upstream)
    assert upstream.attempts.get("no_hint") == 1, upstream
    assert upstream.attempts.get("hint_used") == count - 1, upstream
    assert upstream.hint_latencies == upstream.stores == count, upstream
