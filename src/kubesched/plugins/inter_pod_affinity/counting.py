"""Running pods counted per topology domain, as arrays over a NodeTable's interned label values.

`TableIndex` is what InterPodAffinity remembers about one NodeTable between cycles: per-row
tallies of the pods matching the incoming pods' terms, and the running pods' own terms grouped by
distinct term, both brought up to date from the table's pod change log. `DomainCounts` turns
per-row tallies into per-domain amounts and looks nodes up in them, one node or a batch at a time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from kubesched.framework.interfaces import Scores
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import IntArray, NodeSet, NodeTable, PodRowCounts, sum_per_value
from kubesched.plugins.inter_pod_affinity.terms import AffinityTerm, PodAffinityTerms

__all__ = [
    "PREFERRED_AFFINITY",
    "PREFERRED_ANTI",
    "REQUIRED_AFFINITY",
    "REQUIRED_ANTI",
    "DomainCounts",
    "GroupKey",
    "TableIndex",
    "TermGroup",
    "TermGroups",
    "count_labels",
]

_NO_COUNTS: Mapping[str, int] = {}


class DomainCounts:
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
        col = self.table.label_column(key)
        if col.one_per_row:  # each row its own domain: the rows' amounts are the domains'
            if not per_row.any():
                return False
            arr = self._array(key)
            arr[:-1] += per_row * factor if factor != 1 else per_row
            self._any = None
            return True
        ids = col.ids
        present = ids >= 0
        amounts = per_row[present]
        if not amounts.any():
            return False
        arr = self._array(key)
        sums = sum_per_value(ids[present], amounts, len(arr) - 1)
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
            if col.one_per_row:  # value id == row
                own: Scores = arr[:-1] if nodes.full else arr[nodes.rows]
                if nodes.full:
                    own = own.view()
                    own.flags.writeable = False
                return own
            gathered: Scores = arr[nodes.gather(col.ids)]
            return gathered
        # Another table (a one-node table of a nominated node or a preemption dry run): by value.
        per_value = np.zeros(len(col.values) + 1, dtype=np.int64)
        for i, value in enumerate(col.values):
            per_value[i] = self.get(key, value)
        out: Scores = per_value[nodes.gather(col.ids)]
        return out

    def clone(self) -> DomainCounts:
        copy = DomainCounts(self.table)
        copy.arrays = {k: v.copy() for k, v in self.arrays.items()}
        copy.extra = {k: dict(v) for k, v in self.extra.items()}
        copy._any = self._any
        return copy


def count_labels(counts: DomainCounts, key: str, labels: Mapping[str, str], delta: int) -> None:
    value = labels.get(key)
    if value is not None:
        counts.add(key, value, delta)


# Kinds of running pods' terms, as they are grouped (see `TermGroups`).
REQUIRED_ANTI: Final = 0
REQUIRED_AFFINITY: Final = 1
PREFERRED_AFFINITY: Final = 2
PREFERRED_ANTI: Final = 3
#: (kind, weight, term): the pods of one workload carry the same (shared) term objects.
GroupKey = tuple[int, int, AffinityTerm]
#: Term groups whose per-row counts are kept as dense arrays (the others as {row: count}).
_DENSE_GROUPS: Final = 128
#: Per-row counters of the incoming pods' terms remembered per table.
_ROW_COUNTERS: Final = 64


class TermGroup:
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


class TermGroups:
    """The running pods' own terms on one table, grouped by (kind, weight, term) with per-row pod
    counts, kept current from the table's pod change log: a cycle visits each distinct term once
    instead of every pod that carries one.
    """

    __slots__ = ("_dense", "_position", "_row_keys", "_terms_of", "by_kind", "table")

    def __init__(self, table: NodeTable, terms_of: Any) -> None:
        self.table = table
        self._terms_of = terms_of
        self.by_kind: list[dict[GroupKey, TermGroup]] = [{}, {}, {}, {}]
        self._row_keys: dict[int, dict[GroupKey, int]] = {}
        self._dense: OrderedDict[GroupKey, TermGroup] = OrderedDict()
        self._position = table.pod_log_position
        for row in np.flatnonzero(table.affinity_pods).tolist():
            self._load_row(row)

    def _load_row(self, row: int) -> None:
        keys: dict[GroupKey, int] = {}
        for pi in self.table.infos[row].pods.values():
            if not pi.has_affinity:
                continue
            terms: PodAffinityTerms = self._terms_of(pi.pod)
            for t in terms.required_anti_affinity:
                k: GroupKey = (REQUIRED_ANTI, 0, t)
                keys[k] = keys.get(k, 0) + 1
            for t in terms.required_affinity:
                k = (REQUIRED_AFFINITY, 0, t)
                keys[k] = keys.get(k, 0) + 1
            for w, t in terms.preferred_affinity:
                k = (PREFERRED_AFFINITY, w, t)
                keys[k] = keys.get(k, 0) + 1
            for w, t in terms.preferred_anti_affinity:
                k = (PREFERRED_ANTI, w, t)
                keys[k] = keys.get(k, 0) + 1
        if keys:
            self._row_keys[row] = keys
        for k, n in keys.items():
            groups = self.by_kind[k[0]]
            group = groups.get(k)
            if group is None:
                group = groups[k] = TermGroup()
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

    def groups(self, kind: int) -> dict[GroupKey, TermGroup]:
        return self.by_kind[kind]

    def per_row(self, key: GroupKey, group: TermGroup) -> IntArray:
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


class TableIndex:
    """What the plugin remembers about one NodeTable between cycles: per-row counts of the pods
    matching the incoming pods' terms, and the running pods' terms grouped."""

    __slots__ = ("counters", "groups", "table")

    def __init__(self, table: NodeTable, terms_of: Any) -> None:
        self.table = table
        self.counters: OrderedDict[Any, PodRowCounts] = OrderedDict()
        self.groups = TermGroups(table, terms_of)

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
        view = counter.current().view()  # every row current, 0 on rows without pods
        view.flags.writeable = False
        return view
