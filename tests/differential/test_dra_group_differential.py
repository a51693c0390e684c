"""Pod groups with devices on kube-scheduler v1.37.2, GenericWorkload and DRAWorkloadResourceClaims on.

Nodes publish GPUs in ResourceSlices; a group's pods share one ResourceClaim named in their
PodGroup's `spec.resourceClaims` (the binary allocates it once, for the first member, and reserves
it for the PodGroup; the other members reuse that allocation, and their PreBind finds the claim
already written: "got allocated elsewhere in the meantime", then they bind on the next attempt),
or each pod names a claim of its own. Played wave by wave as the gang set is
(test_pod_group_differential); kubesched's simulator, given the objects the server held before each
wave, with the same gates, must agree; a few seeds are played again by `kubesched run`. The long run
is `benchmarks/differential.py --groups --dra`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesched.harness.differential.group_run import group_gates, run_group_scenarios
from kubesched.harness.differential.run import Harnesses, harnesses

#: Seeds of the bounded set (about 5 s each on an idle machine).
SEEDS = list(range(1, 9))
#: Seeds also played by `kubesched run` (about 10 s each on an idle machine).
LIVE_SEEDS = [4, 10]


@pytest.fixture(scope="module")
def gated() -> Iterator[Harnesses]:
    """A control plane serving the Workload API, with the group-claims gate on every process."""
    with harnesses(live=True, gates=group_gates(dra=True)) as h:
        yield h


def test_seeded_dra_groups_agree_with_kube_scheduler(gated: Harnesses, tmp_path: Path) -> None:
    tally = run_group_scenarios(SEEDS, tmp_path, priorities=False, dra=True, using=gated)
    made = tally.made()
    assert tally.scenarios == len(SEEDS)
    assert made["group-bound"] > 10 and made["message"] > 5, made
    assert {"dra-group-claim", "dra-pod-claims"} <= set(tally.features), tally.features
    assert {"gang-bound-all", "gang-bound-none"} <= set(tally.observed), tally.observed
    assert tally.mismatches == [], tally.mismatch_report(gated.gates.flags())


def test_kubesched_run_agrees_on_seeded_dra_groups(gated: Harnesses, tmp_path: Path) -> None:
    """`kubesched run` live: the group's claim written once and reserved for the PodGroup, the
    other members' PreBind failing on it, as the binary's."""
    tally = run_group_scenarios(LIVE_SEEDS, tmp_path, priorities=False, dra=True, live_every=1, using=gated)
    made = tally.made()
    assert tally.live_scenarios == len(LIVE_SEEDS)
    assert made["live-group-bound"] >= 2, made
    assert tally.mismatches == [], tally.mismatch_report(gated.gates.flags())
