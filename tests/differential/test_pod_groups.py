"""Pod groups on kube-scheduler v1.37.2 with GenericWorkload on: the gated differential harness.

The API server serves `scheduling.k8s.io/v1beta1`; the binary runs with `--feature-gates=
GenericWorkload=true`. Scenarios are played wave by wave (kubesched.harness.differential.waves): a
wave's pods are created together, then their PodGroups, and the outcome is read once the scheduler
settled. The issue's three gangs are checked first, by hand; then a seeded set must produce every
kind of outcome (gangs bound whole, in part, not at all; preemption), so the set measures something.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from kubesched.harness.differential.gated import GANG_GATES
from kubesched.harness.differential.group_run import outcome_kinds
from kubesched.harness.differential.group_scenario import GroupScenario, Wave, generate_groups
from kubesched.harness.differential.run import Harnesses, harnesses
from kubesched.harness.differential.scenario import HOSTNAME
from kubesched.harness.differential.waves import play_waves

Obj = dict[str, Any]
#: Seeds of the bounded set (about 4 s each on an idle machine).
SEEDS = list(range(1, 21))


@pytest.fixture(scope="module")
def gated() -> Iterator[Harnesses]:
    """A control plane serving the Workload API, with kube-scheduler v1.37.2 gated the same way."""
    with harnesses(live=False, gates=GANG_GATES) as h:
        yield h


def _node(s: GroupScenario, i: int) -> Obj:
    name = f"{s.name}-n{i}"
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name}},
        "status": {
            "capacity": allocatable,
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _gang(s: GroupScenario, i: int, size: int, cpu: str, min_count: int) -> Wave:
    name = f"{s.name}-w{i}"
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{name}-p{j}", "namespace": "default"},
            "spec": {
                "schedulingGroup": {"podGroupName": name},
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
            },
        }
        for j in range(size)
    ]
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }
    return Wave(pods, [group])


def test_the_issues_three_gangs(gated: Harnesses) -> None:
    """Four nodes of 4 CPU; gangs of 4 x 3 CPU, 2 x 2 CPU and 5 x 1 CPU, each minCount its size,
    created in turn: the first is bound one pod per node, the others not at all."""
    s = GroupScenario(0, label="gi21")
    s.nodes = [_node(s, i) for i in range(4)]
    s.waves = [_gang(s, 0, 4, "3", 4), _gang(s, 1, 2, "2", 2), _gang(s, 2, 5, "1", 5)]
    first, second, third = play_waves(gated.upstream, s)
    assert sorted(n or "" for n in first.nodes.values()) == [f"gi21-n{i}" for i in range(4)]
    scheduled = ("PodGroupInitiallyScheduled", "True", "Scheduled", "")
    assert first.group_status["gi21-w0"].conditions == [scheduled]
    assert set(second.nodes.values()) == {None} == set(third.nodes.values())
    unschedulable = "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"
    assert second.messages == {
        "gi21-w1-p0": ["0/4 nodes are available: 4 Insufficient cpu."],
        "gi21-w1-p1": [unschedulable],
    }
    preemption = ", pod group preemption: No preemption victims found for incoming preemptor"
    assert second.group_status["gi21-w1"].conditions == [
        ("PodGroupInitiallyScheduled", "False", "Unschedulable", unschedulable + preemption)
    ]
    assert third.group_status["gi21-w2"].conditions == [
        (
            "PodGroupInitiallyScheduled",
            "False",
            "Unschedulable",
            "minCount (5) cannot be satisfied: 4 scheduled, 0 remaining" + preemption,
        )
    ]


def test_a_seeded_set_exercises_every_outcome(gated: Harnesses) -> None:
    kinds: Counter[str] = Counter()
    for seed in SEEDS:
        for wave in play_waves(gated.upstream, generate_groups(seed)):
            kinds += outcome_kinds(wave)
    wanted = {"gang-bound-all", "gang-bound-part", "gang-bound-none", "basic-bound-all", "preempted"}
    assert wanted <= set(kinds), kinds
