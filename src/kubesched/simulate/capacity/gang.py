"""How many more nodes of a given shape until a gang fits: `kubesched capacity` of a PodGroup.

A gang fits only all or nothing: its pod-group cycle must place minCount of its pods at once. Each
try is a fresh simulation of the input (its own pending pods and workloads placed first, as for any
capacity shape) with k copies of the node shape added; then the gang's pods are created, never
preempting, and the real scheduler runs the group's cycle. k doubles from 0 (1, 2, 4, ... up to
--max) until the gang fits, then a bisection between the largest k that failed and the smallest
that fitted finds the fewest nodes, taking more nodes never to hurt a gang. The answer gives that
k, where the pods went, and the PodGroup condition's message with one node fewer: why not then.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod
from kubesched.api.quantity import format_quantity
from kubesched.api.resources import default_requests_from_limits, pod_requests
from kubesched.api.scheduling_groups import POD_GROUP_INITIALLY_SCHEDULED, PodGroup
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.errors import InputError
from kubesched.framework.node_info import pod_key
from kubesched.framework.pod_groups import min_count, pod_group_of
from kubesched.framework.registry import Registry
from kubesched.simulate.capacity.input_run import InputRun, never_preempt
from kubesched.simulate.capacity.model import GangCapacity
from kubesched.simulate.virtual_time import run_until_settled

__all__ = ["DEFAULT_NODE_LIMIT", "Gang", "gang_capacity", "gangs_of", "node_shape_of", "shapes_beside"]

#: Nodes added at most unless --max says otherwise: the answer is then "more than this many".
DEFAULT_NODE_LIMIT = 1_000
HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True, slots=True)
class Gang:
    """A PodGroup of SHAPE and the pods of SHAPE that name it."""

    pod_group: PodGroup
    pods: list[Pod] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"PodGroup {self.pod_group.metadata.namespace or 'default'}/{self.pod_group.metadata.name}"


def gangs_of(objects: LoadedObjects) -> list[Gang]:
    """The scheduling.k8s.io PodGroups of `objects`, each with its pods; InputError for a gang with
    fewer pods than its minCount (it could never be scheduled)."""
    gangs = []
    for pod_group in objects.scheduling_pod_groups:
        gang = Gang(pod_group, [p for p in objects.pods if pod_group_of(p) == _key(pod_group)])
        need = min_count(pod_group)
        if len(gang.pods) < need:
            raise InputError(
                f"has {len(gang.pods)} pod(s) naming it, fewer than its minCount {need}: add its pods to "
                "the file (spec.schedulingGroup.podGroupName)",
                path=gang.name,
            )
        gangs.append(gang)
    return gangs


def gang_capacity(
    objects: LoadedObjects,
    gang: Gang,
    node_shape: Node | None,
    config: KubeSchedulerConfiguration,
    registry: Registry,
    *,
    seed: int = 0,
    limit: int = DEFAULT_NODE_LIMIT,
    progress: Callable[[int, int], None] | None = None,
) -> GangCapacity:
    """The fewest copies of `node_shape` (at most `limit`) to add before `gang` fits; see the module."""
    if limit < 1:
        raise InputError("must be at least 1", path="--max")
    key = (gang.pod_group.metadata.namespace or "default", gang.pod_group.metadata.name)
    if any(
        (g.metadata.namespace or "default", g.metadata.name) == key for g in objects.scheduling_pod_groups
    ):
        raise InputError(
            "the cluster has a PodGroup of that name already: rename it in SHAPE", path=gang.name
        )

    def attempt(nodes: int) -> _Try:
        if progress is not None:
            progress(nodes, limit)
        return _try(objects, gang, node_shape, nodes, config, registry, seed)

    failed = attempt(0)
    if failed.fits:
        return _answer(gang, node_shape, failed, None)
    fitted: _Try | None = None
    nodes = 1
    while node_shape is not None and fitted is None and failed.nodes < limit:
        tried = attempt(min(nodes, limit))
        if tried.fits:
            fitted = tried
        else:
            failed, nodes = tried, nodes * 2
    while fitted is not None and fitted.nodes - failed.nodes > 1:
        tried = attempt((failed.nodes + fitted.nodes) // 2)
        if tried.fits:
            fitted = tried
        else:
            failed = tried
    return _answer(gang, node_shape, fitted, failed)


@dataclass(frozen=True, slots=True)
class _Try:
    nodes: int
    fits: bool
    reason: str | None
    placement: dict[str, int]


def _try(
    objects: LoadedObjects,
    gang: Gang,
    node_shape: Node | None,
    nodes: int,
    config: KubeSchedulerConfiguration,
    registry: Registry,
    seed: int,
) -> _Try:
    """One fresh simulation: the input with `nodes` copies of `node_shape`, then the gang."""
    given = copy.copy(objects)  # the input stays as given: every try starts from it
    if node_shape is not None and nodes:
        given.nodes = [*objects.nodes, *_copies(node_shape, nodes, {n.metadata.name for n in objects.nodes})]
    pod_group = gang.pod_group
    never = msgspec.structs.replace(pod_group.spec, preemption_policy="Never")
    given.scheduling_pod_groups = [
        *objects.scheduling_pod_groups,
        msgspec.structs.replace(pod_group, spec=never),
    ]
    run = InputRun(given, config, registry, seed=seed)
    try:
        run.start()
        keys = [
            pod_key(run.cluster.create_pod(msgspec.structs.replace(p, spec=never_preempt(p.spec))))
            for p in gang.pods
        ]
        run_until_settled(run.scheduler, run.clock, run.cluster)
    finally:
        run.close()
    placed = Counter(run.cluster.pods[k].spec.node_name for k in keys if run.bound(k))
    fits = sum(placed.values()) >= min_count(pod_group)
    stored = run.cluster.groups.pod_group(*_key(pod_group))
    conditions = stored.status.conditions if stored is not None else []
    condition = next((c for c in conditions if c.type == POD_GROUP_INITIALLY_SCHEDULED), None)
    reason = None
    if not fits:
        pending = next((k for k in keys if not run.bound(k)), None)
        own = run.messages.get(pending) if pending is not None else None
        reason = (
            condition.message if condition is not None else own
        ) or "not scheduled (no attempt was made)"
    return _Try(nodes, fits, reason, dict(sorted(placed.items())))


def _key(pod_group: PodGroup) -> tuple[str, str]:
    return (pod_group.metadata.namespace or "default", pod_group.metadata.name)


def _copies(shape: Node, count: int, taken: set[str]) -> list[Node]:
    """`count` copies of `shape` named `<name>-0`, `<name>-1`, ... (skipping names in use), their
    hostname label following the name."""
    out: list[Node] = []
    base, index = shape.metadata.name, 0
    while len(out) < count:
        name = f"{base}-{index}"
        index += 1
        if name in taken:
            continue
        labels = dict(shape.metadata.labels)
        if HOSTNAME in labels:
            labels[HOSTNAME] = name
        meta = msgspec.structs.replace(shape.metadata, name=name, labels=labels, uid="")
        out.append(msgspec.structs.replace(shape, metadata=meta))
    return out


def _answer(gang: Gang, node_shape: Node | None, fitted: _Try | None, failed: _Try | None) -> GangCapacity:
    """The fewest nodes (`fitted`) and why one fewer did not do (`failed`)."""
    total: Counter[str] = Counter()
    for pod in gang.pods:
        total.update(pod_requests(Pod(spec=default_requests_from_limits(pod.spec))))
    return GangCapacity(
        pod_group=gang.name,
        min_count=min_count(gang.pod_group),
        pods=len(gang.pods),
        requests={r: format_quantity(v, r) for r, v in sorted(total.items())},
        node_shape=f"Node {node_shape.metadata.name}" if node_shape is not None else None,
        nodes_needed=fitted.nodes if fitted is not None else None,
        limited=fitted is None and node_shape is not None,
        reason=failed.reason if failed is not None else None,
        nodes=fitted.placement if fitted is not None else {},
    )


def node_shape_of(objects: LoadedObjects, source: str) -> Node:
    """The one Node of a --node-shape file."""
    if len(objects.nodes) != 1 or len(objects) != 1:
        raise InputError(f"expected one Node, found {len(objects)} object(s)", source=source)
    return objects.nodes[0]


def shapes_beside(gangs: Sequence[Gang], pods: Sequence[Pod]) -> list[Pod]:
    """The pods of SHAPE that are not in one of `gangs`: shapes counted one copy at a time."""
    members = {id(p) for g in gangs for p in g.pods}
    return [p for p in pods if id(p) not in members]
