"""Node selectors evaluated over NodeTable rows, for the batch forms of NodeAffinity.

Each requirement becomes one verdict per distinct label value (plus one for "label missing"),
gathered onto the rows through the interned label column, so a selector costs a few numpy
operations however many nodes there are. Validity and Gt/Lt parsing are delegated to
`kubesched.api.selectors`, so the batch verdicts agree exactly with the per-node matchers:

* a term that fails validation, or has no requirements at all, matches no node;
* terms are ORed, the requirements of a term ANDed;
* `matchFields` (`metadata.name` In/NotIn, one value) compares the row's node name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from kubesched.api.meta import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.api.selectors import compile_node_selector
from kubesched.framework.node_table import NodeSet

__all__ = ["BatchNodeSelector", "BatchNodeSelectorTerm", "node_selector_map_mask"]

BoolArray = npt.NDArray[np.bool_]

#: Builds the per-distinct-value verdicts of one requirement: (values of the column) -> (ok, missing_ok).
_Verdict = Callable[[Sequence[str], Mapping[str, int]], tuple[BoolArray, bool]]


def _in(wanted: Sequence[str], negate: bool) -> _Verdict:
    def verdict(values: Sequence[str], index: Mapping[str, int]) -> tuple[BoolArray, bool]:
        ok = np.zeros(len(values), dtype=np.bool_)
        for v in wanted:
            i = index.get(v)
            if i is not None:
                ok[i] = True
        return (~ok, True) if negate else (ok, False)

    return verdict


def _exists(negate: bool) -> _Verdict:
    def verdict(values: Sequence[str], index: Mapping[str, int]) -> tuple[BoolArray, bool]:
        return np.full(len(values), not negate, dtype=np.bool_), negate

    return verdict


def _compare(req: NodeSelectorRequirement) -> _Verdict:
    """Gt/Lt: ask the per-node matcher about each distinct value, so integer parsing is identical."""
    single = compile_node_selector(
        NodeSelector(node_selector_terms=[NodeSelectorTerm(match_expressions=[req])])
    )
    key = req.key

    def verdict(values: Sequence[str], index: Mapping[str, int]) -> tuple[BoolArray, bool]:
        ok = np.fromiter((single.matches("", {key: v}) for v in values), dtype=np.bool_, count=len(values))
        return ok, single.matches("", {})

    return verdict


def _verdict_of(req: NodeSelectorRequirement) -> _Verdict:
    op = req.operator
    if op in ("In", "NotIn"):
        return _in(req.values, negate=op == "NotIn")
    if op in ("Exists", "DoesNotExist"):
        return _exists(negate=op == "DoesNotExist")
    return _compare(req)  # Gt / Lt (the term was validated, so nothing else reaches here)


class BatchNodeSelectorTerm:
    """One NodeSelectorTerm compiled for NodeTable rows; `mask(nodes)` is its verdict per row."""

    __slots__ = ("_fields", "_labels", "valid")

    def __init__(self, term: NodeSelectorTerm) -> None:
        empty = not term.match_expressions and not term.match_fields
        errors = compile_node_selector(NodeSelector(node_selector_terms=[term])).errors
        #: False for an empty or invalid term, which matches no node.
        self.valid = not empty and not errors
        self._labels: list[tuple[str, _Verdict]] = []
        self._fields: list[tuple[bool, str]] = []
        if self.valid:
            self._labels = [(req.key, _verdict_of(req)) for req in term.match_expressions]
            self._fields = [(req.operator == "In", req.values[0]) for req in term.match_fields]

    def mask(self, nodes: NodeSet) -> BoolArray:
        n = len(nodes)
        if not self.valid:
            return np.zeros(n, dtype=np.bool_)
        result = np.ones(n, dtype=np.bool_)
        table = nodes.table
        for key, verdict in self._labels:
            col = table.label_column(key)
            ok, missing_ok = verdict(col.values, col.index)
            # Index -1 (label missing) picks the appended "missing" verdict.
            result &= np.append(ok, missing_ok)[col.ids[nodes.rows]]
        for is_in, name in self._fields:
            same = nodes.rows == table.index.get(name, -1)
            result &= same if is_in else ~same
        return result


class BatchNodeSelector:
    """A NodeSelector compiled for NodeTable rows: its terms ORed (no valid term: no node)."""

    __slots__ = ("_terms",)

    def __init__(self, selector: NodeSelector) -> None:
        terms = (BatchNodeSelectorTerm(t) for t in selector.node_selector_terms)
        self._terms = [t for t in terms if t.valid]

    def mask(self, nodes: NodeSet) -> BoolArray:
        result = np.zeros(len(nodes), dtype=np.bool_)
        for term in self._terms:
            result |= term.mask(nodes)
        return result


def node_selector_map_mask(node_selector: Mapping[str, str], nodes: NodeSet) -> BoolArray:
    """A pod's `spec.nodeSelector` over rows: every key present with exactly that value."""
    result = np.ones(len(nodes), dtype=np.bool_)
    table = nodes.table
    for key, value in node_selector.items():
        col = table.label_column(key)
        i = col.index.get(value)
        if i is None:
            return np.zeros(len(nodes), dtype=np.bool_)
        result &= col.ids[nodes.rows] == i
    return result
