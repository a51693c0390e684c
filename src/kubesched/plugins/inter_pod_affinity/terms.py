"""Pod (anti-)affinity terms compiled once per pod, and the namespaces they select.

The pods of one workload share the compiled term objects, so the counting can group running pods
by term. A term's namespaceSelector is folded into a namespace set per cycle for the incoming pod
only, from the cluster's Namespaces.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import msgspec

from kubesched.api.cluster_objects import Namespace
from kubesched.api.objects import Pod, PodAffinity, PodAffinityTerm, WeightedPodAffinityTerm
from kubesched.api.selectors import LabelSelectorMatcher, compile_label_selector
from kubesched.errors import InputError
from kubesched.framework.interfaces import Handle

__all__ = [
    "NO_LABELS",
    "NO_TERMS",
    "TERM_CACHE_SIZE",
    "AffinityTerm",
    "NamespaceLabels",
    "PodAffinityTerms",
    "WeightedTerm",
    "all_match",
    "compile_pod_terms",
    "merge_namespace_selectors",
    "parse_error",
]

#: Compiled terms are cached per pod; past this many pods the oldest entries are dropped.
TERM_CACHE_SIZE: Final = 65536

_AFFINITY_PATH = "spec.affinity.podAffinity"
_ANTI_AFFINITY_PATH = "spec.affinity.podAntiAffinity"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

_NOTHING = compile_label_selector(None)
NO_LABELS: Mapping[str, str] = {}


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


NO_TERMS = PodAffinityTerms()


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
        if len(_compiled_terms) >= TERM_CACHE_SIZE:
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
        return NO_TERMS
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


def parse_error(terms: PodAffinityTerms) -> str:
    """Upstream's `parsing pod: %+v` of an error aggregate: one error bare, several in brackets."""
    detail = terms.errors[0] if len(terms.errors) == 1 else f"[{', '.join(terms.errors)}]"
    return f"parsing pod: {detail}"


class NamespaceLabels(Mapping[str, str]):
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


def merge_namespace_selectors(
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


def all_match(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    """Upstream's podMatchesAllAffinityTerms: False for no terms (incoming terms, merged namespaces)."""
    return bool(terms) and all(t.matches(pod, NO_LABELS) for t in terms)
