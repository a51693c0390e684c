"""Pod groups on kube-scheduler v1.37.2 with GenericWorkload and TopologyAwareWorkloadScheduling on.

As test_pod_group_differential, with the topology gate on every process: a PodGroup may ask for one
domain of a node label (`schedulingConstraints.topology`), and both schedulers try it in each domain
alone. Which placement the binary tries first is random (a Go map), so a group that disagrees is
compared again on kubesched runs with other seeds (group_compare.compare_wave_seeded). A rack scenario
checked by hand first, then a bounded seeded set, then a few seeds played again by `kubesched run`
with the same gates (compared the same way, under `live-` names); the long run is
`benchmarks/differential.py --groups --topology`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.differential.group_builders import IN_ONE_RACK, NO_VICTIMS, gang, node

from kubesched.harness.differential.gated import TOPOLOGY_GATES
from kubesched.harness.differential.group_compare import compare_wave_seeded
from kubesched.harness.differential.group_run import run_group_scenarios
from kubesched.harness.differential.group_scenario import GroupScenario
from kubesched.harness.differential.run import Harnesses, harnesses
from kubesched.harness.differential.waves import play_waves_whole

#: Seeds of the bounded set (a few seconds each on an idle machine).
SEEDS = list(range(1002, 1011))
#: Seeds of the bounded set with priorities, in each of which a later group or pod preempts (8
#: preempting waves when measured).
PRIORITY_SEEDS = [1004, 1007, 1021, 1025, 1041, 1059]
#: Seeds also played by `kubesched run` (about 15 s each on an idle machine, upstream's play included).
LIVE_SEEDS = [1003, 1004, 1005, 1006]


@pytest.fixture(scope="module")
def topology() -> Iterator[Harnesses]:
    """A control plane serving the Workload API, kube-scheduler v1.37.2 and `kubesched run` with
    both gates."""
    with harnesses(live=True, gates=TOPOLOGY_GATES) as h:
        yield h


def test_a_gang_fits_one_rack_or_none(topology: Harnesses, tmp_path: Path) -> None:
    """Two racks of two 4-CPU nodes. Three 3-CPU pods asking for one rack (minCount 3) fit the
    cluster but no rack: nothing is bound. Two of them (minCount 2) are bound in one rack."""
    s = GroupScenario(0, label="tp21", topology=True)
    s.nodes = [node(s, i, rack="ab"[i % 2]) for i in range(4)]
    s.waves = [gang(s, 0, 3, "3", 3, spec=IN_ONE_RACK), gang(s, 1, 2, "3", 2, spec=IN_ONE_RACK)]
    first, second = play_waves_whole(topology.upstream, s)
    assert set(first.nodes.values()) == {None}
    reason = (
        "pod group is unschedulable, 0/2 placements are available, first placement status: "
        "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"
    )
    assert sorted(m[0] for m in first.messages.values()) == sorted(
        ["0/2 nodes are available: 2 Insufficient cpu."]
        + [f"pod group is unschedulable, {reason}, {NO_VICTIMS}"] * 2
    )
    assert first.group_status["tp21-w0"].conditions == [
        ("PodGroupInitiallyScheduled", "False", "Unschedulable", f"{reason}, {NO_VICTIMS}")
    ]
    bound = [n for n in second.nodes.values() if n is not None]
    assert len(bound) == 2 and len({int(n.rsplit("n", 1)[1]) % 2 for n in bound}) == 1
    results = [r for w in (first, second) for r in compare_wave_seeded(w, topology.gates, tmp_path)]
    assert [m for r in results for m in r.mismatches] == []
    assert {"group-bound", "message", "condition"} <= {name for r in results for name in r.made}


def test_seeded_topology_groups_agree_with_kube_scheduler(topology: Harnesses, tmp_path: Path) -> None:
    """The bounded set, every pod of priority 0: nothing preempts."""
    tally = run_group_scenarios(SEEDS, tmp_path, topology=True, priorities=False, using=topology)
    made = tally.made()
    assert tally.scenarios == len(SEEDS)
    assert made["group-bound"] > 12 and made["condition"] > 10 and made["message"] > 6, made
    assert tally.mismatches == [], tally.mismatch_report(topology.gates.flags())


def test_seeded_topology_groups_with_priorities_agree_with_kube_scheduler(
    topology: Harnesses, tmp_path: Path
) -> None:
    """The bounded set with priorities: groups asking for one rack or zone preempt and are
    preempted (DefaultPreemption's PodGroupPostFilter trying the placements again with the
    victims gone), as the binary does."""
    tally = run_group_scenarios(PRIORITY_SEEDS, tmp_path, topology=True, priorities=True, using=topology)
    made = tally.made()
    assert tally.scenarios == len(PRIORITY_SEEDS)
    assert made["preemption"] >= 5 and made["condition"] >= 10, made
    assert tally.observed.get("preempted", 0) >= 5, tally.observed
    assert tally.mismatches == [], tally.mismatch_report(topology.gates.flags())


def test_kubesched_run_agrees_on_seeded_topology_groups(topology: Harnesses, tmp_path: Path) -> None:
    """`kubesched run` with both gates, live: the placement it binds a group in, the FailedScheduling
    events it writes and the PodGroup condition it patches, compared with the simulator as upstream's
    are (its placement order drawn from its own seed, so seeded comparison as for the binary)."""
    tally = run_group_scenarios(
        LIVE_SEEDS, tmp_path, topology=True, priorities=False, live_every=1, using=topology
    )
    made = tally.made()
    assert tally.live_scenarios == len(LIVE_SEEDS)
    assert made["live-group-bound"] >= 8 and made["live-condition"] >= 8 and made["live-message"] >= 5, made
    assert tally.mismatches == [], tally.mismatch_report(topology.gates.flags())
