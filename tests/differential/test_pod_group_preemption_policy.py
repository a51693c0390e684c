"""PodGroupPreemptionPolicy on kube-scheduler v1.37.2 (with GenericWorkload): a PodGroup's own
`spec.preemptionPolicy` decides whether its gang preempts, and its pods must carry the same policy.

Two 4-CPU nodes are filled by a low-priority gang; then high-priority gangs arrive whose PodGroups
say `Never` or `PreemptLowerPriority`. The priority admission gives pods and PodGroups their
PriorityClass's policy and refuses any other, and the API server defaults a PodGroup's policy to
`PreemptLowerPriority` before that check (measured on v1.37.2), so a PodGroup of a `Never` class
must say `Never` itself. The binary's outcome of each wave is read back and kubesched's
simulator, run with the same gates, must agree on it (kubesched.harness.differential.group_compare).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.differential.group_builders import gang, node

from kubesched.harness.differential.gated import POLICY_GATES
from kubesched.harness.differential.group_compare import compare_wave_seeded
from kubesched.harness.differential.group_scenario import GroupScenario, Wave
from kubesched.harness.differential.run import Harnesses, harnesses
from kubesched.harness.differential.waves import play_waves_whole
from kubesched.harness.fake_nodes import ApiError

Obj = dict[str, Any]
#: A PriorityClass of the "high" value that never preempts.
NEVER = "high-never"


@pytest.fixture(scope="module")
def policy_gated() -> Iterator[Harnesses]:
    with harnesses(live=False, gates=POLICY_GATES) as h:
        yield h


def _gang(s: GroupScenario, i: int, priority: str, policy: str | None = None) -> Wave:
    """Two 3-CPU pods of `priority`, minCount 2; the PodGroup names the class and `policy`."""
    spec: Obj = {"priorityClassName": priority}
    if policy is not None:
        spec["preemptionPolicy"] = policy
    return gang(s, i, 2, "3", 2, priority=priority, spec=spec)


def test_a_pod_groups_preemption_policy_decides(policy_gated: Harnesses, tmp_path: Path) -> None:
    # A PodGroup's policy is its PriorityClass's (the priority admission refuses any other).
    never = {"metadata": {"name": NEVER}, "value": 1000, "preemptionPolicy": "Never"}
    try:
        policy_gated.upstream.api.post("/apis/scheduling.k8s.io/v1/priorityclasses", never)
    except ApiError as err:
        if err.reason != "AlreadyExists":
            raise
    s = GroupScenario(0, label="gpp")
    s.nodes = [node(s, i) for i in range(2)]
    s.waves = [
        _gang(s, 0, "low"),
        _gang(s, 1, NEVER, policy="Never"),
        _gang(s, 2, "high"),
    ]
    low, never, high = play_waves_whole(policy_gated.upstream, s)
    assert set(never.nodes.values()) == {None} and never.victims == []
    assert never.messages["gpp-w1-p1"] == ["minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"]
    assert sorted(high.victims) == ["default/gpp-w0-p0", "default/gpp-w0-p1"]
    waves = [low, never, high]
    results = [r for w in waves for r in compare_wave_seeded(w, policy_gated.gates, tmp_path)]
    assert [m for r in results for m in r.mismatches] == []
