"""PodTopologySpread: keep the pods of a workload evenly spread over topology domains.

A topology domain is one value of a node label (`topology.kubernetes.io/zone=us-east-1a`, one
hostname, ...). A pod's `topologySpreadConstraints` say how far apart the number of matching pods
per domain may drift (`maxSkew`); `DoNotSchedule` constraints filter nodes, `ScheduleAnyway`
constraints score them. Pods without constraints get the profile's default constraints, with a
selector made from the Services and the controller (ReplicationController, ReplicaSet,
StatefulSet) that select the pod.

Batch first: the matching pods are counted once per cycle (PreFilter / PreScore), per node, and
folded into per-domain counts with `np.bincount` over the interned label ids of the NodeTable, so
Filter and Score are a handful of array operations over all nodes. Per-row counts are remembered
per NodeTable and selector (`PodRowCounts`, fed by the table's pod change log), so consecutive
pods of one workload recount only the nodes whose pods changed, without visiting the others. The
per-node `filter` / `score` forms read the same cycle state and give the same answers.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.api.label_keys import selector_with_label_keys
from kubesched.api.objects import (
    LabelSelector,
    LabelSelectorRequirement,
    Node,
    OwnerReference,
    Pod,
    TopologySpreadConstraint,
)
from kubesched.api.selectors import (
    LabelSelectorMatcher,
    RequiredNodeAffinity,
    compile_label_selector,
    qualified_name_error,
)
from kubesched.api.taints import find_untolerated_taint
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interfaces import (
    BatchFilterPlugin,
    BatchScorePlugin,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    RepeatsFailures,
    ScoreExtensions,
    ScorePlugin,
    Scores,
)
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import (
    BatchFilterResult,
    BoolArray,
    IndexArray,
    LabelColumn,
    NodeSet,
    NodeTable,
    PodRowCounts,
)
from kubesched.framework.signature import SignFragment
from kubesched.framework.status import Status
from kubesched.framework.types import MAX_NODE_SCORE, PreFilterResult
from kubesched.plugins._node_selector_batch import BatchNodeSelector, node_selector_map_mask

__all__ = [
    "DO_NOT_SCHEDULE",
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "LIST_DEFAULTING",
    "SCHEDULE_ANYWAY",
    "SYSTEM_DEFAULTING",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "DefaultConstraint",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
]

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
HONOR = "Honor"
IGNORE = "Ignore"

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"

PRE_FILTER_STATE_KEY = "PreFilterPodTopologySpread"
PRE_SCORE_STATE_KEY = "PreScorePodTopologySpread"

#: The global minimum when a constraint has no domain at all (upstream starts its search there).
_MAX_INT32: Final = 2**31 - 1
#: Distinct (namespace, selector) pairs whose per-node counts are remembered between cycles.
_MAX_REMEMBERED_SELECTORS: Final = 64
#: Nodes remembered per selector before the memo starts over (bounds memory on huge clusters).
_MAX_REMEMBERED_NODES: Final = 200_000

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


# --------------------------------------------------------------------------- args


class DefaultConstraint(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """A `TopologySpreadConstraint` applied to pods that have none; its selector comes from the pod.

    Every field has a zero default (as upstream decodes it) so that a missing `maxSkew` or
    `topologyKey` is reported by validation with its path instead of failing the decoding.
    """

    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


#: What `defaultingType: System` spreads by: soft spreading over hosts (maxSkew 3) and zones (5).
SYSTEM_DEFAULT_CONSTRAINTS: tuple[DefaultConstraint, ...] = (
    DefaultConstraint(max_skew=3, topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY),
    DefaultConstraint(max_skew=5, topology_key=LABEL_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY),
)

_ACTIONS = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
_DEFAULTING_TYPES = (SYSTEM_DEFAULTING, LIST_DEFAULTING)


def _supported(values: Iterable[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


class PodTopologySpreadArgs(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """pluginConfig args (kind PodTopologySpreadArgs).

    `defaultingType: System` (the default) uses the built-in default constraints and requires
    `defaultConstraints` to be empty; `List` uses `defaultConstraints` (empty: no defaults).
    """

    default_constraints: list[DefaultConstraint] = []
    defaulting_type: str = SYSTEM_DEFAULTING

    def __post_init__(self) -> None:
        if not self.defaulting_type:  # upstream defaulting: unset means System
            self.defaulting_type = SYSTEM_DEFAULTING

    def validate(self) -> list[InputError]:
        """Field errors with paths relative to the args, e.g. `defaultConstraints[0].maxSkew`."""
        errors: list[InputError] = []
        if self.defaulting_type not in _DEFAULTING_TYPES:
            errors.append(
                InputError(
                    f'unsupported value "{self.defaulting_type}": supported values: '
                    f"{_supported(_DEFAULTING_TYPES)}",
                    path="defaultingType",
                )
            )
        elif self.defaulting_type == SYSTEM_DEFAULTING and self.default_constraints:
            errors.append(
                InputError(
                    'must be "List" when defaultConstraints are not empty ("System" uses the built-in ones)',
                    path="defaultingType",
                )
            )
        seen: set[tuple[str, str]] = set()
        for i, c in enumerate(self.default_constraints):
            path = f"defaultConstraints[{i}]"
            if c.max_skew <= 0:
                errors.append(InputError("must be greater than zero", path=f"{path}.maxSkew"))
            if not c.topology_key:
                errors.append(InputError("can not be empty", path=f"{path}.topologyKey"))
            else:
                why = qualified_name_error(c.topology_key)
                if why is not None:
                    errors.append(
                        InputError(f'invalid label key "{c.topology_key}": {why}', path=f"{path}.topologyKey")
                    )
            if not c.when_unsatisfiable:
                errors.append(InputError("can not be empty", path=f"{path}.whenUnsatisfiable"))
            elif c.when_unsatisfiable not in _ACTIONS:
                errors.append(
                    InputError(
                        f'unsupported value "{c.when_unsatisfiable}": '
                        f"supported values: {_supported(_ACTIONS)}",
                        path=f"{path}.whenUnsatisfiable",
                    )
                )
            if c.label_selector is not None:
                errors.append(
                    InputError(
                        "constraint must not define a selector, as they deduced for each pod",
                        path=f"{path}.labelSelector",
                    )
                )
            pair = (c.topology_key, c.when_unsatisfiable)
            if pair in seen:
                errors.append(InputError(f'duplicate value "{{{pair[0]}, {pair[1]}}}"', path=path))
            seen.add(pair)
        return errors


# --------------------------------------------------------------------------- constraints

_SpecConstraint = TopologySpreadConstraint | DefaultConstraint


@dataclass(frozen=True, slots=True)
class _Constraint:
    """A constraint ready to evaluate: selector compiled, policies and minDomains defaulted."""

    max_skew: int
    topology_key: str
    min_domains: int
    #: nodeAffinityPolicy Honor (default): only nodes matching the pod's required affinity count.
    honor_affinity: bool
    #: nodeTaintsPolicy Honor (default Ignore): only nodes whose taints the pod tolerates count.
    honor_taints: bool
    matcher: LabelSelectorMatcher
    #: The selector's identity, so constraints (and cycles) with one selector share pod counts.
    selector_key: bytes
    #: False for an empty (or absent) selector: upstream never counts existing pods for those.
    counts_pods: bool


def _constraint(c: _SpecConstraint, selector: LabelSelector | None, path: str) -> _Constraint:
    matcher = compile_label_selector(selector, path=path)
    return _Constraint(
        max_skew=c.max_skew,
        topology_key=c.topology_key,
        min_domains=1 if c.min_domains is None else c.min_domains,
        honor_affinity=(c.node_affinity_policy or HONOR) == HONOR,
        honor_taints=(c.node_taints_policy or IGNORE) == HONOR,
        matcher=matcher,
        selector_key=msgspec.json.encode(selector),
        counts_pods=not (matcher.matches_everything or matcher.matches_nothing),
    )


def _group_version(api_version: str) -> tuple[str, str] | None:
    """(group, version) of an apiVersion as Go's ParseGroupVersion reads it; None if malformed."""
    if not api_version or api_version == "/":
        return ("", "")
    parts = api_version.split("/")
    if len(parts) == 1:
        return ("", parts[0])
    if len(parts) == 2:
        return (parts[0], parts[1])
    return None


def _controller_of(pod: Pod) -> OwnerReference | None:
    for ref in pod.metadata.owner_references:
        if ref.controller:
            return ref
    return None


def _named(objects: Sequence[Any], namespace: str, name: str) -> Any:
    for obj in objects:
        if obj.metadata.namespace == namespace and obj.metadata.name == name:
            return obj
    return None


def _has_all_keys(table: NodeTable, rows: IndexArray, constraints: Sequence[_Constraint]) -> BoolArray:
    """Rows carrying the topology key of every constraint."""
    ok = np.ones(len(rows), dtype=np.bool_)
    for key in dict.fromkeys(c.topology_key for c in constraints):
        ok &= table.label_column(key).ids[rows] >= 0
    return ok


def _labels_have_all_keys(labels: Mapping[str, str], constraints: Sequence[_Constraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


class _NodeInclusion:
    """Which rows a constraint counts under its nodeAffinityPolicy / nodeTaintsPolicy.

    The pod's required node affinity and its tolerations are evaluated at most once per cycle,
    and only if some constraint honours them.
    """

    __slots__ = ("_affinity", "_nodes", "_pod", "_tolerated")

    def __init__(self, pod: Pod, nodes: NodeSet) -> None:
        self._pod = pod
        self._nodes = nodes
        self._affinity: BoolArray | None = None
        self._tolerated: BoolArray | None = None

    def mask(self, c: _Constraint) -> BoolArray:
        ok = np.ones(len(self._nodes), dtype=np.bool_)
        if c.honor_affinity:
            ok &= self._affinity_mask()
        if c.honor_taints:
            ok &= self._tolerated_mask()
        return ok

    def _affinity_mask(self) -> BoolArray:
        if self._affinity is None:
            pod, nodes = self._pod, self._nodes
            mask = node_selector_map_mask(pod.spec.node_selector, nodes)
            affinity = pod.spec.affinity
            node_affinity = affinity.node_affinity if affinity is not None else None
            required = (
                node_affinity.required_during_scheduling_ignored_during_execution
                if node_affinity is not None
                else None
            )
            if required is not None:
                mask &= BatchNodeSelector(required).mask(nodes)
            self._affinity = mask
        return self._affinity

    def _tolerated_mask(self) -> BoolArray:
        if self._tolerated is None:
            tolerations = self._pod.spec.tolerations
            per_row = self._nodes.table.match_taint_sets(
                lambda taints: find_untolerated_taint(taints, tolerations) is None
            )
            self._tolerated = per_row[self._nodes.rows]
        return self._tolerated


def _node_included(c: _Constraint, pod: Pod, required: RequiredNodeAffinity, node: Node) -> bool:
    """The per-node form of `_NodeInclusion.mask`."""
    if c.honor_affinity and not required.matches(node.metadata.name, node.metadata.labels):
        return False
    return not (c.honor_taints and find_untolerated_taint(node.spec.taints, pod.spec.tolerations) is not None)


# --------------------------------------------------------------------------- counting pods


def _count_matching(pods: Iterable[PodInfo], namespace: str, matcher: LabelSelectorMatcher) -> int:
    """Pods of `namespace`, not terminating, whose labels the selector matches."""
    n = 0
    for pi in pods:
        meta = pi.pod.metadata
        if meta.deletion_timestamp is None and meta.namespace == namespace and matcher.matches(meta.labels):
            n += 1
    return n


def _pod_counter(namespace: str, matcher: LabelSelectorMatcher) -> Callable[[NodeInfo], int]:
    """Matching pods on one node, for `PodRowCounts`."""

    def count(info: NodeInfo) -> int:
        return _count_matching(info.pods.values(), namespace, matcher)

    return count


class _PodCounts:
    """Matching pods per node for one (namespace, selector), remembered per NodeInfo generation.

    A NodeInfo's generation changes whenever a pod is added to or removed from it, and a pod
    update is a remove plus an add, so an unchanged (object, generation) pair has the same pods.
    The object itself is kept with its entry, so a recycled `id()` can never hit a stale one.
    """

    __slots__ = ("_matcher", "_namespace", "_seen")

    def __init__(self, namespace: str, matcher: LabelSelectorMatcher) -> None:
        self._namespace = namespace
        self._matcher = matcher
        self._seen: dict[int, tuple[NodeInfo, int, int]] = {}

    def on(self, info: NodeInfo) -> int:
        seen = self._seen.get(id(info))
        if seen is not None and seen[0] is info and seen[1] == info.generation:
            return seen[2]
        n = _count_matching(info.pods.values(), self._namespace, self._matcher)
        if len(self._seen) >= _MAX_REMEMBERED_NODES:
            self._seen.clear()
        self._seen[id(info)] = (info, info.generation, n)
        return n

    def rows(self, infos: Sequence[NodeInfo], rows: IndexArray) -> IntArray:
        on = self.on
        return np.fromiter((on(infos[r]) for r in rows.tolist()), dtype=np.int64, count=len(rows))


# --------------------------------------------------------------------------- PreFilter state


class _Domains:
    """Matching pods per topology value of one DoNotSchedule constraint, and the global minimum.

    Values are the interned ids of the PreFilter table's label column, so a Filter over that table
    is a gather; values met later through `add` on a node outside the table go to `extra`.
    A value is a domain once an eligible node carries it, even with 0 matching pods.
    """

    __slots__ = ("column", "counts", "extra", "min_domains", "min_match", "registered")

    def __init__(
        self,
        column: LabelColumn,
        counts: IntArray,
        registered: BoolArray,
        min_domains: int,
        extra: dict[str, int] | None = None,
    ) -> None:
        self.column = column
        self.counts = counts
        self.registered = registered
        self.min_domains = min_domains
        self.extra: dict[str, int] = extra if extra is not None else {}
        self.min_match = 0
        self._refresh_min()

    def _refresh_min(self) -> None:
        """The global minimum; 0 while there are fewer domains than minDomains."""
        present = self.counts[self.registered]
        num_domains = len(present) + len(self.extra)
        if num_domains < self.min_domains:
            self.min_match = 0
            return
        lowest = _MAX_INT32
        if len(present):
            lowest = min(lowest, int(present.min()))
        if self.extra:
            lowest = min(lowest, *self.extra.values())
        self.min_match = lowest

    def count_of(self, value: str) -> int:
        i = self.column.index.get(value)
        if i is not None:
            return int(self.counts[i])
        return self.extra.get(value, 0)

    def lookup(self, column: LabelColumn) -> IntArray:
        """Counts aligned with another table's column of the same key (a 1-node table, say)."""
        if column is self.column:
            return self.counts
        return np.fromiter(
            (self.count_of(v) for v in column.values), dtype=np.int64, count=len(column.values)
        )

    def add(self, value: str, delta: int) -> None:
        i = self.column.index.get(value)
        if i is not None:
            self.counts[i] += delta
            self.registered[i] = True
        else:
            self.extra[value] = self.extra.get(value, 0) + delta
        self._refresh_min()

    def clone(self) -> _Domains:
        return _Domains(
            self.column, self.counts.copy(), self.registered.copy(), self.min_domains, dict(self.extra)
        )


@dataclass(slots=True)
class _FilterState:
    """DoNotSchedule constraints of the pod with their per-domain counts (PreFilter's output)."""

    constraints: list[_Constraint]
    domains: list[_Domains]
    #: Per constraint: does its selector match the incoming pod (the pod would add 1 to its domain)?
    self_match: list[bool]
    table: NodeTable
    required: RequiredNodeAffinity

    def clone(self) -> _FilterState:
        return _FilterState(
            self.constraints, [d.clone() for d in self.domains], self.self_match, self.table, self.required
        )


# --------------------------------------------------------------------------- PreScore state


def _slots(column: LabelColumn) -> IndexArray:
    """Per row, the domain slot of a key for scoring: its value id, or the id of "" when missing.

    Upstream reads a missing label as "" when system-default spreading lets nodes without the key
    through, so such nodes share the domain of nodes labelled with an empty value. If no node has
    that empty value the slot is `len(values)`, one past the interned ids.
    """
    missing = column.index.get("", len(column.values))
    ids = column.ids.astype(np.intp)
    out: IndexArray = np.where(ids < 0, missing, ids)
    return out


@dataclass(frozen=True, slots=True)
class _ScoreState:
    """ScheduleAnyway constraints with their topology weights and per-domain counts."""

    constraints: list[_Constraint]
    #: Nodes lacking a key are ignored (score 0) unless spreading comes from the System defaults.
    require_all: bool
    table: NodeTable
    columns: list[LabelColumn]
    weights: list[float]
    #: Per constraint: matching pods per domain slot (see `_slots`); None for the hostname key.
    domain_counts: list[IntArray | None]
    #: Per hostname constraint: the counter of matching pods on the scored node itself.
    host_counts: list[_PodCounts | None]
    #: The same counts for every row of `table` at once (None where `host_counts` is None).
    host_rows: list[PodRowCounts | None]

    def clone(self) -> _ScoreState:
        return self

    def ignored(self, nodes: NodeSet) -> BoolArray:
        if not self.require_all:
            return np.zeros(len(nodes), dtype=np.bool_)
        return ~_has_all_keys(nodes.table, nodes.rows, self.constraints)


def _by_value(counts: IntArray, own: LabelColumn, other: LabelColumn) -> IntArray:
    """`counts` (indexed by `own`'s value ids) re-indexed by the value ids of `other`; unknown -> 0."""
    index = own.index
    return np.fromiter(
        (counts[index[v]] if v in index else 0 for v in other.values), dtype=np.int64, count=len(other.values)
    )


def _round_half_away(x: FloatArray) -> IntArray:
    """Go's math.Round for non-negative values, exactly (x - floor(x) is exact in binary)."""
    low = np.floor(x)
    out: IntArray = (low + (x - low >= 0.5)).astype(np.int64)
    return out


def _round_one(x: float) -> int:
    low = math.floor(x)
    return low + (1 if x - low >= 0.5 else 0)


# --------------------------------------------------------------------------- the plugin


class _StateError(RuntimeError):
    """Filter or Score ran without the state its Pre* point writes (that point was disabled)."""


class PodTopologySpread(
    PreFilterPlugin,
    PreFilterExtensions,
    FilterPlugin,
    BatchFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    BatchScorePlugin,
    ScoreExtensions,
    EnqueueExtensions,
    RepeatsFailures,
):
    """Filter nodes by the pod's DoNotSchedule spread constraints and score them by its
    ScheduleAnyway ones (or by the profile's default constraints when the pod has none).

    Filter: a node without a constraint's topology key is UnschedulableAndUnresolvable; a node
    whose domain would exceed `maxSkew` over the global minimum (0 while there are fewer than
    `minDomains` domains) is Unschedulable. Score: matching pods per domain, weighted by the log
    of the number of domains, normalized so the least crowded node gets 100.
    """

    name: ClassVar[str] = "PodTopologySpread"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = (
        "Service",
        "ReplicaSet",
        "StatefulSet",
        "ReplicationController",
    )
    args_type: ClassVar[type[PodTopologySpreadArgs]] = PodTopologySpreadArgs

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """Unsignable with spread constraints: its own, or the profile's defaults (System's too)."""
        if pod.spec.topology_spread_constraints:
            return Status.unschedulable("pods with topology constraints are not signable")
        if self._defaults:
            return Status.unschedulable("pods with default topology constraints are not signable")
        return []

    def __init__(self, args: PodTopologySpreadArgs | None = None, handle: Handle | None = None) -> None:
        self.args = args if args is not None else PodTopologySpreadArgs()
        errors = self.args.validate()  # config decoding validates too; a direct caller gets the same error
        if errors:
            raise errors[0]
        self.handle = handle
        self._system_defaulted = self.args.defaulting_type == SYSTEM_DEFAULTING
        self._defaults: tuple[DefaultConstraint, ...] = (
            SYSTEM_DEFAULT_CONSTRAINTS if self._system_defaulted else tuple(self.args.default_constraints)
        )
        self._counters: OrderedDict[tuple[str, bytes], _PodCounts] = OrderedDict()
        #: Per (namespace, selector): matching pods per row of `_rows_table`, kept current from
        #: the table's pod change log, so a cycle reads them instead of visiting every node.
        self._row_counters: OrderedDict[tuple[str, bytes], PodRowCounts] = OrderedDict()
        self._rows_table: NodeTable | None = None

    # ------------------------------------------------------------------ constraints of a pod
    def _constraints(self, pod: Pod, action: str) -> list[_Constraint]:
        """The pod's constraints with `whenUnsatisfiable == action`, or the defaults. Raises InputError."""
        spec = pod.spec.topology_spread_constraints
        if spec:
            labels = pod.metadata.labels
            return [
                _constraint(
                    c,
                    # v1.37.2 merges the pod's current values again, on top of the API server's
                    # merge at creation (checked on the binary: a label changed since then ANDs both).
                    selector_with_label_keys(c.label_selector, labels, c.match_label_keys),
                    f"spec.topologySpreadConstraints[{i}].labelSelector",
                )
                for i, c in enumerate(spec)
                if c.when_unsatisfiable == action
            ]
        chosen = [c for c in self._defaults if c.when_unsatisfiable == action]
        if not chosen:
            return []
        selector = self._default_selector(pod)
        if selector is None:
            return []
        return [_constraint(c, selector, "defaultSelector") for c in chosen]

    def _list(self, kind: str) -> Sequence[Any]:
        return self.handle.lister(kind) if self.handle is not None else ()

    def _default_selector(self, pod: Pod) -> LabelSelector | None:
        """The selector of the Services and the controller selecting the pod; None when empty.

        Services of the pod's namespace whose selector matches the pod's labels contribute their
        selectors; a controlling ReplicationController (v1) its selector, a controlling ReplicaSet
        or StatefulSet (apps/v1) its label selector's requirements, all ANDed.
        """
        labels = pod.metadata.labels
        namespace = pod.metadata.namespace
        match_labels: dict[str, str] = {}
        # A Service selects a pod only through a non-empty selector that the pod's labels carry:
        # a pod without labels needs no listing.
        for svc in self._list("Service") if labels else ():
            selector = svc.spec.selector
            if (
                svc.metadata.namespace == namespace
                and selector
                and all(labels.get(k) == v for k, v in selector.items())
            ):
                match_labels.update(selector)
        expressions: list[LabelSelectorRequirement] = []
        owner = _controller_of(pod)
        gv = _group_version(owner.api_version) if owner is not None else None
        if owner is not None and gv == ("", "v1") and owner.kind == "ReplicationController":
            rc = _named(self._list("ReplicationController"), namespace, owner.name)
            if rc is not None:
                match_labels.update(rc.spec.selector)
        elif owner is not None and gv == ("apps", "v1") and owner.kind in ("ReplicaSet", "StatefulSet"):
            workload = _named(self._list(owner.kind), namespace, owner.name)
            selector = workload.spec.selector if workload is not None else None
            if selector is not None and _valid_selector(selector):
                expressions += [
                    LabelSelectorRequirement(key=k, operator="In", values=[v])
                    for k, v in selector.match_labels.items()
                ]
                expressions += selector.match_expressions
        if not match_labels and not expressions:
            return None
        return LabelSelector(match_labels=match_labels, match_expressions=expressions)

    def _counter(self, namespace: str, c: _Constraint) -> _PodCounts:
        key = (namespace, c.selector_key)
        counter = self._counters.get(key)
        if counter is None:
            counter = self._counters[key] = _PodCounts(namespace, c.matcher)
            if len(self._counters) > _MAX_REMEMBERED_SELECTORS:
                self._counters.popitem(last=False)
        else:
            self._counters.move_to_end(key)
        return counter

    def _rows_counter(self, namespace: str, c: _Constraint, table: NodeTable) -> PodRowCounts:
        """Matching pods per row of `table` for the constraint's selector (see `_count_matching`)."""
        if self._rows_table is not table:  # counters of another table are of no use any more
            self._row_counters.clear()
            self._rows_table = table
        key = (namespace, c.selector_key)
        counter = self._row_counters.get(key)
        if counter is None:
            counter = self._row_counters[key] = PodRowCounts(table, _pod_counter(namespace, c.matcher))
            if len(self._row_counters) > _MAX_REMEMBERED_SELECTORS:
                self._row_counters.popitem(last=False)
        else:
            self._row_counters.move_to_end(key)
        return counter

    def _row_counts(
        self,
        namespace: str,
        constraints: Sequence[_Constraint],
        wanted: Sequence[BoolArray | None],
        table: NodeTable,
        rows: IndexArray,
    ) -> list[IntArray]:
        """Per constraint, matching pods per row (aligned with `rows`) where `wanted` is set.

        Constraints sharing a selector share one scan over the union of the rows they want; rows
        nobody wants (not eligible, or not a domain worth counting) are never scanned.
        """
        by_selector: dict[bytes, BoolArray] = {}
        for c, want in zip(constraints, wanted, strict=True):
            if c.counts_pods and want is not None:
                union = by_selector.get(c.selector_key)
                by_selector[c.selector_key] = want.copy() if union is None else union | want
        counted: dict[bytes, IntArray] = {}
        for c in constraints:
            need = by_selector.get(c.selector_key)
            if need is None or c.selector_key in counted:
                continue
            on_rows = np.zeros(len(table), dtype=np.bool_)
            on_rows[rows[need]] = True
            per_row = self._rows_counter(namespace, c, table).current(on_rows)
            counted[c.selector_key] = np.where(need, per_row[rows], 0)
        zeros = np.zeros(len(rows), dtype=np.int64)
        return [counted.get(c.selector_key, zeros) if c.counts_pods else zeros for c in constraints]

    # ------------------------------------------------------------------ PreFilter
    def failure_survives_pod_changes(self, state: CycleState, pod: Pod, table: NodeTable) -> bool:
        """`RepeatableFailurePlugin`: only when PreFilter skipped (no DoNotSchedule constraint, which
        the pod and the objects decide); otherwise the verdicts count pods on other nodes."""
        return self.name in state.skip_filter_plugins

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeSet
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        except InputError as err:
            return None, Status.as_error(f"get constraints from pod: {err}")
        if not constraints:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, self._filter_state(pod, constraints, nodes))
        return None, None

    def _filter_state(self, pod: Pod, constraints: list[_Constraint], nodes: NodeSet) -> _FilterState:
        table, rows = nodes.table, nodes.rows
        has_keys = _has_all_keys(table, rows, constraints)
        inclusion = _NodeInclusion(pod, nodes)
        eligible = [has_keys & inclusion.mask(c) for c in constraints]
        row_counts = self._row_counts(pod.metadata.namespace, constraints, eligible, table, rows)
        domains: list[_Domains] = []
        for c, elig, counts in zip(constraints, eligible, row_counts, strict=True):
            column = table.label_column(c.topology_key)
            ids = column.ids[rows][elig]  # eligible rows carry the key: ids >= 0
            size = len(column.values)
            registered = np.bincount(ids, minlength=size)[:size] > 0
            per_domain = np.bincount(ids, weights=counts[elig], minlength=size)[:size].astype(np.int64)
            domains.append(_Domains(column, per_domain, registered, c.min_domains))
        labels = pod.metadata.labels
        return _FilterState(
            constraints,
            domains,
            [c.matcher.matches(labels) for c in constraints],
            table,
            RequiredNodeAffinity(pod),
        )

    def _pre_filter_state(self, state: CycleState) -> _FilterState:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _FilterState):
            raise _StateError(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        return s

    # -- PreFilter extensions: keep the counts current for nominated pods and preemption victims
    def add_pod(
        self, state: CycleState, pod: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._update_with_pod(state, pod, pod_info_to_add, node_info, +1)

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._update_with_pod(state, pod, pod_info_to_remove, node_info, -1)

    def _update_with_pod(
        self, state: CycleState, pod: Pod, changed: PodInfo, node_info: NodeInfo, delta: int
    ) -> Status | None:
        """Add `delta` to the domain of `node_info` for each constraint whose selector matches `changed`.

        As upstream: only pods of the incoming pod's namespace, only nodes carrying every key and
        included by the constraint's node policies; the selector is matched as is (an empty one
        matches) and terminating pods are not singled out.
        """
        try:
            s = self._pre_filter_state(state)
        except _StateError as err:
            return Status.as_error(err)
        if changed.pod.metadata.namespace != pod.metadata.namespace:
            return None
        node = node_info.node
        labels = node.metadata.labels
        if not _labels_have_all_keys(labels, s.constraints):
            return None
        changed_labels = changed.pod.metadata.labels
        for c, domains in zip(s.constraints, s.domains, strict=True):
            if c.matcher.matches(changed_labels) and _node_included(c, pod, s.required, node):
                domains.add(labels[c.topology_key], delta)
        return None

    # ------------------------------------------------------------------ Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        try:
            s = self._pre_filter_state(state)
        except _StateError as err:
            return Status.as_error(err)
        labels = node_info.labels
        for c, domains, self_match in zip(s.constraints, s.domains, s.self_match, strict=True):
            value = labels.get(c.topology_key)
            if value is None:
                return Status.unschedulable_and_unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
            if domains.count_of(value) + self_match - domains.min_match > c.max_skew:
                return Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        """Constraints in order; each node keeps the first failure, as the per-node form returns it."""
        s = self._pre_filter_state(state)
        codes = np.full(len(nodes), -1, dtype=np.int32)
        for c, domains, self_match in zip(s.constraints, s.domains, s.self_match, strict=True):
            undecided = codes < 0
            column = nodes.table.label_column(c.topology_key)
            ids = column.ids[nodes.rows]
            missing = ids < 0
            codes[undecided & missing] = 0
            per_row = np.append(domains.lookup(column), 0)[ids]  # -1 (missing) reads the appended 0
            skew = per_row + int(self_match) - domains.min_match
            codes[undecided & ~missing & (skew > c.max_skew)] = 1
        return BatchFilterResult(
            codes,
            [
                Status.unschedulable_and_unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH),
                Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH),
            ],
        )

    # ------------------------------------------------------------------ PreScore / Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        """Count matching pods per domain over all nodes; `nodes` (the feasible ones) fix the domains."""
        table = nodes.table
        if len(table) == 0:
            return Status.skip()
        try:
            constraints = self._constraints(pod, SCHEDULE_ANYWAY)
        except InputError as err:
            return Status.as_error(
                f"calculating preScoreState: obtaining pod's soft topology spread constraints: {err}"
            )
        if not constraints:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, self._score_state(pod, constraints, nodes))
        return None

    def _score_state(self, pod: Pod, constraints: list[_Constraint], nodes: NodeSet) -> _ScoreState:
        require_all = bool(pod.spec.topology_spread_constraints) or not self._system_defaulted
        table = nodes.table
        everything = table.all()
        all_rows = everything.rows
        has_keys = (
            _has_all_keys(table, all_rows, constraints) if require_all else np.ones(len(table), np.bool_)
        )
        kept = nodes.rows[has_keys[nodes.rows]]  # filtered nodes that will be scored
        inclusion = _NodeInclusion(pod, everything)
        columns = [table.label_column(c.topology_key) for c in constraints]
        weights: list[float] = []
        slots: list[IndexArray | None] = []
        wanted: list[BoolArray | None] = []
        for c, column in zip(constraints, columns, strict=True):
            if c.topology_key == LABEL_HOSTNAME:
                weights.append(math.log(len(kept) + 2))
                slots.append(None)
                wanted.append(None)
                continue
            row_slots = _slots(column)
            registered = np.zeros(len(column.values) + 1, dtype=np.bool_)
            registered[row_slots[kept]] = True
            weights.append(math.log(int(registered.sum()) + 2))
            slots.append(row_slots)
            wanted.append(has_keys & inclusion.mask(c) & registered[row_slots])
        row_counts = self._row_counts(pod.metadata.namespace, constraints, wanted, table, all_rows)
        domain_counts: list[IntArray | None] = []
        host_counts: list[_PodCounts | None] = []
        host_rows: list[PodRowCounts | None] = []
        for c, column, slot_of, want, counts in zip(
            constraints, columns, slots, wanted, row_counts, strict=True
        ):
            if slot_of is None or want is None:
                domain_counts.append(None)
                host_counts.append(self._counter(pod.metadata.namespace, c) if c.counts_pods else None)
                host_rows.append(
                    self._rows_counter(pod.metadata.namespace, c, table) if c.counts_pods else None
                )
                continue
            size = len(column.values) + 1
            domain_counts.append(
                np.bincount(slot_of[want], weights=counts[want], minlength=size)[:size].astype(np.int64)
            )
            host_counts.append(None)
            host_rows.append(None)
        return _ScoreState(
            constraints, require_all, table, columns, weights, domain_counts, host_counts, host_rows
        )

    def _pre_score_state(self, state: CycleState) -> _ScoreState:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _ScoreState):
            raise _StateError(f'reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return s

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | tuple[int, Status | None]:
        try:
            s = self._pre_score_state(state)
        except _StateError as err:
            return 0, Status.as_error(err)
        labels = node_info.labels
        if s.require_all and not _labels_have_all_keys(labels, s.constraints):
            return 0
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            counter = s.host_counts[i]
            domain_counts = s.domain_counts[i]
            if domain_counts is None:
                count = counter.on(node_info) if counter is not None else 0
            else:
                slot = s.columns[i].index.get(value)
                count = int(domain_counts[slot]) if slot is not None else 0
            total += float(count) * s.weights[i] + float(c.max_skew - 1)
        return _round_one(total)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Scores:
        s = self._pre_score_state(state)
        rows = nodes.rows
        total = np.zeros(len(nodes), dtype=np.float64)
        for i, c in enumerate(s.constraints):
            column = nodes.table.label_column(c.topology_key)
            ids = column.ids[rows]
            present = ids >= 0
            domain_counts = s.domain_counts[i]
            if domain_counts is None:
                counter = s.host_counts[i]
                by_row = s.host_rows[i]
                if by_row is not None and by_row.table is nodes.table:
                    wanted = np.zeros(len(nodes.table), dtype=np.bool_)
                    wanted[rows] = True
                    counts = nodes.gather(by_row.current(wanted))
                elif counter is not None:
                    counts = counter.rows(nodes.table.infos, rows)
                else:
                    counts = np.zeros(len(rows), np.int64)
            else:
                per_value = (
                    domain_counts
                    if column is s.columns[i]
                    else _by_value(domain_counts, s.columns[i], column)  # another table
                )
                counts = np.append(per_value, 0)[np.where(present, ids, len(per_value))]
            contribution = counts.astype(np.float64) * s.weights[i] + float(c.max_skew - 1)
            total = total + np.where(present, contribution, 0.0)
        scores = _round_half_away(total)
        scores[s.ignored(nodes)] = 0
        return scores

    def normalize_score(self, state: CycleState, pod: Pod, nodes: NodeSet, scores: Scores) -> Status | None:
        """Fewest matching pods -> 100: `100 * (max + min - s) // max`; ignored nodes get 0."""
        try:
            s = self._pre_score_state(state)
        except _StateError as err:
            return Status.as_error(err)
        if scores.size == 0:
            return None
        ignored = s.ignored(nodes)
        counted = scores[~ignored]
        if counted.size == 0:
            scores[...] = 0
            return None
        highest = max(int(counted.max()), 0)
        lowest = int(counted.min())
        if highest == 0:
            scores[...] = MAX_NODE_SCORE
        else:
            scores[...] = MAX_NODE_SCORE * (highest + lowest - scores) // highest
        scores[ignored] = 0
        return None

    # ------------------------------------------------------------------ requeueing
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As v1.37.2: bound pods coming, going or relabelled change the counts; the pending pod
        relabelled, or tolerating more, changes what it counts or where; nodes coming, going,
        relabelled or retainted change the domains."""
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
                ),
                self._after_assigned_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.TARGET_POD, ActionType.UPDATE_POD_TOLERATION | ActionType.UPDATE_POD_LABEL
                ),
                self._after_target_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    ActionType.ADD
                    | ActionType.DELETE
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_TAINT,
                ),
                self._after_node_change,
            ),
        ]

    def _hard_constraints(self, pod: Pod) -> list[_Constraint] | None:
        """What the hints weigh: only the DoNotSchedule constraints (or defaults), as upstream's
        hints read only what Filter rejects on. None when they cannot be built (then: Queue)."""
        try:
            return self._constraints(pod, DO_NOT_SCHEDULE)
        except InputError:
            return None

    def _after_assigned_pod_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue for a bound (or nominated) pod of the pod's namespace that a constraint's selector
        matches when added or deleted, or starts or stops matching when relabelled."""
        if not isinstance(old, Pod | None) or not isinstance(new, Pod | None) or (old is new is None):
            return QueueingHint.QUEUE
        if any(p is not None and not _involved(p, pod) for p in (old, new)):
            return QueueingHint.SKIP
        constraints = self._hard_constraints(pod)
        if constraints is None:
            return QueueingHint.QUEUE
        if old is not None and new is not None:
            return _after_label_change(old, new, constraints)
        changed = new if new is not None else old
        assert changed is not None
        selected = any(c.matcher.matches(changed.metadata.labels) for c in constraints)
        return QueueingHint.QUEUE if selected else QueueingHint.SKIP

    def _after_target_pod_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the pending pod gained a toleration and a constraint honours taints, or when
        its new labels flip a constraint's selector on itself."""
        if not isinstance(old, Pod) or not isinstance(new, Pod):
            return QueueingHint.QUEUE
        constraints = self._hard_constraints(pod)
        if constraints is None:
            return QueueingHint.QUEUE
        if old.spec.tolerations != new.spec.tolerations and any(c.honor_taints for c in constraints):
            return QueueingHint.QUEUE
        return _after_label_change(old, new, constraints)

    def _after_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """A node carries the pod's domains when it has every topology key of its constraints.
        Queue when an added or deleted node does; when an update makes it gain or lose one; or
        when a node that does changes a topology key's value or its taints."""
        if not isinstance(old, Node | None) or not isinstance(new, Node | None) or (old is new is None):
            return QueueingHint.QUEUE
        constraints = self._hard_constraints(pod)
        if constraints is None:
            return QueueingHint.QUEUE
        was = old is not None and _labels_have_all_keys(old.metadata.labels, constraints)
        now = new is not None and _labels_have_all_keys(new.metadata.labels, constraints)
        if old is not None and new is not None:
            if was != now:
                return QueueingHint.QUEUE
            if now and (
                any(
                    old.metadata.labels.get(c.topology_key) != new.metadata.labels.get(c.topology_key)
                    for c in constraints
                )
                or old.spec.taints != new.spec.taints
            ):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        return QueueingHint.QUEUE if was or now else QueueingHint.SKIP


def _after_label_change(old: Pod, new: Pod, constraints: Sequence[_Constraint]) -> QueueingHint:
    """Queue when the labels changed so that some constraint's selector now answers differently."""
    before, after = old.metadata.labels, new.metadata.labels
    if before == after:
        return QueueingHint.SKIP
    flips = any(c.matcher.matches(before) != c.matcher.matches(after) for c in constraints)
    return QueueingHint.QUEUE if flips else QueueingHint.SKIP


def _involved(other: Pod, pod: Pod) -> bool:
    """Whether `other` can change what `pod`'s constraints count: a bound or nominated pod of the
    pod's namespace."""
    if not other.spec.node_name and not other.status.nominated_node_name:
        return False
    return other.metadata.namespace == pod.metadata.namespace


def _valid_selector(selector: LabelSelector) -> bool:
    try:
        compile_label_selector(selector)
    except InputError:
        return False
    return True
