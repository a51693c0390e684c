"""Run the scheduler over an in-memory cluster, in virtual time, and build the report."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from kubesched.api.group_claims import GROUP_CLAIMS
from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Pod
from kubesched.api.quantity import format_quantity
from kubesched.cluster.memory import MemoryCluster
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework.node_info import PODS, NodeInfo, pod_key
from kubesched.framework.registry import Registry
from kubesched.framework.status import Status
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.options import TIE_BREAK_RANDOM
from kubesched.scheduler.profiles import profiles_from_config
from kubesched.scheduler.scheduler import Attempt, Scheduler
from kubesched.simulate.explain.model import Explanation, NodeScores
from kubesched.simulate.explain.verdicts import explain_attempt, verdict
from kubesched.simulate.node_quantities import check_node_quantities
from kubesched.simulate.snapshot.model import (
    AllocatedDevice,
    NodeUsage,
    PodResult,
    ProfileWeights,
    Report,
    Summary,
)
from kubesched.simulate.snapshot.names import PodPicker
from kubesched.simulate.snapshot.pod_groups import pod_group_results
from kubesched.simulate.snapshot.workloads import owner_label, owner_labels, pod_workloads, workload_results
from kubesched.simulate.virtual_time import (
    Timeline,
    long_lived_heap,
    new_scheduler,
    run_timeline,
    run_until_settled,
)
from kubesched.simulate.workloads import (
    PodChanges,
    WorkloadControllers,
    has_workloads,
    with_room_for_controllers,
)

#: With --explain, every pod keeps its per-node filter verdicts and scores on clusters up to this
#: size; on bigger ones only the per-reason summary is kept (unless asked for), so memory stays bounded.
PER_NODE_MAX_NODES = 100


@dataclass(slots=True)
class PodRecord:
    """What the report says about one pod, kept current from the scheduler's attempts."""

    pod: Pod
    result: str = "Gated"
    node: str | None = None
    nominated_node: str | None = None
    message: str | None = None
    attempts: int = 0
    filter: dict[str, Status] | None = None
    scores: dict[str, tuple[dict[str, int], int]] | None = None
    pre_filter: Status | None = None
    explanation: Explanation | None = None
    #: Pods this pod's preemptions evicted, over all its attempts.
    victims: list[str] = field(default_factory=list)

    def observe(self, attempt: Attempt, *, explain: bool, per_node: bool) -> None:
        """Fold one attempt (or binding cycle) of this pod into the record.

        With `explain`, keep the per-reason explanation, and with `per_node` also every node's
        filter verdict and scores.
        """
        if self.result != "Waiting":
            self.attempts += 1
        self.result = attempt.result
        self.node = attempt.node
        self.message = attempt.message
        if attempt.result in ("Unschedulable", "Error"):
            # Failed attempts carry the pod's current nomination (None once cleared); Waiting and
            # Scheduled attempts do not, so a bound preemptor still shows where it was nominated.
            self.nominated_node = attempt.nominated_node
        self.victims.extend(attempt.victims)
        self.pre_filter = attempt.pre_filter
        if explain:
            self.explanation = explain_attempt(attempt.filter, attempt.scores, chosen=attempt.node)
            if per_node:
                self.filter = attempt.filter
                self.scores = attempt.scores


@dataclass(slots=True)
class _Progress:
    """Counts for a progress display: pods decided so far out of all pending pods."""

    total: int
    done: int = 0
    callback: Callable[[int, int], None] | None = None
    decided: set[str] = field(default_factory=set)

    def mark(self, key: str) -> None:
        if key not in self.decided:
            self.decided.add(key)
            self.done += 1
            if self.callback is not None:
                self.callback(self.done, self.total)


def simulate(
    objects: LoadedObjects,
    config: KubeSchedulerConfiguration,
    registry: Registry,
    *,
    seed: int = 0,
    explain: bool = False,
    per_node: bool | None = None,
    detail_pods: Collection[str] = (),
    progress: Callable[[int, int], None] | None = None,
    on_attempt: Callable[[Attempt], None] | None = None,
    on_settled: Callable[[Scheduler, MemoryCluster, Report], None] | None = None,
    tie_break: str = TIE_BREAK_RANDOM,
) -> Report:
    """Schedule every pending pod of `objects` with `config`'s profiles; deterministic per seed.

    With `explain`, each pod gets a per-reason `explanation` of its last attempt. Its per-node
    `filter` and `scores` are kept too when `per_node` is True, for the pods `detail_pods` pick (any
    name `--pod` takes: a pod, or a workload, whose pods the run makes), and, when `per_node` is None,
    on clusters of at most PER_NODE_MAX_NODES nodes.
    `on_attempt` sees every attempt as it ends (the report keeps only each pod's last one): the
    differential harness compares a preemptor's first FailedScheduling message with upstream's.
    `on_settled` sees the scheduler and cluster as the run left them, with the report: the HTML
    report works out the nearest nodes of unschedulable pods there (`snapshot.nearest`).
    `tie_break` decides among equal best scores (scheduler.options.TIE_BREAKS).
    """
    report, _ = simulate_cluster(
        objects,
        config,
        registry,
        seed=seed,
        explain=explain,
        per_node=per_node,
        detail_pods=detail_pods,
        progress=progress,
        on_attempt=on_attempt,
        on_settled=on_settled,
        tie_break=tie_break,
    )
    return report


def simulate_cluster(
    objects: LoadedObjects,
    config: KubeSchedulerConfiguration,
    registry: Registry,
    *,
    seed: int = 0,
    explain: bool = False,
    per_node: bool | None = None,
    detail_pods: Collection[str] = (),
    progress: Callable[[int, int], None] | None = None,
    on_attempt: Callable[[Attempt], None] | None = None,
    on_settled: Callable[[Scheduler, MemoryCluster, Report], None] | None = None,
    tie_break: str = TIE_BREAK_RANDOM,
    timeline: Callable[[Scheduler, MemoryCluster], Timeline] | None = None,
) -> tuple[Report, MemoryCluster]:
    """`simulate`, also returning the cluster as the run left it (every pod, bound or not, by key).

    `timeline`, given the scheduler and the cluster, makes what runs in front of the scheduler in
    place of scheduling the input until it settles (an input without workload controllers only): the
    differential harness lets part of a PodGroup's pods join after its first cycle, as the binary's did.
    """
    for node in objects.nodes:
        check_node_quantities(node)
    clock = VirtualClock()
    with_controllers = has_workloads(objects)
    cluster = MemoryCluster(
        with_room_for_controllers(objects) if with_controllers else objects,
        clock.now,
        group_claims=registry.features.enabled(GROUP_CLAIMS),
    )
    controllers = (
        WorkloadControllers(cluster, seed=seed, now=clock.now, gates=registry.features)
        if with_controllers
        else None
    )
    records: dict[str, PodRecord] = {}
    ignored: list[Pod] = []
    profiles = profiles_from_config(config, registry)
    names = {p.scheduler_name for p in profiles}
    picker = PodPicker(detail_pods)
    detailed: set[str] = set()

    def track(pod: Pod) -> None:
        """Report on `pod` if it waits for one of our profiles."""
        if pod.spec.node_name:
            return
        if pod.spec.scheduler_name in names:
            key = pod_key(pod)
            records[key] = PodRecord(pod)
            meta = pod.metadata
            if picker and picker.picks(meta.namespace, meta.name, owner_labels(pod, controllers)):
                detailed.add(key)
        else:
            ignored.append(pod)

    for pod in cluster.pods.values():
        track(pod)
    tracker = _Progress(len(records), callback=progress)
    every_node = per_node if per_node is not None else len(cluster.nodes) <= PER_NODE_MAX_NODES

    def observe(attempt: Attempt) -> None:
        if on_attempt is not None:
            on_attempt(attempt)
        key = pod_key(attempt.pod)
        rec = records.get(key)
        if rec is None:
            return
        rec.observe(attempt, explain=explain, per_node=every_node or key in detailed)
        if attempt.result == "Scheduled":
            tracker.mark(pod_key(attempt.pod))

    scheduler = new_scheduler(
        profiles,
        config,
        registry,
        cluster,
        clock,
        seed=seed,
        explain=explain,
        observer=observe,
        tie_break=tie_break,
    )

    def refuse(pod: Pod, exc: Exception) -> None:
        rec = records.get(pod_key(pod))
        if rec is not None:
            rec.result = "Error"
            rec.message = str(exc)
            tracker.mark(pod_key(pod))

    def follow(changes: PodChanges) -> None:
        """Report on the pods the controllers created; mark the pending ones they deleted."""
        for pod in changes.created:
            track(pod)
        tracker.total = len(records)
        for pod, why in changes.deleted:
            rec = records.get(pod_key(pod))
            if rec is not None:
                rec.result, rec.node, rec.message = "Deleted", None, why
                tracker.mark(pod_key(pod))

    started = time.perf_counter()
    with long_lived_heap():
        cluster.subscribe(scheduler, on_error=refuse)
        gc.freeze()  # the scheduler's cache of every node lives as long as the run, too
        try:
            if controllers is None and timeline is not None:
                run_timeline(scheduler, clock, timeline(scheduler, cluster))
            elif controllers is None:
                run_until_settled(scheduler, clock, cluster, retry_unschedulable=True)
            else:
                run_with_controllers(scheduler, clock, cluster, controllers, follow)
        finally:
            if scheduler.extenders is not None:
                scheduler.extenders.close()
    seconds = time.perf_counter() - started

    for key, rec in records.items():
        if rec.attempts == 0 and rec.result == "Gated":
            where = scheduler.queue.where(key)
            if where is not None and where != "gated":
                rec.result = "Unschedulable"
    report = _build_report(records, ignored, scheduler, seconds, cluster)
    owners = pod_workloads(controllers) if controllers is not None else {}
    for result, pod in zip(report.pods, [*(r.pod for r in records.values()), *ignored], strict=True):
        result.workload = owners.get(pod_key(pod)) or result.workload
    if controllers is not None:
        messages = {key: rec.message for key, rec in records.items() if rec.message}
        report.workloads = workload_results(controllers, cluster.nodes, messages)
    if scheduler.pod_groups_enabled:
        report.pod_groups = pod_group_results(cluster.groups)
    if on_settled is not None:
        on_settled(scheduler, cluster, report)
    return report, cluster


def run_with_controllers(
    scheduler: Scheduler,
    clock: VirtualClock,
    cluster: MemoryCluster,
    controllers: WorkloadControllers,
    follow: Callable[[PodChanges], None],
) -> None:
    """Alternate controller rounds and scheduling until a round changes nothing.

    Each round lets every controller act on what the scheduler did (a rollout's next step, the next
    ordinal of an OrderedReady StatefulSet); the scheduler then runs until it settles.
    """
    settled = False
    while True:
        changes = controllers.reconcile()
        follow(changes)
        if settled and not changes:
            return
        run_until_settled(scheduler, clock, cluster, retry_unschedulable=True)
        settled = True


def profile_weights(scheduler: Scheduler) -> list[ProfileWeights]:
    """Each profile's Score plugins with their weights, so a reader can check `total`."""
    return [
        ProfileWeights(scheduler_name=name, score_weights=dict(fwk.score_weights))
        for name, fwk in scheduler.frameworks.items()
    ]


def _build_report(
    records: dict[str, PodRecord],
    ignored: list[Pod],
    scheduler: Scheduler,
    seconds: float,
    cluster: MemoryCluster | None = None,
) -> Report:
    pods = [pod_result(rec, cluster) for rec in records.values()]
    pods.extend(
        PodResult(
            namespace=p.metadata.namespace,
            name=p.metadata.name,
            scheduler_name=p.spec.scheduler_name,
            result="Ignored",
            workload=owner_label(p),
            message=f'no profile named "{p.spec.scheduler_name}"',
        )
        for p in ignored
    )
    table = scheduler.cache.snapshot()
    nodes = [node_usage(info) for info in sorted(table.infos, key=lambda i: i.name)]
    counts = {
        r: sum(1 for p in pods if p.result == r) for r in ("Scheduled", "Unschedulable", "Error", "Gated")
    }
    waiting = sum(1 for p in pods if p.result == "Waiting")
    scheduled = counts["Scheduled"]
    return Report(
        pods=pods,
        nodes=nodes,
        summary=Summary(
            scheduled=scheduled,
            unschedulable=counts["Unschedulable"],
            pods=len(records),
            nodes=len(table),
            seconds=round(seconds, 6),
            pods_per_second=round(scheduled / seconds, 1) if seconds > 0 else 0.0,
            errors=counts["Error"],
            gated=counts["Gated"],
            waiting=waiting,
            ignored=len(ignored),
        ),
        profiles=profile_weights(scheduler),
    )


def _allocated_devices(pod: Pod, cluster: MemoryCluster) -> list[AllocatedDevice]:
    """The devices of the claims reserved for `pod`, in the order of its `spec.resourceClaims`, then
    those of its extended-resource claim."""
    current = cluster.pods.get(pod_key(pod), pod)
    names = [c.resource_claim_name for c in current.spec.resource_claims if c.resource_claim_name]
    names += [s.resource_claim_name for s in current.status.resource_claim_statuses if s.resource_claim_name]
    extended = current.status.extended_resource_claim_status
    if extended is not None and extended.resource_claim_name:
        names.append(extended.resource_claim_name)  # the claim for DRA-backed extended resources
    out: list[AllocatedDevice] = []
    for name in names:
        claim = cluster.claims.get(f"{current.metadata.namespace}/{name}")
        if claim is None or claim.status.allocation is None:
            continue
        if not any(r.uid == current.metadata.uid for r in claim.status.reserved_for):
            continue
        for r in claim.status.allocation.devices.results:
            out.append(
                AllocatedDevice(
                    claim=claim.key,
                    request=r.request,
                    driver=r.driver,
                    pool=r.pool,
                    device=r.device,
                    share_id=r.share_id,
                )
            )
    return out


def pod_result(rec: PodRecord, cluster: MemoryCluster | None = None) -> PodResult:
    pod = rec.pod
    filter_ = {node: verdict(st) for node, st in sorted((rec.filter or {}).items())}
    scores = {
        node: NodeScores(plugins=dict(sorted(plugins.items())), total=total)
        for node, (plugins, total) in sorted((rec.scores or {}).items())
    }
    message = rec.message
    if rec.result == "Gated" and message is None:
        gates = [g.name for g in pod.spec.scheduling_gates]
        message = f"waiting for scheduling gates: [{' '.join(gates)}]" if gates else None
    return PodResult(
        namespace=pod.metadata.namespace,
        name=pod.metadata.name,
        scheduler_name=pod.spec.scheduler_name,
        result=rec.result,
        node=rec.node if rec.result in ("Scheduled", "Waiting") else None,
        nominated_node=rec.nominated_node or None,
        workload=owner_label(pod),
        victims=list(rec.victims),
        message=message if rec.result != "Scheduled" else None,
        attempts=rec.attempts,
        filter=filter_,
        scores=scores,
        devices=_allocated_devices(pod, cluster) if cluster is not None and rec.result == "Scheduled" else [],
        pre_filter=verdict(rec.pre_filter) if rec.pre_filter is not None else None,
        explanation=rec.explanation,
    )


def node_usage(info: NodeInfo) -> NodeUsage:
    alloc = info.allocatable
    names: list[str] = [r for r in ("cpu", "memory", "ephemeral-storage") if r in alloc]
    names += sorted(r for r in alloc if r not in names and r != PODS)
    return NodeUsage(
        name=info.name,
        pods=len(info.pods),
        allocatable={r: format_quantity(alloc[r], r) for r in names} | {PODS: str(alloc.get(PODS, 0))},
        requested={r: format_quantity(info.requested.get(r, 0), r) for r in names},
    )
