"""DefaultPreemption: when no node fits, evict lower-priority pods from one node to make room.

PostFilter (reference §3.5): runs only after the filters left no feasible node. In order:

1. Eligibility. A pod with `preemptionPolicy: Never` never preempts. A pod already nominated to a
   node where a lower-priority victim of an earlier preemption is still terminating waits for it
   instead of evicting more pods elsewhere (unless the filters now say that node can never fit).
2. Candidates. Only nodes the filters rejected as `Unschedulable` can be helped by evicting pods;
   `UnschedulableAndUnresolvable` nodes (and nodes a PreFilter excluded) are "not helpful".
3. Dry run. From a random offset, each potential node is cloned, every pod of lower priority is
   removed, and the filters are re-run (nominated pods included). On a node that then fits, pods
   are reprieved (added back) from the most important down — first those whose eviction would
   violate a PodDisruptionBudget, then the others — as long as the pod still fits. Those left are
   the victims. The dry run stops once enough candidates are found (`minCandidateNodes*` args) and
   at least one of them violates no PDB.
4. Selection. Fewest PDB violations, then the lowest highest-victim priority, the smallest sum of
   priorities, the fewest victims, the latest start time of the most important victims, then the
   first candidate in dry-run order.
5. Preparation. Victims held at Permit are rejected; the others are deleted. Each gets a
   `Preempted` Event. Lower-priority pods nominated to the chosen node lose their nomination, as
   they may no longer fit there. The pod is nominated to the node and retried later; the
   nomination keeps lower-priority pods from taking the room in the meantime.

Live mode preempts asynchronously, as v1.37's SchedulerAsyncPreemption (on by default): the
evictions run on a background thread the cluster port provides, and until they are done the
plugin's PreEnqueue holds the pod back. The simulator evicts within the cycle, in virtual time.

The plugin draws its random offset from its own generator, seeded from the scheduler's seed, so a
simulation is reproducible and preemption does not shift the scheduler's tie-breaking sequence.
"""

from __future__ import annotations

import logging
import math
import random
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import repeat
from typing import Any, ClassVar

import msgspec
import numpy as np

from kubesched.api.objects import Pod, PodDisruptionBudget
from kubesched.api.selectors import LabelSelectorMatcher, compile_label_selector
from kubesched.errors import FieldErrors, InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD_DELETE, ClusterEventWithHint, QueueingHint
from kubesched.framework.interfaces import (
    BackgroundEvictionPort,
    EnqueueExtensions,
    Handle,
    PostFilterPlugin,
    PreEnqueuePlugin,
    RepeatableFailurePlugin,
)
from kubesched.framework.node_info import NodeInfo, PodInfo, pod_key
from kubesched.framework.node_table import BoolArray, IndexArray, NodeTable
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    Diagnosis,
    NodeStatuses,
    PostFilterResult,
    StatusColumns,
    fit_error_message,
    reason_counts,
)

__all__ = [
    "NOT_ELIGIBLE_NEVER",
    "NOT_ELIGIBLE_TERMINATING",
    "NOT_HELPFUL",
    "NO_VICTIMS",
    "WAITING_FOR_PREEMPTION",
    "Candidate",
    "DefaultPreemption",
    "DefaultPreemptionArgs",
    "disruption_budgets",
    "filter_pods_with_pdb_violation",
    "pick_one_node_for_preemption",
    "potential_rows",
    "start_time",
]

NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_CANDIDATE = "no candidate node for preemption"
#: PreEnqueue's answer while the pod's victims are being evicted in the background (upstream's words).
WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
#: What a rejected waiting victim is told (upstream's word).
PREEMPTED = "preempted"
#: The DisruptionTarget condition reason of a pod the scheduler preempts.
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
#: Added to every victim priority in the sum criterion so that negative priorities count as small
#: positive amounts: three pods of priority -10 must weigh more than one.
_PRIORITY_OFFSET = 2**31
#: Nomination records kept before stale ones are pruned.
_NOMINATIONS_BOUND = 1024

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- args


class DefaultPreemptionArgs(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """pluginConfig args (kind DefaultPreemptionArgs): how many candidate nodes the dry run looks for.

    At least `max(numNodes * minCandidateNodesPercentage / 100, minCandidateNodesAbsolute)` nodes
    (capped at the number of potential nodes) are dry-run before picking one, so the choice is not
    just the first node where eviction helps, while a large cluster is not dry-run entirely.
    """

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    def validate(self) -> list[InputError]:
        """Field errors with paths relative to the args, in upstream's field-error wording."""
        pct, absolute = self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        errors: list[InputError] = []
        if not 0 <= pct <= 100:
            errors.append(
                InputError(
                    f"Invalid value: {pct}: not in valid range [0, 100]", path="minCandidateNodesPercentage"
                )
            )
        if absolute < 0:
            errors.append(
                InputError(
                    f"Invalid value: {absolute}: not in valid range [0, inf)",
                    path="minCandidateNodesAbsolute",
                )
            )
        if pct == 0 and absolute == 0:
            errors.append(
                InputError(
                    "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
                    path="minCandidateNodesPercentage",
                )
            )
            errors.append(
                InputError(
                    "Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage",
                    path="minCandidateNodesAbsolute",
                )
            )
        return errors


# --------------------------------------------------------------------------- candidates


@dataclass(slots=True)
class Candidate:
    """A node where evicting `victims` (most important first) lets the pod fit."""

    name: str
    victims: list[PodInfo]
    num_pdb_violations: int = 0


@dataclass(slots=True)
class _Preempting:
    """A preemption whose victims are being evicted in the background (live mode)."""

    node: str
    #: Key of the last victim once its eviction has begun: from then on the preemption counts as
    #: done as soon as the cache sees that victim terminating or gone (see `pre_enqueue`).
    last_victim: str | None = None
    #: PreEnqueue held the pod back at least once.
    gated: bool = False


@dataclass(slots=True)
class _DryRun:
    candidates: list[Candidate] = field(default_factory=list)
    #: Why the other dry-run nodes are not candidates.
    statuses: dict[str, Status] = field(default_factory=dict)
    #: Potential nodes not dry-run: nobody of lower priority to evict (NO_VICTIMS). Most nodes of a
    #: full cluster, so they are counted rather than listed.
    without_victims: int = 0
    errors: list[Status] = field(default_factory=list)


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


class _ExtensionError(Exception):
    """A PreFilter AddPod/RemovePod extension failed during the dry run."""

    def __init__(self, status: Status) -> None:
        self.status = status
        super().__init__(status.message())


def start_time(pod: Pod) -> float:
    """The pod's `status.startTime` as a POSIX timestamp; +inf ("now") when unset or unreadable.

    Upstream counts a pod that has not started yet (assumed, just bound) as started now, i.e. the
    youngest: the least important among equal priorities, and the preferred one to evict.
    """
    raw = pod.status.start_time
    if not raw:
        return math.inf
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return math.inf


def _importance(pi: PodInfo) -> tuple[int, float]:
    """Sort key, most important first: higher priority, then the pod that started earlier."""
    return (-pi.priority, start_time(pi.pod))


def _terminating_by_preemption(pod: Pod) -> bool:
    """Deleted (deletionTimestamp set) because a scheduler preempted it (DisruptionTarget condition)."""
    if not pod.metadata.deletion_timestamp:
        return False
    for cond in pod.status.conditions:
        if cond.type == "DisruptionTarget":
            return cond.status == "True" and cond.reason == PREEMPTION_BY_SCHEDULER
    return False


@dataclass(slots=True)
class _Budget:
    namespace: str
    selector: LabelSelectorMatcher
    allowed: int


def disruption_budgets(pdbs: Iterable[PodDisruptionBudget]) -> list[_Budget]:
    """PDBs that can protect a pod: a nil, empty or invalid selector selects nothing here."""
    out: list[_Budget] = []
    for pdb in pdbs:
        try:
            matcher = compile_label_selector(pdb.spec.selector)
        except InputError:
            continue
        if matcher.matches_nothing or matcher.matches_everything:
            continue
        out.append(_Budget(pdb.metadata.namespace, matcher, pdb.status.disruptions_allowed))
    return out


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], budgets: Sequence[_Budget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split `pods` (in order) into those whose eviction would exceed a PDB's budget and the rest.

    Each matching PDB's `disruptionsAllowed` is spent pod by pod, so with one disruption allowed
    the first matching pod is fine and the second violates.
    """
    allowed = [b.allowed for b in budgets]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pi in pods:
        violated = False
        labels = pi.pod.metadata.labels
        if labels:  # a pod without labels matches no PDB
            for i, budget in enumerate(budgets):
                if budget.namespace != pi.namespace or not budget.selector.matches(labels):
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pi)
    return violating, non_violating


def potential_rows(table: NodeTable, node_to_status: Mapping[str, Status]) -> IndexArray:
    """Rows (in table order) of the nodes the filters rejected as `Unschedulable`: the only nodes
    evicting pods can help. Statuses are shared among nodes, so each distinct one is read once."""
    columns = _columns_of(table, node_to_status)
    if columns is not None:
        helpful_codes = _helpful_codes(columns)
        # A mask over the table, not a sort: the columns list rows in the filters' rotated order.
        helpful_rows = np.zeros(len(table), dtype=np.bool_)
        helpful_rows[columns.rows] = helpful_codes[columns.codes]
        return np.flatnonzero(helpful_rows)
    statuses = node_to_status.values()
    distinct = dict(zip(map(id, statuses), statuses, strict=True))
    helpful = {key for key, st in distinct.items() if st.code == Code.UNSCHEDULABLE}
    if not helpful:
        return np.empty(0, dtype=np.intp)
    n = len(node_to_status)
    wanted = np.fromiter(map(helpful.__contains__, map(id, statuses)), dtype=np.bool_, count=n)
    rows = np.fromiter(map(table.index.get, node_to_status, repeat(-1)), dtype=np.intp, count=n)
    rows = rows[wanted & (rows >= 0)]
    rows.sort()
    return rows


def potential_count(table: NodeTable, node_to_status: Mapping[str, Status]) -> int:
    """`len(potential_rows(...))`, without listing them when the verdicts are columns."""
    columns = _columns_of(table, node_to_status)
    if columns is None:
        return len(potential_rows(table, node_to_status))
    return int(np.count_nonzero(_helpful_codes(columns)[columns.codes]))


def _nobody_below(table: NodeTable, priority: int) -> bool:
    """No pod on `table` has a lower priority than `priority`: there is no one to evict anywhere."""
    return table.lowest_pod_priority >= priority


def _columns_of(table: NodeTable, node_to_status: Mapping[str, Status]) -> StatusColumns | None:
    columns = node_to_status.columns if isinstance(node_to_status, NodeStatuses) else None
    return columns if columns is not None and columns.table is table else None


def _helpful_codes(columns: StatusColumns) -> BoolArray:
    """Per status of `columns`: is it `Unschedulable` (evicting pods may help)?"""
    return np.fromiter(
        (st.code == Code.UNSCHEDULABLE for st in columns.statuses),
        dtype=np.bool_,
        count=len(columns.statuses),
    )


# --------------------------------------------------------------------------- node choice


def _earliest_start_of_most_important(c: Candidate) -> float:
    top = c.victims[0].priority
    return min(start_time(v.pod) for v in c.victims if v.priority == top)


#: pickOneNodeForPreemption's criteria, each a score where higher is better, applied in order
#: until one candidate is left.
_CRITERIA: tuple[Callable[[Candidate], float], ...] = (
    lambda c: -c.num_pdb_violations,
    lambda c: -c.victims[0].priority,
    lambda c: -sum(v.priority + _PRIORITY_OFFSET for v in c.victims),
    lambda c: -len(c.victims),
    _earliest_start_of_most_important,
)


def pick_one_node_for_preemption(candidates: Sequence[Candidate]) -> Candidate | None:
    """The candidate to preempt on: fewest PDB violations, then lowest highest-victim priority,
    then smallest priority sum, then fewest victims, then latest start of the most important
    victims; remaining ties go to the first candidate (dry-run order)."""
    remaining = [c for c in candidates if c.victims]
    if not remaining:
        return None
    for criterion in _CRITERIA:
        if len(remaining) == 1:
            break
        scores = [criterion(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
    return remaining[0]


# --------------------------------------------------------------------------- the plugin


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
        #: Pod key -> its preemption still evicting in the background. Read under the scheduler's
        #: lock by PreEnqueue, written by the eviction thread too: guarded by its own lock.
        self._preempting: dict[str, _Preempting] = {}
        self._preempting_lock = threading.Lock()

    # ------------------------------------------------------------------ repeated failures
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
        return pod.spec.preemption_policy == "Never" or _nobody_below(table, pod.spec.priority or 0)

    # ------------------------------------------------------------------ PreEnqueue
    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Upstream's async preemption gate: a pod whose victims are still being evicted waits.

        The preemption counts as finished once its last victim's eviction has started and the cache
        sees that victim terminating or gone, so a deletion event that arrives before the eviction
        thread ends does not leave the pod held back.
        """
        with self._preempting_lock:
            running = self._preempting.get(pod_key(pod))
            if running is None:
                return None
            if running.last_victim is not None and self._victim_leaving(running):
                return None
            running.gated = True
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING_FOR_PREEMPTION)

    def _victim_leaving(self, running: _Preempting) -> bool:
        if self.handle is None:
            return True
        snapshot = self.handle.snapshot
        row = snapshot.index.get(running.node)
        if row is None:
            return True
        victim = snapshot.infos[row].pods.get(running.last_victim or "")
        return victim is None or bool(victim.pod.metadata.deletion_timestamp)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A victim's deletion never requeues the pod on this plugin's account (upstream's hint is
        always QueueSkip): the plugins whose rejection the preemption resolves requeue it."""
        return [ClusterEventWithHint(ASSIGNED_POD_DELETE, lambda pod, old, new: QueueingHint.SKIP)]

    # ------------------------------------------------------------------ sizing
    def calculate_num_candidates(self, num_nodes: int) -> int:
        """How many candidates the dry run looks for among `num_nodes` potential nodes."""
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random start among the potential nodes (so no node is always tried first) and the count."""
        return self.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    # ------------------------------------------------------------------ PostFilter
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

        dry = _DryRun()
        drawn = 0
        fast = False
        if _nobody_below(snapshot, preemptor.priority):
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
        """Preempt-verb extenders may drop candidate nodes or victims (upstream §7.5)."""
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

    # ------------------------------------------------------------------ nominations, eligibility
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
        for pi in snapshot.infos[row].pods.values():
            if pi.priority < preemptor.priority and _terminating_by_preemption(pi.pod):
                return NOT_ELIGIBLE_TERMINATING
        return ""

    # ------------------------------------------------------------------ dry run
    def dry_run_preemption(
        self,
        handle: Handle,
        state: CycleState,
        preemptor: PodInfo,
        table: NodeTable,
        potential: IndexArray,
        budgets: Sequence[_Budget],
        offset: int,
        num_candidates: int,
    ) -> _DryRun:
        """Select victims on clones of the potential nodes (rows of `table`), from `offset` round them.

        Stops once `num_candidates` candidates are found and one of them violates no PDB.
        Candidates without PDB violations come first. `statuses` is complete only when no
        candidate was found (the only time it is read); nodes without victims are only counted.
        """
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        out = _DryRun()
        # Only nodes with a pod of lower priority can be candidates: the table's column tells which
        # at once, so on a full cluster (where most nodes have nobody to evict) the dry run visits
        # only those, in the order a visit of every node from `offset` would take.
        has_victims = table.lowest_priority[potential] < preemptor.priority
        positions = np.flatnonzero(has_victims)
        cut = int(np.searchsorted(positions, offset))
        order = np.concatenate((positions[cut:], positions[:cut]))
        infos = table.infos
        for row in potential[order].tolist():
            info = infos[row].clone()
            victims, violations, status = self.select_victims_on_node(
                handle, state.clone(), preemptor, info, budgets
            )
            if status is None and victims:
                (violating if violations else non_violating).append(Candidate(info.name, victims, violations))
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if status is None:
                status = Status.as_error(f'expected at least one victim pod on node "{info.name}"')
            if status.code == Code.ERROR:
                out.errors.append(status)
            out.statuses[info.name] = status
        out.candidates = non_violating + violating
        out.without_victims = len(potential) - len(positions)
        return out

    def select_victims_on_node(
        self,
        handle: Handle,
        state: CycleState,
        preemptor: PodInfo,
        node_info: NodeInfo,
        budgets: Sequence[_Budget],
    ) -> tuple[list[PodInfo], int, Status | None]:
        """The fewest, least important pods to evict from `node_info` (a clone) so the pod fits.

        Returns (victims most important first, number of victims whose eviction violates a PDB,
        None) or ([], 0, why not).
        """
        pod = preemptor.pod

        def remove(pi: PodInfo) -> None:
            node_info.remove_pod(pi.key)
            st = handle.run_pre_filter_extension_remove_pod(state, pod, pi, node_info)
            if st is not None and not st.is_success():
                raise _ExtensionError(st)

        def add(pi: PodInfo) -> None:
            node_info.add_pod(pi)
            st = handle.run_pre_filter_extension_add_pod(state, pod, pi, node_info)
            if st is not None and not st.is_success():
                raise _ExtensionError(st)

        def fits() -> Status | None:
            st = handle.run_filter_plugins_with_nominated_pods(state, pod, node_info)
            return None if st is None or st.is_success() else st

        try:
            potential = [pi for pi in node_info.pods.values() if pi.priority < preemptor.priority]
            for pi in potential:
                remove(pi)
            if not potential:
                return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
            # Even with every lower-priority pod gone the pod does not fit: this node cannot help.
            # (Affinity to one of those pods is not considered, as upstream.)
            status = fits()
            if status is not None:
                return [], 0, status
            potential.sort(key=_importance)
            violating, non_violating = filter_pods_with_pdb_violation(potential, budgets)
            victims: list[PodInfo] = []

            def reprieve(pi: PodInfo) -> bool:
                add(pi)
                if fits() is None:
                    return True
                remove(pi)
                victims.append(pi)
                return False

            num_violations = sum(1 for pi in violating if not reprieve(pi))
            for pi in non_violating:
                reprieve(pi)
        except _ExtensionError as err:
            return [], 0, Status.as_error(err.status.message())
        if violating and non_violating:
            victims.sort(key=_importance)
        return victims, num_violations, None

    # ------------------------------------------------------------------ prepare
    def prepare_candidate(self, handle: Handle, candidate: Candidate, preemptor: Pod) -> Status | None:
        """Evict the victims, announce it, and free the node from lower-priority nominations.

        Where the cluster evicts in the background (live mode, as v1.37's SchedulerAsyncPreemption),
        the evictions run there and this returns at once; the simulator evicts here, in virtual time.
        """
        port = handle.background_eviction()
        if port is not None:
            self._prepare_in_background(handle, port, candidate, preemptor)
            return None
        node = candidate.name
        try:
            for pi in candidate.victims:
                victim = pi.pod
                if handle.get_waiting_pod(pi.key) is not None:
                    handle.reject_waiting_pod(pi.key, self.name, PREEMPTED)
                else:
                    handle.delete_pod(victim, reason=PREEMPTION_BY_SCHEDULER, message=_why(preemptor))
                _announce(handle, victim, preemptor, node)
        except Exception as exc:  # a failed eviction fails this attempt, not the scheduler
            return Status.as_error(str(exc) or type(exc).__name__)
        self._clear_lower_nominations(handle, preemptor, node)
        return None

    def _prepare_in_background(
        self, handle: Handle, port: BackgroundEvictionPort, candidate: Candidate, preemptor: Pod
    ) -> None:
        """Upstream's prepareCandidateAsync. Victims waiting at Permit are rejected here (in memory,
        under the scheduler's lock); victims already terminating are skipped; the others are evicted
        by a background thread, the last one only after all the others succeeded. Any error other
        than "already gone" stops the evictions and moves the pod back to activeQ, where it tries
        again (its nomination stays, as upstream's does)."""
        node, key = candidate.name, pod_key(preemptor)
        self._clear_lower_nominations(handle, preemptor, node)
        to_evict: list[Pod] = []
        for pi in candidate.victims:
            if handle.get_waiting_pod(pi.key) is not None:
                handle.reject_waiting_pod(pi.key, self.name, PREEMPTED)
                _announce(handle, pi.pod, preemptor, node)
            elif not pi.pod.metadata.deletion_timestamp:
                to_evict.append(pi.pod)
        if not to_evict:
            return
        running = _Preempting(node)
        with self._preempting_lock:
            self._preempting[key] = running
        failed: list[BaseException] = []

        def evict(victim: Pod) -> None:
            if port.evict_now(victim, reason=PREEMPTION_BY_SCHEDULER, message=_why(preemptor)):
                _announce(handle, victim, preemptor, node)

        def work() -> None:
            try:
                for victim in to_evict[:-1]:
                    evict(victim)
                with self._preempting_lock:
                    running.last_victim = pod_key(to_evict[-1])
                evict(to_evict[-1])
            except Exception as exc:
                log.warning("preemption for %s on node %s stopped: %s", key, node, exc)
                failed.append(exc)
                raise

        def then() -> None:
            with self._preempting_lock:
                self._preempting.pop(key, None)
            if failed:
                handle.activate([preemptor])  # upstream: do not leave the pod parked after an error
            elif running.gated:
                # kubesched's leftover flush leaves gated pods alone, so a pod held back by the
                # gate would wait for ever; upstream's flush retries it within 5 minutes.
                handle.activate([preemptor])

        port.run_in_background(work, then)

    @staticmethod
    def _clear_lower_nominations(handle: Handle, preemptor: Pod, node: str) -> None:
        """Lower-priority pods nominated to `node` may no longer fit there: let them look elsewhere."""
        priority = preemptor.spec.priority or 0
        for pi in handle.nominated_pods_for_node(node):
            if pi.priority < priority:
                try:
                    handle.set_nominated_node(pi.pod, "")
                except Exception:  # not critical: the nomination is re-evaluated on its next attempt
                    continue


def _why(preemptor: Pod) -> str:
    """The DisruptionTarget message a victim gets (upstream's words)."""
    return f"{preemptor.spec.scheduler_name}: preempting to accommodate a higher priority pod"


def _announce(handle: Handle, victim: Pod, preemptor: Pod, node: str) -> None:
    handle.record_event(
        victim,
        type="Normal",
        reason="Preempted",
        action="Preempting",
        note=f"Preempted by pod {preemptor.metadata.uid} on node {node}",
    )
