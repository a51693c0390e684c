"""The same input under several configurations, side by side: `kubesched compare`.

Each configuration runs the full simulation (`simulate_cluster`); the figures are then read off the
cluster it leaves:

* scheduled / unschedulable pods, and unschedulable pods per reason: the reasons of the
  FailedScheduling message (`Insufficient cpu`, `node(s) had untolerated taint(s)`, ...), a pod
  counting once under each reason it was given;
* preemptions: pods evicted, and pods that evicted others;
* utilization per resource: requested / allocatable on each node that has the resource, as the
  mean and the standard deviation over those nodes (a low spread is an even cluster, a high one a
  packed one);
* fragmentation: per extended resource (a GPU), the free units stranded on nodes with less free
  than the smallest request still pending among pods that some node could hold (see `_stranded`);
  the largest free amount of each resource on one node; and the largest pod shape of the input
  that still fits on some schedulable node by its requests;
* zone balance: pods placed in the run per `topology.kubernetes.io/zone`, and max - min;
* gangs placed whole, in part (holding resources they cannot use), or not at all.

The result is a typed structure (`Comparison`): the table and JSON of `kubesched compare` and the
HTML report are views of it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod
from kubesched.api.quantity import QuantityError, format_quantity, resource_amount
from kubesched.api.resources import pod_requests
from kubesched.cluster.memory import MemoryCluster
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework.node_info import PODS
from kubesched.framework.registry import Registry
from kubesched.scheduler.cache import ZONE_LABEL
from kubesched.simulate.compare.gangs import count_gangs
from kubesched.simulate.compare.model import Comparison, ConfigRun, Spread
from kubesched.simulate.held import held
from kubesched.simulate.snapshot.model import PodResult, Report
from kubesched.simulate.snapshot.run import simulate_cluster

__all__ = ["compare", "measure", "reasons_of", "run_name"]

_MESSAGE = re.compile(r"^0/\d+ nodes are available: (?P<reasons>.*?)\.(?: preemption: .*)?$", re.DOTALL)
#: Upstream joins "<count> <reason>" parts with ", "; a reason may hold a comma itself.
_PARTS = re.compile(r", (?=\d+ )")
_COUNTED = re.compile(r"^\d+ (?P<reason>.+)$")


def run_name(config_path: str, taken: Sequence[str]) -> str:
    """A short column name for a configuration file: its stem, made unique."""
    name = Path(config_path).stem or config_path
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}-{n}"
    return candidate


def compare(
    objects: LoadedObjects,
    configs: Sequence[tuple[str, KubeSchedulerConfiguration]],
    registry: Registry,
    *,
    seed: int = 0,
) -> Comparison:
    """Simulate `objects` under each (path, configuration) and measure each run."""
    runs: list[ConfigRun] = []
    pending = [0]
    for path, config in configs:
        report, cluster = simulate_cluster(objects, config, registry, seed=seed)
        pending.append(report.summary.pods + report.summary.ignored)
        runs.append(measure(run_name(path, [r.name for r in runs]), path, report, cluster, objects))
    return Comparison(runs=runs, pods=max(pending), nodes=len(objects.nodes), seed=seed)


def reasons_of(message: str) -> list[str]:
    """The reasons of a FailedScheduling message without their node counts; the message itself otherwise."""
    match = _MESSAGE.match(message)
    if match is None:
        return [message]
    out = []
    for part in _PARTS.split(match["reasons"]):
        counted = _COUNTED.match(part.strip())
        out.append(counted["reason"] if counted else part.strip())
    return out


def pod_reasons(result: PodResult) -> list[str]:
    """The reasons an unschedulable pod was held back. A PreFilter rejection names no node counts:
    its message is one sentence about this pod (often naming its claims), so it counts under the
    plugin that rejected it rather than as a reason row of its own."""
    if result.pre_filter is not None:
        return [f"rejected by {result.pre_filter.plugin} before filtering nodes (PreFilter)"]
    return reasons_of(result.message or "")


def count_reasons(reasons: Iterable[list[str]]) -> dict[str, int]:
    """How many pods each reason held back, most first; ties by name, so a report prints the same
    every run (a message's reasons come out of a set)."""
    counts = Counter(reason for pod in reasons for reason in set(pod))
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def measure(
    name: str, config: str, report: Report, cluster: MemoryCluster, objects: LoadedObjects
) -> ConfigRun:
    """The figures of one run, read off its report and the cluster it left."""
    by_reason = count_reasons(
        pod_reasons(r) for r in report.pods if r.result == "Unschedulable" and r.message
    )
    pods = list(cluster.pods.values())
    usage = _node_usage(cluster.nodes.values(), pods)
    placed = {(r.namespace, r.name) for r in report.pods if r.result == "Scheduled"}
    zones = _zones(cluster.nodes.values())
    per_zone = Counter(
        zones[p.spec.node_name]
        for p in pods
        if (p.metadata.namespace, p.metadata.name) in placed and zones.get(p.spec.node_name)
    )
    for zone in set(zones.values()):
        per_zone.setdefault(zone, 0)
    ignored = {(r.namespace, r.name) for r in report.pods if r.result == "Ignored"}
    others = [p for p in pods if (p.metadata.namespace, p.metadata.name) in ignored]
    pending = [
        p
        for p in pods
        if not p.spec.node_name
        and (p.metadata.namespace, p.metadata.name) not in ignored
        and _requests(p) is not None
    ]
    return ConfigRun(
        name=name,
        config=config,
        scheduled=report.summary.scheduled,
        unschedulable=report.summary.unschedulable,
        errors=report.summary.errors,
        ignored=report.summary.ignored,
        unschedulable_by_reason=by_reason,
        evicted=sum(len(r.victims) for r in report.pods),
        preemptors=sum(1 for r in report.pods if r.victims),
        utilization=_utilization(usage),
        stranded=_stranded(usage, pending),
        largest_free=_largest_free(usage),
        largest_placeable=_largest_placeable(usage, pods),
        zones=dict(sorted(per_zone.items())),
        zone_skew=max(per_zone.values()) - min(per_zone.values()) if per_zone else 0,
        gangs=count_gangs(pods, objects.pod_groups),
        seconds=report.summary.seconds,
        held_by_another_scheduler=held(others),
    )


# --------------------------------------------------------------------------- per node


class _Usage:
    """A node's allocatable and requested amounts, in scheduler units (milli-cpu, bytes, units)."""

    __slots__ = ("allocatable", "requested", "schedulable")

    def __init__(self, node: Node) -> None:
        self.allocatable: dict[str, int] = {}
        for resource, value in node.effective_allocatable().items():
            try:
                self.allocatable[resource] = resource_amount(resource, value)
            except QuantityError:
                continue  # the run reported it; the figures leave the resource out
        self.requested: dict[str, int] = dict.fromkeys(self.allocatable, 0)
        self.schedulable = not node.spec.unschedulable

    def free(self, resource: str) -> int:
        return self.allocatable.get(resource, 0) - self.requested.get(resource, 0)


def _requests(pod: Pod) -> dict[str, int] | None:
    try:
        return pod_requests(pod)
    except QuantityError:
        return None


def _node_usage(nodes: Iterable[Node], pods: Sequence[Pod]) -> dict[str, _Usage]:
    usage = {n.name: _Usage(n) for n in nodes}
    for pod in pods:
        node = usage.get(pod.spec.node_name)
        requests = _requests(pod) if node is not None else None
        if node is None or requests is None:
            continue
        node.requested[PODS] = node.requested.get(PODS, 0) + 1
        for resource, amount in requests.items():
            node.requested[resource] = node.requested.get(resource, 0) + amount
    return usage


def _zones(nodes: Iterable[Node]) -> dict[str, str]:
    return {n.name: n.labels.get(ZONE_LABEL, "") for n in nodes}


def _utilization(usage: dict[str, _Usage]) -> dict[str, Spread]:
    fractions: dict[str, list[float]] = {}
    for node in usage.values():
        for resource, total in node.allocatable.items():
            if total > 0:
                fractions.setdefault(resource, []).append(node.requested.get(resource, 0) / total)
    out = {}
    for resource in sorted(fractions, key=_resource_order):
        values = fractions[resource]
        mean = sum(values) / len(values)
        stddev = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        out[resource] = Spread(
            mean=round(mean, 4), stddev=round(stddev, 4), min=round(min(values), 4), max=round(max(values), 4)
        )
    return out


_FIRST = ("cpu", "memory", "ephemeral-storage", PODS)


def _resource_order(resource: str) -> tuple[int, str]:
    """cpu, memory, ephemeral-storage, pods, then the rest by name."""
    return (_FIRST.index(resource), "") if resource in _FIRST else (len(_FIRST), resource)


def _stranded(usage: dict[str, _Usage], pending: Sequence[Pod]) -> dict[str, int]:
    """Free extended-resource units on nodes whose free amount is below the smallest request of a
    pending pod that could use the resource elsewhere: one whose request some schedulable node has
    in allocatable. A pod too big for every node strands nothing (fragmentation did not keep it
    out), and pods held by another scheduler are not among `pending`."""
    extended = sorted({r for node in usage.values() for r in node.allocatable if "/" in r})
    out: dict[str, int] = {}
    for resource in extended:
        biggest = max((n.allocatable.get(resource, 0) for n in usage.values() if n.schedulable), default=0)
        wanted = [a for p in pending if 0 < (a := (_requests(p) or {}).get(resource, 0)) <= biggest]
        smallest = min(wanted, default=None)
        out[resource] = (
            0
            if smallest is None
            else sum(f for n in usage.values() if 0 < (f := n.free(resource)) < smallest)
        )
    return out


def _largest_free(usage: dict[str, _Usage]) -> dict[str, str]:
    most: dict[str, int] = {}
    for node in usage.values():
        if not node.schedulable:
            continue
        for resource in node.allocatable:
            most[resource] = max(most.get(resource, 0), node.free(resource))
    return {
        r: (str(v) if r == PODS else format_quantity(v, r))
        for r, v in sorted(most.items(), key=lambda kv: _resource_order(kv[0]))
    }


def _largest_placeable(usage: dict[str, _Usage], pods: Sequence[Pod]) -> dict[str, str] | None:
    """The input's biggest pod shape (by its largest share of a node) that fits on a schedulable node."""
    biggest_node: dict[str, int] = {}
    for node in usage.values():
        for resource, total in node.allocatable.items():
            biggest_node[resource] = max(biggest_node.get(resource, 0), total)
    shapes = {tuple(sorted(r.items())) for p in pods if (r := _requests(p))}

    def size(shape: tuple[tuple[str, int], ...]) -> float:
        return max((amount / biggest_node[r] for r, amount in shape if biggest_node.get(r)), default=0.0)

    for shape in sorted(shapes, key=lambda s: (-size(s), s)):
        if any(
            node.schedulable and all(node.free(r) >= a for r, a in shape) and node.free(PODS) >= 1
            for node in usage.values()
        ):
            return {r: format_quantity(a, r) for r, a in shape}
    return None
