"""Scheduling throughput of `kubesched simulate` on scheduler_perf's SchedulingBasic shape.

Nodes: 4 CPU, 32Gi, 110 pods, in 3 zones. Pods: 100m CPU / 500Mi; SchedulingPodAntiAffinity pods are
anti-affine to each other on the hostname, TopologySpreading pods spread across zones (maxSkew 5),
Gang pods form one PodGroup of minCount all of them, scheduled by the pod-group cycle with
GenericWorkload on (issue 21: a 256-pod gang on 5000 nodes in under 1 s).
Each case places `init` running pods first, then schedules `pods` pending pods with the full default
profile, and prints one JSON object per case:

    {"case": "5000Nodes_10000Pods", "nodes": 5000, "pods": 10000, "percentageOfNodesToScore": 0,
     "scheduled": 10000, "seconds": 11.2, "cpuSeconds": 11.4, "podsPerSecond": 893.1, "rssMiB": 412.0}

Upstream's threshold for SchedulingBasic 5000Nodes_10000Pods is 680 pods/s (integration setup,
adaptive sampling). The full run ends with the scale cases (SchedulingBasic at 50,000 nodes,
anti-affinity and spreading at 20,000), which `--scale` runs alone.
Run: `.venv/bin/python benchmarks/simulate_throughput.py [--quick | --smoke | --scale] [--shape gang]`.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from dataclasses import dataclass
from typing import Any

import msgspec

from kubesched.api.loader import LoadedObjects
from kubesched.api.meta import ObjectMeta
from kubesched.api.scheduling_groups import (
    GangSchedulingPolicy,
    PodGroup,
    PodGroupSchedulingPolicy,
    PodGroupSpec,
)
from kubesched.config import DEFAULT_GATES, FeatureGates, default_config
from kubesched.plugins import default_registry
from kubesched.scheduler.profiles import profiles_from_config
from kubesched.simulate.snapshot.run import simulate
from kubesched.testing.builders import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
#: Pod shapes of scheduler_perf workloads (requests 100m / 500Mi each).
ANTI_AFFINITY: dict[str, Any] = {
    "affinity": {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"color": "green"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
}
SPREAD: dict[str, Any] = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 5,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"color": "blue"}},
        }
    ]
}
#: Every pending pod joins one gang PodGroup whose minCount is all of them (GenericWorkload on).
GANG_NAME = "gang"
GANG: dict[str, Any] = {"schedulingGroup": {"podGroupName": GANG_NAME}}
SHAPES: dict[str, tuple[dict[str, str], dict[str, Any]]] = {
    "SchedulingBasic": ({}, {}),
    "SchedulingPodAntiAffinity": ({"color": "green"}, ANTI_AFFINITY),
    "TopologySpreading": ({"color": "blue"}, SPREAD),
    "Gang": ({}, GANG),
}
GANG_GATES = FeatureGates(explicit={"GenericWorkload": True})


@dataclass(frozen=True)
class Case:
    workload: str
    nodes: int
    init: int
    pods: int
    percentage: int

    @property
    def name(self) -> str:
        return f"{self.workload}/{self.nodes}Nodes_{self.pods}Pods"


CASES = (
    Case("SchedulingBasic", 500, 500, 1000, 0),
    Case("SchedulingBasic", 5000, 1000, 10000, 0),
    Case("SchedulingBasic", 5000, 1000, 10000, 100),
    Case("SchedulingPodAntiAffinity", 5000, 1000, 2000, 100),
    Case("TopologySpreading", 5000, 1000, 5000, 100),
    Case("SchedulingBasic", 5000, 30000, 1000, 100),  # peak RSS with 30000 bound pods
    Case("Gang", 5000, 1000, 256, 0),  # issue 21's target: under 1 s
    Case("Gang", 5000, 1000, 256, 100),
    Case("Gang", 5000, 1000, 1024, 100),
)
#: Issue 20's targets, 1000 pods/s each with every node scored.
SCALE = (
    Case("SchedulingBasic", 50000, 5000, 10000, 100),
    Case("SchedulingPodAntiAffinity", 20000, 1000, 5000, 100),
    Case("TopologySpreading", 20000, 1000, 10000, 100),
)
QUICK = (
    Case("SchedulingBasic", 500, 500, 1000, 0),
    Case("SchedulingBasic", 5000, 1000, 2000, 100),
    Case("SchedulingPodAntiAffinity", 5000, 1000, 500, 100),
    Case("TopologySpreading", 5000, 1000, 1000, 100),
    Case("Gang", 5000, 1000, 256, 100),
)
#: One tiny case per workload: the code path of every shape in a second, figures meaningless.
SMOKE = tuple(Case(workload, 30, 10, 20, 100) for workload in SHAPES)


def cluster(case: Case) -> LoadedObjects:
    """Nodes in 3 zones, `init` running pods, `pods` pending pods of the workload's shape.

    As in scheduler_perf, the anti-affinity workload's running pods carry the same anti-affinity, so
    every pod competes for the nodes the others leave free.
    """
    nodes = [
        make_node(f"node-{i}", cpu="4", memory="32Gi", pods=110, labels={ZONE: f"zone-{i % 3}"})
        for i in range(case.nodes)
    ]
    labels, spec = SHAPES[case.workload]
    init_labels, init_spec = (labels, spec) if case.workload == "SchedulingPodAntiAffinity" else ({}, {})
    init = [
        make_pod(
            f"init-{i}",
            namespace="default",
            cpu="100m",
            memory="500Mi",
            node_name=f"node-{i % case.nodes}",
            labels=init_labels,
            spec=init_spec,
        )
        for i in range(case.init)
    ]
    pending = [
        make_pod(f"pod-{i}", cpu="100m", memory="500Mi", labels=labels, spec=spec) for i in range(case.pods)
    ]
    groups = [gang_group(case.pods)] if case.workload == "Gang" else []
    return LoadedObjects(nodes=nodes, pods=init + pending, scheduling_pod_groups=groups)


def gang_group(size: int) -> PodGroup:
    """The PodGroup of the Gang workload: all `size` pods or none."""
    policy = PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=size))
    return PodGroup(
        metadata=ObjectMeta(name=GANG_NAME, namespace="default", generation=1),
        spec=PodGroupSpec(scheduling_policy=policy),
    )


def run(case: Case) -> dict[str, object]:
    gates = GANG_GATES if case.workload == "Gang" else DEFAULT_GATES
    registry = default_registry(features=gates)
    config = msgspec.structs.replace(
        default_config(registry, gates), percentage_of_nodes_to_score=case.percentage
    )
    objects = cluster(case)
    cpu = time.process_time()
    report = simulate(objects, config, registry)
    cpu = time.process_time() - cpu
    spec = profiles_from_config(config, registry)[0]
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "case": case.name,
        "workload": case.workload,
        "nodes": case.nodes,
        "initPods": case.init,
        "pods": case.pods,
        "percentageOfNodesToScore": case.percentage,
        "scheduled": report.summary.scheduled,
        "seconds": round(report.summary.seconds, 3),
        # CPU seconds of the whole simulate call: on a shared machine the figure that moves least.
        "cpuSeconds": round(cpu, 3),
        "podsPerSecond": report.summary.pods_per_second,
        "maxRssMiB": round(rss_mib, 1),
        "filterPlugins": spec.points.get("filter", []) and [n for n, _ in spec.points["filter"]],
        "scorePlugins": [f"{n}:{w}" for n, w in spec.points.get("score", [])],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smaller cases (seconds each)")
    parser.add_argument("--smoke", action="store_true", help="one tiny case per workload (CI)")
    parser.add_argument("--scale", action="store_true", help="only the 50,000 and 20,000-node cases")
    parser.add_argument(
        "--shape", choices=[w.lower() for w in SHAPES], help="only the cases of this workload"
    )
    args = parser.parse_args()
    cases = SMOKE if args.smoke else QUICK if args.quick else SCALE if args.scale else CASES + SCALE
    if args.shape:
        cases = tuple(c for c in cases if c.workload.lower() == args.shape.lower())
    for case in cases:
        print(json.dumps(run(case)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
