"""Live fault scenarios, kubesched next to kube-scheduler v1.37.2, judged from the API server's own ledger.

Runs the scenarios of `kubesched.harness.faults` (split brain by pausing the leader past its lease,
leader kill -9, API-server restart with etcd compacted while disconnected, nodes deleted and shrunk
and pods deleted mid-run, SIGTERM under load, kill -9 and restart) against one control plane that
audits every Binding, once with `kubesched run` replicas and once with the upstream kube-scheduler
built by the project, with the same client limits and lease timings.

Defaults are the issue's: 300 nodes, 2000 pending pods, qps 50 / burst 100, lease 15/10/2 s (about
25 minutes on two shared cores); `--quick` is the fault suite's size. Prints one JSON line per run
and a table with one column per scheduler; kubesched must be at zero on every stale-decision figure
(double binds, lost pods, binds after loss, binds to deleted nodes, overfilled nodes, duplicate
Scheduled Events). Every process is started here and stopped by pid.

    python benchmarks/fault_comparison.py [--quick | --smoke] [--scenarios split-brain churn ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from kubesched.harness.faults import FLAVOURS, SCENARIOS, Scale, fault_control_plane, run_scenario

#: The figures shown, in order; the first six are the correctness ones.
ROWS = (
    "double_binds",
    "lost_pods",
    "binds_after_loss",
    "binds_to_deleted_nodes",
    "overfilled_nodes",
    "duplicate_scheduled_events",
    "bound_without_event",
    "events_lost_with_process",
    "takeover_seconds",
    "acquired_to_first_bind_seconds",
    "exit_code",
    "exit_seconds",
    "peak_rss_mib",
    "seconds",
)
#: The scenario of `--smoke`: a short one that still runs both flavours under load.
SMOKE_SCENARIO = "sigterm-under-load"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="the fault suite's size (50 nodes, 300 pods, 4/3/1 s)"
    )
    parser.add_argument("--scenarios", nargs="+", choices=sorted(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument(
        "--flavours", nargs="+", choices=sorted(FLAVOURS), default=["kubesched", "kube-scheduler"]
    )
    parser.add_argument("--nodes", type=int, help="override the node count")
    parser.add_argument("--pods", type=int, help="override the pod count")
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_SCENARIO}, 10 nodes, 40 pods (CI)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.quick, args.scenarios = True, [SMOKE_SCENARIO]
        args.nodes, args.pods = args.nodes or 10, args.pods or 40

    scale = Scale() if args.quick else Scale(nodes=300, pods=2000, lease=(15, 10, 2), settle_timeout=600.0)
    if args.nodes or args.pods:
        scale = Scale(
            nodes=args.nodes or scale.nodes,
            pods=args.pods or scale.pods,
            qps=scale.qps,
            burst=scale.burst,
            lease=scale.lease,
            settle_timeout=scale.settle_timeout,
        )
    table: dict[str, dict[str, dict[str, Any]]] = {}
    started = time.monotonic()
    with fault_control_plane(scale) as (cp, api, _):
        for scenario in args.scenarios:
            for flavour in args.flavours:
                print(f"[{time.strftime('%H:%M:%S')}] {scenario} with {flavour}", file=sys.stderr, flush=True)
                figures = run_scenario(cp, api, flavour, scenario, scale).as_dict()
                print(json.dumps(figures), flush=True)
                table.setdefault(scenario, {})[flavour] = figures
    print_table(table, args.flavours)
    print(
        json.dumps(
            {
                "summary": "fault_comparison",
                "scale": scale.__dict__,
                "wall_seconds": round(time.monotonic() - started, 1),
            }
        )
    )
    return 0


def print_table(table: dict[str, dict[str, dict[str, Any]]], flavours: list[str]) -> None:
    width = max(len(r) for r in ROWS) + 2
    for scenario, by_flavour in table.items():
        print(f"\n{scenario}", file=sys.stderr)
        print("  " + "".ljust(width) + "".join(f.rjust(16) for f in flavours), file=sys.stderr)
        for row in ROWS:
            cells = "".join(str(by_flavour.get(f, {}).get(row, "")).rjust(16) for f in flavours)
            print("  " + row.ljust(width) + cells, file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
