"""What filtering and scoring share, as upstream's common.go: constraints compiled from a pod's spec
or the defaults, which nodes a constraint counts (its node policies), and counting matching pods.

`PodCounters` is what the plugin remembers between cycles: per (namespace, selector), matching pods
per node (`PodCounts`) and per row of the current NodeTable (`PodRowCounts`, fed by its pod change
log), so consecutive pods of one workload recount only the nodes whose pods changed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.api.meta import LabelSelector
from kubesched.api.objects import Node, Pod, TopologySpreadConstraint
from kubesched.api.selectors import (
    LabelSelectorMatcher,
    RequiredNodeAffinity,
    compile_label_selector,
)
from kubesched.api.taints import find_untolerated_taint
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import (
    BoolArray,
    IndexArray,
    NodeSet,
    NodeTable,
    PodRowCounts,
)
from kubesched.plugins._node_selector_batch import BatchNodeSelector, node_selector_map_mask
from kubesched.plugins.pod_topology_spread.args import HONOR, IGNORE, DefaultConstraint

__all__ = [
    "Constraint",
    "IntArray",
    "NodeInclusion",
    "PodCounters",
    "PodCounts",
    "compile_constraint",
    "count_matching",
    "group_version",
    "has_all_keys",
    "labels_have_all_keys",
    "named",
    "node_included",
]

#: Distinct (namespace, selector) pairs whose per-node counts are remembered between cycles.
MAX_REMEMBERED_SELECTORS: Final = 64
#: Nodes remembered per selector before the memo starts over (bounds memory on huge clusters).
MAX_REMEMBERED_NODES: Final = 200_000

IntArray = npt.NDArray[np.int64]


SpecConstraint = TopologySpreadConstraint | DefaultConstraint


@dataclass(frozen=True, slots=True)
class Constraint:
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


def compile_constraint(c: SpecConstraint, selector: LabelSelector | None, path: str) -> Constraint:
    matcher = compile_label_selector(selector, path=path)
    return Constraint(
        max_skew=c.max_skew,
        topology_key=c.topology_key,
        min_domains=1 if c.min_domains is None else c.min_domains,
        honor_affinity=(c.node_affinity_policy or HONOR) == HONOR,
        honor_taints=(c.node_taints_policy or IGNORE) == HONOR,
        matcher=matcher,
        selector_key=msgspec.json.encode(selector),
        counts_pods=not (matcher.matches_everything or matcher.matches_nothing),
    )


def group_version(api_version: str) -> tuple[str, str] | None:
    """(group, version) of an apiVersion as Go's ParseGroupVersion reads it; None if malformed."""
    if not api_version or api_version == "/":
        return ("", "")
    parts = api_version.split("/")
    if len(parts) == 1:
        return ("", parts[0])
    if len(parts) == 2:
        return (parts[0], parts[1])
    return None


def named(objects: Sequence[Any], namespace: str, name: str) -> Any:
    for obj in objects:
        if obj.metadata.namespace == namespace and obj.metadata.name == name:
            return obj
    return None


def has_all_keys(table: NodeTable, rows: IndexArray, constraints: Sequence[Constraint]) -> BoolArray:
    """Rows carrying the topology key of every constraint."""
    ok = np.ones(len(rows), dtype=np.bool_)
    for key in dict.fromkeys(c.topology_key for c in constraints):
        column = table.label_column(key)
        if not column.complete:  # a key every node carries leaves `ok` as it is
            ok &= column.ids[rows] >= 0
    return ok


def labels_have_all_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


class NodeInclusion:
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

    def mask(self, c: Constraint) -> BoolArray:
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


def node_included(c: Constraint, pod: Pod, required: RequiredNodeAffinity, node: Node) -> bool:
    """The per-node form of `NodeInclusion.mask`."""
    if c.honor_affinity and not required.matches(node.metadata.name, node.metadata.labels):
        return False
    return not (c.honor_taints and find_untolerated_taint(node.spec.taints, pod.spec.tolerations) is not None)


def count_matching(pods: Iterable[PodInfo], namespace: str, matcher: LabelSelectorMatcher) -> int:
    """Pods of `namespace`, not terminating, whose labels the selector matches."""
    n = 0
    for pi in pods:
        meta = pi.pod.metadata
        if meta.deletion_timestamp is None and meta.namespace == namespace and matcher.matches(meta.labels):
            n += 1
    return n


def pod_counter(namespace: str, matcher: LabelSelectorMatcher) -> Callable[[NodeInfo], int]:
    """Matching pods on one node, for `PodRowCounts`."""

    def count(info: NodeInfo) -> int:
        return count_matching(info.pods.values(), namespace, matcher)

    return count


class PodCounts:
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
        n = count_matching(info.pods.values(), self._namespace, self._matcher)
        if len(self._seen) >= MAX_REMEMBERED_NODES:
            self._seen.clear()
        self._seen[id(info)] = (info, info.generation, n)
        return n

    def rows(self, infos: Sequence[NodeInfo], rows: IndexArray) -> IntArray:
        on = self.on
        return np.fromiter((on(infos[r]) for r in rows.tolist()), dtype=np.int64, count=len(rows))


class PodCounters:
    """The plugin's memo of matching pods, per (namespace, selector): on each node, and per row."""

    def __init__(self) -> None:
        self._counters: OrderedDict[tuple[str, bytes], PodCounts] = OrderedDict()
        #: Per (namespace, selector): matching pods per row of `_rows_table`, kept current from
        #: the table's pod change log, so a cycle reads them instead of visiting every node.
        self._row_counters: OrderedDict[tuple[str, bytes], PodRowCounts] = OrderedDict()
        self._rows_table: NodeTable | None = None

    def host(self, namespace: str, c: Constraint) -> PodCounts:
        """Matching pods on one node at a time, for the constraint's selector."""
        key = (namespace, c.selector_key)
        counter = self._counters.get(key)
        if counter is None:
            counter = self._counters[key] = PodCounts(namespace, c.matcher)
            if len(self._counters) > MAX_REMEMBERED_SELECTORS:
                self._counters.popitem(last=False)
        else:
            self._counters.move_to_end(key)
        return counter

    def rows_counter(self, namespace: str, c: Constraint, table: NodeTable) -> PodRowCounts:
        """Matching pods per row of `table` for the constraint's selector (see `count_matching`)."""
        if self._rows_table is not table:  # counters of another table are of no use any more
            self._row_counters.clear()
            self._rows_table = table
        key = (namespace, c.selector_key)
        counter = self._row_counters.get(key)
        if counter is None:
            counter = self._row_counters[key] = PodRowCounts(table, pod_counter(namespace, c.matcher))
            if len(self._row_counters) > MAX_REMEMBERED_SELECTORS:
                self._row_counters.popitem(last=False)
        else:
            self._row_counters.move_to_end(key)
        return counter

    def row_counts(
        self,
        namespace: str,
        constraints: Sequence[Constraint],
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
        every_row = rows is table.all().rows  # rows in table order: no scatter, no gather
        for c in constraints:
            need = by_selector.get(c.selector_key)
            if need is None or c.selector_key in counted:
                continue
            if every_row:
                on_rows = need
            else:
                on_rows = np.zeros(len(table), dtype=np.bool_)
                on_rows[rows[need]] = True
            per_row = self.rows_counter(namespace, c, table).current(on_rows)
            counted[c.selector_key] = np.where(need, per_row if every_row else per_row[rows], 0)
        zeros = np.zeros(len(rows), dtype=np.int64)
        return [counted.get(c.selector_key, zeros) if c.counts_pods else zeros for c in constraints]
