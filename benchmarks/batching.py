"""What opportunistic batching saves: a burst of identical bare pods, one per node, in `simulate`.

The same cluster and burst run twice: with the default profile, where PodTopologySpread's system
defaults make every pod unsignable (no batching, as kube-scheduler v1.37.2), and with
`defaultingType: List` (no default spreading), where every pod after the first takes the previous
pod's runner-up node without a full pass. Prints one JSON object:

    {"nodes": 3000, "pods": 1500, "unbatched": {"cpuSeconds": 3.13, ...},
     "batched": {"cpuSeconds": 1.88, ...}, "samePodsPerNode": true}

CPU seconds (`time.process_time`) are the figure to read on a shared machine; wall seconds are
printed beside them. Run: `nice -n 10 .venv/bin/python benchmarks/batching.py [--nodes N --pods P | --smoke]`.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

from kubesched.api.loader import LoadedObjects
from kubesched.config import decode_config
from kubesched.plugins import default_registry
from kubesched.simulate.snapshot.run import simulate
from kubesched.testing.builders import make_node, make_pod

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args: {{defaultingType: {defaulting}}}
"""


def run(defaulting: str, nodes: int, pods: int) -> tuple[dict[str, object], Counter[str]]:
    registry = default_registry(entry_points=False)
    config = decode_config(CONFIG.format(defaulting=defaulting), "batching.yaml", registry)
    objects = LoadedObjects(
        nodes=[make_node(f"n{i}", cpu="8", memory="32Gi") for i in range(nodes)],
        pods=[make_pod(f"p{i}", cpu="6", memory="1Gi") for i in range(pods)],
    )
    wall, cpu = time.perf_counter(), time.process_time()
    report = simulate(objects, config, registry)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    per_node = Counter(p.node or "" for p in report.pods)
    return {
        "cpuSeconds": round(cpu, 3),
        "wallSeconds": round(wall, 3),
        "scheduled": report.summary.scheduled,
        "podsPerCpuSecond": round(pods / cpu, 1),
    }, per_node


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=3000)
    parser.add_argument("--pods", type=int, default=1500)
    parser.add_argument("--smoke", action="store_true", help="60 nodes, 30 pods (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.nodes, args.pods = 60, 30
    unbatched, counts_a = run("System", args.nodes, args.pods)
    batched, counts_b = run("List", args.nodes, args.pods)
    print(
        json.dumps(
            {
                "nodes": args.nodes,
                "pods": args.pods,
                "unbatched": unbatched,
                "batched": batched,
                # one pod per node either way; which identical node a pod takes is a tie-break
                "samePodsPerNode": sorted(counts_a.values()) == sorted(counts_b.values()),
            }
        )
    )


if __name__ == "__main__":
    main()
