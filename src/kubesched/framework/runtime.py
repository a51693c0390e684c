"""Framework: runs one profile's plugins at every extension point, with upstream's semantics.

The scheduler drives it (scheduler/); this module only knows plugins, statuses and the NodeTable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ClusterEventWithHint
from kubesched.framework.interfaces import (
    EXTENSION_POINT_METHODS,
    BatchFilterPlugin,
    BindPlugin,
    ClusterObjectObserver,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    NodeLocalFilterPlugin,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreBindPreFlightPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    RepeatableFailurePlugin,
    RepeatsFailures,
    ReservePlugin,
    SortKeyPlugin,
    defines,
)
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import BatchFilterResult, IntArray, NodeSet, NodeTable, minus_ones
from kubesched.framework.outcomes import FilterOutcome, PermitOutcome
from kubesched.framework.placement import PlacementPoints
from kubesched.framework.plugin_calls import (
    OnNode,
    PluginReturnError,
    checked_status,
    crashed,
    error_status,
    pre_filter_result,
    shown,
)
from kubesched.framework.registry import Registry, instantiate
from kubesched.framework.scoring import ScoreOutcome, Scorer, Scoring
from kubesched.framework.signature import pod_signature, signers_of
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    MAX_NODE_SCORE,
    MAX_PERMIT_TIMEOUT,
    MAX_TOTAL_SCORE,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
)

#: A QueueSort plugin's `sort_key` (`SortKeyPlugin`).
SortKey = Callable[[QueuedPodInfo], tuple[Any, ...]]

#: How a Filter plugin is called: its batch form, its per-node form, or either (see `_filter_form`).
_BATCH, _PER_NODE, _BOTH = 0, 1, 2
#: Up to this many nodes, a plugin with both forms is called per node: a batch call costs a fixed
#: ~30 numpy operations (NodeResourcesFit: ~160 us on one node, per node ~10 us), and one node is
#: what preemption's dry run and a retry's re-filtered rows usually ask about. The forms agree
#: (each plugin's tests check it), so the choice changes only the cost.
PER_NODE_FILTER_MAX = 8


def _filter_form(cls: type) -> int:
    batch, per_node = defines(cls, "filter_nodes"), defines(cls, "filter")
    return _BOTH if batch and per_node else _BATCH if batch else _PER_NODE


class FrameworkError(InputError):
    """A profile cannot be built (no bind plugin, two queue sorts, a plugin that fails to start, ...)."""


class Framework:
    """One profile: its plugins by extension point, instantiated once and shared across points."""

    def __init__(
        self,
        profile_name: str,
        points: Mapping[str, Sequence[tuple[str, int]]],
        plugin_args: Mapping[str, Any],
        registry: Registry,
        handle: Handle,
        *,
        percentage_of_nodes_to_score: int | None = None,
    ) -> None:
        self.profile_name = profile_name
        self.handle = handle
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.plugins: dict[str, Any] = {}
        self._points: dict[str, list[tuple[str, Any]]] = {}
        self.score_weights: dict[str, int] = {}
        placement_weights: dict[str, int] = {}
        for point, refs in points.items():
            methods = EXTENSION_POINT_METHODS.get(point)
            if methods is None:
                raise FrameworkError(f"profile {profile_name!r}: unknown extension point {point!r}")
            entries: list[tuple[str, Any]] = []
            for name, weight in refs:
                cls = registry.resolve(name)
                if cls is None:
                    raise FrameworkError(f'profile {profile_name!r}: unknown plugin "{name}"')
                if not any(defines(cls, m) for m in methods):
                    raise FrameworkError(f'profile {profile_name!r}: plugin "{name}" does not extend {point}')
                if any(n == name for n, _ in entries):
                    raise FrameworkError(
                        f'profile {profile_name!r}: plugin "{name}" already registered at {point}'
                    )
                plugin = self.plugins.get(name)
                if plugin is None:
                    try:
                        plugin = instantiate(cls, plugin_args.get(name), handle, registry.features)
                    except InputError as exc:
                        raise FrameworkError(f'profile "{profile_name}": plugin "{name}": {exc}') from None
                    except Exception as exc:  # a plugin's own bug must not become a traceback
                        cause = f"{type(exc).__name__}: {exc}"
                        msg = f'profile "{profile_name}": plugin "{name}" failed to start: {cause}'
                        raise FrameworkError(msg) from None
                    self.plugins[name] = plugin
                entries.append((name, plugin))
                if point == "score":
                    self.score_weights[name] = weight if weight > 0 else 1
                elif point == "placementScore":
                    placement_weights[name] = weight if weight > 0 else 1
            self._points[point] = entries
        if len(self._points.get("queueSort", [])) != 1:
            raise FrameworkError(f"profile {profile_name!r}: exactly one queueSort plugin is required")
        if not self._points.get("bind"):
            raise FrameworkError(f"profile {profile_name!r}: at least one bind plugin is required")
        if sum(self.score_weights.values()) * MAX_NODE_SCORE > MAX_TOTAL_SCORE:
            raise FrameworkError(f"profile {profile_name!r}: total score of Score plugins could overflow")
        if len(self._points.get("placementGenerate", [])) > 1:
            raise FrameworkError(f"profile {profile_name!r}: at most one placementGenerate plugin is allowed")
        if sum(placement_weights.values()) * MAX_NODE_SCORE > MAX_TOTAL_SCORE:
            raise FrameworkError(
                f"profile {profile_name!r}: total score of PlacementScore plugins could overflow"
            )
        #: The pod-group cycle's placement points (TopologyAwareWorkloadScheduling).
        points_of = self._points.get
        self.placements = PlacementPoints(
            points_of("placementGenerate", []), points_of("placementScore", []), placement_weights
        )
        # PreFilter extensions belong to PreFilter plugins.
        self._pre_filter_ext = [
            (n, p) for n, p in self._points.get("preFilter", []) if defines(type(p), "add_pod")
        ]
        queue_sort = self._points["queueSort"][0][1]
        self._less = cast(QueueSortPlugin, queue_sort).less
        #: The QueueSort plugin's `sort_key` when it has one (`SortKeyPlugin`), for the queue's heap.
        self.sort_key: SortKey | None = (
            cast(SortKeyPlugin, queue_sort).sort_key if defines(type(queue_sort), "sort_key") else None
        )
        #: The plugins that see events of other kinds (`ClusterObjectObserver`), found once.
        self.object_observers: list[ClusterObjectObserver] = [
            p for p in self.plugins.values() if defines(type(p), "on_cluster_object")
        ]
        # Which form each Filter / Score plugin implements, looked up once rather than per cycle.
        #: (name, plugin, form): _BATCH, _PER_NODE, or _BOTH (batch on many nodes, per node on few).
        self._filters: list[tuple[str, Any, int]] = [
            (n, p, _filter_form(type(p))) for n, p in self._points.get("filter", [])
        ]
        self._all_filters_per_node = all(form != _BATCH for _, _, form in self._filters)
        #: Filter plugins that do not promise node-local verdicts (see `filters_read_only_the_node`).
        self._non_local_filters = frozenset(
            n for n, p, _ in self._filters if not isinstance(p, NodeLocalFilterPlugin)
        )
        self._scoring = Scoring(
            [Scorer.of(n, p, self.score_weights[n]) for n, p in self._points.get("score", [])]
        )
        # PreBind plugins with their pre-flight (None: none); a runtime Protocol isinstance per
        # binding cycle cost more than the rest of it.
        self._pre_bind_flights: list[Any] = [
            p.pre_bind_pre_flight if isinstance(p, PreBindPreFlightPlugin) else None
            for _, p in self._points.get("preBind", [])
        ]
        self._signers, self.unsigned_plugins = signers_of(self._points)
        #: The PreFilter, Filter and PostFilter plugins, when each promises repeatable failures
        #: (`RepeatableFailurePlugin`); None when one does not.
        self._failure_plugins = _failure_plugins(self._points)
        # Those with something to redo or check on a repeat (the others inherit RepeatsFailures'
        # answers): a repeat asks only them, since it must cost far less than an attempt.
        self._failure_redrawers = _overriding(self._failure_plugins, "repeat_failure")
        self._failure_survival_checks = _overriding(self._failure_plugins, "failure_survives_pod_changes")
        local = [(n, p) for n, p, _ in self._filters if isinstance(p, NodeLocalFilterPlugin)]
        self._local_filter_signers: list[tuple[str, Any]] | None = (
            local if all(defines(type(p), "sign_pod") for _, p in local) else None
        )

    # ------------------------------------------------------------------ repeated failures
    @property
    def repeats_failures(self) -> bool:
        """Whether each PreFilter, Filter and PostFilter plugin may let a failed attempt repeat."""
        return self._failure_plugins is not None

    def failure_repeats(self, state: CycleState, pod: Pod) -> bool:
        """After an attempt in which no node fit: whether the next pod with `pod`'s content would
        fail the same way on the unchanged cluster (every plugin says so, see
        `RepeatableFailurePlugin`). A plugin that raises says no."""
        plugins = self._failure_plugins
        if plugins is None:
            return False
        try:
            return all(p.failure_repeats(state, pod) for p in plugins)
        except Exception:  # a promise is an optimisation, never a reason to fail
            return False

    def repeat_failure(self, state: CycleState) -> None:
        """Redo what the failed attempt with `state` changed (random draws), for a repeat of it."""
        for plugin in self._failure_redrawers:
            plugin.repeat_failure(state)

    def failure_survives_pod_changes(self, state: CycleState, pod: Pod, table: NodeTable) -> bool:
        """Whether a failure with `state` may be repeated after pods changed on some nodes of
        `table` once those nodes, filtered again, give the same statuses (`RepeatableFailurePlugin`)."""
        if self._failure_plugins is None:
            return False
        try:  # a loop, not all() over a generator: asked for most repeated failures
            for p in self._failure_survival_checks:
                if not p.failure_survives_pod_changes(state, pod, table):
                    return False
        except Exception:  # a promise is an optimisation, never a reason to fail
            return False
        return True

    # ------------------------------------------------------------------ signatures (KEP-5598)
    @property
    def signs_pods(self) -> bool:
        """Whether every PreFilter/Filter/PreScore/Score plugin can sign pods (else none is signed)."""
        return self._signers is not None

    def sign_pod(self, pod: Pod) -> bytes | None:
        """The pod's signature, or None when it has none: signatures are off for this profile,
        or a plugin found the pod unsignable (or failed: a signature is an optimisation, never a
        reason to fail a pod)."""
        signers = self._signers
        if signers is None:
            return None
        signature, refused = pod_signature(pod, signers)
        if refused > 0:  # ask the refusing plugin first next time: unsignable pods stay cheap
            signers.insert(0, signers.pop(refused))
        return signature

    def filter_shape(self, pod: Pod) -> bytes | None:
        """What the node-local Filter plugins read from `pod`, as bytes (their `sign_pod`
        fragments): pods of one shape get the same node-local verdicts on the same nodes. None
        when one of them cannot say (no `sign_pod`, or the pod is unsignable to it)."""
        signers = self._local_filter_signers
        return None if signers is None else pod_signature(pod, signers)[0]

    # ------------------------------------------------------------------ introspection
    def plugins_at(self, point: str) -> list[str]:
        return [name for name, _ in self._points.get(point, [])]

    def has_score_plugins(self) -> bool:
        return bool(self._points.get("score"))

    @property
    def enqueue_events(self) -> dict[str, list[ClusterEventWithHint]]:
        """Events each plugin registered; plugins without EnqueueExtensions are moved by any event."""
        events: dict[str, list[ClusterEventWithHint]] = {}
        for name, plugin in self.plugins.items():
            if defines(type(plugin), "events_to_register"):
                events[name] = cast(EnqueueExtensions, plugin).events_to_register()
        return events

    # ------------------------------------------------------------------ queueing
    def run_pre_enqueue(self, pod: Pod) -> tuple[str, Status | None]:
        for name, plugin in self._points.get("preEnqueue", []):
            status = cast(PreEnqueuePlugin, plugin).pre_enqueue(pod)
            if status is not None and not status.is_success():
                status.with_plugin(name)
                if not status.is_rejected():
                    status = Status.as_error(f'running PreEnqueue plugin "{name}": {status.message()}')
                    status.plugin = name
                return name, status
        return "", None

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self._less(a, b)

    # ------------------------------------------------------------------ PreFilter
    def run_pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeSet
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Run every PreFilter plugin: (merged result, status, plugins that rejected or narrowed)."""
        result: PreFilterResult | None = None
        narrowing: list[str] = []
        rejected: set[str] = set()
        unschedulable: Status | None = None
        for name, plugin in self._points.get("preFilter", []):
            try:
                out = cast(PreFilterPlugin, plugin).pre_filter(state, pod, nodes)
                if out is None:
                    continue
                # A bare Status is the common answer (Skip, most often): no tuple to unpack.
                res, status = (None, out) if type(out) is Status else pre_filter_result(out)
            except Exception as exc:  # a plugin bug must fail this pod, not the scheduler
                return None, crashed(f'running PreFilter plugin "{name}"', name, exc), rejected
            if status is not None and status.code != Code.SUCCESS:
                if status.code == Code.SKIP:  # dropped here, so it needs no plugin name
                    state.skip_filter_plugins.add(name)
                    continue
                status.with_plugin(name)
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    rejected.add(name)
                    return None, status, rejected
                if status.is_rejected():
                    rejected.add(name)
                    if unschedulable is None:
                        unschedulable = status
                    continue
                return (
                    None,
                    error_status(f'running PreFilter plugin "{name}": {status.message()}', name),
                    rejected,
                )
            if res is not None and res.node_names is not None:
                narrowing.append(name)
                result = res if result is None else result.merge(res)
                if result.node_names is not None and not result.node_names:
                    if len(narrowing) > 1:
                        msg = f"node(s) didn't satisfy plugin(s) [{' '.join(narrowing)}] simultaneously"
                    else:
                        msg = f"node(s) didn't satisfy plugin {narrowing[0]}"
                    rejected.update(narrowing)
                    return (
                        None,
                        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg, plugin=narrowing[0]),
                        rejected,
                    )
        if result is not None and result.node_names is not None:
            rejected.update(narrowing)  # nodes it excluded report these plugins
        if unschedulable is not None:
            return result, unschedulable, rejected
        return result, None, rejected

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        for name, plugin in self._pre_filter_ext:
            if name in state.skip_filter_plugins:
                continue
            status = cast(PreFilterExtensions, plugin).add_pod(state, pod, to_add, node_info)
            if status is not None and not status.is_success():
                return error_status(f'running AddPod on PreFilter plugin "{name}": {status.message()}', name)
        return None

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        for name, plugin in self._pre_filter_ext:
            if name in state.skip_filter_plugins:
                continue
            status = cast(PreFilterExtensions, plugin).remove_pod(state, pod, to_remove, node_info)
            if status is not None and not status.is_success():
                return error_status(
                    f'running RemovePod on PreFilter plugin "{name}": {status.message()}', name
                )
        return None

    # ------------------------------------------------------------------ Filter
    def filters_read_only_the_node(self, skipped: set[str]) -> bool:
        """Whether every Filter plugin but `skipped` ones judges a node by the pod and that node alone."""
        return self._non_local_filters <= skipped

    def run_filter(self, state: CycleState, pod: Pod, nodes: NodeSet) -> FilterOutcome:
        """Run Filter plugins in order; each node keeps the status of the first plugin rejecting it.

        Batch plugins see the still-feasible rows at once; per-node plugins are called only for
        nodes still feasible. An Error status aborts the whole evaluation.
        """
        n = len(nodes)
        status_idx = minus_ones(n)
        statuses: list[Status] = []
        #: Positions (in `nodes`) still feasible; None while every node is.
        feasible_pos: npt.NDArray[np.intp] | None = None
        sub = nodes
        skip = state.skip_filter_plugins
        for name, plugin, form in self._filters:
            if (skip and name in skip) or len(sub) == 0:
                continue
            try:
                result = self._filter_nodes(name, plugin, form, state, pod, sub)
            except Exception as exc:
                error = crashed(f'running "{name}" filter plugin', name, exc)
                return FilterOutcome(nodes, status_idx, statuses, error)
            if not result.statuses:
                continue  # every code is -1: nothing failed
            passed = result.passed
            if passed.all():
                continue
            offset = len(statuses)
            for st in result.statuses:
                st.with_plugin(name)
                if not st.is_rejected():
                    msg = f'running "{name}" filter plugin: {st.message()}'
                    return FilterOutcome(nodes, status_idx, statuses, error_status(msg, name))
            statuses.extend(result.statuses)
            if feasible_pos is None and offset == 0:
                # The first plugin to reject anyone: its codes are the statuses' indexes as they
                # stand, passes (any negative code) -1; one pass instead of three masked ones.
                np.maximum(result.codes, -1, out=status_idx)
                feasible_pos = np.flatnonzero(passed)
            elif feasible_pos is None:
                failed = ~passed
                status_idx[failed] = result.codes[failed] + offset
                feasible_pos = np.flatnonzero(passed)
            else:
                failed = ~passed
                status_idx[feasible_pos[failed]] = result.codes[failed] + offset
                feasible_pos = feasible_pos[passed]
            sub = NodeSet(nodes.table, nodes.rows[feasible_pos])
        return FilterOutcome(nodes, status_idx, statuses)

    def run_each_filter(self, state: CycleState, pod: Pod, nodes: NodeSet) -> dict[str, FilterOutcome]:
        """Every Filter plugin on every node of `nodes`, not stopping at the first rejection.

        For explanations: what else stands in the way on a node, besides the first plugin that said
        no. The scheduling cycle never uses it. A plugin that fails gets an outcome with `error`.
        """
        out: dict[str, FilterOutcome] = {}
        skip = state.skip_filter_plugins
        for name, plugin, form in self._filters:
            if name in skip:
                continue
            try:
                result = self._filter_nodes(name, plugin, form, state, pod, nodes)
            except Exception as exc:
                passed = np.full(len(nodes), -1, dtype=np.int32)
                out[name] = FilterOutcome(
                    nodes, passed, [], crashed(f'running "{name}" filter plugin', name, exc)
                )
                continue
            for st in result.statuses:
                st.with_plugin(name)
            out[name] = FilterOutcome(nodes, np.asarray(result.codes, dtype=np.int32), list(result.statuses))
        return out

    def _filter_nodes(
        self, name: str, plugin: Any, form: int, state: CycleState, pod: Pod, nodes: NodeSet
    ) -> BatchFilterResult:
        if form == _PER_NODE or (form == _BOTH and len(nodes) <= PER_NODE_FILTER_MAX):
            return self._filter_per_node(plugin, state, pod, nodes)
        result = cast(BatchFilterPlugin, plugin).filter_nodes(state, pod, nodes)
        if not isinstance(result, BatchFilterResult):
            raise PluginReturnError(
                f"returned {shown(result)} from filter_nodes; expected a BatchFilterResult"
            )
        return result

    @staticmethod
    def _filter_per_node(plugin: Any, state: CycleState, pod: Pod, sub: NodeSet) -> BatchFilterResult:
        per_node = cast(FilterPlugin, plugin)
        codes = minus_ones(len(sub))
        distinct: dict[Status, int] = {}
        for i, info in enumerate(sub.infos):
            try:
                status = per_node.filter(state, pod, info)
                if status is None:
                    continue
                if type(status) is not Status:
                    status = checked_status(status, "Filter")
            except Exception as exc:
                raise OnNode(info.name, exc) from exc
            if status is not None and status.code != Code.SUCCESS:
                codes[i] = distinct.setdefault(status, len(distinct))
        return BatchFilterResult(codes, list(distinct))

    def run_filter_on_node(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """All Filter plugins on one (possibly cloned) NodeInfo: for nominated pods and preemption.

        Preemption asks this for every victim it tries to spare: when every plugin has a per-node
        form they are called directly, without building a one-row NodeTable for the batch forms.
        """
        if self._all_filters_per_node:
            return self._run_per_node_filters(state, pod, node_info)
        table = NodeTable([node_info])
        outcome = self.run_filter(state, pod, table.all())
        if outcome.error is not None:
            return outcome.error
        if outcome.status_idx[0] >= 0:
            return outcome.statuses[int(outcome.status_idx[0])]
        return None

    def _run_per_node_filters(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """`run_filter` on one node through the per-node forms: the same statuses and errors."""
        skip = state.skip_filter_plugins
        for name, plugin, _ in self._filters:
            if skip and name in skip:
                continue
            try:
                status = cast(FilterPlugin, plugin).filter(state, pod, node_info)
                if status is None:
                    continue
                if type(status) is not Status:
                    status = checked_status(status, "Filter")
            except Exception as exc:
                return crashed(f'running "{name}" filter plugin', name, exc, node_info.name)
            if status is None or status.code == Code.SUCCESS:
                continue
            status.with_plugin(name)
            if not status.is_rejected():
                return error_status(f'running "{name}" filter plugin: {status.message()}', name)
            return status
        return None

    # ------------------------------------------------------------------ PostFilter
    def run_post_filter(
        self, state: CycleState, pod: Pod, node_to_status: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        """Plugins in order until one succeeds, is unresolvable or errs; rejections accumulate.

        A rejecting plugin's result is still kept when it changes the nomination (e.g. clears it).
        """
        reasons: list[str] = []
        kept: PostFilterResult | None = None
        rejector = ""
        for name, plugin in self._points.get("postFilter", []):
            try:
                out = cast(PostFilterPlugin, plugin).post_filter(state, pod, node_to_status)
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise PluginReturnError(
                        f"returned {shown(out)} from PostFilter; "
                        "expected (PostFilterResult or None, Status or None)"
                    )
                result, status = out[0], checked_status(out[1], "PostFilter")
            except Exception as exc:
                return None, crashed(f'running PostFilter plugin "{name}"', name, exc)
            if status is None:
                return result, Status(plugin=name)
            status.with_plugin(name)
            if status.is_success():
                return result, status  # its message joins the FailedScheduling one (preemption)
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return result, status
            if not status.is_rejected():
                return None, error_status(f'running PostFilter plugin "{name}": {status.message()}', name)
            if result is not None and result.nominated_node_name is not None:
                kept = result
            reasons.extend(status.all_reasons())
            rejector = rejector or name
        return kept, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)

    # ------------------------------------------------------------------ PreScore / Score
    def run_pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        for name, plugin in self._points.get("preScore", []):
            try:
                status = cast(PreScorePlugin, plugin).pre_score(state, pod, nodes)
                if status is None:
                    continue
                if type(status) is not Status:
                    status = checked_status(status, "PreScore")
            except Exception as exc:
                return crashed(f'running PreScore plugin "{name}"', name, exc)
            if status is None or status.code == Code.SUCCESS:
                continue
            if status.code == Code.SKIP:
                state.skip_score_plugins.add(name)
                continue
            return error_status(f'running PreScore plugin "{name}": {status.message()}', name)
        return None

    def run_score(
        self, state: CycleState, pod: Pod, nodes: NodeSet, *, keep_raw: bool = False, normalize: bool = True
    ) -> ScoreOutcome:
        """The Score plugins over `nodes` (scoring.Scoring.run)."""
        return self._scoring.run(state, pod, nodes, keep_raw=keep_raw, normalize=normalize)

    def normalized_totals(
        self, state: CycleState, pod: Pod, nodes: NodeSet, raw: Mapping[str, IntArray]
    ) -> tuple[IntArray, Status | None]:
        """Weighted totals from scores before NormalizeScore (scoring.Scoring.normalized_totals)."""
        return self._scoring.normalized_totals(state, pod, nodes, raw)

    # ------------------------------------------------------------------ Reserve / Permit
    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for name, plugin in self._points.get("reserve", []):
            try:
                status = checked_status(cast(ReservePlugin, plugin).reserve(state, pod, node_name), "Reserve")
            except Exception as exc:
                return crashed(f'running Reserve plugin "{name}"', name, exc, node_name)
            if status is not None and not status.is_success():
                status.with_plugin(name)
                if status.is_rejected():
                    return status
                return error_status(f'running Reserve plugin "{name}": {status.message()}', name)
        return None

    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Every Reserve plugin's Unreserve, in reverse order (they must be idempotent)."""
        for _name, plugin in reversed(self._points.get("reserve", [])):
            cast(ReservePlugin, plugin).unreserve(state, pod, node_name)

    def run_permit(self, state: CycleState, pod: Pod, node_name: str) -> PermitOutcome:
        waits: dict[str, float] = {}
        for name, plugin in self._points.get("permit", []):
            try:
                out = cast(PermitPlugin, plugin).permit(state, pod, node_name)
                status, timeout = out if isinstance(out, tuple) else (out, 0.0)
                status = checked_status(status, "Permit")
            except Exception as exc:
                return PermitOutcome(crashed(f'running Permit plugin "{name}"', name, exc, node_name))
            if status is None or status.is_success():
                continue
            status.with_plugin(name)
            if status.is_rejected():
                return PermitOutcome(status)
            if status.is_wait():
                waits[name] = min(max(float(timeout), 0.0), MAX_PERMIT_TIMEOUT)
                continue
            return PermitOutcome(error_status(f'running Permit plugin "{name}": {status.message()}', name))
        if waits:
            msg = f'one or more plugins asked to wait and no plugin rejected pod "{pod.metadata.name}"'
            return PermitOutcome(Status(Code.WAIT, msg), waits)
        return PermitOutcome(None)

    # ------------------------------------------------------------------ binding cycle
    def pre_bind_has_work(self, state: CycleState, pod: Pod, node_name: str) -> bool:
        """Whether some PreBind plugin has work for the pod (upstream's RunPreBindPreFlights not
        Skip): its pre-flight says so, fails, or it has no pre-flight."""
        for pre_flight in self._pre_bind_flights:
            if pre_flight is None:
                return True
            try:
                status = pre_flight(state, pod, node_name)
            except Exception:  # PreBind itself will run and report it
                return True
            if status is None or not status.is_skip():
                return True
        return False

    def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for name, plugin in self._points.get("preBind", []):
            try:
                status = checked_status(
                    cast(PreBindPlugin, plugin).pre_bind(state, pod, node_name), "PreBind"
                )
            except Exception as exc:
                return crashed(f'running PreBind plugin "{name}"', name, exc, node_name)
            if status is not None and not status.is_success() and not status.is_skip():
                status.with_plugin(name)
                if status.is_rejected():
                    return status
                return error_status(f'running PreBind plugin "{name}": {status.message()}', name)
        return None

    def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Bind plugins in order; the first that does not Skip decides."""
        for name, plugin in self._points.get("bind", []):
            try:
                status = checked_status(cast(BindPlugin, plugin).bind(state, pod, node_name), "Bind")
            except Exception as exc:
                return crashed(f'running Bind plugin "{name}"', name, exc, node_name)
            if status is not None and status.is_skip():
                continue
            if status is None or status.is_success():
                return None
            status.with_plugin(name)
            if status.is_rejected():
                return status
            wrapped = error_status(f'running Bind plugin "{name}": {status.message()}', name)
            if wrapped.error is not None:  # the plugin's error stays reachable, as upstream's %w
                wrapped.error.__cause__ = status.error
            return wrapped
        return Status(Code.SKIP)

    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for _name, plugin in self._points.get("postBind", []):
            cast(PostBindPlugin, plugin).post_bind(state, pod, node_name)


def _overriding(plugins: list[RepeatableFailurePlugin] | None, method: str) -> list[RepeatableFailurePlugin]:
    """The plugins whose `method` is their own rather than `RepeatsFailures`' default."""
    default = getattr(RepeatsFailures, method)
    return [p for p in plugins or () if getattr(type(p), method, None) is not default]


def _failure_plugins(points: Mapping[str, list[tuple[str, Any]]]) -> list[RepeatableFailurePlugin] | None:
    """Each plugin at PreFilter, Filter or PostFilter once, or None when one of them does not
    promise repeatable failures."""
    plugins: dict[str, Any] = {}
    for point in ("preFilter", "filter", "postFilter"):
        plugins.update(points.get(point, []))
    if not all(isinstance(p, RepeatableFailurePlugin) for p in plugins.values()):
        return None
    return list(plugins.values())
