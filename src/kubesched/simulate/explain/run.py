"""`kubesched explain`: why one pod is pending (or where it would go), from one scheduling cycle.

The objects come from a live cluster's lists (`cluster.kube.snapshot`) or from files, exactly as
`simulate` gets them, and run on a MemoryCluster with the real Scheduler: nothing is written
anywhere but in memory. Only the pod being explained is scheduled. The other pending pods are left
out, except those already nominated to a node by a preemption, which the scheduler counts as
kube-scheduler does.

Every node is evaluated (`percentageOfNodesToScore: 100`), so the answer covers the whole cluster,
not the sample kube-scheduler would look at. Before the cycle, every Filter plugin also runs on
every node (`nearest.find_obstacles`), so the nearest nodes can say everything that is missing on
them; then the cycle runs, PostFilter (preemption) included, and its outcome gives the verdict, the
reasons by plugin, what preemption would evict, and the top nodes' scores.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable

import msgspec

from kubesched.api.group_claims import GROUP_CLAIMS
from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import GATE_OF
from kubesched.cluster.memory import MemoryCluster
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.errors import InputError, did_you_mean
from kubesched.framework.node_info import PodInfo, pod_key
from kubesched.framework.pod_groups import pod_group_of
from kubesched.framework.registry import Registry
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.profiles import profiles_from_config
from kubesched.scheduler.scheduler import Attempt, ProfileSpec, Scheduler
from kubesched.simulate.explain.model import NearNode, PodExplanation, Preemption
from kubesched.simulate.explain.nearest import nearest_in_cluster
from kubesched.simulate.explain.plain import plain_words
from kubesched.simulate.explain.verdicts import summarize_rejections, top_nodes, verdict
from kubesched.simulate.node_quantities import check_node_quantities
from kubesched.simulate.virtual_time import drain, new_scheduler

__all__ = ["every_node", "explain_pod", "find_pod", "kinds_read", "profile_of"]

#: Node names kept per reason and top nodes shown (nearest nodes: `nearest.NEAREST`).
NAMES_PER_REASON = 5
TOP = 5


def kinds_read(config: KubeSchedulerConfiguration, registry: Registry) -> set[str] | None:
    """The kinds the config's plugins read through `handle.lister` (their `listed_kinds`), plus
    PriorityClass and Namespace, which admission and selectors need, and the scheduling.k8s.io
    kinds the scheduler itself watches when their gates are on; None (read everything) when a
    plugin does not say."""
    gates = registry.features
    kinds = {"PriorityClass", "Namespace"}
    kinds.update(key for key, gate in GATE_OF.items() if gates.enabled(gate))
    for spec in profiles_from_config(config, registry):
        for refs in spec.points.values():
            for name, _ in refs:
                cls = registry.resolve(name)
                listed = getattr(cls, "listed_kinds", None)
                if listed is None:
                    return None
                kinds.update(listed)
    return kinds


def _group_note(objects: LoadedObjects, cluster: MemoryCluster, pod: Pod) -> list[str]:
    """What a pod that names a PodGroup is told with GenericWorkload off: it is explained on its own,
    as the binary schedules it (with the gate on, explain takes its group: explain/group.py)."""
    group = pod_group_of(pod)
    if group is None:
        return []
    namespace, name = group
    found = cluster.groups.pod_group(namespace, name)
    gang = found.spec.scheduling_policy.gang if found is not None else None
    what = (
        "which the snapshot does not hold"
        if found is None
        else f"(gang, minCount {gang.min_count})"
        if gang is not None
        else "(basic policy)"
    )
    members = sum(1 for p in objects.pods if pod_group_of(p) == group)
    return [
        f"the pod names PodGroup {namespace}/{name} {what}, with {members} pod(s) in the snapshot: it is "
        "explained on its own, as kube-scheduler schedules it with GenericWorkload off"
    ]


def find_pod(objects: LoadedObjects, key: str) -> Pod:
    """The pod `namespace/name` of the snapshot, or an InputError suggesting the closest name."""
    namespace, _, name = key.partition("/")
    if not name:
        raise InputError(f"expected NAMESPACE/NAME, got {key!r}")
    for pod in objects.pods:
        if (pod.metadata.namespace or "default", pod.metadata.name) == (namespace, name):
            return pod
    known = [f"{p.metadata.namespace or 'default'}/{p.metadata.name}" for p in objects.pods]
    raise InputError(f"pod {key} not found{did_you_mean(key, known)}")


def explain_pod(
    objects: LoadedObjects,
    config: KubeSchedulerConfiguration,
    registry: Registry,
    target: Pod,
    *,
    source: str,
    notes: Iterable[str] = (),
    on_error: Callable[[str, BaseException], None] | None = None,
) -> PodExplanation:
    """One scheduling cycle of `target` on `objects` (see the module docstring); `on_error(pod,
    exception)` hears of an attempt that ended in an Error, for a traceback on request."""
    started = time.perf_counter()
    for node in objects.nodes:
        check_node_quantities(node)
    specs = [every_node(s) for s in profiles_from_config(config, registry)]
    name = profile_of(target, specs)
    pending, nominated, running_on = _split(objects, target)
    clock = VirtualClock()
    cluster = MemoryCluster(pending, clock.now, group_claims=registry.features.enabled(GROUP_CLAIMS))
    attempts: list[Attempt] = []
    scheduler = new_scheduler(
        specs, config, registry, cluster, clock, explain=True, every_node=True, observer=attempts.append
    )
    refused: list[Exception] = []
    try:
        cluster.subscribe(scheduler, on_error=lambda pod, exc: refused.append(exc))
        for pod in nominated:
            admitted = cluster.admit(pod)
            scheduler.nominator.add(PodInfo(admitted), pod.status.nominated_node_name)
        fwk = scheduler.frameworks[name]
        admitted = next(p for p in cluster.pods.values() if _key(p) == _key(target) and not p.spec.node_name)
        key = pod_key(admitted)
        table = scheduler.cache.snapshot()
        base = PodExplanation(
            pod=_key(target),
            scheduler_name=name,
            source=source,
            nodes=len(table),
            verdict="Error",
            node=None,
            running_on=running_on,
            message=None,
            plain_words=[],
            pre_filter=None,
            rejected_nodes=0,
            rejections=[],
            nearest_nodes=[],
            preemption=None,
            scored_nodes=0,
            top_nodes=[],
            score_weights=dict(fwk.score_weights),
            notes=[
                *notes,
                *(
                    []
                    if registry.features.enabled("GenericWorkload")
                    else _group_note(objects, cluster, admitted)
                ),
            ],
            seconds=0.0,
        )
        if refused:
            return _done(base, started, message=str(refused[0]))
        if scheduler.queue.where(key) == "gated":
            plugin, status = fwk.run_pre_enqueue(admitted)
            message = status.message() if status is not None else f"gated by {plugin}"
            return _done(base, started, verdict="Gated", message=message)
        # Before the cycle: preemption may evict pods (in memory) and change the nodes.
        nearest = nearest_in_cluster(fwk, admitted, table, cluster)
        drain(scheduler, stop=lambda: bool(attempts))
    finally:
        if scheduler.extenders is not None:
            scheduler.extenders.close()
    if not attempts:
        return _done(base, started, message="the scheduling queue did not hand the pod out")
    if attempts[0].error is not None and on_error is not None:
        on_error(base.pod, attempts[0].error)
    return _from_attempt(base, attempts[0], nearest, scheduler, started)


def profile_of(pod: Pod, specs: list[ProfileSpec]) -> str:
    """The profile (schedulerName) that schedules `pod`; InputError when the config has none."""
    name = pod.spec.scheduler_name
    if name not in {s.scheduler_name for s in specs}:
        names = [s.scheduler_name for s in specs]
        raise InputError(
            f'pod {_key(pod)} uses schedulerName "{name}", which no profile of the configuration '
            f"has ({', '.join(names)}); pass --config with that profile{did_you_mean(name, names)}"
        )
    return name


def _from_attempt(
    base: PodExplanation, attempt: Attempt, nearest: list[NearNode], scheduler: Scheduler, started: float
) -> PodExplanation:
    failed = attempt.filter or {}
    fields: dict[str, object] = {
        "verdict": "Schedulable" if attempt.result == "Scheduled" else attempt.result,
        "node": attempt.node if attempt.result in ("Scheduled", "Waiting") else None,
        "message": attempt.message,
        "pre_filter": verdict(attempt.pre_filter) if attempt.pre_filter is not None else None,
        "rejected_nodes": len(failed),
        "rejections": summarize_rejections(failed, names_per_reason=NAMES_PER_REASON),
        "scored_nodes": len(attempt.scores or {}),
        "top_nodes": top_nodes(attempt.scores or {}, limit=TOP, chosen=attempt.node),
    }
    if attempt.result == "Unschedulable":
        fields["nearest_nodes"] = nearest
        fields["preemption"] = _preemption(attempt, scheduler)
    return _done(base, started, **fields)


def _preemption(attempt: Attempt, scheduler: Scheduler) -> Preemption | None:
    fwk = scheduler.frameworks[attempt.profile]
    if not fwk.plugins_at("postFilter"):
        return None
    message = attempt.post_filter
    if attempt.victims or attempt.nominated_node:
        return Preemption(
            helps=True, node=attempt.nominated_node, victims=list(attempt.victims), message=message
        )
    return Preemption(helps=False, node=None, victims=[], message=message)


def _done(base: PodExplanation, started: float, **fields: object) -> PodExplanation:
    done = msgspec.structs.replace(base, **fields)
    p = done.preemption
    refusal = p.message if p is not None and not p.helps else None
    meanings = plain_words(done.message if done.verdict != "Schedulable" else None, refusal)
    return msgspec.structs.replace(
        done, plain_words=meanings, seconds=round(time.perf_counter() - started, 6)
    )


def every_node(spec: ProfileSpec) -> ProfileSpec:
    """`spec` scoring every feasible node: the answer covers the whole cluster."""
    return dataclasses.replace(spec, percentage_of_nodes_to_score=100)


def _key(pod: Pod) -> str:
    return f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"


def _split(objects: LoadedObjects, target: Pod) -> tuple[LoadedObjects, list[Pod], str | None]:
    """The objects to schedule on: running pods and the target (made pending), the other pending
    pods that carry a nomination, and the node the target already runs on (if any)."""
    key = _key(target)
    running_on = target.spec.node_name or None
    pending = msgspec.structs.replace(
        target,
        spec=msgspec.structs.replace(target.spec, node_name=""),
        status=msgspec.structs.replace(target.status, nominated_node_name=""),
    )
    pods = [pending]
    nominated: list[Pod] = []
    for pod in objects.pods:
        if _key(pod) == key:
            continue
        if pod.spec.node_name:
            pods.append(pod)
        elif pod.status.nominated_node_name:
            nominated.append(pod)
    return dataclasses.replace(objects, pods=pods), nominated, running_on
