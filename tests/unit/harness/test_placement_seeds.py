"""How many seeds a topology-constrained PodGroup that disagrees is simulated with."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.harness.differential import group_compare
from kubesched.harness.differential.compare import PodComparison
from kubesched.harness.differential.gated import TOPOLOGY_GATES, Gates
from kubesched.harness.differential.waves import WaveOutcome


def test_a_group_that_agrees_only_on_seed_50_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 1092 wave 1 with priorities: the binary's members quote its cycle's first placement and
    its preemption trial's, drawn apart; kubesched's first run drawing both as the binary did was
    seed 50 (forty seeds were tried before)."""
    group = {
        "kind": "PodGroup",
        "metadata": {"name": "g"},
        "spec": {"schedulingConstraints": {"topology": [{"key": "rack"}]}},
    }
    wave = WaveOutcome(1, [], [group], [], {}, {}, {})

    def simulate(outcome: WaveOutcome, gates: Gates, workdir: Path, *, seed: int = 0) -> int:
        return seed

    def compare(outcome: WaveOutcome, seed: int, *, prefix: str = "") -> list[PodComparison]:
        cmp = PodComparison("default/g", prefix)
        cmp.check("message", 50, seed)
        return [cmp]

    monkeypatch.setattr(group_compare, "simulate_wave", simulate)
    monkeypatch.setattr(group_compare, "compare_wave", compare)
    (result,) = group_compare.compare_wave_seeded(wave, TOPOLOGY_GATES, Path("."))
    assert result.mismatches == [] and "placement-order-seed" in result.observed


def _preempting_wave(
    monkeypatch: pytest.MonkeyPatch, victims_right: set[int], group_right: set[int]
) -> list[PodComparison]:
    """Wave 2 of a constrained group that preempts: the victims agree on the seeds in
    `victims_right`, the group's comparison (nodes, messages) on those in `group_right`."""
    group = {
        "kind": "PodGroup",
        "metadata": {"name": "g"},
        "spec": {"schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]}},
    }
    wave = WaveOutcome(2, [], [group], [], {}, {}, {})

    def simulate(outcome: WaveOutcome, gates: Gates, workdir: Path, *, seed: int = 0) -> int:
        return seed

    def compare(outcome: WaveOutcome, seed: int, *, prefix: str = "") -> list[PodComparison]:
        cmp = PodComparison("default/g", prefix)
        cmp.check("node", True, seed in group_right)
        victims = PodComparison("wave2", prefix)
        victims.check("preemption", True, seed in victims_right)
        return [cmp, victims]

    monkeypatch.setattr(group_compare, "simulate_wave", simulate)
    monkeypatch.setattr(group_compare, "compare_wave", compare)
    return group_compare.compare_wave_seeded(wave, TOPOLOGY_GATES, Path("."))


def test_a_constrained_groups_victims_are_retried_on_the_placement_seeds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seed 1202 wave 2 with priorities: the victims follow which emptied node of three alike the
    group's trial gives its last members, and the binary's messages its first placement: kubesched
    drew both as the binary did on no seed of 1-12 (`TIE_SEEDS`), so the wave's preemption stayed
    a mismatch while the group's comparison was found agreeing on a later placement seed."""
    group, victims = _preempting_wave(monkeypatch, victims_right={1, 8, 30}, group_right={0, 30})
    assert group.mismatches == []
    assert victims.mismatches == [] and "placement-order-seed" in victims.observed


def test_victims_stand_only_from_a_run_that_placed_the_group_as_the_binary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A seed that agrees on the victims but not on the group's nodes or messages is no answer."""
    _group, victims = _preempting_wave(monkeypatch, victims_right={1, 8}, group_right={0, 30})
    assert [m.comparison for m in victims.mismatches] == ["preemption"]
