"""Pod groups on kube-scheduler v1.37.2 with GenericWorkload on: the gated differential harness.

The API server serves `scheduling.k8s.io/v1beta1`; the binary runs with `--feature-gates=
GenericWorkload=true`. Scenarios are played wave by wave (kubesched.harness.differential.waves): a
wave's pods are created together, then their PodGroups, and the outcome is read once the scheduler
settled; kubesched's simulator, with the same gates, is given the objects the server held before
each wave and must agree (kubesched.harness.differential.group_compare says what is compared, and
what is not where the binary's own runs disagree). The issue's three gangs are checked first, by
hand; then a bounded seeded set; then a few seeds played again by `kubesched run` with the same
gates (compared the same way, under `live-` names); then one pod preempting through a gang
disrupted whole or pod by pod, by hand and seeded (group_disruption). The long run is
`benchmarks/differential.py --groups`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.differential.group_builders import NO_VICTIMS, gang, node, plain_pod

from kubesched.harness.differential.gated import GANG_GATES
from kubesched.harness.differential.group_compare import compare_wave, compare_wave_seeded, simulate_wave
from kubesched.harness.differential.group_run import run_group_scenarios
from kubesched.harness.differential.group_scenario import GroupScenario, Wave
from kubesched.harness.differential.run import Harnesses, harnesses
from kubesched.harness.differential.waves import play_waves_whole

#: Seeds of the bounded set (about 4 s each on an idle machine).
SEEDS = list(range(1, 21))
#: Seeds also played by `kubesched run` (about 10 s each on an idle machine, upstream's play included).
LIVE_SEEDS = [1, 2, 3, 4]
#: Seeds of the bounded set with priorities, where groups preempt (3, 8 and 10 among them).
PRIORITY_SEEDS = list(range(1, 13))
#: Seeds of the disruption family (group_disruption): 8, 15 and 16 disagreed before one pod's
#: preemption took a gang disrupted whole as one victim; 16 and 17 evict gangs pod by pod.
DISRUPTION_SEEDS = [8, 15, 16, 17]


@pytest.fixture(scope="module")
def gated() -> Iterator[Harnesses]:
    """A control plane serving the Workload API, with kube-scheduler v1.37.2 and `kubesched run`
    gated the same way."""
    with harnesses(live=True, gates=GANG_GATES) as h:
        yield h


def test_the_issues_three_gangs(gated: Harnesses, tmp_path: Path) -> None:
    """Four nodes of 4 CPU; gangs of 4 x 3 CPU, 2 x 2 CPU and 5 x 1 CPU, each minCount its size,
    created in turn: the first is bound one pod per node, the others not at all."""
    s = GroupScenario(0, label="gi21")
    s.nodes = [node(s, i) for i in range(4)]
    s.waves = [gang(s, 0, 4, "3", 4), gang(s, 1, 2, "2", 2), gang(s, 2, 5, "1", 5)]
    first, second, third = play_waves_whole(gated.upstream, s)
    assert sorted(n or "" for n in first.nodes.values()) == [f"gi21-n{i}" for i in range(4)]
    scheduled = ("PodGroupInitiallyScheduled", "True", "Scheduled", "")
    assert first.group_status["gi21-w0"].conditions == [scheduled]
    assert set(second.nodes.values()) == {None} == set(third.nodes.values())
    unschedulable = "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"
    assert second.messages == {
        "gi21-w1-p0": ["0/4 nodes are available: 4 Insufficient cpu."],
        "gi21-w1-p1": [unschedulable],
    }
    preemption = f", {NO_VICTIMS}"
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
    # kubesched's simulator, given what the server held before each wave, agrees on all of it.
    results = [
        r for w in (first, second, third) for r in compare_wave(w, simulate_wave(w, gated.gates, tmp_path))
    ]
    assert [m for r in results for m in r.mismatches] == []
    assert {name for r in results for name in r.made} == {
        "group-bound",
        "message",
        "condition",
    }  # ties: no node


def test_seeded_groups_agree_with_kube_scheduler(gated: Harnesses, tmp_path: Path) -> None:
    """The bounded set, every pod of priority 0: nothing preempts."""
    tally = run_group_scenarios(SEEDS, tmp_path, priorities=False, using=gated)
    made = tally.made()
    assert tally.scenarios == len(SEEDS)
    assert made["group-bound"] > 40 and made["condition"] > 30 and made["message"] > 25, made
    assert made["node"] > 5, made
    # The set measures something: gangs bound whole, from minCount up, not at all; basic groups.
    wanted = {"gang-bound-all", "gang-bound-part", "gang-bound-none", "basic-bound-all", "pod-bound"}
    assert wanted <= set(tally.observed), tally.observed
    assert tally.mismatches == [], tally.mismatch_report(gated.gates.flags())


def test_kubesched_run_agrees_on_seeded_groups(gated: Harnesses, tmp_path: Path) -> None:
    """`kubesched run`'s pod-group path, live: the pods it binds, the FailedScheduling events it
    writes and the PodGroup condition it patches, compared with the simulator as upstream's are."""
    tally = run_group_scenarios(LIVE_SEEDS, tmp_path, priorities=False, live_every=1, using=gated)
    made = tally.made()
    assert tally.live_scenarios == len(LIVE_SEEDS)
    assert made["live-group-bound"] >= 8 and made["live-condition"] >= 8 and made["live-message"] >= 5, made
    assert tally.mismatches == [], tally.mismatch_report(gated.gates.flags())


def test_seeded_groups_with_priorities_agree_with_kube_scheduler(gated: Harnesses, tmp_path: Path) -> None:
    """The bounded set with priorities: groups preempt ordinary pods and each other's pods (the
    pod-group preemption of DefaultPreemption), and ordinary pods preempt pods of groups."""
    tally = run_group_scenarios(PRIORITY_SEEDS, tmp_path, priorities=True, using=gated)
    made = tally.made()
    assert tally.scenarios == len(PRIORITY_SEEDS)
    assert made["preemption"] >= 3 and made["condition"] > 15, made
    assert tally.observed.get("preempted", 0) >= 3, tally.observed
    assert tally.mismatches == [], tally.mismatch_report(gated.gates.flags())


@pytest.mark.parametrize(("mode", "victims"), [("all", 2), ("single", 1)])
def test_one_pod_preempts_through_a_gang_disrupted_whole_or_one_by_one(
    gated: Harnesses, tmp_path: Path, mode: str, victims: int
) -> None:
    """Upstream's single-pod preemption treats a PodGroup whose `disruptionMode` is `all` as one
    victim spanning nodes (framework/preemption/types.go, getCrossNodesVictims): every scheduled pod
    of it is evicted, and the dry run weighs them all. Four 4-CPU nodes; two 2-CPU `low` pods run
    on n3; a `low` gang of three 3-CPU pods takes n0-n2; then a 3-CPU `high` pod arrives. Disrupted
    whole, the gang costs three victims, more than n3's two; pod by pod, one gang pod is cheapest."""
    s = GroupScenario(0, label=f"dx{mode[0]}")
    s.nodes = [node(s, i) for i in range(4)]
    s.running = [plain_pod(f"{s.name}-o{i}", "2", "low", f"{s.name}-n3") for i in range(2)]
    spec = {"priorityClassName": "low", "disruptionMode": {mode: {}}}
    s.waves = [
        gang(s, 0, 3, "3", 3, priority="low", spec=spec),
        Wave([plain_pod(f"{s.name}-hi", "3", "high")]),
    ]
    placed, preempting = play_waves_whole(gated.upstream, s)
    assert sorted(n or "" for n in placed.nodes.values()) == [f"{s.name}-n{i}" for i in range(3)]
    assert preempting.nodes[f"{s.name}-hi"] is not None
    assert len(preempting.victims) == victims
    if mode == "all":
        assert preempting.victims == [f"default/{s.name}-o0", f"default/{s.name}-o1"]
        assert preempting.nodes[f"{s.name}-hi"] == f"{s.name}-n3"
    else:
        assert preempting.victims[0].startswith(f"default/{s.name}-w0-p")
    results = [r for w in (placed, preempting) for r in compare_wave_seeded(w, gated.gates, tmp_path)]
    assert "preemption" in {name for r in results for name in r.made}
    assert [m for r in results for m in r.mismatches] == []


def test_seeded_disruption_agrees_with_kube_scheduler(gated: Harnesses, tmp_path: Path) -> None:
    """The bounded set of the disruption family: one pod preempting through gangs disrupted whole
    (`all`) or pod by pod (`single`, or unset)."""
    tally = run_group_scenarios(DISRUPTION_SEEDS, tmp_path, disruption=True, using=gated)
    assert tally.scenarios == len(DISRUPTION_SEEDS)
    assert tally.observed.get("evicted-whole-all", 0) >= 2, tally.observed
    assert tally.made()["preemption"] >= 3, tally.made()
    assert tally.mismatches == [], tally.mismatch_report(gated.gates.flags())
