"""How fast `kubesched simulate --scenario` replays a timeline: 5000 nodes, 100,000 events.

The scenario is `kubesched.testing.scenarios.synthetic_scenario`: the nodes exist at 0s (5000
events), 1% of them leave at midday and as many join later, and pods arrive over four virtual hours
with a morning rush that fills the cluster's CPU (batch pods run for a while, services are deleted
later, 5% of the pods have a high priority and preempt). The file is written as JSON, then timed
end to end: reading and validating the file, and the replay with the full default profile. One JSON
object per case:

    {"case": "2000Nodes_40000Events", "nodes": 2000, "events": 40000, "parseSeconds": 0.64,
     "replaySeconds": 99.3, "seconds": 100.0, "cpuSeconds": 99.2, "eventsPerSecond": 400.1,
     "attempts": 141776, "scheduled": 27114, "pendingPeak": 87, "evictions": {...}, "maxRssMiB": 337.9}

(measured on the shared 2-core machine; docs/scenarios.md keeps the figures per case).

`seconds` is wall time; `cpuSeconds` is this process's CPU time, the figure to compare on a shared
machine. Run: `.venv/bin/python benchmarks/replay_throughput.py [--quick | --smoke | --nodes N --events N]`.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from kubesched.config import default_config
from kubesched.plugins import default_registry
from kubesched.simulate.replay.run import replay
from kubesched.simulate.scenario import load_scenario
from kubesched.testing.scenarios import synthetic_scenario

CASES = ((5000, 100_000),)
QUICK = ((500, 10_000),)
SMOKE = ((20, 400),)


def run_case(nodes: int, events: int, seed: int) -> dict[str, object]:
    document = synthetic_scenario(nodes=nodes, events=events, seed=seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "scenario.json")
        path.write_bytes(msgspec.json.encode(document))
        # The generated document is the benchmark's, not the replay's: peak RSS measures the replay.
        del document
        registry = default_registry()
        config = default_config(registry)
        wall, cpu = time.perf_counter(), time.process_time()
        scenario = load_scenario(path)
        parsed = time.perf_counter()
        report = replay(scenario, config, registry, seed=seed)
        done, cpu_done = time.perf_counter(), time.process_time()
    s = report.summary
    return {
        "case": f"{nodes}Nodes_{events}Events",
        "nodes": nodes,
        "events": s.events,
        "virtualSeconds": s.virtual_seconds,
        "parseSeconds": round(parsed - wall, 3),
        "replaySeconds": round(done - parsed, 3),
        "seconds": round(done - wall, 3),
        "cpuSeconds": round(cpu_done - cpu, 3),
        "eventsPerSecond": round(s.events / (done - wall), 1),
        "attempts": sum(p.attempts for p in report.pods),
        "pods": s.pods,
        "scheduled": s.scheduled,
        "pendingAtEnd": s.pending,
        "pendingPeak": max((x.pending for x in report.timeline), default=0),
        "cpuUtilizationPeak": s.utilization_peak.get("cpu"),
        "waitP99": s.latency.p99,
        "evictions": s.evictions,
        "maxRssMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="500 nodes, 10,000 events")
    parser.add_argument("--smoke", action="store_true", help="20 nodes, 400 events (CI)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--nodes", type=int, help="one case of this many nodes (with --events)")
    parser.add_argument("--events", type=int, help="one case of this many events (with --nodes)")
    args = parser.parse_args(argv)
    if (args.nodes is None) != (args.events is None):
        parser.error("--nodes and --events go together")
    preset = SMOKE if args.smoke else QUICK if args.quick else CASES
    cases = ((args.nodes, args.events),) if args.nodes else preset
    for nodes, events in cases:
        print(json.dumps(run_case(nodes, events, args.seed)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
