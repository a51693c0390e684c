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
