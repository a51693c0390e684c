"""The disruption family of the gated differential harness: gangs disrupted whole or pod by pod,
then ordinary pods that must preempt (kubesched.harness.differential.group_disruption)."""

from __future__ import annotations

import json

import pytest

from kubesched.api.loader import LoadedObjects, load_documents
from kubesched.harness.differential.group_disruption import evictions, generate_disruption
from kubesched.harness.differential.waves import WaveOutcome

SEEDS = range(1, 61)


def test_a_seed_makes_one_scenario() -> None:
    assert generate_disruption(7) == generate_disruption(7)
    assert generate_disruption(7).name == "d7"


def test_the_seeds_draw_both_modes_and_the_control_and_budgets() -> None:
    features = {f for seed in SEEDS for f in generate_disruption(seed).features}
    wanted = {"disruption-all", "disruption-single", "disruption-unset", "gang-pdb", "two-gangs"}
    assert wanted <= features


def test_gangs_come_first_then_ordinary_pods_above_them() -> None:
    for seed in SEEDS:
        s = generate_disruption(seed)
        kinds = ["gang" if w.groups else "pod" for w in s.waves]
        assert kinds == sorted(kinds) and kinds[0] == "gang" and kinds[-1] == "pod", seed
        for wave in s.waves:
            assert len(wave.groups) == 1 or (not wave.groups and len(wave.pods) == 1)
            for pod in wave.pods:
                if not wave.groups:
                    assert pod["spec"]["priorityClassName"] in {"mid", "high"}


@pytest.mark.parametrize("seed", [1, 2, 3, 50])
def test_the_manifests_load_strictly(seed: int) -> None:
    s = generate_disruption(seed)
    items = [*s.nodes, *s.running, *s.pods_to_schedule, *s.groups, *s.pdbs]
    loaded = LoadedObjects()
    for obj in load_documents(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "s.json"):
        loaded.add(obj)
    assert not loaded.skipped
    assert len(loaded.scheduling_pod_groups) == len(s.groups) > 0


def _wave(groups: dict[str, str | None], nodes: dict[str, str | None], victims: list[str]) -> WaveOutcome:
    objs = [
        {"metadata": {"name": g}, "spec": {"disruptionMode": {mode: {}}} if mode else {}}
        for g, mode in groups.items()
    ]
    return WaveOutcome(0, [], objs, [], nodes, {}, {}, victims)


def test_evictions_tell_a_gang_taken_whole_from_one_taken_in_part() -> None:
    waves = [
        _wave({"a": "all"}, {"a-p0": "n0", "a-p1": "n1"}, []),
        _wave({"b": None}, {"b-p0": "n2", "b-p1": "n3", "b-p2": None}, []),
        _wave({}, {"o": "n0"}, ["default/a-p0", "default/a-p1", "default/b-p1"]),
        _wave({}, {"o2": "n3"}, ["default/b-p0"]),
    ]
    assert evictions(waves) == {"evicted-whole-all": 1, "evicted-part-unset": 2}
