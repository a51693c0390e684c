"""kubesched decides as kube-scheduler v1.37.2 does, on seeded random scenarios run by the binary.

Each scenario (kubesched.harness.differential.scenario) is created on a real API server and scheduled
one pending pod at a time by the upstream binary; the objects read back are given to kubesched's
simulator. Every comparison must agree: schedulable or not, the FailedScheduling message, the chosen
node (among kubesched's top-scored), every plugin's score on every node, and preemption (nominated
node, victims). Every `LIVE_EVERY`-th scenario is then scheduled again by a real `kubesched run`
(informers, binding, Events), whose outcomes must agree with the simulator's on the objects it saw.
A mismatch is printed with the scenario file and the command that reproduce it.

Known differences kept out of the comparison, and why:
* Ties: upstream breaks equal totals at random, so its node only has to be one of kubesched's best.
* Where upstream's choice follows Go map order (several CSIStorageCapacity objects serving one
  node, static volumes of equal size), the generator never offers such a choice.

The long run is `benchmarks/differential.py --seed S --count N`.
"""

from __future__ import annotations

from pathlib import Path

from kubesched.harness.differential.compare import COMPARISONS, LIVE_COMPARISONS
from kubesched.harness.differential.run import Harnesses, run_scenarios

#: Seeds of the bounded set (a few minutes on two cores); the long run covers thousands.
SEEDS = list(range(1, 41))
#: Every fourth scenario also goes through `kubesched run`.
LIVE_EVERY = 4


def test_seeded_scenarios_agree_with_kube_scheduler(tmp_path: Path, differential: Harnesses) -> None:
    tally = run_scenarios(SEEDS, tmp_path, live_every=LIVE_EVERY, using=differential)
    assert tally.scenarios == len(SEEDS)
    assert tally.live_scenarios == len(SEEDS) // LIVE_EVERY
    # Every comparison was made often enough to mean something.
    made = tally.made()
    assert set(made) == {*COMPARISONS, *LIVE_COMPARISONS}
    assert made["schedulable"] == tally.pods and made["scores"] > 10 and made["message"] > 5, made
    assert made["live-schedulable"] > 10 and made["live-message"] > 2, made
    assert tally.mismatches == [], tally.mismatch_report()


#: Scenarios `k<seed>` (some pods of system-node-critical or system-cluster-critical): in each a
#: pending pod of a system class preempts (12: cluster-critical; 14: cluster-critical, with a
#: running cluster-critical pod in the cluster; 19: two node-critical pods, and one `high`; 38:
#: node-critical, with a running node-critical pod). The long run is
#: `benchmarks/differential.py --system-classes`.
SYSTEM_SEEDS = [12, 14, 19, 38]


def test_system_priority_classes_agree_with_kube_scheduler(tmp_path: Path, differential: Harnesses) -> None:
    """Pods naming the classes the API server creates itself, admitted there at 2000000000 and
    2000001000: the binary's preemptions (nominated node, victims) and messages, and kubesched's."""
    tally = run_scenarios(SYSTEM_SEEDS, tmp_path, using=differential, system_classes=True)
    assert tally.scenarios == len(SYSTEM_SEEDS)
    for kind in ("pending-system-node-critical", "pending-system-cluster-critical"):
        assert tally.features[kind][1] >= 2, tally.features
    assert tally.made()["preemption"] >= 5, tally.made()
    assert tally.mismatches == [], tally.mismatch_report()
