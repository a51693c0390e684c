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
