"""Run seeded scenarios through both schedulers and tally agreement per comparison and per feature."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.differential.compare import COMPARISONS, PodComparison, compare_pod, scenario_file
from kubesched.testing.differential.scenario import Scenario, generate
from kubesched.testing.differential.upstream import UpstreamHarness
from kubesched.testing.fake_nodes import ApiClient

__all__ = ["Tally", "run_scenarios"]


@dataclass
class Tally:
    """Agreement counts: per comparison (over pods) and per feature (over scenarios)."""

    scenarios: int = 0
    pods: int = 0
    comparisons: dict[str, list[int]] = field(default_factory=lambda: {c: [0, 0] for c in COMPARISONS})
    features: dict[str, list[int]] = field(default_factory=dict)
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    #: Comparisons narrowed while kubesched lacks a default plugin (compare.PENDING_PLUGINS).
    adjusted: int = 0

    def add(self, scenario: Scenario, results: list[PodComparison], files: list[Path]) -> None:
        self.scenarios += 1
        self.pods += len(results)
        agreed = True
        for result, path in zip(results, files, strict=True):
            self.adjusted += result.adjusted
            for name, ok in result.made.items():
                self.comparisons[name][0] += ok
                self.comparisons[name][1] += 1
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
            "pods": self.pods,
            "comparisons": fmt(self.comparisons),
            "features": fmt(self.features),
            "mismatches": len(self.mismatches),
            "adjustedForPendingPlugins": self.adjusted,
        }


def run_scenarios(
    seeds: list[int],
    out_dir: Path,
    *,
    on_mismatch: Callable[[dict[str, Any]], None] | None = None,
    log: TextIO = sys.stderr,
) -> Tally:
    """Each seed's scenario through upstream and kubesched; mismatch scenario files go to `out_dir`."""
    tally = Tally()
    with ControlPlane() as cp, ApiClient.for_control_plane(cp) as api, tempfile.TemporaryDirectory() as tmp:
        harness = UpstreamHarness(cp, api)
        started = time.monotonic()
        for n, seed in enumerate(seeds, 1):
            scenario = generate(seed)
            outcomes = harness.run(scenario)
            results: list[PodComparison] = []
            files: list[Path] = []
            for outcome in outcomes:
                result = compare_pod(outcome, Path(tmp))
                path = out_dir / scenario.name / f"{outcome.name}.yaml"
                if result.mismatches:
                    path = scenario_file(outcome, out_dir / scenario.name)
                results.append(result)
                files.append(path)
            before = len(tally.mismatches)
            tally.add(scenario, results, files)
            for m in tally.mismatches[before:]:
                if on_mismatch is not None:
                    on_mismatch(m)
            if n % 25 == 0:
                rate = n / (time.monotonic() - started)
                print(
                    f"{n}/{len(seeds)} scenarios, {len(tally.mismatches)} mismatches, {rate:.1f}/s", file=log
                )
    return tally


def print_mismatch(m: dict[str, Any], out: TextIO = sys.stderr) -> None:
    print(
        f"MISMATCH seed={m['scenario']} pod={m['pod']} {m['comparison']}\n"
        f"  upstream:  {json.dumps(m['upstream'], sort_keys=True)}\n"
        f"  kubesched: {json.dumps(m['kubesched'], sort_keys=True)}\n"
        f"  reproduce: kubesched simulate {m['file']} "
        f"--config {Path(m['file']).parent / 'scheduler-config.yaml'} --explain -o json",
        file=out,
    )
