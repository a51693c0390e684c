"""The extender's verbs over one profile's Framework, independent of HTTP.

The server decodes a request, calls one method here under the cluster state's lock, and encodes
what it returns. Keeping HTTP out makes the semantics testable on their own and lets a benchmark
or another transport reuse them.

* filter: PreFilter then Filter over the named nodes. A node's failure goes to
  `FailedAndUnresolvableNodes` when its status is UnschedulableAndUnresolvable (preempting pods
  cannot help: kube-scheduler will not try those nodes for preemption), otherwise to `FailedNodes`.
  A plugin Error fails the call (`Error`), which kube-scheduler turns into a scheduling error.
* prioritize: PreScore and Score; the weighted total of each node (0..100 per plugin) is mapped
  onto the extender range 0..10 as `round(total / sum(weights) / 10)`. kube-scheduler multiplies
  it back by the extender's `weight` and by 10.
* preempt: for each candidate node, the victims are removed from a copy of the node and the
  profile's filters run again; nodes where the pod would still not fit are dropped. Victims are
  kept as proposed (never reprieved): kube-scheduler requires at least one per returned node.
* bind: a Binding through the API server, for configurations whose `bindVerb` names this extender.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any

import msgspec
import numpy as np

from kubesched.api.extender_v1 import (
    MAX_EXTENDER_PRIORITY,
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    MetaPod,
    MetaVictims,
    RawNodeList,
    WireError,
    encode_host_priorities,
    host_priority_prefix,
)
from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import Node, Pod
from kubesched.errors import InputError
from kubesched.extender.state import ClusterState
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import BackgroundEvictionPort
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import MAX_NODE_SCORE, rejected_by_plugins
from kubesched.framework.waiting_pods import WaitingPod
from kubesched.scheduler.scheduler import ProfileSpec

__all__ = ["Binder", "EngineError", "ExtenderEngine", "NotReady"]

#: Plugins only the scheduler that binds can run: DynamicResources allocates devices at Reserve and
#: writes them at PreBind, which no extender verb offers.
_SCHEDULER_ONLY = frozenset({"DynamicResources"})

log = logging.getLogger(__name__)

#: Binds `pod` to a node through the API; raises on failure. `BindConflict.node` is honoured.
Binder = Callable[[Pod, str], None]

#: Plugins the framework insists on, added when a profile meant for the extender leaves them out.
_REQUIRED_POINTS = {"queueSort": "PrioritySort", "bind": "DefaultBinder"}


class EngineError(Exception):
    """The verb failed for a reason that is not the caller's (a plugin error): HTTP 500."""


class NotReady(EngineError):
    """The node cache cannot answer yet (not synced, or there is none): HTTP 503 / filter `Error`."""


class _Handle:
    """The Handle the extender's plugins get: the cluster state, and no queue of its own."""

    def __init__(self, engine: ExtenderEngine, profile: str) -> None:
        self._engine = engine
        self._profile = profile

    @property
    def profile_name(self) -> str:
        return self._profile

    @property
    def snapshot(self) -> NodeTable:
        return self._engine.current_table

    def now(self) -> float:
        import time

        return time.time()

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return None

    def iterate_waiting_pods(self) -> Sequence[WaitingPod]:
        return []

    def reject_waiting_pod(self, uid: str, plugin: str, message: str) -> bool:
        return False

    def activate(self, pods: Sequence[Pod]) -> None:
        """No queue here: kube-scheduler owns the pods."""

    def bind(self, pod: Pod, node_name: str) -> None:
        if self._engine.binder is None:
            raise RuntimeError("this extender has no API connection")
        self._engine.binder(pod, node_name)

    def lister(self, kind: str) -> Sequence[Any]:
        return self._engine.state.lister(kind)

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._engine.framework.run_filter_on_node(state, pod, node_info)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._engine.framework.run_pre_filter_extension_add_pod(state, pod, pod_info_to_add, node_info)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._engine.framework.run_pre_filter_extension_remove_pod(
            state, pod, pod_info_to_remove, node_info
        )

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return []

    def set_nominated_node(self, pod: Pod, node_name: str) -> None:
        """Nominations belong to kube-scheduler."""

    def delete_pod(self, pod: Pod, *, reason: str, message: str) -> None:
        raise RuntimeError("the extender does not evict pods; kube-scheduler does")

    def record_event(self, pod: Pod, *, type: str, reason: str, action: str, note: str) -> None:
        """kube-scheduler records the scheduling Events."""

    def background_eviction(self) -> BackgroundEvictionPort | None:
        """kube-scheduler evicts the victims it chose; the extender evicts nothing."""
        return None


class ExtenderEngine:
    """filter / prioritize / preempt / bind for one profile, over a `ClusterState`.

    Callers hold `state.lock` around `filter`, `prioritize` and `preempt` (the server does);
    `bind` takes it itself, only around the cache update, never during the API call.
    """

    def __init__(
        self, spec: ProfileSpec, registry: Registry, state: ClusterState, *, binder: Binder | None = None
    ) -> None:
        self.state = state
        self.binder = binder
        self.profile_name = spec.scheduler_name
        self.current_table: NodeTable = NodeTable([])
        points = {point: list(refs) for point, refs in spec.points.items()}
        if any(name in _SCHEDULER_ONLY for refs in points.values() for name, _ in refs):
            # kube-scheduler allocates devices itself; the extender protocol has no Reserve or PreBind
            # to write an allocation with, and no PreFilter state that would survive to them.
            log.info(
                "profile %s: %s left out of the extender's verbs (kube-scheduler runs it)",
                spec.scheduler_name,
                ", ".join(sorted(_SCHEDULER_ONLY)),
            )
            points = {p: [r for r in refs if r[0] not in _SCHEDULER_ONLY] for p, refs in points.items()}
        for point, plugin in _REQUIRED_POINTS.items():
            if not points.get(point):
                points[point] = [(plugin, 0)]
        self.framework = Framework(
            spec.scheduler_name,
            points,
            spec.plugin_args,
            registry,
            _Handle(self, spec.scheduler_name),
            percentage_of_nodes_to_score=spec.percentage_of_nodes_to_score,
        )
        weights = self.framework.score_weights
        self._weight_sum = sum(weights.values())
        #: Each node's HostPriority JSON prefix, by name (kept across tables: names outlive them),
        #: and the last table's prefixes in row order.
        self._prefix_by_name: dict[str, bytes] = {}
        self._prefixes: tuple[list[str], list[bytes]] = ([], [])
        #: The last table's node names as an object array, so a reply's names are gathered by
        #: row numbers in C (a fifth of the time of `itemgetter` over 4,000 rows).
        self._name_array: tuple[list[str], np.ndarray[Any, np.dtype[np.object_]]] = (
            [],
            np.empty(0, dtype=object),
        )
        #: The last NodeNames request resolved against a table: kube-scheduler sends the same list
        #: call after call, and comparing it costs a tenth of looking 5,000 names up again.
        self._resolved: tuple[NodeTable, list[str], NodeSet, list[str]] | None = None

    # ------------------------------------------------------------------ node resolution

    def _nodes(self, args: ExtenderArgs, where: str) -> tuple[NodeSet, list[str], list[int] | None]:
        """The NodeSet to evaluate, names the cache does not know, and (Nodes mode) item positions.

        Nodes mode builds a table from the request's Node objects, with the pods the cache knows
        on them (none without a cache). NodeNames mode reads the cache's incremental table.
        """
        if args.nodes is not None:
            ready = self.state.has_node_cache and self.state.not_ready() is None
            cache = self.state.cache if ready else None
            infos: list[NodeInfo] = []
            for i, node in enumerate(args.nodes.items):
                known = cache.node_info(node.metadata.name) if cache is not None else None
                try:
                    infos.append(NodeInfo(node, known.pods.values() if known is not None else ()))
                except InputError as exc:
                    raise WireError(f"{where}.Nodes.items[{i}]: {exc}") from None
            self.state.remember_nodes(args.nodes.items)
            table = NodeTable(infos)
            self.current_table = table
            return table.all(), [], None
        names = args.node_names or []
        problem = self.state.not_ready()
        if problem is not None:
            raise NotReady(f"cannot serve NodeNames: {problem}")
        table = self.state.snapshot()
        self.current_table = table
        resolved = self._resolved
        if resolved is not None and resolved[0] is table and (resolved[1] is names or resolved[1] == names):
            return resolved[2], resolved[3], None
        nodes, unknown = _resolve(table, names)
        self._resolved = (table, names, nodes, unknown)
        return nodes, unknown, None

    @staticmethod
    def _pod(pod: Pod | None, where: str) -> Pod:
        if pod is None:
            raise WireError(f"{where}.Pod: required")
        return pod

    # ------------------------------------------------------------------ filter

    def filter(self, args: ExtenderArgs, raw_items: list[msgspec.Raw] | None = None) -> ExtenderFilterResult:
        """Which of the given nodes the profile's PreFilter and Filter plugins accept."""
        pod = self._pod(args.pod, "ExtenderArgs")
        nodes_mode = args.nodes is not None
        try:
            nodes, unknown, _ = self._nodes(args, "ExtenderArgs")
        except NotReady as exc:
            return ExtenderFilterResult(failed_nodes={}, failed_and_unresolvable_nodes={}, error=str(exc))
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        for name in unknown:
            failed[name] = f'node "{name}" is not in the extender\'s node cache'
        passed = self._run_filters(pod, nodes, failed, unresolvable)
        if isinstance(passed, Status):
            return ExtenderFilterResult(
                failed_nodes={}, failed_and_unresolvable_nodes={}, error=passed.message()
            )
        if nodes_mode:
            raws = raw_items if raw_items is not None else []
            kept = [raws[int(i)] for i in np.flatnonzero(passed)] if raws else []
            return ExtenderFilterResult(
                nodes=RawNodeList(items=kept), failed_nodes=failed, failed_and_unresolvable_nodes=unresolvable
            )
        return ExtenderFilterResult(
            node_names=self._row_names(nodes.table)[nodes.rows[passed]].tolist(),
            failed_nodes=failed,
            failed_and_unresolvable_nodes=unresolvable,
        )

    def _run_filters(
        self, pod: Pod, nodes: NodeSet, failed: dict[str, str], unresolvable: dict[str, str]
    ) -> np.ndarray[Any, np.dtype[np.bool_]] | Status:
        """A pass mask over `nodes`, filling the failure maps; or the Error status that aborts."""
        fwk = self.framework
        state = CycleState()
        n = len(nodes)
        names = nodes.table.names
        name_array = self._row_names(nodes.table)
        pre_result, status, plugins = fwk.run_pre_filter(state, pod, nodes)
        if status is not None and not status.is_success():
            if not status.is_rejected():
                return status
            target = unresolvable if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE else failed
            message = status.message()
            for r in nodes.rows:
                target[names[r]] = message
            return np.zeros(n, dtype=np.bool_)
        candidates = nodes
        allowed = np.ones(n, dtype=np.bool_)
        if pre_result is not None and pre_result.node_names is not None:
            keep = pre_result.node_names
            allowed = np.fromiter((names[r] in keep for r in nodes.rows), dtype=np.bool_, count=n)
            message = rejected_by_plugins(sorted(plugins)).message()
            for r in nodes.rows[~allowed]:
                unresolvable[names[r]] = message
            candidates = nodes.select(allowed)
        outcome = fwk.run_filter(state, pod, candidates)
        if outcome.error is not None:
            return outcome.error
        # Each distinct status once: a 5,000-node request may reject thousands of nodes alike.
        for j, st in enumerate(outcome.statuses):
            hit = np.flatnonzero(outcome.status_idx == j)
            if len(hit) == 0:
                continue
            target = unresolvable if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE else failed
            target.update(dict.fromkeys(name_array[candidates.rows[hit]].tolist(), st.message()))
        passed = np.zeros(n, dtype=np.bool_)
        passed[np.flatnonzero(allowed)[outcome.feasible]] = True
        return passed

    # ------------------------------------------------------------------ prioritize

    def prioritize(self, args: ExtenderArgs) -> msgspec.Raw:
        """Each known node's profile score, mapped from 0..100 onto 0..10: the reply's
        HostPriorityList, already JSON (`encode` passes it through)."""
        pod = self._pod(args.pod, "ExtenderArgs")
        nodes, _unknown, _ = self._nodes(args, "ExtenderArgs")
        prefixes = self._row_prefixes(nodes.table)
        rows = nodes.rows
        if len(rows) != len(prefixes) or not np.array_equal(rows, np.arange(len(rows))):
            prefixes = list(map(prefixes.__getitem__, rows.tolist()))  # not every row in order
        if not self.framework.has_score_plugins() or len(nodes) == 0:
            return msgspec.Raw(encode_host_priorities(prefixes, [0] * len(prefixes)))
        state = CycleState()
        status = self.framework.run_pre_score(state, pod, nodes)
        if status is not None:
            raise EngineError(status.message())
        outcome = self.framework.run_score(state, pod, nodes)
        if outcome.error is not None:
            raise EngineError(outcome.error.message())
        scores = scale_scores(outcome.totals, self._weight_sum).tolist()
        return msgspec.Raw(encode_host_priorities(prefixes, scores))

    def _row_prefixes(self, table: NodeTable) -> list[bytes]:
        """The HostPriority prefix of each row of `table`, made once per node list: a new table
        with the same nodes in the same order (a pod bound, in informer mode) keeps them."""
        kept, prefixes = self._prefixes
        if _same_names(kept, table.names):
            return prefixes
        by_name = self._prefix_by_name
        if len(by_name) > 2 * len(table.names) + 1024:
            by_name.clear()  # nodes long gone: drop their prefixes
        prefixes = []
        for name in table.names:
            prefix = by_name.get(name)
            if prefix is None:
                prefix = by_name[name] = host_priority_prefix(name)
            prefixes.append(prefix)
        self._prefixes = (table.names, prefixes)
        return prefixes

    def _row_names(self, table: NodeTable) -> np.ndarray[Any, np.dtype[np.object_]]:
        """`table.names` as an object array, made once per node list (as `_row_prefixes`)."""
        kept, array = self._name_array
        if not _same_names(kept, table.names):
            array = np.empty(len(table.names), dtype=object)
            array[:] = table.names
            self._name_array = (table.names, array)
        return array

    # ------------------------------------------------------------------ preempt

    def preempt(self, args: ExtenderPreemptionArgs) -> ExtenderPreemptionResult:
        """The candidate nodes on which the pod passes this profile's filters once victims are gone."""
        pod = self._pod(args.pod, "ExtenderPreemptionArgs")
        proposals: dict[str, tuple[list[str], list[Pod] | None, int]] = {}
        if args.node_name_to_meta_victims is not None:
            for node, mv in args.node_name_to_meta_victims.items():
                if mv is not None:
                    uids = [p.uid for p in mv.pods or ()]
                    proposals[node] = (uids, None, mv.num_pdb_violations)
        elif args.node_name_to_victims is not None:
            for node, v in args.node_name_to_victims.items():
                if v is not None:
                    victim_pods = list(v.pods or ())
                    uids = [p.metadata.uid for p in victim_pods]
                    proposals[node] = (uids, victim_pods, v.num_pdb_violations)
        out: dict[str, MetaVictims | None] = {}
        infos = {node: self._node_for_preemption(node) for node in proposals}
        known = [info for info in infos.values() if info is not None]
        table = NodeTable(known)
        self.current_table = table if self.state.not_ready() is not None else self.state.snapshot()
        state = CycleState()
        _, status, _ = self.framework.run_pre_filter(state, pod, table.all())
        if status is not None and not status.is_success():
            if not status.is_rejected():
                raise EngineError(status.message())
            return ExtenderPreemptionResult(node_name_to_meta_victims={})
        for node, (uids, pods, violations) in proposals.items():
            info = infos[node]
            meta = MetaVictims(pods=[MetaPod(uid=u) for u in uids], num_pdb_violations=violations)
            if info is None:
                out[node] = meta  # a node we do not know: nothing to object to
                continue
            if self._fits_without(pod, state, info, uids, pods):
                out[node] = meta
        return ExtenderPreemptionResult(node_name_to_meta_victims=out)

    def _node_for_preemption(self, name: str) -> NodeInfo | None:
        if self.state.has_node_cache and self.state.not_ready() is None:
            info = self.state.cache.node_info(name)
            if info is not None:
                return info
        node: Node | None = self.state.recent_node(name)
        return NodeInfo(node) if node is not None else None

    def _fits_without(
        self, pod: Pod, state: CycleState, info: NodeInfo, uids: list[str], pods: list[Pod] | None
    ) -> bool:
        trial = info.clone()
        trial_state = state.clone()
        by_uid = {p.metadata.uid: p for p in pods or ()}
        for uid in uids:
            victim = trial.pods.get(uid)
            if victim is None and uid in by_uid:
                continue  # not accounted on this node in our view: nothing to remove
            if victim is None:
                continue
            trial.remove_pod(uid)
            st = self.framework.run_pre_filter_extension_remove_pod(trial_state, pod, victim, trial)
            if st is not None:
                raise EngineError(st.message())
        status = self.framework.run_filter_on_node(trial_state, pod, trial)
        if status is not None and status.code == Code.ERROR:
            raise EngineError(status.message())
        return status is None

    # ------------------------------------------------------------------ bind

    def bind(self, args: ExtenderBindingArgs) -> ExtenderBindingResult:
        """POST the Binding. Any failure is reported, a 409 "already assigned" too, even to the same
        node: someone else bound the pod, and a success here would make kube-scheduler record a
        second `Scheduled` Event and count the pod twice."""
        if not args.pod_name or not args.node:
            raise WireError("ExtenderBindingArgs: PodName and Node are required")
        if self.binder is None:
            return ExtenderBindingResult(
                error="this extender has no API connection (start it with --kubeconfig), so it cannot bind"
            )
        with self.state.lock:
            known = self.state.pod(args.pod_namespace, args.pod_name)
        target = Pod(metadata=ObjectMeta(name=args.pod_name, namespace=args.pod_namespace, uid=args.pod_uid))
        try:
            self.binder(target, args.node)
        except Exception as exc:
            return ExtenderBindingResult(error=str(exc))
        if known is not None and (not args.pod_uid or known.metadata.uid == args.pod_uid):
            with self.state.lock:
                self.state.assume_bound(known, args.node)
        return ExtenderBindingResult()


def _resolve(table: NodeTable, names: list[str]) -> tuple[NodeSet, list[str]]:
    """The rows of `names` in `table` (read-only: a later request may reuse them) and the names it
    lacks. Every row in table order is the table's full set, whose columns plugins read as views."""
    # One C-level pass over the names (this is the hot path of a 5,000-node request).
    rows = np.fromiter(map(table.index.get, names, repeat(-1)), dtype=np.intp, count=len(names))
    missing = rows < 0
    if missing.any():
        unknown = [names[i] for i in np.flatnonzero(missing)]
        rows = rows[~missing]
    else:
        unknown = []
    if len(rows) == len(table.names) and np.array_equal(rows, np.arange(len(rows))):
        return table.all(), unknown
    rows.flags.writeable = False
    return NodeSet(table, rows), unknown


def _same_names(kept: list[str], names: list[str]) -> bool:
    """Whether two tables list the same nodes in the same order: the same list, or an equal one
    (compared element by element, by identity first: a new table reuses the names' objects)."""
    return kept is names or (len(kept) == len(names) and kept == names)


def scale_scores(
    totals: np.ndarray[Any, np.dtype[np.int64]], weight_sum: int
) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Weighted framework totals (0..100 per unit of weight) onto 0..10, rounding half up."""
    if weight_sum <= 0:
        return np.zeros_like(totals)
    denominator = MAX_NODE_SCORE * weight_sum
    scaled: np.ndarray[Any, np.dtype[np.int64]] = (totals * MAX_EXTENDER_PRIORITY * 2 + denominator) // (
        2 * denominator
    )
    clipped: np.ndarray[Any, np.dtype[np.int64]] = np.clip(scaled, 0, MAX_EXTENDER_PRIORITY)
    return clipped
