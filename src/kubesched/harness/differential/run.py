"""Run seeded scenarios through both schedulers and tally agreement per comparison and per feature."""

from __future__ import annotations

import io
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.differential.cluster import PodOutcome
from kubesched.harness.differential.compare import (
    COMPARISONS,
    LIVE_COMPARISONS,
    LIVE_PREFIX,
    PodComparison,
    compare_pod,
    scenario_file,
)
from kubesched.harness.differential.gated import NO_GATES, Gates
from kubesched.harness.differential.live import KubeschedLive
from kubesched.harness.differential.scenario import Scenario, generate
from kubesched.harness.differential.upstream import UpstreamHarness
from kubesched.harness.fake_nodes import ApiClient

__all__ = ["Harnesses", "Tally", "compare_scenario", "harnesses", "print_mismatch", "run_scenarios"]


@dataclass
class Tally:
    """Agreement counts: per comparison (over pods) and per feature (over scenarios)."""

    scenarios: int = 0
    pods: int = 0
    #: Scenarios also scheduled by `kubesched run`.
    live_scenarios: int = 0
    comparisons: dict[str, list[int]] = field(
        default_factory=lambda: {c: [0, 0] for c in (*COMPARISONS, *LIVE_COMPARISONS)}
    )
    features: dict[str, list[int]] = field(default_factory=dict)
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    #: Comparisons narrowed while kubesched lacks a default plugin (compare.PENDING_PLUGINS).
    adjusted: int = 0
    #: How many pods exercised each `PodComparison.observed` thing.
    observed: dict[str, int] = field(default_factory=dict)

    def made(self) -> dict[str, int]:
        """How many of each comparison were made, agreeing or not."""
        return {name: total for name, (_, total) in self.comparisons.items()}

    def mismatch_report(self, flags: tuple[str, ...] = ()) -> str:
        """Every mismatch as `print_mismatch` writes it (a failing test's message)."""
        out = io.StringIO()
        for m in self.mismatches:
            print_mismatch(m, out, flags=flags)
        return out.getvalue()

    def add(self, scenario: Scenario, results: list[PodComparison], files: list[Path]) -> None:
        self.scenarios += 1
        self.live_scenarios += any(r.prefix == LIVE_PREFIX for r in results)
        self.pods += sum(not r.prefix for r in results)
        agreed = True
        for result, path in zip(results, files, strict=True):
            self.adjusted += result.adjusted
            for thing in result.observed:
                self.observed[thing] = self.observed.get(thing, 0) + 1
            for name, ok in result.made.items():
                counts = self.comparisons.setdefault(name, [0, 0])
                counts[0] += ok
                counts[1] += 1
            for m in result.mismatches:
                agreed = False
                self.mismatches.append(
                    {
                        "scenario": scenario.seed,
                        "pod": result.pod,
                        "comparison": m.comparison,
                        "upstream": m.upstream,
                        "kubesched": m.kubesched,
                        "file": str(path),
                    }
                )
        for feature in scenario.features:
            counts = self.features.setdefault(feature, [0, 0])
            counts[0] += agreed
            counts[1] += 1

    def as_json(self) -> dict[str, Any]:
        def fmt(counts: dict[str, list[int]]) -> dict[str, Any]:
            return {k: {"agreed": a, "total": t} for k, (a, t) in sorted(counts.items())}

        return {
            "scenarios": self.scenarios,
            "liveScenarios": self.live_scenarios,
            "pods": self.pods,
            "comparisons": fmt(self.comparisons),
            "features": fmt(self.features),
            "observed": dict(sorted(self.observed.items())),
            "mismatches": len(self.mismatches),
            "adjustedForPendingPlugins": self.adjusted,
        }


@dataclass
class Harnesses:
    """The schedulers a differential run drives on one control plane."""

    upstream: UpstreamHarness
    live: KubeschedLive | None
    workdir: Path
    gates: Gates = NO_GATES


@contextmanager
def harnesses(*, live: bool = True, gates: Gates = NO_GATES) -> Iterator[Harnesses]:
    """A control plane with the upstream kube-scheduler and (with `live`) `kubesched run` on it, the
    API server, both schedulers (and the simulator the outcomes go to) all with `gates`."""
    plane = ControlPlane(runtime_config=gates.runtime_config(), feature_gates=gates.values)
    with plane as cp, ApiClient.for_control_plane(cp) as api, tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        upstream = UpstreamHarness(cp, api, gates)
        kubesched = KubeschedLive(cp, api, workdir, gates) if live else None
        try:
            yield Harnesses(upstream, kubesched, workdir, gates)
        finally:
            if kubesched is not None:
                kubesched.stop()


def compare_scenario(
    h: Harnesses, scenario: Scenario, out_dir: Path, *, live: bool = False
) -> tuple[list[PodComparison], list[Path], list[PodOutcome]]:
    """Schedule `scenario` with upstream (and, with `live`, `kubesched run` afterwards); compare each
    pod's outcome with kubesched's simulator. Mismatching pods' scenario files go to `out_dir`."""
    runs: list[tuple[str, list[PodOutcome]]] = [("", h.upstream.run(scenario))]
    if live and h.live is not None:
        runs.append((LIVE_PREFIX, h.live.run(scenario)))
    results: list[PodComparison] = []
    files: list[Path] = []
    for prefix, outcomes in runs:
        for outcome in outcomes:
            result = compare_pod(outcome, h.workdir, prefix=prefix)
            path = out_dir / f"{prefix}{scenario.name}" / f"{outcome.name}.yaml"
            if result.mismatches:
                path = scenario_file(outcome, path.parent)
            results.append(result)
            files.append(path)
    return results, files, runs[0][1]


def run_scenarios(
    seeds: list[int],
    out_dir: Path,
    *,
    live_every: int = 0,
    on_mismatch: Callable[[dict[str, Any]], None] | None = None,
    log: TextIO = sys.stderr,
    using: Harnesses | None = None,
    system_classes: bool = False,
) -> Tally:
    """Each seed's scenario through upstream and kubesched; every `live_every`-th seed also through
    `kubesched run` (0: none). Mismatch scenario files go to `out_dir`. Runs on `using`'s
    schedulers, or on a control plane of its own. `system_classes`: the scenarios with pods of the
    system PriorityClasses (scenario.generate)."""
    if using is None:
        with harnesses(live=live_every > 0) as h:
            return run_scenarios(
                seeds,
                out_dir,
                live_every=live_every,
                on_mismatch=on_mismatch,
                log=log,
                using=h,
                system_classes=system_classes,
            )
    tally = Tally()
    started = time.monotonic()
    for n, seed in enumerate(seeds, 1):
        scenario = generate(seed, system_classes=system_classes)
        live = live_every > 0 and seed % live_every == 0
        results, files, _ = compare_scenario(using, scenario, out_dir, live=live)
        before = len(tally.mismatches)
        tally.add(scenario, results, files)
        for m in tally.mismatches[before:]:
            if on_mismatch is not None:
                on_mismatch(m)
        if n % 25 == 0:
            rate = n / (time.monotonic() - started)
            print(f"{n}/{len(seeds)} scenarios, {len(tally.mismatches)} mismatches, {rate:.1f}/s", file=log)
    return tally


def print_mismatch(m: dict[str, Any], out: TextIO = sys.stderr, *, flags: tuple[str, ...] = ()) -> None:
    """One mismatch and how to reproduce it (for `live-*` comparisons, the first value is what
    `kubesched run` did); `flags` are the gates the run had."""
    gates = "".join(f"{f} " for f in flags)
    print(
        f"MISMATCH seed={m['scenario']} pod={m['pod']} {m['comparison']}\n"
        f"  upstream:  {json.dumps(m['upstream'], sort_keys=True)}\n"
        f"  kubesched: {json.dumps(m['kubesched'], sort_keys=True)}\n"
        f"  reproduce: kubesched simulate {m['file']} "
        f"--config {Path(m['file']).parent / 'scheduler-config.yaml'} {gates}--explain -o json",
        file=out,
    )
