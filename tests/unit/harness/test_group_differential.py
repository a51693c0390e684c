"""The gated differential harness without a cluster: the gates each process gets, the pod-group
scenario generator, and the comparison of a settled wave with kubesched's report."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, cast

import pytest

from kubesched.api.loader import LoadedObjects, load_documents
from kubesched.harness.differential import group_run
from kubesched.harness.differential.compare import PodComparison
from kubesched.harness.differential.gated import GANG_GATES, NO_GATES, TOPOLOGY_GATES, Gates
from kubesched.harness.differential.group_compare import Simulated, compare_wave, compare_wave_seeded
from kubesched.harness.differential.group_run import outcome_kinds
from kubesched.harness.differential.group_scenario import GroupScenario, generate_groups
from kubesched.harness.differential.run import Harnesses
from kubesched.harness.differential.waves import GroupOutcome, WaveOutcome, popped_in_part, raced_in_flight
from kubesched.simulate.explain.model import NodeScores
from kubesched.simulate.snapshot.model import PodResult, Report, Summary

SEEDS = range(1, 301)


def test_the_gates_reach_every_process_alike() -> None:
    assert NO_GATES.flags() == () and NO_GATES.runtime_config() == ()
    assert GANG_GATES.flags() == ("--feature-gates=GenericWorkload=true",)
    assert GANG_GATES.runtime_config() == ("scheduling.k8s.io/v1beta1=true",)
    assert TOPOLOGY_GATES.features().enabled("TopologyAwareWorkloadScheduling")
    composite = Gates({"GenericWorkload": True, "CompositePodGroup": True})
    assert composite.runtime_config() == ("scheduling.k8s.io/v1beta1=true", "scheduling.k8s.io/v1alpha3=true")


def test_a_seed_makes_one_scenario() -> None:
    assert generate_groups(7) == generate_groups(7)
    assert generate_groups(7) != generate_groups(8)


def test_every_feature_is_exercised_over_the_seeds() -> None:
    features = Counter(f for seed in SEEDS for f in generate_groups(seed).features)
    wanted = {
        "gang",
        "gang-minCount-below-size",
        "gang-sized-to-room",
        "basic-policy",
        "competing-groups",
        "group-priority",
        "ordinary-pods",
        "running-pods",
    }
    assert wanted <= set(features), features
    assert not any(f.startswith("topology") for f in features)
    topology = {f for seed in SEEDS for f in generate_groups(seed, topology=True).features}
    assert {"topology-rack", "topology-zone"} <= topology


@pytest.mark.parametrize("seed", [1, 2, 3, 50, 99])
def test_the_manifests_load_strictly_and_each_pod_names_its_group(seed: int) -> None:
    s = generate_groups(seed, topology=True)
    items = [*s.nodes, *s.running, *s.pods_to_schedule, *s.groups]
    loaded = LoadedObjects()
    for obj in load_documents(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "s.json"):
        loaded.add(obj)
    assert not loaded.skipped
    assert len(loaded.scheduling_pod_groups) == len(s.groups) > 0
    for wave in s.waves:
        names = [g["metadata"]["name"] for g in wave.groups]
        for pod in wave.pods:
            group = (pod["spec"].get("schedulingGroup") or {}).get("podGroupName")
            assert group is None or group in names


def test_a_wave_is_one_group_or_one_pod_so_timing_cannot_matter() -> None:
    for seed in SEEDS:
        for wave in generate_groups(seed).waves:
            assert len(wave.groups) == 1 or (not wave.groups and len(wave.pods) == 1)


def _pod(name: str, group: str | None = None) -> dict[str, object]:
    spec: dict[str, object] = {"containers": [{"name": "c", "image": "i"}]}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    meta = {"name": name, "namespace": "default"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _result(
    name: str, node: str | None, scores: dict[str, int] | None = None, message: str = ""
) -> PodResult:
    return PodResult(
        namespace="default",
        name=name,
        scheduler_name="default-scheduler",
        result="Scheduled" if node else "Unschedulable",
        node=node,
        message=message or None,
        scores={n: NodeScores(plugins={}, total=t) for n, t in (scores or {}).items()},
    )


def _report(*pods: PodResult) -> Simulated:
    """The report, each unscheduled pod's message standing for its first attempt's."""
    report = Report(pods=list(pods), nodes=[], summary=Summary(0, 0, 0, 0, 0.0, 0.0))
    return Simulated(report, {p.name: p.message for p in pods if p.message is not None})


GANG = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"}}


def _wave(nodes: dict[str, str | None], messages: dict[str, list[str]], victims: list[str]) -> WaveOutcome:
    gang = {**GANG, "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    pods = [_pod(name, "g" if name.startswith("g-") else None) for name in nodes]
    return WaveOutcome(0, pods, [gang], [], nodes, messages, {}, victims)


def _made(results: list[PodComparison]) -> dict[str, dict[str, bool]]:
    return {r.pod: r.made for r in results}


def test_a_wave_that_agrees_agrees_on_every_comparison() -> None:
    wave = _wave(
        {"g-p0": "n1", "g-p1": "n2", "o0": None},
        {"g-p0": [], "g-p1": [], "o0": ["0/2 nodes are available: 2 Insufficient cpu."]},
        ["default/r0"],
    )
    report = _report(
        _result("g-p0", "n2", {"n1": 10, "n2": 20}),
        _result("g-p1", "n1", {"n1": 30, "n2": 20}),
        _result("o0", None, message="0/2 nodes are available: 2 Insufficient cpu."),
    )
    report.report.pods[0].victims.append("default/r0")
    made = _made(compare_wave(wave, report))
    assert made == {
        # A group as a whole: how many bound and where, not which pod went where.
        "default/g": {"group-bound": True, "node": True, "condition": True},
        "default/o0": {"schedulable": True, "message": True},
        "wave0": {"preemption": True},
    }


def test_a_group_is_compared_as_a_whole_ties_and_other_messages_told() -> None:
    wave = _wave(
        {"g-p0": None, "g-p1": "n1"},
        {"g-p0": ["minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"], "g-p1": []},
        [],
    )
    # kubesched bound the other pod of the pair, on a tie: the same outcome for alike pods.
    report = _report(
        _result("g-p0", "n1", {"n1": 10, "n2": 10}),
        _result("g-p1", None, message="minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"),
    )
    results = compare_wave(wave, report)
    assert _made(results)["default/g"] == {"group-bound": True, "message": True, "condition": True}
    assert {"group-node-ties"} == next(r.observed for r in results if r.pod == "default/g")
    other = _report(
        _result("g-p0", None, message="0/2 nodes are available: 2 Insufficient cpu."), _result("g-p1", "n1")
    )
    assert _made(compare_wave(wave, other))["default/g"]["message"] is False
    everything_bound = _report(_result("g-p0", "n1"), _result("g-p1", "n2"))
    made = _made(compare_wave(wave, everything_bound))
    assert made["default/g"] == {"group-bound": False, "message": False, "condition": True}


def test_outcome_kinds_name_what_the_binary_did() -> None:
    wave = _wave({"g-p0": "n1", "g-p1": None, "o0": "n2"}, {}, ["default/r0"])
    assert outcome_kinds(wave) == Counter({"gang-bound-part": 1, "pod-bound": 1, "preempted": 1})


def test_dynamic_resources_pod_group_post_filter_texts_are_compared() -> None:
    """kubesched runs DynamicResources' PodGroupPostFilter: its texts in the binary's first messages
    are compared like any other (they were skipped while kubesched did not run it)."""
    text = (
        "pod group is unschedulable, minCount (2) cannot be satisfied: 1 scheduled, 0 remaining, "
        "deallocation of PodGroup ResourceClaim completed, pod group preemption: not eligible due to "
        "preemptionPolicy=Never."
    )
    wave = _wave({"g-p0": None, "g-p1": None}, {"g-p0": [text], "g-p1": ["minCount (2) ..."]}, [])
    other = _report(_result("g-p0", None, message="x"), _result("g-p1", None, message="minCount (2) ..."))
    assert _made(compare_wave(wave, other))["default/g"]["message"] is False
    same = _report(_result("g-p0", None, message=text), _result("g-p1", None, message="minCount (2) ..."))
    results = compare_wave(wave, same)
    assert _made(results)["default/g"]["message"] is True
    assert sum(r.adjusted for r in results) == 0


def test_messages_of_a_tree_child_the_binary_popped_in_part_are_not_compared() -> None:
    """The binary's first cycle held one of the group's two pods (its log says so): which pods
    failed first, and how, follow that split. kubesched is given the split for a PodGroup of its
    own (test_first_cycle.py), so its messages are compared; not for a CompositePodGroup's child,
    where it is not, so they are counted as adjusted."""
    wave = _wave(
        {"g-p0": None, "g-p1": None},
        {"g-p0": ["0/2 nodes are available: 2 Insufficient cpu."], "g-p1": ["minCount (2) ..."]},
        [],
    )
    mine = _report(_result("g-p0", None, message="x"), _result("g-p1", None, message="x"))
    wave.first_cycle_pods = {"g": 1}
    results = compare_wave(wave, mine)
    assert _made(results)["default/g"]["message"] is False
    assert "first-cycle-pods" in results[0].observed
    wave.groups[0]["spec"]["parentCompositePodGroupName"] = "tree"
    results = compare_wave(wave, mine)
    assert _made(results)["default/g"] == {"group-bound": True, "condition": True}
    assert {"binary-popped-part"} <= next(r.observed for r in results if r.pod == "default/g")
    wave.first_cycle_pods = {"g": 2}
    assert _made(compare_wave(wave, mine))["default/g"]["message"] is False


def test_a_group_the_binary_refused_a_claim_in_flight_may_differ_in_nodes_and_messages() -> None:
    """A member the binary tried in a later cycle met its group's claim still being allocated by
    another member's binding cycle (seed 10 of the DRA set): where the group went and its members'
    messages follow that race, so a disagreement there is counted as adjusted; its bound count and
    condition are still compared, and so is all of it where it agrees."""
    refused = (
        "0/4 nodes are available: resource claim default/g-shared is in the process of being allocated. "
        "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    )
    wave = _wave({"g-p0": "n1", "g-p1": "n1"}, {"g-p0": [], "g-p1": [refused]}, [])
    assert raced_in_flight(wave) == {"g"}
    elsewhere = _report(_result("g-p0", "n2", {"n2": 10}), _result("g-p1", "n2", {"n2": 10}))
    results = compare_wave(wave, elsewhere)
    assert _made(results)["default/g"] == {"group-bound": True, "condition": True}
    assert results[0].mismatches == [] and results[0].adjusted == 1
    assert "binary-in-flight-race" in results[0].observed
    there = _report(_result("g-p0", "n1", {"n1": 10}), _result("g-p1", "n1", {"n1": 10}, message=refused))
    results = compare_wave(wave, there)
    assert _made(results)["default/g"] == {
        "group-bound": True,
        "node": True,
        "message": True,
        "condition": True,
    }
    assert results[0].adjusted == 0
    wave.messages["g-p1"] = ["0/4 nodes are available: 4 Insufficient cpu."]
    assert raced_in_flight(wave) == set()
    assert _made(compare_wave(wave, elsewhere))["default/g"]["node"] is False


def test_a_wave_tells_whether_the_scheduler_popped_a_group_in_part() -> None:
    wave = _wave({"g-p0": None, "g-p1": None, "o0": "n1"}, {}, [])
    assert not popped_in_part(wave)  # its log did not say: taken as whole
    wave.first_cycle_pods = {"g": 2}
    assert not popped_in_part(wave)
    wave.first_cycle_pods = {"g": 1}
    assert popped_in_part(wave)


def test_conditions_are_compared_exactly_unless_the_binarys_is_random() -> None:
    wave = _wave({"g-p0": "n1", "g-p1": "n2"}, {"g-p0": [], "g-p1": []}, [])
    scheduled = ("PodGroupInitiallyScheduled", "True", "Scheduled", "")
    wave.group_status["g"] = GroupOutcome("g", [scheduled])
    simulated = _report(_result("g-p0", "n1"), _result("g-p1", "n2"))
    simulated.conditions["g"] = [scheduled]
    assert _made(compare_wave(wave, simulated))["default/g"]["condition"] is True
    simulated.conditions["g"] = [("PodGroupInitiallyScheduled", "False", "Unschedulable", "x")]
    assert _made(compare_wave(wave, simulated))["default/g"]["condition"] is False
    # Bound whole, yet False: a condition an earlier cycle of the binary wrote and left.
    wave.group_status["g"] = GroupOutcome(
        "g", [("PodGroupInitiallyScheduled", "False", "Unschedulable", "y")]
    )
    results = compare_wave(wave, simulated)
    assert "condition" not in _made(results)["default/g"]
    assert "binary-random-condition" in next(r.observed for r in results if r.pod == "default/g")
    # True, with a failed cycle's text: seen on some plays of a wave and not on others.
    stale = (
        "pod group is unschedulable, pod group preemption: No preemption victims found for incoming preemptor"
    )
    wave.group_status["g"] = GroupOutcome("g", [("PodGroupInitiallyScheduled", "True", "Scheduled", stale)])
    simulated.conditions["g"] = [scheduled]
    results = compare_wave(wave, simulated)
    assert "condition" not in _made(results)["default/g"]
    # True with any other text is still compared.
    wave.group_status["g"] = GroupOutcome("g", [("PodGroupInitiallyScheduled", "True", "Scheduled", "z")])
    assert _made(compare_wave(wave, simulated))["default/g"]["condition"] is False


def test_without_priorities_the_seed_gives_the_same_scenario_with_none() -> None:
    for seed in (3, 4, 5):
        with_, without = generate_groups(seed), generate_groups(seed, priorities=False)
        assert [len(w.pods) for w in with_.waves] == [len(w.pods) for w in without.waves]
        assert "group-priority" not in without.features and "competing-groups" not in without.features
        everything = [*without.running, *without.pods_to_schedule, *without.groups]
        assert not any("priorityClassName" in o["spec"] for o in everything)


def test_with_dra_the_seed_gives_the_same_scenario_with_devices_and_claims() -> None:
    """DRA draws come from their own generator: the groups, pods and nodes stay the seed's."""
    kinds: Counter[str] = Counter()
    for seed in SEEDS:
        plain, dra = generate_groups(seed), generate_groups(seed, dra=True)
        assert [n["metadata"] for n in dra.nodes] == [n["metadata"] for n in plain.nodes]
        assert [len(w.pods) for w in dra.waves] == [len(w.pods) for w in plain.waves]
        assert "dra-devices" in dra.features and not any(f.startswith("dra") for f in plain.features)
        made = {o["metadata"]["name"]: o for o in dra.volumes}
        kinds.update(o["kind"] for o in dra.volumes)
        for wave in dra.waves:
            for group in wave.groups:
                shared = group["spec"].get("resourceClaims", [])
                for pod in wave.pods:
                    entries = pod["spec"].get("resourceClaims", [])
                    assert all(e["resourceClaimName"] in made for e in entries)
                    if shared:  # every member names the group's claim exactly as the group does
                        assert entries == shared
    assert kinds["DeviceClass"] == len(SEEDS) and kinds["ResourceSlice"] > 0 and kinds["ResourceClaim"] > 0
    features = {f for seed in SEEDS for f in generate_groups(seed, dra=True).features}
    assert {"dra-group-claim", "dra-pod-claims"} <= features


def test_the_dra_objects_load_strictly() -> None:
    s = generate_groups(2, dra=True)
    items = [*s.volumes, *s.nodes, *s.pods_to_schedule, *s.groups]
    loaded = LoadedObjects()
    for obj in load_documents(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "s.json"):
        loaded.add(obj)
    assert not loaded.skipped
    assert loaded.device_classes and loaded.resource_slices and loaded.resource_claims


# --------------------------------------------------------------------------- topology placements

PLACEMENTS = "pod group is unschedulable, 0/2 placements are available, first placement status: "
NO_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"


def _rack_node(name: str, rack: str) -> dict[str, object]:
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"rack": rack}},
        "status": {
            "capacity": allocatable,
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _rack_wave(first_rack_nodes: int) -> WaveOutcome:
    """Rack a holds n0, rack b n1 and n2 (4 CPU each); a gang of three 3-CPU pods, minCount 3, asks
    for one rack and fits neither. The binary's messages as when its first placement was the rack
    with `first_rack_nodes` nodes (which one comes first is random upstream)."""
    pods = []
    for i in range(3):
        pod = _pod(f"g-p{i}", "g")
        pod["spec"]["containers"] = [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "3"}}}]  # type: ignore[index]
        pods.append(pod)
    group = {
        **GANG,
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": 3}},
            "schedulingConstraints": {"topology": [{"key": "rack"}]},
        },
    }
    nodes = [_rack_node("n0", "a"), _rack_node("n1", "b"), _rack_node("n2", "b")]
    n = first_rack_nodes
    reason = f"{PLACEMENTS}minCount (3) cannot be satisfied: {n} scheduled, {2 - n} remaining"
    fit = f"0/{n} nodes are available: {n} Insufficient cpu."
    fitted = f"pod group is unschedulable, {reason}, {NO_VICTIMS}"
    firsts = [fitted] * n + [fit] + [reason] * (2 - n)
    messages = {f"g-p{i}": [m] for i, m in enumerate(firsts)}
    condition = ("PodGroupInitiallyScheduled", "False", "Unschedulable", f"{reason}, {NO_VICTIMS}")
    status = {"g": GroupOutcome("g", [condition])}
    return WaveOutcome(0, pods, [group], nodes, {f"g-p{i}": None for i in range(3)}, messages, status)


@pytest.mark.parametrize("first_rack_nodes", [1, 2])
def test_the_binarys_first_placement_agrees_when_some_seed_tries_it_first(
    first_rack_nodes: int, tmp_path: Path
) -> None:
    wave = _rack_wave(first_rack_nodes)
    results = compare_wave_seeded(wave, TOPOLOGY_GATES, tmp_path)
    (group,) = results
    assert group.mismatches == []
    assert {"group-bound", "message", "condition"} <= set(group.made)


def test_a_first_placement_no_seed_gives_stays_a_mismatch(tmp_path: Path) -> None:
    wave = _rack_wave(2)
    wave.messages["g-p2"] = ["0/3 nodes are available: 3 Insufficient cpu."]
    (group,) = compare_wave_seeded(wave, TOPOLOGY_GATES, tmp_path)
    assert "message" in [m.comparison for m in group.mismatches]
    assert "placement-order-seed" not in group.observed


def _plays(monkeypatch: pytest.MonkeyPatch, splits: list[int], agreeing: int = 2) -> list[int]:
    """Plays of a two-pod gang whose first cycle held `splits[i]` pods on play i; kubesched's
    simulator is stood in by a comparison that agrees where the first cycle held `agreeing`."""
    played: list[int] = []

    def play(target: object, s: object) -> list[WaveOutcome]:
        wave = _wave({"g-p0": None, "g-p1": None}, {}, [])
        wave.first_cycle_pods = {"g": splits[len(played)]}
        played.append(wave.first_cycle_pods["g"])
        return [wave]

    def compare(wave: WaveOutcome, *args: object, prefix: str = "") -> list[PodComparison]:
        cmp = PodComparison("default/g", prefix)
        cmp.check("message", wave.first_cycle_pods["g"], agreeing)
        return [cmp]

    monkeypatch.setattr(group_run, "play_waves", play)
    monkeypatch.setattr(group_run, "compare_wave_seeded", compare)
    return played


def test_a_disagreeing_play_the_binary_popped_in_part_is_played_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    h = Harnesses(upstream=cast(Any, object()), live=None, workdir=tmp_path, gates=GANG_GATES)
    played = _plays(monkeypatch, [1, 2, 2])
    results, _, waves = group_run.compare_group_scenario(h, GroupScenario(1), tmp_path)
    assert played == [1, 2] and waves[0].first_cycle_pods == {"g": 2}
    assert [r.mismatches for r in results] == [[]] and "binary-replayed" in results[0].observed
    # A play popped in part every time: the last stands, its disagreement reported.
    played = _plays(monkeypatch, [1, 1, 1, 2])
    results, files, _ = group_run.compare_group_scenario(h, GroupScenario(1), tmp_path)
    assert played == [1, 1, 1] and results[0].mismatches and files[0].exists()
    # A whole play that disagrees is not played again: the binary did what kubesched models.
    played = _plays(monkeypatch, [2, 1], agreeing=0)
    results, _, _ = group_run.compare_group_scenario(h, GroupScenario(1), tmp_path)
    assert played == [2] and results[0].mismatches


def test_a_disagreeing_play_where_the_binary_raced_a_claim_in_flight_is_played_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    h = Harnesses(upstream=cast(Any, object()), live=None, workdir=tmp_path, gates=GANG_GATES)
    played = _plays(monkeypatch, [2, 2], agreeing=2)
    plain = group_run.play_waves

    def raced_first(target: object, s: object) -> list[WaveOutcome]:
        waves = plain(target, s)
        if len(played) == 1:
            waves[0].messages["g-p1"] = [
                "0/2 nodes are available: resource claim default/c is in the process of being allocated."
            ]
        return waves

    def compare(wave: WaveOutcome, *args: object, prefix: str = "") -> list[PodComparison]:
        cmp = PodComparison("default/g", prefix)
        cmp.check("message", bool(wave.messages.get("g-p1")), False)  # kubesched never races
        return [cmp]

    monkeypatch.setattr(group_run, "play_waves", raced_first)
    monkeypatch.setattr(group_run, "compare_wave_seeded", compare)
    results, _, _ = group_run.compare_group_scenario(h, GroupScenario(1), tmp_path)
    assert played == [2, 2] and results[0].mismatches == [] and "binary-replayed" in results[0].observed


def test_composite_scenarios_are_trees_created_children_first() -> None:
    features: Counter[str] = Counter()
    for seed in SEEDS:
        s = generate_groups(seed, composite=True)
        assert s.name == f"c{seed}" and s.topology and s.composite
        features.update(s.features)
        for wave in s.waves:
            names = {g["metadata"]["name"] for g in wave.composites}
            roots = [c for c in wave.composites if "parentCompositePodGroupName" not in c["spec"]]
            # one tree per wave, its root created last; every child names a composite of the wave
            assert not wave.composites or (len(roots) == 1 and wave.composites[-1] is roots[0])
            for obj in [*wave.groups, *wave.composites]:
                parent = obj["spec"].get("parentCompositePodGroupName")
                assert parent is None or (parent in names and obj["spec"]["workloadRef"])
            assert all(c["spec"]["workloadRef"] for c in wave.composites)
    wanted = {
        "composite",
        "composite-gang",
        "composite-minGroupCount-below",
        "composite-basic",
        "composite-nested",
        "composite-topology-rack",
        "composite-topology-zone",
    }
    assert wanted <= set(features), features
    # the gang and topology scenarios of a seed are the same with or without composites in the code
    assert generate_groups(5, topology=True) == generate_groups(5, topology=True, composite=False)


@pytest.mark.parametrize("seed", [1, 4, 7])
def test_composite_manifests_load_strictly(seed: int) -> None:
    s = generate_groups(seed, composite=True)
    composites = [c for w in s.waves for c in w.composites]
    items = [*s.nodes, *s.running, *s.pods_to_schedule, *s.groups, *composites]
    loaded = LoadedObjects()
    for obj in load_documents(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "s.json"):
        loaded.add(obj)
    assert not loaded.skipped
    assert len(loaded.composite_pod_groups) == len(composites) > 0


FIRST = ("PodGroupInitiallyScheduled", "False", "Unschedulable", "first cycle")
LATER = ("PodGroupInitiallyScheduled", "False", "Unschedulable", "second cycle")
BOUND = ("PodGroupInitiallyScheduled", "True", "Scheduled", "")


def _tree_wave(bound: bool, condition: tuple[str, str, str, str]) -> WaveOutcome:
    """The binary's outcome for `g`, a child of a composite: both pods bound or neither."""
    node = "n1" if bound else None
    wave = _wave({"g-p0": node, "g-p1": node}, {"g-p0": [], "g-p1": []}, [])
    wave.groups[0]["spec"]["parentCompositePodGroupName"] = "tree"
    wave.group_status["g"] = GroupOutcome("g", [condition])
    return wave


def _retried(history: list[tuple[str, str, str, str]], attempts: int = 3) -> Simulated:
    """kubesched bound both pods of `g` on attempt `attempts` after the cycles of `history`."""
    simulated = _report(_result("g-p0", "n1"), _result("g-p1", "n1"))
    for pod in simulated.report.pods:
        pod.attempts = attempts
    simulated.conditions["g"] = [BOUND]
    simulated.history["g"] = [[c] for c in [*history, BOUND]]
    return simulated


def _group(results: list[PodComparison]) -> PodComparison:
    return next(r for r in results if r.pod == "default/g")


def test_a_tree_child_agrees_with_kubescheds_first_cycle_bound_count_and_condition_at_once() -> None:
    # The binary was read after its first cycle: nothing bound yet, the first cycle's condition.
    group = _group(compare_wave(_tree_wave(False, FIRST), _retried([FIRST, LATER])))
    assert not group.mismatches and group.adjusted == 1
    assert "tree-first-cycle" in group.observed
    assert group.made["group-bound"] and group.made["condition"]
    # and after the retry that bound it, kubesched's run as it ended agrees without adjusting
    group = _group(compare_wave(_tree_wave(True, BOUND), _retried([FIRST, LATER])))
    assert not group.mismatches and group.adjusted == 0


def test_a_tree_childs_condition_is_never_taken_from_a_later_cycle_than_the_first() -> None:
    # the second cycle's condition, with the first cycle's count: the binary, read after one
    # cycle, cannot have written it, and no one moment of kubesched's run gives both
    assert _group(compare_wave(_tree_wave(False, LATER), _retried([FIRST, LATER]))).mismatches
    # pods bound on the first attempt stay bound in the first cycle's view
    assert _group(compare_wave(_tree_wave(False, FIRST), _retried([FIRST], attempts=1))).mismatches


def test_a_pod_group_of_its_own_is_compared_as_kubescheds_run_ended() -> None:
    wave = _tree_wave(False, FIRST)
    wave.groups[0]["spec"].pop("parentCompositePodGroupName")
    assert _group(compare_wave(wave, _retried([FIRST, LATER]))).mismatches


def _tree_seeds(monkeypatch: pytest.MonkeyPatch, agree: dict[int, set[str]]) -> list[PodComparison]:
    """compare_wave_seeded on a tree's wave whose records agree, per seed, for the names given."""
    from kubesched.harness.differential import group_compare

    wave = _tree_wave(False, FIRST)
    wave.composites.append({"kind": "CompositePodGroup", "metadata": {"name": "tree"}, "spec": {}})

    def simulate(outcome: WaveOutcome, gates: Gates, workdir: Path, *, seed: int = 0) -> int:
        return seed

    def compare(outcome: WaveOutcome, seed: int, *, prefix: str = "") -> list[PodComparison]:
        out = []
        for name in ("default/a", "default/b", "wave0"):
            cmp = PodComparison(name, prefix)
            cmp.check("group-bound", 1, 1 if name in agree.get(seed, set()) else 0)
            out.append(cmp)
        return out

    monkeypatch.setattr(group_compare, "simulate_wave", simulate)
    monkeypatch.setattr(group_compare, "compare_wave", compare)
    gates = Gates({**TOPOLOGY_GATES.values, "CompositePodGroup": True})
    return compare_wave_seeded(wave, gates, Path("."))


def test_a_trees_wave_agrees_on_one_seed_for_all_of_it(monkeypatch: pytest.MonkeyPatch) -> None:
    everything = {"default/a", "default/b", "wave0"}
    results = _tree_seeds(monkeypatch, {3: {"default/a"}, 5: {"default/b", "wave0"}, 9: everything})
    assert not any(r.mismatches for r in results)
    assert "tree-order-seed" in results[0].observed and results[0].adjusted == 1
    # one group on one seed, the other group and the preemption on another: no one run gives that
    results = _tree_seeds(monkeypatch, {3: {"default/a"}, 5: {"default/b", "wave0"}})
    assert [r.pod for r in results if r.mismatches] == ["default/a", "default/b", "wave0"]


def test_a_group_the_binary_tried_once_is_compared_with_kubescheds_first_cycles_condition() -> None:
    """Seed 1036 wave 1 of the topology set with priorities: the binary ran one cycle; kubesched's
    simulate retried the failed gang and its last cycle quoted other placements. The condition of
    its first cycle is the one compared, and only that one: a binary whose log does not tell, or that
    retried the group itself, is compared with kubesched's last."""
    wave = _wave({"g-p0": None, "g-p1": None}, {"g-p0": [], "g-p1": []}, [])
    first = ("PodGroupInitiallyScheduled", "False", "Unschedulable", "first cycle")
    last = ("PodGroupInitiallyScheduled", "False", "Unschedulable", "last cycle")
    simulated = _report(_result("g-p0", None), _result("g-p1", None))
    simulated.conditions["g"] = [last]
    simulated.history["g"] = [[first], [last]]
    wave.group_status["g"] = GroupOutcome("g", [first])
    wave.cycles = {"g": 1}
    group = next(r for r in compare_wave(wave, simulated) if r.pod == "default/g")
    assert group.made["condition"] and "condition-first-cycle" in group.observed
    wave.group_status["g"] = GroupOutcome("g", [last])
    assert not _made(compare_wave(wave, simulated))["default/g"]["condition"]
    for cycles in ({}, {"g": 2}):
        wave.cycles = cycles
        assert _made(compare_wave(wave, simulated))["default/g"]["condition"]
        wave.group_status["g"] = GroupOutcome("g", [first])
        assert not _made(compare_wave(wave, simulated))["default/g"]["condition"]
        wave.group_status["g"] = GroupOutcome("g", [last])
