"""CompositePodGroup trees on kube-scheduler v1.37.2 with GenericWorkload,
TopologyAwareWorkloadScheduling and CompositePodGroup on (the API server serving v1alpha3 too).

A wave is one tree: its pods, then its PodGroups (once the binary saw the pods), then its
composites (once it saw the PodGroups), the root last, which releases the whole tree at once. The
binary tries a composite's placements in Go map order, so a tree that disagrees is compared again
on kubesched runs with other seeds (group_compare.compare_wave_seeded); its children it tries
oldest first, by name among equals. Trees checked by hand first, then a bounded seeded set; the
long run is `benchmarks/differential.py --groups --composite`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.differential.group_builders import IN_ONE_RACK, NO_VICTIMS, gang, member_pods, node, pod_group

from kubesched.harness.differential.gated import COMPOSITE_GATES
from kubesched.harness.differential.group_compare import compare_wave_seeded
from kubesched.harness.differential.group_run import run_group_scenarios
from kubesched.harness.differential.group_scenario import COMPOSITE_API, GroupScenario, Wave
from kubesched.harness.differential.run import Harnesses, harnesses
from kubesched.harness.differential.waves import play_waves

Obj = dict[str, Any]
#: Seeds of the bounded set (no priorities: a few seconds each on an idle machine).
SEEDS = [1, 2, 3, 4, 5]
#: Seeds also played by `kubesched run` with the three gates.
LIVE_SEEDS = [1, 2]


@pytest.fixture(scope="module")
def composite() -> Iterator[Harnesses]:
    """A control plane serving v1beta1 and v1alpha3, kube-scheduler v1.37.2 and `kubesched run`
    with the three gates."""
    with harnesses(live=True, gates=COMPOSITE_GATES) as h:
        yield h


def _tree(s: GroupScenario, i: int, min_groups: int) -> Wave:
    """Composite `<s>-w<i>` asking for one rack over `lead` (one 2-CPU pod) and `work` (two 3-CPU
    pods, minCount 2)."""
    root = f"{s.name}-w{i}"
    wave = Wave()
    for child, size, cpu in (("lead", 1, "2"), ("work", 2, "3")):
        name = f"{root}-{child}"
        wave.pods += member_pods(name, size, cpu)
        spec = {
            "parentCompositePodGroupName": root,
            "workloadRef": {"workloadName": root, "templateName": child},
            "schedulingPolicy": {"gang": {"minCount": size}},
        }
        wave.groups.append(pod_group(name, spec))
    spec = {
        "workloadRef": {"workloadName": root, "templateName": root},
        "schedulingPolicy": {"gang": {"minGroupCount": min_groups}},
    }
    wave.composites.append(
        {
            "apiVersion": COMPOSITE_API,
            "kind": "CompositePodGroup",
            "metadata": {"name": root, "namespace": "default"},
            "spec": spec | IN_ONE_RACK,
        }
    )
    return wave


def test_a_tree_fits_one_rack_whole_or_not_at_all(composite: Harnesses, tmp_path: Path) -> None:
    """Two racks of two 4-CPU nodes: no rack holds the three pods of a tree needing both children,
    so nothing is bound; the child that fitted takes the composite's status, and the pod-group
    preemption's reason is appended to it once for the composite and once for the child. A tree
    needing one child binds one child."""
    s = GroupScenario(0, label="cp21", topology=True, composite=True)
    s.nodes = [node(s, i, rack="ab"[i % 2]) for i in range(4)]
    s.waves = [_tree(s, 0, 2), _tree(s, 1, 1)]
    first, second = play_waves(composite.upstream, s)
    assert set(first.nodes.values()) == {None}
    messages = [c[0][3] for c in (g.conditions for g in first.group_status.values())]
    shared = (
        "pod group is unschedulable, 0/2 placements are available, first placement status: minCount (2) "
        f"cannot be satisfied: 1 scheduled, 0 remaining, {NO_VICTIMS}, {NO_VICTIMS}"
    )
    assert shared in messages, messages
    assert len([n for n in second.nodes.values() if n is not None]) in (1, 2)
    results = [r for w in (first, second) for r in compare_wave_seeded(w, composite.gates, tmp_path)]
    assert [m for r in results for m in r.mismatches] == []
    assert {"group-bound", "message", "condition"} <= {name for r in results for name in r.made}


def test_seeded_trees_agree_with_kube_scheduler(composite: Harnesses, tmp_path: Path) -> None:
    """The bounded set, every pod of priority 0."""
    tally = run_group_scenarios(SEEDS, tmp_path, composite=True, priorities=False, using=composite)
    made = tally.made()
    assert tally.scenarios == len(SEEDS)
    assert made["group-bound"] > 10 and made["condition"] > 10 and made["message"] > 5, made
    assert tally.mismatches == [], tally.mismatch_report(composite.gates.flags())


def test_kubesched_run_agrees_on_seeded_trees(composite: Harnesses, tmp_path: Path) -> None:
    """`kubesched run` live: the trees' pods it binds, the FailedScheduling events and the child
    PodGroups' conditions it writes, against kubesched's simulator as the binary is compared."""
    tally = run_group_scenarios(
        LIVE_SEEDS, tmp_path, composite=True, priorities=False, live_every=1, using=composite
    )
    made = tally.made()
    assert tally.live_scenarios == len(LIVE_SEEDS)
    assert made["live-group-bound"] > 5 and made["live-condition"] > 5, made
    assert tally.mismatches == [], tally.mismatch_report(composite.gates.flags())


def _with_priorities(wave: Wave, root_class: str, child_class: str, *, whole: bool) -> Wave:
    """The tree of `wave` anywhere in the cluster (no rack), its root and pods of `root_class`, its
    PodGroups of `child_class`; the root's `disruptionMode` `all` when `whole`."""
    for pod in wave.pods:
        pod["spec"]["priorityClassName"] = root_class
    for group in wave.groups:
        group["spec"]["priorityClassName"] = child_class
    for composite in wave.composites:
        composite["spec"].pop("schedulingConstraints", None)
        composite["spec"]["priorityClassName"] = root_class
        if whole:
            composite["spec"]["disruptionMode"] = {"all": {}}
    return wave


def _ordinary(name: str, cpu: str, priority: str) -> Obj:
    """A pod of no group asking for `cpu`, of priority class `priority`."""
    (pod,) = member_pods(name, 1, cpu, priority)
    pod["metadata"]["name"] = name
    del pod["spec"]["schedulingGroup"]
    return pod


def test_a_victim_in_a_tree_is_weighed_and_evicted_as_its_root_says(
    composite: Harnesses, tmp_path: Path
) -> None:
    """A tree (root `low`, disrupted whole; its PodGroups `high`) on three of four 4-CPU nodes, a
    `high` pod on the fourth, then a one-pod gang of priority `mid`: the binary weighs the tree's
    pods at the root's `low` and evicts all three for the gang's one pod."""
    s = GroupScenario(0, label="cp21v", topology=True, composite=True)
    s.nodes = [node(s, i, "ab"[i % 2]) for i in range(4)]
    s.waves = [
        _with_priorities(_tree(s, 0, 2), "low", "high", whole=True),
        Wave(pods=[_ordinary(f"{s.name}-w1-o0", "4", "high")]),
        gang(s, 2, 1, "3", 1, priority="mid", spec={"priorityClassName": "mid"}),
    ]
    waves = play_waves(composite.upstream, s)
    assert len(waves[2].victims) == 3, waves[2].victims
    results = [r for w in waves for r in compare_wave_seeded(w, composite.gates, tmp_path)]
    assert [m for r in results for m in r.mismatches] == []
    assert "preemption" in {name for r in results for name in r.made}


def test_the_binary_tries_a_trees_children_by_name_in_its_preemption_too(
    composite: Harnesses, tmp_path: Path
) -> None:
    """Four `low` pods of 3 CPU, one per 4-CPU node, then a `mid` tree needing both its children:
    `a` (four 2-CPU pods) and `b` (one 3-CPU pod). With every `low` pod taken away, `a`, tried
    first by name, spreads over the four nodes and leaves `b` none: the binary's pod-group
    preemption finds no placement and evicts nothing (tried `b` first, the tree would fit and all
    four would go). Composite seed 209 wave 2 in small."""
    s = GroupScenario(0, label="cp21o", topology=True, composite=True)
    s.nodes = [node(s, i, "ab"[i % 2]) for i in range(4)]
    root = f"{s.name}-w4"
    tree = Wave()
    for child, size, cpu in (("a", 4, "2"), ("b", 1, "3")):
        name = f"{root}-{child}"
        tree.pods += member_pods(name, size, cpu, "mid")
        spec = {
            "parentCompositePodGroupName": root,
            "workloadRef": {"workloadName": root, "templateName": child},
            "schedulingPolicy": {"gang": {"minCount": size}},
            "priorityClassName": "mid",
        }
        tree.groups.append(pod_group(name, spec))
    spec = {
        "workloadRef": {"workloadName": root, "templateName": root},
        "schedulingPolicy": {"gang": {"minGroupCount": 2}},
        "priorityClassName": "mid",
    }
    meta = {"name": root, "namespace": "default"}
    tree.composites.append(
        {"apiVersion": COMPOSITE_API, "kind": "CompositePodGroup", "metadata": meta, "spec": spec}
    )
    s.waves = [*(Wave(pods=[_ordinary(f"{s.name}-w{i}-o0", "3", "low")]) for i in range(4)), tree]
    waves = play_waves(composite.upstream, s)
    assert waves[4].victims == [] and set(waves[4].nodes.values()) == {None}, waves[4]
    results = [r for w in waves for r in compare_wave_seeded(w, composite.gates, tmp_path)]
    assert [m for r in results for m in r.mismatches] == []
    # the dry run ran the algorithm and it failed: victims there were, no placement
    condition = waves[4].group_status[f"{root}-b"].conditions[0]
    assert "pod group preemption: pod group is unschedulable" in condition[3], condition
