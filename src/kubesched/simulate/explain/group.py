"""`kubesched explain` for a pod group: why a scheduling.k8s.io PodGroup is pending (GenericWorkload on).

With CompositePodGroup on, a PodGroup under a composite is scheduled with its whole tree, all or
nothing: the cycle is the tree's (every pending pod of its PodGroups), and the explanation names the
tree's root and each sibling PodGroup, marking those that failed on their own and so hold it back.

The group's pending pods go on a MemoryCluster with the running pods (and the pending pods that
hold a nomination, as for one pod), and the real scheduler runs one pod-group cycle: the members
tried in upstream's order on the placement, GangScheduling's minCount check after each. Its outcome
gives the verdict and the condition's message; each member's attempt says whether it found a node,
fit nowhere, or was never tried. For a member that fits nowhere every Filter plugin then runs on
every node with the members placed before it assumed where the cycle put them (the state in which
it was tried), so the nearest nodes say what is missing on each.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Iterable

import msgspec

from kubesched.api.group_claims import GROUP_CLAIMS
from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import PodGroup
from kubesched.cluster.memory import MemoryCluster
from kubesched.config.types import DEFAULT_SCHEDULER_NAME, KubeSchedulerConfiguration
from kubesched.errors import InputError, did_you_mean
from kubesched.framework.group_forest import EntityKey, GroupForest, GroupNode
from kubesched.framework.node_info import PodInfo, pod_key
from kubesched.framework.pod_groups import GroupKey, SchedulingGroups, min_count, pod_group_of
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import Framework
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.pod_group_cycle import PodGroupOutcome
from kubesched.scheduler.profiles import profiles_from_config
from kubesched.scheduler.schedule_one import with_node_name
from kubesched.scheduler.scheduler import Attempt, Scheduler
from kubesched.simulate.explain.model import GroupMember, GroupSibling, PodGroupExplanation
from kubesched.simulate.explain.nearest import nearest_in_cluster
from kubesched.simulate.explain.plain import plain_words
from kubesched.simulate.explain.run import NAMES_PER_REASON, every_node, profile_of
from kubesched.simulate.explain.verdicts import summarize_rejections
from kubesched.simulate.node_quantities import check_node_quantities
from kubesched.simulate.virtual_time import drain, new_scheduler

__all__ = ["explain_pod_group", "find_pod_group"]

GENERIC_WORKLOAD = "GenericWorkload"
COMPOSITE_GATE = "CompositePodGroup"
TOPOLOGY_GATE = "TopologyAwareWorkloadScheduling"
#: Members that fit nowhere whose nearest nodes are worked out (each runs every Filter on every node).
NEAREST_MEMBERS = 3
_MIN_COUNT = re.compile(r"minCount \((\d+)\) cannot be satisfied: (\d+) scheduled, (\d+) remaining")


def find_pod_group(objects: LoadedObjects, key: str) -> GroupKey:
    """(namespace, name) of a PodGroup of the snapshot, or of a group its pods name; InputError
    suggesting the closest name otherwise."""
    namespace, _, name = key.partition("/")
    if not name:
        raise InputError(f"expected NAMESPACE/NAME, got {key!r}")
    known = {(g.metadata.namespace or "default", g.metadata.name) for g in objects.scheduling_pod_groups}
    known.update(k for p in objects.pods if (k := pod_group_of(p)) is not None)
    if (namespace, name) in known:
        return (namespace, name)
    names = sorted(f"{ns}/{n}" for ns, n in known)
    raise InputError(
        f"pod group {key} not found: no PodGroup has that name and no pod names it{did_you_mean(key, names)}"
    )


def explain_pod_group(
    objects: LoadedObjects,
    config: KubeSchedulerConfiguration,
    registry: Registry,
    group: GroupKey,
    *,
    source: str,
    pod: str | None = None,
    notes: Iterable[str] = (),
    on_error: Callable[[str, BaseException], None] | None = None,
) -> PodGroupExplanation:
    """One pod-group cycle of `group` on `objects` (see the module docstring); `pod` is the member
    the user asked about, if any; `on_error(pod, exception)` hears of a member's Error."""
    if not registry.features.enabled(GENERIC_WORKLOAD):
        raise InputError(
            "a pod group is scheduled as one only with the GenericWorkload feature gate on: pass "
            "--feature-gates=GenericWorkload=true, as the cluster's kube-scheduler runs"
        )
    started = time.perf_counter()
    for node in objects.nodes:
        check_node_quantities(node)
    namespace, name = group
    pod_group = next(
        (
            g
            for g in objects.scheduling_pod_groups
            if (g.metadata.namespace or "default", g.metadata.name) == group
        ),
        None,
    )
    members = [p for p in objects.pods if pod_group_of(p) == group and not p.finished]
    pending = [p for p in members if not p.spec.node_name]
    tree = _tree_of(objects, group, registry)
    leaves = {(k.namespace, k.name) for k in (n.key for n in tree.leaves())} if tree else {group}
    cycle_pending = [
        p for p in objects.pods if pod_group_of(p) in leaves and not p.finished and not p.spec.node_name
    ]
    specs = [every_node(s) for s in profiles_from_config(config, registry)]
    profile = profile_of(pending[0], specs) if pending else DEFAULT_SCHEDULER_NAME
    gang = pod_group.spec.scheduling_policy.gang if pod_group is not None else None
    base = PodGroupExplanation(
        pod_group=f"{namespace}/{name}",
        pod=pod,
        scheduler_name=profile,
        source=source,
        nodes=len(objects.nodes),
        policy="basic" if pod_group is not None and gang is None else "gang",
        min_count=min_count(pod_group) if pod_group is not None else 0,
        pods=len(members),
        bound=len(members) - len(pending),
        verdict="Error",
        message=None,
        placement=_placement_words(pod_group, len(objects.nodes), registry),
        assignments={},
        plain_words=[],
        members=[_member(p, "Bound") for p in members if p.spec.node_name],
        tree=f"{tree.key.namespace}/{tree.key.name}" if tree is not None else None,
        siblings=[],
        notes=list(notes),
        seconds=0.0,
    )
    if not pending:
        message = "every pod of the group is bound already" if members else "no pod names the group yet"
        verdict = "Schedulable" if members else "Gated"
        return _done(base, started, verdict=verdict, message=message)
    clock = VirtualClock()
    nominated = [
        p
        for p in objects.pods
        if not p.spec.node_name and p.status.nominated_node_name and pod_group_of(p) not in leaves
    ]
    running = [p for p in objects.pods if p.spec.node_name]
    cluster = MemoryCluster(
        dataclasses.replace(objects, pods=[*running, *cycle_pending]),
        clock.now,
        group_claims=registry.features.enabled(GROUP_CLAIMS),
    )
    attempts: list[Attempt] = []
    outcomes: list[PodGroupOutcome] = []
    scheduler = new_scheduler(
        specs,
        config,
        registry,
        cluster,
        clock,
        explain=True,
        every_node=True,
        observer=attempts.append,
        on_pod_group=outcomes.append,
    )
    refused: list[Exception] = []
    try:
        cluster.subscribe(scheduler, on_error=lambda p, exc: refused.append(exc))
        for other in nominated:
            scheduler.nominator.add(PodInfo(cluster.admit(other)), other.status.nominated_node_name)
        fwk = scheduler.frameworks[profile]
        if refused:
            return _done(base, started, message=str(refused[0]))
        drain(scheduler, stop=lambda: any((o.namespace, o.name) == group for o in outcomes))
        admitted = [p for p in cluster.pods.values() if pod_group_of(p) == group and not p.spec.node_name]
        outcome = next((o for o in outcomes if (o.namespace, o.name) == group), None)
        if outcome is None:
            return _gated(base, started, fwk, scheduler, admitted)
        own = [a for a in attempts if pod_group_of(a.pod) == group]
        tried = _members(outcome, own, admitted)
        if outcome.result == "Unschedulable":
            tried = _with_nearest(tried, fwk, scheduler, cluster, {pod_key(p): p for p in admitted})
    finally:
        if scheduler.extenders is not None:
            scheduler.extenders.close()
    if on_error is not None:
        for a in attempts:
            if a.error is not None:
                on_error(f"{namespace}/{a.pod.metadata.name}", a.error)
    siblings = _siblings(objects, outcomes, group, cluster) if tree is not None else []
    done = _done(
        base,
        started,
        verdict="Schedulable" if outcome.result == "Scheduled" else outcome.result,
        message=outcome.message,
        assignments=dict(outcome.placement or outcome.tried),
        members=[*tried, *base.members],
        siblings=siblings,
    )
    if tree is None or outcome.result == "Scheduled":
        return done
    return msgspec.structs.replace(done, plain_words=[*_tree_words(done, tree, outcome), *done.plain_words])


def _tree_of(objects: LoadedObjects, group: GroupKey, registry: Registry) -> GroupNode | None:
    """The CompositePodGroup tree `group` is scheduled in (CompositePodGroup on), None for a
    PodGroup of its own."""
    if not registry.features.enabled(COMPOSITE_GATE):
        return None
    forest = GroupForest(
        SchedulingGroups([*objects.scheduling_pod_groups, *objects.composite_pod_groups]), lambda _: False
    )
    root = forest.root(EntityKey(False, *group))
    return forest.tree(root) if root is not None and root.composite else None


def _siblings(
    objects: LoadedObjects,
    outcomes: list[PodGroupOutcome],
    group: GroupKey,
    cluster: MemoryCluster,
) -> list[GroupSibling]:
    """The tree's other PodGroups as the cycle left them; one blocks when it could not place its
    own quorum (minCount pods with those bound, one for the basic policy) in the trial."""
    out: list[GroupSibling] = []
    seen = {group}
    for o in outcomes:
        key = (o.namespace, o.name)
        if key in seen:
            continue
        seen.add(key)
        pod_group = cluster.groups.pod_group(*key)
        bound = sum(1 for p in objects.pods if pod_group_of(p) == key and p.spec.node_name)
        needed = min_count(pod_group) if pod_group is not None else 1
        short = o.result != "Scheduled" and bound + len(o.tried) < needed
        verdict = "Schedulable" if o.result == "Scheduled" else o.result
        out.append(
            GroupSibling(pod_group=f"{key[0]}/{key[1]}", verdict=verdict, message=o.message, blocking=short)
        )
    return out


def _tree_words(done: PodGroupExplanation, tree: GroupNode, outcome: PodGroupOutcome) -> list[str]:
    """Why a group of a tree is pending, in words: the tree is placed whole, and which of its
    PodGroups did not meet their own quorum."""
    root = f"{tree.key.namespace}/{tree.key.name}"
    blocking = [s.pod_group for s in done.siblings if s.blocking]
    fitted = done.pods - done.bound <= len(outcome.tried) and outcome.result != "Error"
    words = f"{done.pod_group} is a child of the composite {root}, whose tree is placed whole, all or nothing"
    if blocking:
        words += (
            f": {', '.join(blocking)} could not place enough of its own pods, so no pod of the tree binds"
        )
        if fitted:
            words += f" (the pods of {done.pod_group} found nodes)"
    elif fitted:
        words += ": its own pods found nodes, but the composite's count of children was not met"
    return [words]


def _member(pod: Pod, outcome: str, message: str | None = None) -> GroupMember:
    """A member without rejections: bound, gated or not reached."""
    node = pod.spec.node_name or None
    return GroupMember(
        pod=_key(pod), outcome=outcome, node=node, message=message, rejections=[], nearest_nodes=[]
    )


def _members(outcome: PodGroupOutcome, attempts: list[Attempt], pending: list[Pod]) -> list[GroupMember]:
    """Each pending member with what the cycle made of it, in the order it tried them."""
    first: dict[str, Attempt] = {}
    for a in attempts:
        first.setdefault(a.pod.metadata.name, a)
    out: list[GroupMember] = []
    for name, a in first.items():
        node = outcome.tried.get(name)
        if node is not None:
            kind, message = "Placed", None if outcome.result == "Scheduled" else a.message
        elif a.result == "Error":
            kind, message = "Error", a.message
        elif a.filter or a.pre_filter is not None:
            kind, message = "FitsNowhere", a.message
        else:
            kind, message = "NotTried", a.message
        rejections = summarize_rejections(a.filter or {}, names_per_reason=NAMES_PER_REASON)
        out.append(
            GroupMember(
                pod=_key(a.pod),
                outcome=kind,
                node=node,
                message=message,
                rejections=rejections if kind == "FitsNowhere" else [],
                nearest_nodes=[],
            )
        )
    seen = set(first)
    for p in pending:
        if p.metadata.name not in seen:
            out.append(
                GroupMember(
                    pod=_key(p), outcome="NotTried", node=None, message=None, rejections=[], nearest_nodes=[]
                )
            )
    return out


def _with_nearest(
    members: list[GroupMember],
    fwk: Framework,
    scheduler: Scheduler,
    cluster: MemoryCluster,
    pods: dict[str, Pod],
) -> list[GroupMember]:
    """The nearest nodes of the first members that fit nowhere, each with the members placed before
    it assumed on their nodes (the cycle undid its trial; this redoes it, then undoes it again)."""
    by_name = {p.metadata.name: p for p in pods.values()}
    cache = scheduler.cache
    assumed: list[str] = []
    out: list[GroupMember] = []
    left = NEAREST_MEMBERS
    try:
        for m in members:
            pod = by_name.get(m.pod.partition("/")[2])
            if pod is not None and m.outcome == "Placed" and m.node is not None:
                cache.assume_pod(PodInfo(with_node_name(pod, m.node)), m.node)
                assumed.append(pod_key(pod))
            elif pod is not None and m.outcome == "FitsNowhere" and left > 0:
                left -= 1
                nearest = nearest_in_cluster(fwk, pod, cache.snapshot(), cluster)
                m = msgspec.structs.replace(m, nearest_nodes=nearest)
            out.append(m)
    finally:
        for key in reversed(assumed):
            cache.forget_pod(key)
    return out


def _gated(
    base: PodGroupExplanation, started: float, fwk: Framework, scheduler: Scheduler, pending: list[Pod]
) -> PodGroupExplanation:
    """No cycle ran: PreEnqueue holds the members (the group or minCount of its pods do not exist)."""
    message = "the scheduling queue did not hand the group out"
    verdict = "Error"
    members: list[GroupMember] = []
    for p in pending:
        gated = scheduler.queue.where(pod_key(p)) == "gated"
        text = None
        if gated:
            plugin, status = fwk.run_pre_enqueue(p)
            text = status.message() if status is not None else f"gated by {plugin}"
            if verdict != "Gated":
                verdict, message = "Gated", text
        members.append(_member(p, "Gated" if gated else "NotTried", text))
    return _done(base, started, verdict=verdict, message=message, members=[*members, *base.members])


def _placement_words(pod_group: PodGroup | None, nodes: int, registry: Registry) -> str:
    """The placements the cycle tries: one per domain of the group's topology constraint with
    TopologyAwareWorkloadScheduling on, else the whole cluster."""
    constraints = pod_group.spec.scheduling_constraints if pod_group is not None else None
    keys = [t.key for t in constraints.topology] if constraints is not None else []
    gate = registry.features.enabled(TOPOLOGY_GATE)
    if keys and gate:
        return f"one placement per value of the node label {keys[0]} (the group's topology constraint)"
    if gate:
        return f"the whole cluster ({nodes} nodes), the one placement of a group without topology constraint"
    words = f"the whole cluster ({nodes} nodes), the one placement tried with {TOPOLOGY_GATE} off"
    if keys:
        words += f"; the topology constraint on {keys[0]} is read only with the gate on"
    return words


def min_count_words(message: str | None, bound: int) -> list[str]:
    """The minCount arithmetic of GangScheduling's message in plain words."""
    found = _MIN_COUNT.search(message or "")
    if found is None:
        return []
    need, scheduled, remaining = (int(g) for g in found.groups())
    before = f" ({bound} of them bound before this cycle)" if bound else ""
    verb = "was" if remaining == 1 else "were"
    return [
        f'"minCount ({need}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining": the gang '
        f"needs {need} pods placed at once; {scheduled} have a node{before} and {remaining} {verb} left to "
        f"try, so at most {scheduled + remaining} of the {need} could be placed. The cycle stopped there "
        "and no member binds: all or nothing"
    ]


def _done(base: PodGroupExplanation, started: float, **fields: object) -> PodGroupExplanation:
    done = msgspec.structs.replace(base, **fields)
    words = [*min_count_words(done.message, done.bound), *plain_words(done.message)]
    return msgspec.structs.replace(done, plain_words=words, seconds=round(time.perf_counter() - started, 6))


def _group_key(pod_group: PodGroup) -> GroupKey:
    return (pod_group.metadata.namespace or "default", pod_group.metadata.name)


def _key(pod: Pod) -> str:
    return f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"
