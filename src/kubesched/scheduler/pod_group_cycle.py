"""The pod-group scheduling cycle (upstream's schedule_one_podgroup.go), GenericWorkload on.

When the queue hands out a pod of a `scheduling.k8s.io` PodGroup, the group's other queued pods come
with it (SchedulingQueue.take) and the group is scheduled as one:

1. the members are checked (one profile, the group's priority, one preemption policy);
2. the placement phase (pod_group_placement.py) tries each member in upstream's order (priority,
   attempts, queue time, name) with the earlier ones assumed, stopping as soon as GangScheduling's
   PlacementFeasible says minCount cannot be reached;
3. everything the trial assumed is undone, then the outcome is submitted: on success each placed
   member is assumed again, reserved and permitted, and binds (GangScheduling's Permit holds them
   until the quorum is assumed); otherwise, after an Unschedulable outcome, the PodGroupPostFilter
   plugins (pod_group_post_filter.py: DynamicResources' claim clean-up, then pod-group preemption)
   may release claims, evict victims and nominate the members, and every member fails with
   upstream's texts;
4. the PodGroup's `PodGroupInitiallyScheduled` condition is written through the port.

With TopologyAwareWorkloadScheduling on, step 2 runs in each placement the profile's PlacementGenerate
plugin proposes and keeps the best-scored one. CompositePodGroups are not implemented.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import msgspec

from kubesched.api.objects import Pod
from kubesched.api.resource import Condition
from kubesched.api.scheduling_groups import POD_GROUP_INITIALLY_SCHEDULED, CompositePodGroup, PodGroup
from kubesched.framework.cycle_state import POD_GROUP_CYCLE_KEY, CycleState, PodGroupCycleState
from kubesched.framework.group_forest import EntityKey, GroupForest, GroupNode
from kubesched.framework.node_info import pod_key
from kubesched.framework.placement import ProposedAssignment
from kubesched.framework.pod_group_preemption import GroupPreemptor, PodGroupPostFilterResult
from kubesched.framework.pod_groups import SchedulingGroups, pod_group_of, pod_group_priority
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import QueuedPodInfo
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.clock import Clock
from kubesched.scheduler.composite_placement import CompositePlacer, GroupResult, complete
from kubesched.scheduler.failures import Failures
from kubesched.scheduler.nominator import Nominator
from kubesched.scheduler.pod_group_placement import (
    GANG_SCHEDULING,
    POD_GROUP_UNSCHEDULABLE,
    GroupPlacer,
    PodGroupUnschedulable,
    PodResult,
    PodTrial,
    proposed,
)
from kubesched.scheduler.pod_group_post_filter import (
    CacheSnapshot,
    NominationHold,
    post_filter_plugins,
    run_pod_group_post_filter,
)
from kubesched.scheduler.ports import ClusterPort
from kubesched.scheduler.queue import SchedulingQueue

__all__ = [
    "GANG_SCHEDULING",
    "POD_GROUP_UNSCHEDULABLE",
    "PodGroupCycle",
    "PodGroupOutcome",
    "PodGroupStatusPort",
    "PodTrial",
]

_PREEMPT_LOWER = "PreemptLowerPriority"


@runtime_checkable
class PodGroupStatusPort(Protocol):
    """Optional: a port that stores PodGroup status (the simulator's cluster, the live writer)."""

    def set_pod_group_condition(self, pod_group: PodGroup, condition: Condition) -> None:
        """Set `condition` in `status.conditions` of `pod_group`, replacing the one of its type (a
        strategic-merge status patch in live mode)."""
        ...


@dataclass(frozen=True, slots=True)
class PodGroupOutcome:
    """One pod-group cycle, for reports: the group, its result and the condition's message."""

    namespace: str
    name: str
    #: Scheduled | Unschedulable | Error
    result: str
    message: str
    #: pod name -> node, for the members placed (empty unless Scheduled).
    placement: dict[str, str]
    #: pod name -> node of every member the trial found a node for, in the order they were tried,
    #: also when the group as a whole failed: what explain shows beside the members that blocked it.
    tried: dict[str, str] = field(default_factory=dict)


class _GroupError(Exception):
    pass


class PodGroupCycle:
    """Runs pod-group cycles over the single-pod cycle's filtering, scoring and binding."""

    def __init__(
        self,
        *,
        trial: PodTrial,
        groups: Callable[[], SchedulingGroups | None],
        forest: Callable[[], GroupForest | None] = lambda: None,
        cache: Cache,
        queue: SchedulingQueue,
        port: ClusterPort,
        clock: Clock,
        failures: Failures,
        frameworks: dict[str, Framework],
        observer: Callable[[PodGroupOutcome], None] | None = None,
        topology: bool = False,
        rng: random.Random | None = None,
        nominator: Nominator | None = None,
        group_preemption_policy: bool = False,
    ) -> None:
        self._trial = trial
        self._nominator = nominator
        self._placer = GroupPlacer(
            trial=trial,
            cache=cache,
            topology=topology,
            rng=rng if rng is not None else random.Random(0),
            nominations=NominationHold(nominator),
        )
        self._composite = CompositePlacer(placer=self._placer, cache=cache)
        #: CompositePodGroup on: the hierarchies (None when off).
        self._forest = forest
        #: PodGroupPreemptionPolicy on: the PodGroup's `preemptionPolicy` decides for its pods.
        self._group_policy = group_preemption_policy
        self._groups = groups
        self._cache = cache
        self._queue = queue
        self._port = port
        self._clock = clock
        self._failures = failures
        self._frameworks = frameworks
        self._observer = observer or (lambda outcome: None)
        #: Per PodGroup: (unschedulable count, consecutive errors) of its cycles, as upstream keeps
        #: them on the queued group; its members carry them back into the queue.
        self._counts: dict[tuple[str, str], tuple[int, int]] = {}

    def handles(self, pod: Pod) -> bool:
        """Whether `pod` is scheduled with its group (GenericWorkload on and it names a PodGroup)."""
        return pod.spec.scheduling_group is not None and pod_group_of(pod) is not None and self._on()

    def _on(self) -> bool:
        return self._groups() is not None

    # ------------------------------------------------------------------ the cycle
    def schedule(self, fwk: Framework, qpi: QueuedPodInfo, started: float) -> None:
        """The cycle of the group of `qpi` (just popped; its own checks passed)."""
        groups = self._groups()
        group = pod_group_of(qpi.pod)
        assert groups is not None and group is not None
        namespace, name = group
        pod_group = groups.pod_group(namespace, name)
        if pod_group is None:  # PreEnqueue holds such pods; without GangScheduling nothing does
            waiting = Status.unschedulable_and_unresolvable(
                f'waiting for pods\'s pod group "{name}" to appear in scheduling queue'
            )
            self._failures.fail(fwk, qpi, waiting.with_plugin(GANG_SCHEDULING), started, filter_=None)
            return
        forest = self._forest()
        root = None if forest is None else forest.root(EntityKey(False, namespace, name))
        if forest is not None and root is not None and root.composite:
            self._schedule_tree(fwk, qpi, forest, root, started)
            return
        others = [
            k
            for p in groups.pods_of(namespace, name)
            if (k := pod_key(p)) != qpi.key and not p.spec.node_name
        ]
        members = [m for m in [qpi, *self._queue.take(others)] if not self._trial.skipped(fwk, m)]
        if not members:
            return
        members.sort(key=_member_order)
        for m in members:
            m.unschedulable_plugins = set()
            m.pending_plugins = set()
        state = groups.state(namespace, name, self._cache.is_assumed)
        placed = [p for p in state.pods if pod_key(p) in state.scheduled] if state is not None else []
        try:
            fwk = self._validate(pod_group, members, placed)
        except _GroupError as err:
            error = Status.as_error(str(err))
            requeue = self._requeue(group, Code.ERROR)
            for m in members:
                own = self._frameworks.get(m.pod.spec.scheduler_name, fwk)
                self._failures.fail(own, m, error, started, filter_=None, requeue=requeue)
            self._write_condition(pod_group, "False", "SchedulerError", str(err))
            self._report(pod_group, "Error", str(err), {})
            return
        scheduled = groups.state(namespace, name, self._cache.is_assumed)
        already = 0 if scheduled is None else scheduled.scheduled_count()
        cycle = PodGroupCycleState()
        results, group_status = self._placer.run(fwk, pod_group, members, already, cycle)
        self._submit(fwk, pod_group, members, results, group_status, started, cycle)

    def _validate(
        self, pod_group: PodGroup | CompositePodGroup, members: list[QueuedPodInfo], placed: list[Pod]
    ) -> Framework:
        """One scheduler name, the root group's priority and one preemption policy for every
        member, the scheduled ones (`placed`) included (upstream's validatePodGroup); the members'
        Framework."""
        scheduler_name = members[0].pod.spec.scheduler_name
        priority = pod_group_priority(pod_group)
        policy = ""
        for pod in [*(m.pod for m in members), *placed]:
            if pod.spec.scheduler_name != scheduler_name:
                raise _GroupError(
                    "all pods in a single pod group should have the same .spec.schedulerName set, "
                    f'got: "{pod.spec.scheduler_name}" and "{scheduler_name}"'
                )
            own = pod.spec.priority or 0
            if own != priority:
                raise _GroupError(
                    "all pods in a single pod group should have the same priority as the pod group's "
                    f"priority, got {own} and {priority}"
                )
            preemption = pod.spec.preemption_policy or _PREEMPT_LOWER
            if self._group_policy:
                # PodGroupPreemptionPolicy: the PodGroup's policy rules and each pod must agree.
                group_policy = pod_group.spec.preemption_policy or _PREEMPT_LOWER
                if preemption != group_policy:
                    raise _GroupError(
                        "all pods in a single pod group should have the same preemption policy as the "
                        f"pod group's preemption policy, got {preemption} and {group_policy}"
                    )
            elif not policy:
                policy = preemption
            elif preemption != policy:
                raise _GroupError(
                    "all pods in a single pod group should have the same preemption policy, "
                    f"got {preemption} and {policy}"
                )
        fwk = self._frameworks.get(scheduler_name)
        if fwk is None:
            raise _GroupError(f'profile not found for scheduler name "{scheduler_name}"')
        return fwk

    # ------------------------------------------------------------------ the outcome
    def _submit(
        self,
        fwk: Framework,
        pod_group: PodGroup,
        members: list[QueuedPodInfo],
        results: list[PodResult],
        group_status: Status | None,
        started: float,
        cycle: PodGroupCycleState,
    ) -> None:
        """upstream's submitPodGroupAlgorithmResult: bind, or fail every member, then the condition."""
        # Members the algorithm never reached share the group's status as it was before PostFilter.
        for m in members[len(results) :]:
            shared = group_status if group_status is not None else Status(Code.UNSCHEDULABLE)
            results.append(PodResult(m, CycleState(), _copy(shared)))
        waiting: PodGroupPostFilterResult | None = None
        attempted = Code.SUCCESS if group_status is None else group_status.code
        if group_status is not None and group_status.code == Code.UNSCHEDULABLE:
            group_status, waiting = self._pod_group_post_filter(fwk, pod_group, members, group_status, cycle)
        group = (pod_group.metadata.namespace or "default", pod_group.metadata.name)
        requeue = self._requeue(group, attempted)
        victims = waiting.victims if waiting is not None else []
        placement, tried = self._submit_members(
            fwk, results, group_status, waiting, victims, requeue, started
        )
        self._conclude(pod_group, group_status, placement, tried)

    def _submit_members(
        self,
        fwk: Framework,
        results: list[PodResult],
        group_status: Status | None,
        waiting: PodGroupPostFilterResult | None,
        victims: list[str],
        requeue: Callable[[QueuedPodInfo], object],
        started: float,
    ) -> tuple[dict[str, str], dict[str, str]]:
        """Bind each placed member of a group that fitted, else fail each with upstream's status;
        `victims` are reported with the first member (and emptied). The members placed and the
        members tried, by name."""
        nominations = waiting.nominations if waiting is not None else {}
        placement: dict[str, str] = {}
        tried: dict[str, str] = {}
        for res in results:
            m = res.qpi
            # A group waiting for its victims keeps or gets its members' nominations; otherwise
            # upstream clears them for placed members and on errors.
            nominated = nominations.get(m.key) if waiting is not None else ""
            shown = list(victims)  # the victims are reported once, with the first member
            victims.clear()
            if group_status is not None and group_status.code == Code.ERROR:
                own = res.status if res.status is not None and res.status.code == Code.ERROR else group_status
                self._failures.fail(fwk, m, own, started, filter_=None, requeue=requeue, nominated="")
            elif res.status is None and res.result is not None:
                tried[m.pod.metadata.name] = res.result.node
                if group_status is None:
                    # upstream: the binding cycle runs outside the group's cycle (Reserve included)
                    res.state.delete(POD_GROUP_CYCLE_KEY)
                    self._trial.assume_and_reserve(fwk, res.state, m, res.result, started)
                    placement[m.pod.metadata.name] = res.result.node
                elif waiting is not None:
                    self._failures.fail(
                        fwk,
                        m,
                        group_status,
                        started,
                        filter_=None,
                        requeue=requeue,
                        nominated=nominated,
                        victims=shown,
                    )
                else:
                    rejected = Status(
                        Code.UNSCHEDULABLE, group_status.message(), error=PodGroupUnschedulable()
                    )
                    self._failures.fail(
                        fwk, m, rejected, started, filter_=None, requeue=requeue, nominated=""
                    )
            elif res.fit is not None:
                self._failures.fail_fit(
                    fwk, m, res.fit, started, nominated=nominations.get(m.key), victims=shown, requeue=requeue
                )
            else:
                assert res.status is not None
                self._failures.fail(
                    fwk,
                    m,
                    res.status,
                    started,
                    filter_=None,
                    requeue=requeue,
                    nominated=nominations.get(m.key),
                    victims=shown,
                )
        return placement, tried

    def _conclude(
        self,
        pod_group: PodGroup,
        group_status: Status | None,
        placement: dict[str, str],
        tried: dict[str, str],
    ) -> None:
        """The PodGroup's condition and its outcome for reports."""
        if group_status is None:
            result, reason, message = "Scheduled", "Scheduled", ""
            self._write_condition(pod_group, "True", reason, message)
        elif group_status.code == Code.ERROR:
            result, message = "Error", group_status.message()
            self._write_condition(pod_group, "False", "SchedulerError", message)
        else:
            result, message = "Unschedulable", group_status.message()
            self._write_condition(pod_group, "False", "Unschedulable", message)
        self._report(pod_group, result, message, placement, tried)

    # ------------------------------------------------------------------ CompositePodGroup trees
    def _schedule_tree(
        self, fwk: Framework, qpi: QueuedPodInfo, forest: GroupForest, root: EntityKey, started: float
    ) -> None:
        """The cycle of a CompositePodGroup tree (upstream's scheduleOnePodGroup for a composite
        root): every pending pod of its PodGroups, placed all or nothing."""
        tree = forest.tree(root)
        assert tree is not None
        composite = tree.composite
        assert composite is not None
        groups = forest.groups
        leaves = tree.leaves()
        others = [
            k
            for leaf in leaves
            for p in groups.pods_of(leaf.key.namespace, leaf.key.name)
            if (k := pod_key(p)) != qpi.key and not p.spec.node_name
        ]
        taken = [m for m in [qpi, *self._queue.take(others)] if not self._trial.skipped(fwk, m)]
        if not taken:
            return
        members: dict[EntityKey, list[QueuedPodInfo]] = {}
        for m in taken:
            m.unschedulable_plugins = set()
            m.pending_plugins = set()
            group = pod_group_of(m.pod)
            assert group is not None
            members.setdefault(EntityKey(False, *group), []).append(m)
        for listed in members.values():
            listed.sort(key=_member_order)
        ordered = [m for leaf in leaves for m in members.get(leaf.key, [])]
        states = {
            leaf.key: groups.state(leaf.key.namespace, leaf.key.name, self._cache.is_assumed)
            for leaf in leaves
        }
        placed = [
            p for st in states.values() if st is not None for p in st.pods if pod_key(p) in st.scheduled
        ]
        key = (root.namespace, root.name)
        try:
            fwk = self._validate(composite, ordered, placed)
        except _GroupError as err:
            error = Status.as_error(str(err))
            requeue = self._requeue(key, Code.ERROR)
            for m in ordered:
                own = self._frameworks.get(m.pod.spec.scheduler_name, fwk)
                self._failures.fail(own, m, error, started, filter_=None, requeue=requeue)
            for leaf in leaves:
                assert leaf.pod_group is not None
                self._write_condition(leaf.pod_group, "False", "SchedulerError", str(err))
                self._report(leaf.pod_group, "Error", str(err), {})
            return

        def scheduled(k: EntityKey) -> int:
            st = groups.state(k.namespace, k.name, self._cache.is_assumed)
            return 0 if st is None else st.scheduled_count()

        results = self._composite.run(fwk, tree, members, scheduled)
        root_status = results[root].status
        complete(tree, results)
        for leaf in leaves:
            res = results[leaf.key]
            for m in members.get(leaf.key, [])[len(res.results) :]:
                shared = res.status if res.status is not None else Status(Code.UNSCHEDULABLE)
                res.results.append(PodResult(m, CycleState(), _copy(shared)))
        waiting: PodGroupPostFilterResult | None = None
        if root_status is not None and root_status.code == Code.UNSCHEDULABLE:
            waiting = self._tree_post_filter(fwk, tree, members, ordered, scheduled, results)
        requeue = self._requeue(key, Code.SUCCESS if root_status is None else root_status.code)
        victims = list(waiting.victims) if waiting is not None else []
        for leaf in leaves:
            res = results[leaf.key]
            assert leaf.pod_group is not None
            placement, tried = self._submit_members(
                fwk, res.results, res.status, waiting, victims, requeue, started
            )
            self._conclude(leaf.pod_group, res.status, placement, tried)

    def _tree_post_filter(
        self,
        fwk: Framework,
        tree: GroupNode,
        members: dict[EntityKey, list[QueuedPodInfo]],
        ordered: list[QueuedPodInfo],
        scheduled: Callable[[EntityKey], int],
        results: dict[EntityKey, GroupResult],
    ) -> PodGroupPostFilterResult | None:
        """upstream's PodGroupPostFilter for a composite root and applyPodGroupPostFilterResult:
        the plugins' outcome on every group's status (appended to each result, so a status its
        children share gets it once per sharer, as upstream's); the result when victims are found."""
        plugins = post_filter_plugins(fwk)
        if not plugins:
            return None
        composite = tree.composite
        assert composite is not None
        preemptor = GroupPreemptor(
            composite,
            [m.pod for m in ordered],
            {m.key: node for m in ordered if (node := self._nominated(m.key))},
            group_policy=self._group_policy,
        )

        def again() -> tuple[list[ProposedAssignment], Status | None]:
            """upstream's PodGroupSchedulingFunc for the tree: its algorithm again."""
            out = self._composite.run(fwk, tree, members, scheduled)
            placed = [a for res in out.values() for a in proposed(res.results)]
            return placed, out[tree.key].status

        snapshot = CacheSnapshot(self._cache, fwk, self._nominator)
        found, outcome = run_pod_group_post_filter(fwk, plugins, preemptor, snapshot, again)
        if outcome.code == Code.ERROR:
            for res in results.values():
                res.status = outcome
            return None
        for res in results.values():
            if res.status is not None:
                res.status.reasons = (*res.status.reasons, outcome.message())
        return found if outcome.is_success() else None

    def _requeue(self, group: tuple[str, str], code: Code) -> Callable[[QueuedPodInfo], object]:
        """How the group's failed members go back (upstream requeues the group as one entity): after
        a success straight to activeQ, counters cleared; after a rejection or an error through
        backoffQ with the group's counters. Never to the unschedulable pool."""
        unschedulable, errors = self._counts.get(group, (0, 0))
        if code == Code.SUCCESS:
            unschedulable, errors = 0, 0
        elif code == Code.ERROR:
            errors += 1
        else:
            unschedulable, errors = unschedulable + 1, 0
        self._counts[group] = (unschedulable, errors)
        backoff = code != Code.SUCCESS

        def requeue(qpi: QueuedPodInfo) -> object:
            return self._queue.requeue_group_member(
                qpi, unschedulable_count=unschedulable, consecutive_errors=errors, backoff=backoff
            )

        return requeue

    def _pod_group_post_filter(
        self,
        fwk: Framework,
        pod_group: PodGroup,
        members: list[QueuedPodInfo],
        status: Status,
        cycle: PodGroupCycleState,
    ) -> tuple[Status, PodGroupPostFilterResult | None]:
        """The PodGroupPostFilter plugins (DynamicResources' claim clean-up, pod-group preemption)
        after an Unschedulable cycle: the group's status as the members get it, and the plugins'
        result when they found a placement (then the members wait for the victims to leave)."""
        plugins = post_filter_plugins(fwk)
        if not plugins:
            return status, None
        preemptor = GroupPreemptor(
            pod_group,
            [m.pod for m in members],
            {m.key: node for m in members if (node := self._nominated(m.key))},
            group_policy=self._group_policy,
            cycle=cycle,
        )
        groups = self._groups()
        namespace, name = pod_group.metadata.namespace or "default", pod_group.metadata.name
        state = groups.state(namespace, name, self._cache.is_assumed) if groups is not None else None
        already = 0 if state is None else state.scheduled_count()

        def again() -> tuple[list[ProposedAssignment], Status | None]:
            """upstream's PodGroupSchedulingFunc: the placement phase again, on the snapshot as the
            plugin left it."""
            results, group_status = self._placer.run(fwk, pod_group, members, already)
            placed = [
                ProposedAssignment(r.qpi.pod, r.result.node, r.state)
                for r in results
                if r.status is None and r.result is not None
            ]
            return placed, group_status

        snapshot = CacheSnapshot(self._cache, fwk, self._nominator)
        result, outcome = run_pod_group_post_filter(fwk, plugins, preemptor, snapshot, again)
        if outcome.code == Code.ERROR:
            return outcome, None
        status.reasons = (*status.reasons, outcome.message())
        return status, result if outcome.is_success() else None

    def _nominated(self, key: str) -> str | None:
        return self._nominator.nominated_node(key) if self._nominator is not None else None

    def _write_condition(self, pod_group: PodGroup, status: str, reason: str, message: str) -> None:
        """upstream's updatePodGroupCondition: never back from True, nothing when unchanged."""
        port = self._port
        if not isinstance(port, PodGroupStatusPort):
            return
        groups = self._groups()
        namespace, name = pod_group.metadata.namespace or "default", pod_group.metadata.name
        current = (groups.pod_group(namespace, name) if groups is not None else None) or pod_group
        existing = next(
            (c for c in current.status.conditions if c.type == POD_GROUP_INITIALLY_SCHEDULED), None
        )
        if existing is not None and existing.status == "True" and status != "True":
            return
        generation = current.metadata.generation or None
        wanted = Condition(
            type=POD_GROUP_INITIALLY_SCHEDULED,
            status=status,
            reason=reason,
            message=message,
            last_transition_time=_rfc3339(self._clock.now()),
            observed_generation=generation,
        )
        if existing is not None:
            if (existing.status, existing.reason, existing.message, existing.observed_generation) == (
                status,
                reason,
                message,
                generation,
            ):
                return
            if existing.status == status:
                wanted = msgspec.structs.replace(wanted, last_transition_time=existing.last_transition_time)
        port.set_pod_group_condition(current, wanted)

    def _report(
        self,
        pod_group: PodGroup,
        result: str,
        message: str,
        placement: dict[str, str],
        tried: dict[str, str] | None = None,
    ) -> None:
        namespace = pod_group.metadata.namespace or "default"
        outcome = PodGroupOutcome(namespace, pod_group.metadata.name, result, message, placement, tried or {})
        self._observer(outcome)


def _copy(status: Status) -> Status:
    return Status(status.code, *status.reasons, error=status.error, plugin=status.plugin)


def _member_order(qpi: QueuedPodInfo) -> tuple[int, int, float, str]:
    """upstream's PodGroupMemberPodsOrderingFunc: priority, attempts (more first), queue time, name."""
    return (-(qpi.pod.spec.priority or 0), -qpi.attempts, qpi.timestamp, qpi.pod.metadata.name)


def _rfc3339(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
