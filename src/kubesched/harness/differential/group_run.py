"""Run seeded pod-group scenarios through the binary (and `kubesched run`) and tally agreement.

The gated counterpart of `run.run_scenarios`: every scenario (group_scenario) is played wave by wave
(waves) by kube-scheduler v1.37.2 started with the gates; each settled wave goes to kubesched's
simulator with the same gates (group_compare). Every `live_every`-th scenario is played again by
`kubesched run` with the gates, whose waves are compared the same way, under `live-` names.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from kubesched.harness.differential.compare import LIVE_PREFIX, PodComparison
from kubesched.harness.differential.gated import (
    COMPOSITE_GATES,
    DRA_GANG_GATES,
    GANG_GATES,
    TOPOLOGY_GATES,
    Gates,
)
from kubesched.harness.differential.group_compare import (
    GROUP_COMPARISONS,
    compare_wave_seeded,
    wave_file,
)
from kubesched.harness.differential.group_disruption import evictions, generate_disruption
from kubesched.harness.differential.group_scenario import GroupScenario, generate_groups
from kubesched.harness.differential.run import Harnesses, Tally, harnesses
from kubesched.harness.differential.waves import WaveOutcome, play_waves, popped_in_part, raced_in_flight

__all__ = ["compare_group_scenario", "group_gates", "outcome_kinds", "run_group_scenarios"]


#: Plays of a scenario on the binary in all, where it disagrees and the binary popped a group in part.
PLAYS = 3


def compare_group_scenario(
    h: Harnesses, s: GroupScenario, out_dir: Path, *, live: bool = False
) -> tuple[list[PodComparison], list[Path], list[WaveOutcome]]:
    """Play `s` with upstream (and with `kubesched run` when `live`), compare every wave with
    kubesched's simulator; mismatching waves' objects go to `out_dir`.

    kubesched's cycle holds a group whole; the binary's first may hold part of it, and a member the
    binary tried in a later cycle may meet its group's claim still being allocated (waves.py). A
    play that disagrees where the binary did either is played again, up to `PLAYS` in all, and the
    first play that agrees, or else the last, stands (counted as adjusted, `binary-replayed`)."""
    upstream = play_waves(h.upstream, s)
    compared = _compare_waves(h, upstream, "")
    for _ in range(PLAYS - 1):
        raced = any(popped_in_part(w) or raced_in_flight(w) for w in upstream)
        if not any(c.mismatches for c, _ in compared) or not raced:
            break
        upstream = play_waves(h.upstream, s)
        compared = _compare_waves(h, upstream, "")
        if compared:
            compared[0][0].adjusted += 1
            compared[0][0].observed.add("binary-replayed")
    if live and h.live is not None:
        compared += _compare_waves(h, play_waves(h.live, s), LIVE_PREFIX)
    files: list[Path] = []
    for c, (wave, prefix) in compared:
        directory = out_dir / f"{prefix}{s.name}"
        files.append(
            wave_file(wave, h.gates, directory) if c.mismatches else directory / f"wave{wave.index}.yaml"
        )
    return [c for c, _ in compared], files, upstream


def _compare_waves(
    h: Harnesses, waves: list[WaveOutcome], prefix: str
) -> list[tuple[PodComparison, tuple[WaveOutcome, str]]]:
    """Each wave compared with kubesched's simulator, each record with the wave it came from."""
    return [
        (c, (wave, prefix))
        for wave in waves
        for c in compare_wave_seeded(wave, h.gates, h.workdir, prefix=prefix)
    ]


def outcome_kinds(wave: WaveOutcome) -> Counter[str]:
    """What the binary did with each group of a wave: `bound-all`, `bound-part` (minCount or more,
    not all), `bound-none`; and with its ordinary pods (`pod-bound`, `pod-unschedulable`); and
    whether it preempted (`preempted`)."""
    kinds: Counter[str] = Counter()
    for group in wave.groups:
        name = group["metadata"]["name"]
        pods = [
            p["metadata"]["name"]
            for p in wave.pods
            if p["spec"].get("schedulingGroup", {}).get("podGroupName") == name
        ]
        bound = sum(wave.nodes[p] is not None for p in pods)
        policy = "gang" if "gang" in group["spec"]["schedulingPolicy"] else "basic"
        kinds[
            f"{policy}-{'bound-all' if bound == len(pods) else 'bound-part' if bound else 'bound-none'}"
        ] += 1
    for pod in wave.pods:
        if not pod["spec"].get("schedulingGroup"):
            kinds["pod-bound" if wave.nodes[pod["metadata"]["name"]] else "pod-unschedulable"] += 1
    if wave.victims:
        kinds["preempted"] += 1
    return kinds


def group_gates(*, topology: bool = False, composite: bool = False, dra: bool = False) -> Gates:
    """The gates group scenarios run with: gangs, plus topology-aware placement, CompositePodGroup
    trees and group claims."""
    gates = COMPOSITE_GATES if composite else TOPOLOGY_GATES if topology else GANG_GATES
    return Gates({**gates.values, **DRA_GANG_GATES.values}) if dra else gates


def run_group_scenarios(
    seeds: list[int],
    out_dir: Path,
    *,
    topology: bool = False,
    priorities: bool = True,
    composite: bool = False,
    dra: bool = False,
    disruption: bool = False,
    live_every: int = 0,
    on_mismatch: Callable[[dict[str, Any]], None] | None = None,
    log: TextIO = sys.stderr,
    using: Harnesses | None = None,
) -> Tally:
    """Each seed's group scenario through upstream and kubesched (gang gates; `topology` adds
    TopologyAwareWorkloadScheduling, `composite` CompositePodGroup trees and its gate too; `dra`
    devices and claims, with DRAWorkloadResourceClaims; without `priorities` nothing preempts;
    `disruption`: instead, one pod preempting through gangs disrupted whole or pod by pod,
    group_disruption); every `live_every`-th also through `kubesched run`."""
    gates = group_gates(topology=topology, composite=composite, dra=dra)
    if using is None:
        with harnesses(live=live_every > 0, gates=gates) as h:
            return run_group_scenarios(
                seeds,
                out_dir,
                topology=topology,
                priorities=priorities,
                composite=composite,
                dra=dra,
                disruption=disruption,
                live_every=live_every,
                on_mismatch=on_mismatch,
                log=log,
                using=h,
            )
    tally = Tally(comparisons={c: [0, 0] for c in GROUP_COMPARISONS})
    started = time.monotonic()
    for n, seed in enumerate(seeds, 1):
        scenario = (
            generate_disruption(seed)
            if disruption
            else generate_groups(seed, topology=topology, priorities=priorities, composite=composite, dra=dra)
        )
        live = live_every > 0 and seed % live_every == 0
        results, files, waves = compare_group_scenario(using, scenario, out_dir, live=live)
        kinds = evictions(waves) if disruption else Counter[str]()
        for wave in waves:
            kinds.update(outcome_kinds(wave))
        for kind, count in kinds.items():
            tally.observed[kind] = tally.observed.get(kind, 0) + count
        before = len(tally.mismatches)
        tally.add(scenario, results, files)
        if on_mismatch is not None:
            for m in tally.mismatches[before:]:
                on_mismatch(m)
        if n % 10 == 0:
            rate = n / (time.monotonic() - started)
            print(
                f"{n}/{len(seeds)} group scenarios, {len(tally.mismatches)} mismatches, {rate:.2f}/s",
                file=log,
            )
    return tally
