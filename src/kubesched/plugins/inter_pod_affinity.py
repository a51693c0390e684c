"""InterPodAffinity: place a pod relative to the pods already running, by topology domain.

A pod affinity term says "in the topology domain (`topologyKey` value) of the node, there is a pod
matching this selector in these namespaces"; anti-affinity says there is none. Filter enforces the
required terms of the incoming pod and the required anti-affinity terms of the pods already
running; Score adds up preferred terms (both directions) and the running pods' required affinity.

Everything is counted per topology domain once per cycle (PreFilter / PreScore), then each node is
judged by looking its domain up in those counts. The counts come from per-row tallies remembered
per NodeTable and brought up to date from its pod change log: the pods matching one of the
incoming pod's terms (identical terms of one workload share a compiled object, hence a tally), and
the running pods' own terms grouped by distinct term, so a cycle visits each distinct term once
rather than every running pod. The batch forms do the lookup as one numpy gather per topology key
over the NodeTable's interned label column, so the per-node cost is independent of how many pods
run in the cluster.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import msgspec
import numpy as np

from kubesched.api.objects import (
    Namespace,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    WeightedPodAffinityTerm,
)
from kubesched.api.selectors import LabelSelectorMatcher, compile_label_selector
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
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
from kubesched.framework.node_info import NodeInfo, PodInfo, pod_key
from kubesched.framework.node_table import BatchFilterResult, IntArray, NodeSet, NodeTable, PodRowCounts
from kubesched.framework.signature import SignFragment, labels_fragment
from kubesched.framework.status import Status
from kubesched.framework.types import MAX_NODE_SCORE, PreFilterResult

__all__ = [
    "ERR_REASON_AFFINITY",
    "ERR_REASON_ANTI_AFFINITY",
    "ERR_REASON_EXISTING_ANTI_AFFINITY",
    "AffinityTerm",
    "InterPodAffinity",
    "InterPodAffinityArgs",
    "PodAffinityTerms",
    "compile_pod_terms",
]

ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

PRE_FILTER_STATE_KEY = "PreFilterInterPodAffinity"
PRE_SCORE_STATE_KEY = "PreScoreInterPodAffinity"

MIN_HARD_POD_AFFINITY_WEIGHT: Final = 0
MAX_HARD_POD_AFFINITY_WEIGHT: Final = 100

#: Compiled terms are cached per pod; past this many pods the oldest entries are dropped.
_TERM_CACHE_SIZE: Final = 65536

_AFFINITY_PATH = "spec.affinity.podAffinity"
_ANTI_AFFINITY_PATH = "spec.affinity.podAntiAffinity"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

_NOTHING = compile_label_selector(None)
_NO_LABELS: Mapping[str, str] = {}
_NO_COUNTS: Mapping[str, int] = {}

#: Topology key -> topology value (the domain) -> amount. Values never stored as 0 in Filter counts.
Counts = dict[str, dict[str, int]]


class InterPodAffinityArgs(
    msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True, frozen=True
):
    """pluginConfig args (kind InterPodAffinityArgs).

    `hardPodAffinityWeight` is what a running pod's *required* affinity term matching the incoming
    pod adds to its domain's score (0 turns that off); `ignorePreferredTermsOfExistingPods` stops
    the running pods' preferred terms from scoring, which saves the scan when the incoming pod has
    no preferred terms of its own.
    """

    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False

    def validate(self) -> list[InputError]:
        w = self.hard_pod_affinity_weight
        if not MIN_HARD_POD_AFFINITY_WEIGHT <= w <= MAX_HARD_POD_AFFINITY_WEIGHT:
            return [
                InputError(
                    f"must be in the range [{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}],"
                    f" got {w}",
                    path="hardPodAffinityWeight",
                )
            ]
        return []


# --------------------------------------------------------------------------- compiled terms


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """One pod (anti-)affinity term, compiled: which pods it selects and over which topology key.

    A pod is selected when its namespace is in `namespaces` or the labels of the namespace satisfy
    `namespace_selector`, and its labels satisfy `selector`.
    """

    namespaces: frozenset[str]
    namespace_selector: LabelSelectorMatcher
    selector: LabelSelectorMatcher
    topology_key: str

    def matches(self, pod: Pod, ns_labels: Mapping[str, str]) -> bool:
        """Does `pod` (whose namespace carries `ns_labels`) fall under this term?"""
        meta = pod.metadata
        if meta.namespace in self.namespaces or self.namespace_selector.matches(ns_labels):
            return self.selector.matches(meta.labels)
        return False

    def may_match(self, pod: Pod) -> bool:
        """`matches`, assuming any namespace selector might select the pod's namespace.

        Queueing hints use it: they must never say "skip" for an event that could help, and they
        have no namespace labels at hand.
        """
        meta = pod.metadata
        if meta.namespace in self.namespaces or not self.namespace_selector.matches_nothing:
            return self.selector.matches(meta.labels)
        return False


WeightedTerm = tuple[int, AffinityTerm]


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    """A pod's four lists of terms (upstream PodInfo's precomputed terms) and what failed to compile.

    As upstream, a list with an invalid term is dropped as a whole and the problem recorded.
    """

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedTerm, ...] = ()
    errors: tuple[str, ...] = ()

    @property
    def has_required(self) -> bool:
        return bool(self.required_affinity or self.required_anti_affinity)


_NO_TERMS = PodAffinityTerms()


#: Compiled terms by (owner namespace, term spec), so the pods of one workload share one
#: AffinityTerm object: counts can then be grouped by term.
_compiled_terms: dict[tuple[str, bytes], AffinityTerm] = {}


def _compile_term(pod: Pod, term: PodAffinityTerm, path: str) -> AffinityTerm:
    """Raises InputError (located under `path`) for an invalid selector.

    `matchLabelKeys` / `mismatchLabelKeys` are not read here: the API server merged them into the
    selector when it created the pod (the simulator's admission does the same), and the v1.37.2
    scheduler does not merge them again (checked on the binary: a label added after creation
    changes nothing).
    """
    key = (pod.metadata.namespace, msgspec.json.encode(term))
    compiled = _compiled_terms.get(key)
    if compiled is None:
        compiled = _compile_term_uncached(pod, term, path)
        if len(_compiled_terms) >= _TERM_CACHE_SIZE:
            _compiled_terms.clear()
        _compiled_terms[key] = compiled
    return compiled


def _compile_term_uncached(pod: Pod, term: PodAffinityTerm, path: str) -> AffinityTerm:
    selector = compile_label_selector(term.label_selector, path=f"{path}.labelSelector")
    namespace_selector = compile_label_selector(term.namespace_selector, path=f"{path}.namespaceSelector")
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset((pod.metadata.namespace,))
    else:
        namespaces = frozenset(term.namespaces)
    return AffinityTerm(namespaces, namespace_selector, selector, term.topology_key)


def compile_pod_terms(pod: Pod) -> PodAffinityTerms:
    """Compile every pod (anti-)affinity term of `pod`; problems land in `.errors`, never raised."""
    affinity = pod.spec.affinity
    if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
        return _NO_TERMS
    errors: list[str] = []

    def required(spec_path: str, terms: Sequence[PodAffinityTerm]) -> tuple[AffinityTerm, ...]:
        try:
            return tuple(_compile_term(pod, t, f"{spec_path}.{_REQUIRED}[{i}]") for i, t in enumerate(terms))
        except InputError as err:
            errors.append(str(err))
            return ()

    def preferred(spec_path: str, terms: Sequence[WeightedPodAffinityTerm]) -> tuple[WeightedTerm, ...]:
        try:
            return tuple(
                (
                    t.weight,
                    _compile_term(pod, t.pod_affinity_term, f"{spec_path}.{_PREFERRED}[{i}].podAffinityTerm"),
                )
                for i, t in enumerate(terms)
            )
        except InputError as err:
            errors.append(str(err))
            return ()

    pa = affinity.pod_affinity or PodAffinity()
    anti = affinity.pod_anti_affinity or PodAffinity()
    return PodAffinityTerms(
        required_affinity=required(_AFFINITY_PATH, pa.required_during_scheduling_ignored_during_execution),
        required_anti_affinity=required(
            _ANTI_AFFINITY_PATH, anti.required_during_scheduling_ignored_during_execution
        ),
        preferred_affinity=preferred(_AFFINITY_PATH, pa.preferred_during_scheduling_ignored_during_execution),
        preferred_anti_affinity=preferred(
            _ANTI_AFFINITY_PATH, anti.preferred_during_scheduling_ignored_during_execution
        ),
        errors=tuple(errors),
    )


def _parse_error(terms: PodAffinityTerms) -> str:
    """Upstream's `parsing pod: %+v` of an error aggregate: one error bare, several in brackets."""
    detail = terms.errors[0] if len(terms.errors) == 1 else f"[{', '.join(terms.errors)}]"
    return f"parsing pod: {detail}"


class _NamespaceLabels(Mapping[str, str]):
    """The labels of the incoming pod's Namespace, looked up only if a namespace selector asks.

    Listing namespaces goes through the cluster port, so a cycle whose terms never need them
    (the common case: no namespaceSelector) never pays for it. A namespace the cluster does not
    know has no labels, as upstream assumes.
    """

    __slots__ = ("_handle", "_labels", "_namespace")

    def __init__(self, handle: Handle | None, namespace: str) -> None:
        self._handle = handle
        self._namespace = namespace
        self._labels: Mapping[str, str] | None = None

    def _load(self) -> Mapping[str, str]:
        if self._labels is None:
            self._labels = {}
            for ns in _list_namespaces(self._handle):
                if ns.metadata.name == self._namespace:
                    self._labels = dict(ns.metadata.labels)
                    break
        return self._labels

    def __getitem__(self, key: str) -> str:
        return self._load()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


def _list_namespaces(handle: Handle | None) -> Sequence[Namespace]:
    if handle is None:
        return ()
    return [ns for ns in handle.lister("Namespace") if isinstance(ns, Namespace)]


def _merge_namespace_selectors(
    terms: tuple[AffinityTerm, ...], namespaces: list[Namespace] | None, handle: Handle | None
) -> tuple[tuple[AffinityTerm, ...], list[Namespace] | None]:
    """Fold each term's namespaceSelector into its namespace set, from the cluster's Namespaces.

    Done per cycle for the incoming pod only (namespaces come and go), so its terms then match
    without namespace labels. An empty selector (`{}`, all namespaces) and a missing one (none)
    need no listing and are kept as they are. Returns the listed namespaces for reuse.
    """
    out: list[AffinityTerm] = []
    for t in terms:
        sel = t.namespace_selector
        if sel.matches_everything or sel.matches_nothing:
            out.append(t)
            continue
        if namespaces is None:
            namespaces = list(_list_namespaces(handle))
        names = {ns.metadata.name for ns in namespaces if sel.matches(ns.metadata.labels)}
        out.append(AffinityTerm(t.namespaces | names, _NOTHING, t.selector, t.topology_key))
    return tuple(out), namespaces


def _all_match(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    """Upstream's podMatchesAllAffinityTerms: False for no terms (incoming terms, merged namespaces)."""
    return bool(terms) and all(t.matches(pod, _NO_LABELS) for t in terms)


# --------------------------------------------------------------------------- counting


class _DomainCounts:
    """Topology key -> domain (a value of the key) -> amount, as arrays over `table`'s interned values.

    `arrays[key][i]` is the amount of value id `i` of the table's label column; the extra last slot
    (label missing, id -1) stays 0, so a gather by row ids needs no masking. Values met through
    `add` on a node outside the table (a node of another snapshot) go to `extra`. An amount of 0
    means "no pod", as an absent entry did.
    """

    __slots__ = ("_any", "arrays", "extra", "table")

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self.arrays: dict[str, IntArray] = {}
        self.extra: dict[str, dict[str, int]] = {}
        self._any: bool | None = False

    def _array(self, key: str) -> IntArray:
        arr = self.arrays.get(key)
        if arr is None:
            arr = self.arrays[key] = np.zeros(len(self.table.label_column(key).values) + 1, dtype=np.int64)
        return arr

    def add_rows(self, key: str, per_row: IntArray, factor: int = 1) -> bool:
        """Add `factor * per_row[r]` to the domain of each row `r` carrying `key` (aligned with the
        table's rows); True if some row carrying the key had a non-zero amount."""
        ids = self.table.label_column(key).ids
        present = ids >= 0
        amounts = per_row[present]
        if not amounts.any():
            return False
        arr = self._array(key)
        sums = np.bincount(ids[present], weights=amounts, minlength=len(arr) - 1).astype(np.int64)
        arr[: len(sums)] += sums * factor if factor != 1 else sums
        self._any = None
        return True

    def add(self, key: str, value: str, delta: int) -> None:
        i = self.table.label_column(key).index.get(value)
        if i is not None:
            self._array(key)[i] += delta
        else:
            inner = self.extra.setdefault(key, {})
            total = inner.get(value, 0) + delta
            if total == 0:
                inner.pop(value, None)
                if not inner:
                    del self.extra[key]
            else:
                inner[value] = total
        self._any = None

    def get(self, key: str, value: str) -> int:
        arr = self.arrays.get(key)
        if arr is not None:
            i = self.table.label_column(key).index.get(value)
            if i is not None:
                return int(arr[i])
        return self.extra.get(key, _NO_COUNTS).get(value, 0)

    def topology_keys(self) -> list[str]:
        return list(dict.fromkeys((*self.arrays, *self.extra)))

    def any(self) -> bool:
        """Some domain has a non-zero amount (what a non-empty count map meant)."""
        if self._any is None:
            self._any = any(bool(arr.any()) for arr in self.arrays.values()) or bool(self.extra)
        return self._any

    def amounts(self, nodes: NodeSet, key: str) -> Scores:
        """The amount of each node's domain for `key` (0 where the node lacks the key)."""
        col = nodes.table.label_column(key)
        if nodes.table is self.table:
            arr = self.arrays.get(key)
            if arr is None:
                return np.zeros(len(nodes), dtype=np.int64)
            gathered: Scores = arr[nodes.gather(col.ids)]
            return gathered
        # Another table (a one-node table of a nominated node or a preemption dry run): by value.
        per_value = np.zeros(len(col.values) + 1, dtype=np.int64)
        for i, value in enumerate(col.values):
            per_value[i] = self.get(key, value)
        out: Scores = per_value[nodes.gather(col.ids)]
        return out

    def clone(self) -> _DomainCounts:
        copy = _DomainCounts(self.table)
        copy.arrays = {k: v.copy() for k, v in self.arrays.items()}
        copy.extra = {k: dict(v) for k, v in self.extra.items()}
        copy._any = self._any
        return copy


def _count_labels(counts: _DomainCounts, key: str, labels: Mapping[str, str], delta: int) -> None:
    value = labels.get(key)
    if value is not None:
        counts.add(key, value, delta)


# Kinds of running pods' terms, as they are grouped (see `_TermGroups`).
_REQUIRED_ANTI: Final = 0
_REQUIRED_AFFINITY: Final = 1
_PREFERRED_AFFINITY: Final = 2
_PREFERRED_ANTI: Final = 3
#: (kind, weight, term): the pods of one workload carry the same (shared) term objects.
_GroupKey = tuple[int, int, AffinityTerm]
#: Term groups whose per-row counts are kept as dense arrays (the others as {row: count}).
_DENSE_GROUPS: Final = 128
#: Per-row counters of the incoming pods' terms remembered per table.
_ROW_COUNTERS: Final = 64


class _TermGroup:
    """How many pods carrying one term run on each row."""

    __slots__ = ("dense", "rows")

    def __init__(self) -> None:
        self.rows: dict[int, int] = {}
        self.dense: IntArray | None = None

    def update(self, row: int, delta: int) -> None:
        total = self.rows.get(row, 0) + delta
        if total:
            self.rows[row] = total
        else:
            del self.rows[row]
        if self.dense is not None:
            self.dense[row] += delta

    def per_row(self, n: int) -> IntArray:
        if self.dense is not None:
            return self.dense
        out = np.zeros(n, dtype=np.int64)
        if self.rows:
            out[np.fromiter(self.rows, dtype=np.intp, count=len(self.rows))] = np.fromiter(
                self.rows.values(), dtype=np.int64, count=len(self.rows)
            )
        return out


class _TermGroups:
    """The running pods' own terms on one table, grouped by (kind, weight, term) with per-row pod
    counts, kept current from the table's pod change log: a cycle visits each distinct term once
    instead of every pod that carries one.
    """

    __slots__ = ("_dense", "_position", "_row_keys", "_terms_of", "by_kind", "table")

    def __init__(self, table: NodeTable, terms_of: Any) -> None:
        self.table = table
        self._terms_of = terms_of
        self.by_kind: list[dict[_GroupKey, _TermGroup]] = [{}, {}, {}, {}]
        self._row_keys: dict[int, dict[_GroupKey, int]] = {}
        self._dense: OrderedDict[_GroupKey, _TermGroup] = OrderedDict()
        self._position = table.pod_log_position
        for row in np.flatnonzero(table.affinity_pods).tolist():
            self._load_row(row)

    def _load_row(self, row: int) -> None:
        keys: dict[_GroupKey, int] = {}
        for pi in self.table.infos[row].pods.values():
            if not pi.has_affinity:
                continue
            terms: PodAffinityTerms = self._terms_of(pi.pod)
            for t in terms.required_anti_affinity:
                k: _GroupKey = (_REQUIRED_ANTI, 0, t)
                keys[k] = keys.get(k, 0) + 1
            for t in terms.required_affinity:
                k = (_REQUIRED_AFFINITY, 0, t)
                keys[k] = keys.get(k, 0) + 1
            for w, t in terms.preferred_affinity:
                k = (_PREFERRED_AFFINITY, w, t)
                keys[k] = keys.get(k, 0) + 1
            for w, t in terms.preferred_anti_affinity:
                k = (_PREFERRED_ANTI, w, t)
                keys[k] = keys.get(k, 0) + 1
        if keys:
            self._row_keys[row] = keys
        for k, n in keys.items():
            groups = self.by_kind[k[0]]
            group = groups.get(k)
            if group is None:
                group = groups[k] = _TermGroup()
            group.update(row, n)

    def _unload_row(self, row: int) -> None:
        for k, n in self._row_keys.pop(row, {}).items():
            groups = self.by_kind[k[0]]
            group = groups[k]
            group.update(row, -n)
            if not group.rows:
                del groups[k]
                self._dense.pop(k, None)

    def sync(self) -> None:
        table = self.table
        if self._position == table.pod_log_position:
            return
        changes = table.pod_changes(self._position)
        self._position = table.pod_log_position
        if changes is None:
            for row in list(self._row_keys):
                self._unload_row(row)
            for row in np.flatnonzero(table.affinity_pods).tolist():
                self._load_row(row)
            return
        for row in {row for row, pi, _ in changes if pi.has_affinity}:
            self._unload_row(row)
            self._load_row(row)

    def groups(self, kind: int) -> dict[_GroupKey, _TermGroup]:
        return self.by_kind[kind]

    def per_row(self, key: _GroupKey, group: _TermGroup) -> IntArray:
        """The group's counts as an array over the table's rows (kept dense for hot groups)."""
        if group.dense is None:
            group.dense = group.per_row(len(self.table))
            self._dense[key] = group
            if len(self._dense) > _DENSE_GROUPS:
                _, cold = self._dense.popitem(last=False)
                cold.dense = None
        else:
            self._dense.move_to_end(key)
        return group.dense


class _TableIndex:
    """What the plugin remembers about one NodeTable between cycles: per-row counts of the pods
    matching the incoming pods' terms, and the running pods' terms grouped."""

    __slots__ = ("counters", "groups", "table")

    def __init__(self, table: NodeTable, terms_of: Any) -> None:
        self.table = table
        self.counters: OrderedDict[Any, PodRowCounts] = OrderedDict()
        self.groups = _TermGroups(table, terms_of)

    def matching(self, key: Any, matches: Any) -> IntArray:
        """Per row, the pods for which `matches(pod)` holds (0 on rows without pods)."""
        counter = self.counters.get(key)
        if counter is None:

            def count(info: NodeInfo) -> int:
                n = 0
                for pi in info.pods.values():
                    if matches(pi.pod):
                        n += 1
                return n

            counter = self.counters[key] = PodRowCounts(self.table, count)
            if len(self.counters) > _ROW_COUNTERS:
                self.counters.popitem(last=False)
        else:
            self.counters.move_to_end(key)
        occupied = self.table.pod_count > 0
        return np.where(occupied, counter.current(occupied), 0)


@dataclass(slots=True)
class _PreFilterState:
    """The incoming pod's required terms and, per topology domain, how many running pods
    match them (`affinity`: pods matching *all* required affinity terms; `anti_affinity`: pods
    matching each anti-affinity term) and how many running pods' required anti-affinity terms
    match the incoming pod (`existing_anti_affinity`). Updated by AddPod / RemovePod.
    """

    pod: Pod
    terms: PodAffinityTerms
    ns_labels: Mapping[str, str]
    affinity: _DomainCounts
    anti_affinity: _DomainCounts
    existing_anti_affinity: _DomainCounts
    #: The pod matches all its own required affinity terms (it may start a self-affine group).
    self_affine: bool

    def clone(self) -> _PreFilterState:
        return _PreFilterState(
            self.pod,
            self.terms,
            self.ns_labels,
            self.affinity.clone(),
            self.anti_affinity.clone(),
            self.existing_anti_affinity.clone(),
            self.self_affine,
        )

    @property
    def relevant(self) -> bool:
        """False when Filter could reject nothing (upstream's PreFilter Skip)."""
        return self.existing_anti_affinity.any() or self.terms.has_required


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    """Topology key -> domain -> summed weight; every node in a domain scores that domain's sum.

    `touched`: some term matched a pod on a node carrying its key (even if the sums cancel out);
    without that the plugin has nothing to say (Skip).
    """

    topology_score: _DomainCounts
    touched: bool

    def clone(self) -> _PreScoreState:
        return self


# --------------------------------------------------------------------------- the plugin


class InterPodAffinity(
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
    """Pod affinity and anti-affinity, required (Filter) and preferred (Score).

    Filter, in this order, per node:

    1. each required affinity term of the pod needs the node to carry its topology key and the
       node's domain to hold a running pod matching *all* the terms
       (`node(s) didn't match pod affinity rules`, UnschedulableAndUnresolvable) — unless no such
       pod exists anywhere and the pod matches its own terms: it is the first of a self-affine group;
    2. no required anti-affinity term of the pod may have a matching pod in the node's domain
       (`node(s) didn't match pod anti-affinity rules`, Unschedulable);
    3. no running pod's required anti-affinity term may select the pod from a domain the node is
       in (`node(s) didn't satisfy existing pods anti-affinity rules`, Unschedulable).

    Score: per domain, + weight of each preferred affinity term of the pod matching a running
    pod there, - weight for preferred anti-affinity; + `hardPodAffinityWeight` per required
    affinity term of a running pod matching the incoming pod; ± the running pods' preferred terms
    matching the incoming pod (unless `ignorePreferredTermsOfExistingPods`). Min-max normalized.
    """

    name: ClassVar[str] = "InterPodAffinity"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ("Namespace",)
    args_type: ClassVar[type[InterPodAffinityArgs]] = InterPodAffinityArgs

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """Unsignable with pod (anti-)affinity: the answer depends on other pods' placement."""
        affinity = pod.spec.affinity
        if affinity is not None and (
            affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None
        ):
            return Status.unschedulable("pods with pod affinity or anti-affinity are not signable")
        return [labels_fragment(pod)]  # other pods' (anti-)affinity terms select it by its labels

    def __init__(self, args: InterPodAffinityArgs | None = None, handle: Handle | None = None) -> None:
        self.args = args if args is not None else InterPodAffinityArgs()
        errors = self.args.validate()  # done by config decoding too; a direct caller gets the same error
        if errors:
            raise errors[0]
        self.handle = handle
        self._cache: dict[str, tuple[Pod, PodAffinityTerms]] = {}
        self._index: _TableIndex | None = None

    def _table_index(self, table: NodeTable) -> _TableIndex:
        """The remembered counts of `table` (those of a previous table are dropped)."""
        index = self._index
        if index is None or index.table is not table:
            index = self._index = _TableIndex(table, self.terms_of)
        index.groups.sync()
        return index

    # ------------------------------------------------------------------ term cache
    def terms_of(self, pod: Pod) -> PodAffinityTerms:
        """The pod's compiled terms, compiled once per pod object (a new object is recompiled)."""
        affinity = pod.spec.affinity
        if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
            return _NO_TERMS
        key = pod_key(pod)
        hit = self._cache.get(key)
        if hit is not None and hit[0] is pod:
            return hit[1]
        terms = compile_pod_terms(pod)
        if hit is None and len(self._cache) >= _TERM_CACHE_SIZE:
            del self._cache[next(iter(self._cache))]
        self._cache[key] = (pod, terms)
        return terms

    def _incoming_terms(self, pod: Pod) -> PodAffinityTerms:
        """The incoming pod's terms with namespace selectors folded into namespace sets."""
        t = self.terms_of(pod)
        if t.errors:
            return t
        listed: list[Namespace] | None = None
        req, listed = _merge_namespace_selectors(t.required_affinity, listed, self.handle)
        anti, listed = _merge_namespace_selectors(t.required_anti_affinity, listed, self.handle)
        weights = [w for w, _ in t.preferred_affinity]
        pref, listed = _merge_namespace_selectors(
            tuple(x for _, x in t.preferred_affinity), listed, self.handle
        )
        anti_weights = [w for w, _ in t.preferred_anti_affinity]
        pref_anti, listed = _merge_namespace_selectors(
            tuple(x for _, x in t.preferred_anti_affinity), listed, self.handle
        )
        return PodAffinityTerms(
            req,
            anti,
            tuple(zip(weights, pref, strict=True)),
            tuple(zip(anti_weights, pref_anti, strict=True)),
        )

    # ------------------------------------------------------------------ PreFilter
    def _compute_pre_filter(self, pod: Pod, table: NodeTable) -> _PreFilterState | Status:
        terms = self._incoming_terms(pod)
        if terms.errors:
            return Status.unschedulable_and_unresolvable(_parse_error(terms))
        ns_labels = _NamespaceLabels(self.handle, pod.metadata.namespace)
        affinity = _DomainCounts(table)
        anti = _DomainCounts(table)
        existing = _DomainCounts(table)
        req, anti_terms = terms.required_affinity, terms.required_anti_affinity
        index = self._table_index(table)
        if req:
            # Pods matching *all* the required terms count in the domain of each term's key.
            matching_all = index.matching(("all", req), lambda other: _all_match(req, other))
            for t in req:
                affinity.add_rows(t.topology_key, matching_all)
        for t in anti_terms:
            anti.add_rows(
                t.topology_key, index.matching(("one", t), lambda other, t=t: t.matches(other, _NO_LABELS))
            )
        groups = index.groups
        for key, group in groups.groups(_REQUIRED_ANTI).items():
            t = key[2]
            if t.matches(pod, ns_labels):
                existing.add_rows(t.topology_key, groups.per_row(key, group))
        return _PreFilterState(pod, terms, ns_labels, affinity, anti, existing, _all_match(req, pod))

    def failure_survives_pod_changes(self, state: CycleState, pod: Pod, table: NodeTable) -> bool:
        """`RepeatableFailurePlugin`: only when PreFilter skipped and would still skip at once on
        `table`; otherwise the verdicts depend on pods on other nodes."""
        return self.name in state.skip_filter_plugins and self._skips_at_once(pod, table)

    def _skips_at_once(self, pod: Pod, table: NodeTable) -> bool:
        """Nobody has required anti-affinity and the pod has no required terms (nor bad ones): no
        node can be rejected, which is what the full PreFilter computation would conclude."""
        if table.required_anti_affinity_total:
            return False
        terms = self.terms_of(pod)
        return not terms.errors and not terms.has_required

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeSet
    ) -> tuple[PreFilterResult | None, Status | None]:
        if self._skips_at_once(pod, nodes.table):
            return None, Status.skip()
        computed = self._compute_pre_filter(pod, nodes.table)
        if isinstance(computed, Status):
            return None, computed
        if not computed.relevant:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, computed)
        return None, None

    def _pre_filter_state(
        self, state: CycleState, pod: Pod, table: NodeTable | None
    ) -> _PreFilterState | Status:
        """The PreFilter state; computed here (and kept) when PreFilter is not enabled."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(s, _PreFilterState):
            return s
        if self.handle is not None:
            table = self.handle.snapshot
        if table is None:
            return Status.as_error("InterPodAffinity needs its PreFilter state or the node snapshot")
        computed = self._compute_pre_filter(pod, table)
        if isinstance(computed, _PreFilterState):
            state.write(PRE_FILTER_STATE_KEY, computed)
        return computed

    # -- PreFilter extensions: nominated pods and preemption victims
    def _update_with_pod(
        self, state: CycleState, pi: PodInfo, node_info: NodeInfo, delta: int
    ) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return Status.as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycle state: not found")
        labels = node_info.labels
        other = pi.pod
        if pi.has_required_anti_affinity:
            for t in self.terms_of(other).required_anti_affinity:
                if t.matches(s.pod, s.ns_labels):
                    _count_labels(s.existing_anti_affinity, t.topology_key, labels, delta)
        req = s.terms.required_affinity
        if req and _all_match(req, other):
            for t in req:
                _count_labels(s.affinity, t.topology_key, labels, delta)
        for t in s.terms.required_anti_affinity:
            if t.matches(other, _NO_LABELS):
                _count_labels(s.anti_affinity, t.topology_key, labels, delta)
        return None

    def add_pod(
        self, state: CycleState, pod: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._update_with_pod(state, pod_info_to_add, node_info, 1)

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._update_with_pod(state, pod_info_to_remove, node_info, -1)

    # ------------------------------------------------------------------ Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state, pod, None)
        if isinstance(s, Status):
            return s
        labels = node_info.labels
        req = s.terms.required_affinity
        if req:
            pods_exist = True
            for t in req:
                value = labels.get(t.topology_key)
                if value is None:
                    return Status.unschedulable_and_unresolvable(ERR_REASON_AFFINITY)
                if s.affinity.get(t.topology_key, value) <= 0:
                    pods_exist = False
            if not pods_exist and not (not s.affinity.any() and s.self_affine):
                return Status.unschedulable_and_unresolvable(ERR_REASON_AFFINITY)
        if s.anti_affinity.any():
            for t in s.terms.required_anti_affinity:
                value = labels.get(t.topology_key)
                if value is not None and s.anti_affinity.get(t.topology_key, value) > 0:
                    return Status.unschedulable(ERR_REASON_ANTI_AFFINITY)
        for key in s.existing_anti_affinity.topology_keys():
            value = labels.get(key)
            if value is not None and s.existing_anti_affinity.get(key, value) > 0:
                return Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY)
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        n = len(nodes)
        s = self._pre_filter_state(state, pod, nodes.table)
        if isinstance(s, Status):
            return BatchFilterResult(np.zeros(n, dtype=np.int32), [s])
        table = nodes.table
        codes = np.full(n, -1, dtype=np.int32)
        req = s.terms.required_affinity
        if req:
            has_keys = np.ones(n, dtype=np.bool_)
            pods_exist = np.ones(n, dtype=np.bool_)
            for t in req:
                has_keys &= nodes.gather(table.label_column(t.topology_key).ids) >= 0
                pods_exist &= s.affinity.amounts(nodes, t.topology_key) > 0
            first_of_group = not s.affinity.any() and s.self_affine
            codes[~(has_keys & (pods_exist | first_of_group))] = 0
        if s.anti_affinity.any() and s.terms.required_anti_affinity:
            clash = np.zeros(n, dtype=np.bool_)
            for t in s.terms.required_anti_affinity:
                clash |= s.anti_affinity.amounts(nodes, t.topology_key) > 0
            codes[(codes < 0) & clash] = 1
        if s.existing_anti_affinity.any():
            clash = np.zeros(n, dtype=np.bool_)
            for key in s.existing_anti_affinity.topology_keys():
                clash |= s.existing_anti_affinity.amounts(nodes, key) > 0
            codes[(codes < 0) & clash] = 2
        return BatchFilterResult(
            codes,
            [
                Status.unschedulable_and_unresolvable(ERR_REASON_AFFINITY),
                Status.unschedulable(ERR_REASON_ANTI_AFFINITY),
                Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY),
            ],
        )

    # ------------------------------------------------------------------ PreScore / Score
    def _compute_pre_score(self, pod: Pod, table: NodeTable) -> _PreScoreState | Status | None:
        """The per-domain score sums; Skip (a Status) when nothing can contribute, None on no nodes."""
        affinity = pod.spec.affinity
        has_preferred = affinity is not None and bool(
            (
                affinity.pod_affinity
                and affinity.pod_affinity.preferred_during_scheduling_ignored_during_execution
            )
            or (
                affinity.pod_anti_affinity
                and affinity.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution
            )
        )
        ignore_existing_preferred = self.args.ignore_preferred_terms_of_existing_pods
        if ignore_existing_preferred and not has_preferred:
            return Status.skip()
        terms = self._incoming_terms(pod)
        if terms.errors:
            return Status.as_error(f"failed to {_parse_error(terms)}")
        ns_labels = _NamespaceLabels(self.handle, pod.metadata.namespace)
        hard_weight = self.args.hard_pod_affinity_weight
        topology_score = _DomainCounts(table)
        touched = False
        index = self._table_index(table)
        # The incoming pod's preferred terms: weight per running pod they select.
        for w, t in terms.preferred_affinity:
            matching = index.matching(("one", t), lambda other, t=t: t.matches(other, _NO_LABELS))
            touched |= topology_score.add_rows(t.topology_key, matching, w)
        for w, t in terms.preferred_anti_affinity:
            matching = index.matching(("one", t), lambda other, t=t: t.matches(other, _NO_LABELS))
            touched |= topology_score.add_rows(t.topology_key, matching, -w)
        # The running pods' terms selecting the incoming pod, one distinct term at a time.
        groups = index.groups
        kinds: list[tuple[int, int]] = []
        if hard_weight > 0:
            kinds.append((_REQUIRED_AFFINITY, 1))
        if not ignore_existing_preferred:
            kinds += [(_PREFERRED_AFFINITY, 1), (_PREFERRED_ANTI, -1)]
        for kind, sign in kinds:
            for key, group in groups.groups(kind).items():
                _, w, t = key
                if t.matches(pod, ns_labels):
                    amount = hard_weight if kind == _REQUIRED_AFFINITY else sign * w
                    touched |= topology_score.add_rows(t.topology_key, groups.per_row(key, group), amount)
        if not touched:
            return Status.skip()
        return _PreScoreState(topology_score, touched)

    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        if len(nodes) == 0:
            return Status.skip()
        computed = self._compute_pre_score(pod, nodes.table)
        if isinstance(computed, _PreScoreState):
            state.write(PRE_SCORE_STATE_KEY, computed)
            return None
        return computed

    def _pre_score_state(
        self, state: CycleState, pod: Pod, table: NodeTable | None
    ) -> _PreScoreState | Status:
        """The PreScore state; computed here (and kept) when PreScore is not enabled.

        A Skip from the computation means every node scores 0, so an empty state stands for it.
        """
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            return s
        if self.handle is not None:
            table = self.handle.snapshot
        if table is None:
            return Status.as_error("InterPodAffinity needs its PreScore state or the node snapshot")
        computed = self._compute_pre_score(pod, table)
        if isinstance(computed, Status) and not computed.is_skip():
            return computed
        kept = (
            computed if isinstance(computed, _PreScoreState) else _PreScoreState(_DomainCounts(table), False)
        )
        state.write(PRE_SCORE_STATE_KEY, kept)
        return kept

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | tuple[int, Status | None]:
        s = self._pre_score_state(state, pod, None)
        if isinstance(s, Status):
            return 0, s
        labels = node_info.labels
        total = 0
        for key in s.topology_score.topology_keys():
            value = labels.get(key)
            if value is not None:
                total += s.topology_score.get(key, value)
        return total

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Scores:
        s = self._pre_score_state(state, pod, nodes.table)
        if isinstance(s, Status):
            raise RuntimeError(s.message())
        scores = np.zeros(len(nodes), dtype=np.int64)
        for key in s.topology_score.topology_keys():
            scores += s.topology_score.amounts(nodes, key)
        return scores

    def normalize_score(self, state: CycleState, pod: Pod, nodes: NodeSet, scores: Scores) -> Status | None:
        """Min-max onto [0, 100]: `int(100 * ((s - min) / (max - min)))` in float64; all 0 if max == min."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState) or not s.touched or scores.size == 0:
            return None
        low = int(scores.min())
        spread = int(scores.max()) - low
        if spread <= 0:
            scores[...] = 0
            return None
        fractions = (scores - low).astype(np.float64) / float(spread)
        scores[...] = (float(MAX_NODE_SCORE) * fractions).astype(np.int64)
        return None

    # ------------------------------------------------------------------ queueing
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pods appearing, leaving or relabelled change the counts; a new or relabelled node may
        open a domain. Node events get no hint: a node rejected for a running pod's anti-affinity
        can be helped by a change of any of its labels."""
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
                self._pod_event_hint,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        ]

    def _pod_event_hint(self, pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
        """May this pod event let `pod` (rejected by this plugin) pass now? Errs towards Queue.

        Only running pods count. A pod starting to run only adds matches, which helps required
        affinity alone. A relabelled pod helps if it now matches all affinity terms, or stops
        matching an anti-affinity term. A pod leaving helps if it matched an anti-affinity term,
        had an anti-affinity term against `pod`, or was the match that kept a self-affine pod
        from starting its group.
        """
        old = old_obj if isinstance(old_obj, Pod) else None
        new = new_obj if isinstance(new_obj, Pod) else None
        old_running = old is not None and bool(old.spec.node_name)
        terms = self.terms_of(pod)
        req, anti = terms.required_affinity, terms.required_anti_affinity
        self_affine = bool(req) and all(t.may_match(pod) for t in req)

        def all_affinity(p: Pod) -> bool:
            return bool(req) and all(t.may_match(p) for t in req)

        def any_anti(p: Pod) -> bool:
            return any(t.may_match(p) for t in anti)

        if new is not None:
            if not new.spec.node_name:
                return QueueingHint.SKIP
            if old is None or not old_running:
                return QueueingHint.QUEUE if all_affinity(new) else QueueingHint.SKIP
            helps = (
                (all_affinity(new) and not all_affinity(old))
                or (any_anti(old) and not any_anti(new))
                or (self_affine and all_affinity(old) and not all_affinity(new))
            )
            return QueueingHint.QUEUE if helps else QueueingHint.SKIP
        if old is None or not old_running:
            return QueueingHint.SKIP
        helps = (
            any_anti(old)
            or any(t.may_match(pod) for t in self.terms_of(old).required_anti_affinity)
            or (self_affine and all_affinity(old))
        )
        return QueueingHint.QUEUE if helps else QueueingHint.SKIP
