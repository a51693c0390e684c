"""Differential run against kube-scheduler v1.37.2: `--count` seeded scenarios from `--seed`.

Each scenario is created on a real API server, scheduled one pending pod at a time by the upstream
binary, and its read-back objects are given to kubesched (see kubesched.harness.differential); every
`--live-every`-th scenario is also scheduled by a real `kubesched run` (`--system-classes`: the
scenarios `k<seed>`, some of whose pods name system-node-critical or system-cluster-critical).
Prints one JSON object:
agreement per comparison (over pods) and per feature (over scenarios). Every mismatch is printed to
stderr with the scenario file that reproduces it.

    nice python benchmarks/differential.py --seed 1 --count 1000 --live-every 4 --out /tmp/differential

`--groups` runs pod-group scenarios instead (kubesched.harness.differential.group_run), with
GenericWorkload on everywhere (`--topology` adds TopologyAwareWorkloadScheduling, `--composite`
CompositePodGroup trees with their gate, `--dra` devices, claims and DRAWorkloadResourceClaims:
groups whose pods share a claim, `--disruption` one pod preempting through gangs whose
`disruptionMode` is `all` or `single`); its `observed`
counts what the binary did (`gang-bound-all`, `gang-bound-part`, `gang-bound-none`, `preempted`, ...).

    nice python benchmarks/differential.py --groups --seed 1 --count 500 --live-every 0
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kubesched.harness.differential.group_run import group_gates, run_group_scenarios
from kubesched.harness.differential.run import print_mismatch, run_scenarios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1, help="first seed (default 1)")
    parser.add_argument("--count", type=int, default=100, help="number of scenarios (default 100)")
    parser.add_argument(
        "--live-every",
        type=int,
        default=4,
        help="also run every Nth scenario through kubesched run (0: none)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("differential-mismatches"), help="where mismatch scenario files go"
    )
    parser.add_argument("--smoke", action="store_true", help="one scenario, also run live (CI)")
    parser.add_argument("--groups", action="store_true", help="pod-group scenarios, GenericWorkload on")
    parser.add_argument(
        "--topology", action="store_true", help="with --groups: TopologyAwareWorkloadScheduling too"
    )
    parser.add_argument(
        "--composite",
        action="store_true",
        help="with --groups: CompositePodGroup trees too (and their gate, topology included)",
    )
    parser.add_argument(
        "--dra", action="store_true", help="with --groups: devices, claims and DRAWorkloadResourceClaims"
    )
    parser.add_argument(
        "--disruption",
        action="store_true",
        help="with --groups: one pod preempting through gangs disrupted whole or pod by pod",
    )
    parser.add_argument(
        "--system-classes",
        action="store_true",
        help="one-pod scenarios with some pods of system-node-critical / system-cluster-critical",
    )
    parser.add_argument(
        "--no-priorities",
        action="store_true",
        help="with --groups: every pod of priority 0 (nothing preempts)",
    )
    args = parser.parse_args()
    if args.smoke:
        args.count, args.live_every = 1, 1
    started = time.monotonic()
    seeds = list(range(args.seed, args.seed + args.count))
    if args.groups:
        flags = group_gates(topology=args.topology, composite=args.composite, dra=args.dra).flags()
        tally = run_group_scenarios(
            seeds,
            args.out,
            topology=args.topology,
            priorities=not args.no_priorities,
            composite=args.composite,
            dra=args.dra,
            disruption=args.disruption,
            live_every=args.live_every,
            on_mismatch=lambda m: print_mismatch(m, flags=flags),
        )
    else:
        tally = run_scenarios(
            seeds,
            args.out,
            live_every=args.live_every,
            on_mismatch=print_mismatch,
            system_classes=args.system_classes,
        )
    kind = "composite" if args.composite else "topology" if args.topology else "gang"
    kind = "disruption" if args.disruption else kind
    kind += "+dra" if args.dra else ""
    report: dict[str, object] = {"groups": kind} if args.groups else {}
    report |= {"systemClasses": True} if args.system_classes and not args.groups else {}
    report |= {
        "seed": args.seed,
        "count": args.count,
        "liveEvery": args.live_every,
        "seconds": round(time.monotonic() - started, 1),
    }
    report |= tally.as_json()
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0 if not tally.mismatches else 1


if __name__ == "__main__":
    raise SystemExit(main())
