"""kubesched given the binary's first cycle of a PodGroup the binary popped in part (first_cycle.py)."""

from __future__ import annotations

from pathlib import Path

from kubesched.harness.differential.first_cycle import held_back
from kubesched.harness.differential.gated import TOPOLOGY_GATES
from kubesched.harness.differential.group_compare import compare_wave, compare_wave_seeded, simulate_wave
from kubesched.harness.differential.waves import GroupOutcome, WaveOutcome

ZONE = "topology.kubernetes.io/zone"
SCHEDULED = ("PodGroupInitiallyScheduled", "True", "Scheduled", "")


def _node(name: str, zone: str, cpu: str) -> dict[str, object]:
    allocatable = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {ZONE: zone}},
        "status": {
            "capacity": allocatable,
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _member(i: int) -> dict[str, object]:
    resources = {"requests": {"cpu": "1"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"g-p{i}", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": resources}],
            "schedulingGroup": {"podGroupName": "g"},
        },
    }


def _zone_wave(first_cycle: int) -> WaveOutcome:
    """Seed 1222 wave 0 of the topology set, made small: a basic group of eight 1-CPU pods asks for
    one zone; zone a holds seven of them (a0 4 CPU, a1 3), zone b five (b0 2, b1 3). The binary's
    first cycle held five: it bound them in zone b, and the three that joined later found it full."""
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"schedulingPolicy": {"basic": {}}, "schedulingConstraints": {"topology": [{"key": ZONE}]}},
    }
    nodes = [_node("a0", "a", "4"), _node("a1", "a", "3"), _node("b0", "b", "2"), _node("b1", "b", "3")]
    bound = ["b1", "b1", "b0", "b0", "b1", None, None, None]
    pods = [_member(i) for i in range(8)]
    late = "0/2 nodes are available: 2 Insufficient cpu."
    wave = WaveOutcome(
        0,
        pods,
        [group],
        nodes,
        {f"g-p{i}": node for i, node in enumerate(bound)},
        {f"g-p{i}": [] if node else [late] for i, node in enumerate(bound)},
        {"g": GroupOutcome("g", [SCHEDULED])},
    )
    wave.first_cycle_pods = {"g": first_cycle}
    return wave


def test_the_pods_a_first_cycle_did_not_hold_are_the_last_created() -> None:
    wave = _zone_wave(5)
    assert held_back(wave) == {"g-p5", "g-p6", "g-p7"}
    assert held_back(wave, skip=frozenset({"g"})) == set()
    wave.first_cycle_pods = {}
    assert held_back(wave) == set()  # the log did not tell: the whole group


def test_a_group_popped_in_part_is_compared_with_kubesched_given_the_same_first_cycle(tmp_path: Path) -> None:
    """Given five pods, kubesched's cycle takes zone b too, and the three that join later fail there:
    the binary's bound count, nodes, messages and condition. Given all eight at once, it binds seven
    in zone a (the mismatch seed 1222 showed)."""
    (group,) = compare_wave_seeded(_zone_wave(5), TOPOLOGY_GATES, tmp_path)
    assert group.mismatches == []
    assert set(group.made) == {"group-bound", "node", "message", "condition"}
    assert "first-cycle-pods" in group.observed
    eight = _zone_wave(8)
    (whole,) = compare_wave(eight, simulate_wave(eight, TOPOLOGY_GATES, tmp_path))
    assert ("group-bound", 5, 7) in [(m.comparison, m.upstream, m.kubesched) for m in whole.mismatches]
