"""The DefaultPreemption plugin: eligibility, the PostFilter flow, nominations and repeated failures.

The candidates, the dry run and the eviction live in `candidates`, `dry_run` and `executor`; this
module decides whether the pod may preempt, sizes the dry run, lets extenders prune the candidates,
and nominates the pod to the chosen node.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kubesched.api.objects import Pod
from kubesched.errors import FieldErrors
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD_DELETE, ClusterEventWithHint, QueueingHint
from kubesched.framework.interfaces import (
    EnqueueExtensions,
    Handle,
    PostFilterPlugin,
    PreEnqueuePlugin,
    RepeatableFailurePlugin,
)
from kubesched.framework.node_info import NodeInfo, PodInfo, pod_key
from kubesched.framework.node_table import IndexArray, NodeTable
from kubesched.framework.pod_group_preemption import (
    GroupPreemptor,
    MutableSnapshot,
    PodGroupPostFilterResult,
    PodGroupSchedulingFunc,
)
from kubesched.framework.pod_groups import pod_group_of
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    Diagnosis,
    PostFilterResult,
    fit_error_message,
    reason_counts,
)
from kubesched.plugins.default_preemption.args import DefaultPreemptionArgs
from kubesched.plugins.default_preemption.candidates import (
    Budget,
    Candidate,
    disruption_budgets,
    nobody_below,
    pick_one_node_for_preemption,
    potential_count,
    potential_rows,
)
from kubesched.plugins.default_preemption.dry_run import NO_VICTIMS, DryRun, dry_run, select_victims_on_node
from kubesched.plugins.default_preemption.executor import (
    Executor,
    group_preemption_key,
    terminating_by_preemption,
)
from kubesched.plugins.default_preemption.pod_group import (
    ONGOING,
    ongoing,
    preemption_policy,
    result_of,
    select_group_victims,
)
from kubesched.plugins.default_preemption.victim_units import pod_victim_facts

__all__ = ["NOT_ELIGIBLE_NEVER", "NOT_ELIGIBLE_TERMINATING", "NOT_HELPFUL", "DefaultPreemption"]

NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_CANDIDATE = "no candidate node for preemption"
#: Nomination records kept before stale ones are pruned.
_NOMINATIONS_BOUND = 1024


@dataclass(frozen=True, slots=True)
class _Repeatable:
    """CycleState mark of a preemption that failed without touching anything: `draw` is the size
    of the random offset it drew (0: none), which a repeat of the attempt draws again; `fast` when
    it was decided without a dry run (the pod may not preempt, or nobody has a lower priority)."""

    draw: int
    fast: bool

    def clone(self) -> _Repeatable:
        return self


#: CycleState key of `_Repeatable`.
_REPEATABLE_KEY = "DefaultPreemption/repeatable"


class DefaultPreemption(PostFilterPlugin, PreEnqueuePlugin, EnqueueExtensions, RepeatableFailurePlugin):
    """PostFilter: nominate the pod to a node after evicting the fewest, least important pods there.

    PreEnqueue: hold the pod back while its victims are being evicted in the background.
    """

    name: ClassVar[str] = "DefaultPreemption"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ("PodDisruptionBudget",)
    args_type: ClassVar[type[DefaultPreemptionArgs]] = DefaultPreemptionArgs

    def __init__(self, args: DefaultPreemptionArgs | None = None, handle: Handle | None = None) -> None:
        self.args = args if args is not None else DefaultPreemptionArgs()
        errors = self.args.validate()
        if errors:
            raise FieldErrors(errors)
        self.handle = handle
        seed: Any = getattr(handle, "seed", 0)
        self.rng = random.Random(seed if isinstance(seed, int) else 0)
        #: Pod key -> node this plugin nominated it to (see `_nominated_node`).
        self._nominations: dict[str, str] = {}
        self._executor = Executor(self.name)
        #: Whether this plugin ever preempted for a pod group (only then PreEnqueue looks for one).
        self._group_preemptions = False

    # repeated failures
    def failure_repeats(self, state: CycleState, pod: Pod) -> bool:
        """`RepeatableFailurePlugin`: when this attempt's preemption found the pod not eligible or
        found no candidate anywhere, and the pod was not nominated (nothing was changed)."""
        return isinstance(state.get(_REPEATABLE_KEY), _Repeatable)

    def repeat_failure(self, state: CycleState) -> None:
        """Draw the random offset again, as the repeated attempt would have."""
        mark = state.get(_REPEATABLE_KEY)
        if isinstance(mark, _Repeatable) and mark.draw:
            self.offset_and_num_candidates(mark.draw)

    def failure_survives_pod_changes(self, state: CycleState, pod: Pod, table: NodeTable) -> bool:
        """When the preemption needed no dry run and still needs none: the pod may not preempt,
        or nobody on `table` has a lower priority (the outcome then reads only the statuses)."""
        mark = state.get(_REPEATABLE_KEY)
        if not isinstance(mark, _Repeatable) or not mark.fast:
            return False
        return pod.spec.preemption_policy == "Never" or nobody_below(table, pod.spec.priority or 0)

    # PreEnqueue
    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Upstream's async preemption gate: a pod whose victims are still being evicted waits
        (`executor.Executor.gate`); a pod of a group, while its group's victims are."""
        group = pod_group_of(pod)
        if group is not None and self._group_preemptions:
            key = group_preemption_key(f"{group[0]}/{group[1]}")
            if (held := self._executor.group_gate(self.handle, key)) is not None:
                return held
        return self._executor.gate(self.handle, pod)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A victim's deletion never requeues the pod on this plugin's account (upstream's hint is
        always QueueSkip): the plugins whose rejection the preemption resolves requeue it."""
        return [ClusterEventWithHint(ASSIGNED_POD_DELETE, lambda pod, old, new: QueueingHint.SKIP)]

    # PodGroupPostFilter
    def pod_group_post_filter(
        self, preemptor: GroupPreemptor, schedule: PodGroupSchedulingFunc, snapshot: MutableSnapshot
    ) -> tuple[PodGroupPostFilterResult | None, Status | None]:
        """Pod-group preemption (GenericWorkload on), any message prefixed `pod group preemption: `
        as upstream's condition shows it."""
        if self.handle is None:
            return None, Status.as_error(f"{self.name}: no framework handle")
        result, status = self._preempt_group(self.handle, preemptor, schedule, snapshot)
        if status is not None and status.message():
            prefixed = f"pod group preemption: {status.message()}"
            if status.code == Code.ERROR:
                return result, Status.as_error(prefixed)
            return result, Status(status.code, prefixed)
        return result, status

    def _preempt_group(
        self,
        handle: Handle,
        preemptor: GroupPreemptor,
        schedule: PodGroupSchedulingFunc,
        snapshot: MutableSnapshot,
    ) -> tuple[PodGroupPostFilterResult | None, Status | None]:
        if preemption_policy(preemptor) == "Never":
            return None, Status(Code.UNSCHEDULABLE, NOT_ELIGIBLE_NEVER)
        if ongoing(handle, preemptor):
            current = {pod_key(p): preemptor.nominated.get(pod_key(p), "") for p in preemptor.members}
            return PodGroupPostFilterResult(current), Status(Code.SUCCESS, ONGOING)
        budgets = disruption_budgets(handle.lister("PodDisruptionBudget"))
        chosen = select_group_victims(handle, preemptor, snapshot, schedule, budgets)
        if isinstance(chosen, Status):
            return None, chosen
        victims, _violations, nominations = chosen
        pods = [pi for v in victims for pi in v.pods]
        self._group_preemptions = True
        status = self._executor.prepare_group(handle, pods, preemptor.pod_group, preemptor.members)
        if status is None:
            status = Status(Code.SUCCESS, f"found a placement for podgroup, preempting {len(pods)} victims")
        return result_of(victims, nominations), status

    # sizing
    def calculate_num_candidates(self, num_nodes: int) -> int:
        """How many candidates the dry run looks for among `num_nodes` potential nodes."""
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random start among the potential nodes (so no node is always tried first) and the count."""
        return self.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    # PostFilter
    def post_filter(
        self, state: CycleState, pod: Pod, node_to_status: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        """Preempt, prefixing any message with `preemption: ` as upstream's FailedScheduling shows it."""
        if self.handle is None:
            return None, Status.as_error(f"{self.name}: no framework handle")
        result, status = self._preempt(self.handle, state, pod, node_to_status)
        if status is not None and status.message():
            prefixed = Status(status.code, f"preemption: {status.message()}")
            if status.code == Code.ERROR:
                prefixed = Status.as_error(f"preemption: {status.message()}")
            return result, prefixed
        return result, status

    def _preempt(
        self, handle: Handle, state: CycleState, pod: Pod, node_to_status: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        snapshot = handle.snapshot
        preemptor = PodInfo(pod)
        nominated = self._nominated_node(handle, preemptor)
        why_not = self.pod_eligible_to_preempt_others(handle, preemptor, node_to_status, nominated)
        if why_not:
            if not nominated:
                state.write(_REPEATABLE_KEY, _Repeatable(0, fast=True))
            return None, Status(Code.UNSCHEDULABLE, why_not)

        dry = DryRun()
        drawn = 0
        fast = False
        if nobody_below(snapshot, preemptor.priority):
            # Nobody anywhere has a lower priority (every pod of a full cluster is as important):
            # every potential node is one without victims. The offset is still drawn, as the dry
            # run would, so later preemptions pick their nodes as they always did.
            dry.without_victims = potential_count(snapshot, node_to_status)
            if dry.without_victims:
                self.offset_and_num_candidates(dry.without_victims)
                drawn = dry.without_victims
            fast = True
        elif len(potential := potential_rows(snapshot, node_to_status)):
            budgets = disruption_budgets(handle.lister("PodDisruptionBudget"))
            offset, num_candidates = self.offset_and_num_candidates(len(potential))
            drawn = len(potential)
            dry = self.dry_run_preemption(
                handle, state, preemptor, snapshot, potential, budgets, offset, num_candidates
            )
        if not dry.candidates:
            if dry.errors:
                return None, Status.as_error(dry.errors[0].message())
            diagnosis = Diagnosis(
                node_to_status=dry.statuses,
                absent_nodes_status=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_HELPFUL),
            )
            # Nodes neither dry-run nor without victims are "not helpful" (absent from statuses).
            counts = reason_counts(len(snapshot) - dry.without_victims, diagnosis)
            if dry.without_victims:
                counts[NO_VICTIMS] += dry.without_victims
            message = fit_error_message(len(snapshot), diagnosis, counts)
            # Preemption cannot help anywhere: drop a nomination left from an earlier preemption so
            # it stops reserving room. Cleared here as well as through the result, because the
            # framework keeps a PostFilter result only when the plugin succeeds.
            if nominated:
                handle.set_nominated_node(pod, "")
            else:
                # Every potential node was tried (none became a candidate), so the outcome does
                # not depend on the offset: the next pod of this content fails the same way.
                state.write(_REPEATABLE_KEY, _Repeatable(drawn, fast))
            self._nominations.pop(preemptor.key, None)
            return PostFilterResult(nominated_node_name=""), Status(Code.UNSCHEDULABLE, message)

        candidates = self._prune_with_extenders(handle, pod, dry.candidates)
        if isinstance(candidates, Status):
            return None, candidates
        best = pick_one_node_for_preemption(candidates)
        if best is None:
            return None, Status(Code.UNSCHEDULABLE, NO_CANDIDATE)
        status = self.prepare_candidate(handle, best, pod)
        if status is not None:
            return None, status
        self._remember_nomination(handle, preemptor.key, best.name)
        # v1.37.2 reports a success too, so the FailedScheduling message of the preempting attempt
        # ends with `preemption: found a potential placement ...` (checked on the binary).
        found = (
            f"found a potential placement for pod on node {best.name}, preempting {len(best.victims)} victims"
        )
        return PostFilterResult(
            nominated_node_name=best.name, victims=[v.pod.key for v in best.victims]
        ), Status(Code.SUCCESS, found)

    @staticmethod
    def _prune_with_extenders(
        handle: Handle, pod: Pod, candidates: list[Candidate]
    ) -> list[Candidate] | Status:
        """Preempt-verb extenders may drop candidate nodes or victims (upstream `callExtenders`,
        `pkg/scheduler/framework/preemption/preemption.go`)."""
        process = getattr(handle, "process_preemption_with_extenders", None)
        if process is None:
            return candidates
        proposed = {c.name: ([v.pod for v in c.victims], c.num_pdb_violations) for c in candidates}
        try:
            kept = process(pod, proposed)
        except Exception as exc:  # an extender that is down and not ignorable fails this preemption
            return Status.as_error(exc)
        if kept is proposed:
            return candidates
        by_name = {c.name: c for c in candidates}
        pruned: list[Candidate] = []
        for name, (pods, pdb) in kept.items():
            original = by_name.get(name)
            if original is None:
                continue
            uids = {p.metadata.uid for p in pods}
            victims = [v for v in original.victims if v.pod.metadata.uid in uids]
            pruned.append(Candidate(name, victims, pdb))
        return pruned

    # nominations, eligibility
    def _remember_nomination(self, handle: Handle, key: str, node: str) -> None:
        """Record a nomination; past a bound, drop records the nominator no longer holds (pods bound
        or deleted since), so a long-running scheduler does not accumulate them."""
        self._nominations[key] = node
        if len(self._nominations) <= _NOMINATIONS_BOUND:
            return
        for other, name in list(self._nominations.items()):
            if other != key and not any(p.key == other for p in handle.nominated_pods_for_node(name)):
                del self._nominations[other]

    def _nominated_node(self, handle: Handle, preemptor: PodInfo) -> str:
        """The node the pod is nominated to ("" when none): its status field, else this plugin's record.

        The status patch may not have reached the scheduler's copy of the pod yet (in the simulator it
        never does). Upstream reads the field from a fresh copy of the pod; here the plugin remembers
        its own nominations and checks with the nominator that each still holds, which costs one
        lookup instead of a scan of every node.
        """
        if preemptor.pod.status.nominated_node_name:
            return preemptor.pod.status.nominated_node_name
        node = self._nominations.get(preemptor.key)
        if node is None:
            return ""
        if any(p.key == preemptor.key for p in handle.nominated_pods_for_node(node)):
            return node
        del self._nominations[preemptor.key]  # bound, deleted or nominated elsewhere since
        return ""

    def pod_eligible_to_preempt_others(
        self, handle: Handle, preemptor: PodInfo, node_to_status: dict[str, Status], nominated: str
    ) -> str:
        """Why the pod may not preempt, or an empty string when it may.

        `nominated` is the node the pod is nominated to ("" when none).
        """
        pod = preemptor.pod
        if pod.spec.preemption_policy == "Never":
            return NOT_ELIGIBLE_NEVER
        snapshot = handle.snapshot
        if not nominated:
            return ""
        st = node_to_status.get(nominated)
        if st is None or st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return ""  # the nominated node can no longer help: look elsewhere
        row = snapshot.index.get(nominated)
        if row is None:
            return ""
        victim_facts = pod_victim_facts(handle)  # a pod of a group weighs at its tree's priority
        for pi in snapshot.infos[row].pods.values():
            if terminating_by_preemption(pi.pod) and victim_facts(pi)[0] < preemptor.priority:
                return NOT_ELIGIBLE_TERMINATING
        return ""

    # dry run
    def dry_run_preemption(
        self,
        handle: Handle,
        state: CycleState,
        preemptor: PodInfo,
        table: NodeTable,
        potential: IndexArray,
        budgets: Sequence[Budget],
        offset: int,
        num_candidates: int,
    ) -> DryRun:
        """`dry_run.dry_run`: victims on clones of the potential nodes, from `offset` round them."""
        return dry_run(handle, state, preemptor, table, potential, budgets, offset, num_candidates)

    def select_victims_on_node(
        self,
        handle: Handle,
        state: CycleState,
        preemptor: PodInfo,
        node_info: NodeInfo,
        budgets: Sequence[Budget],
    ) -> tuple[list[PodInfo], int, Status | None]:
        """`dry_run.select_victims_on_node`: the fewest, least important pods to evict from a clone."""
        return select_victims_on_node(handle, state, preemptor, node_info, budgets)

    # prepare
    def prepare_candidate(self, handle: Handle, candidate: Candidate, preemptor: Pod) -> Status | None:
        """Evict the victims, announce it, and free the node from lower-priority nominations.

        Where the cluster evicts in the background (live mode, as v1.37's SchedulerAsyncPreemption),
        the evictions run there and this returns at once; the simulator evicts here, in virtual time.
        """
        return self._executor.prepare(handle, candidate, preemptor)
