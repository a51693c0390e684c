"""NodeTable: the cluster's nodes as columns, so plugins can filter and score every node at once.

Rows follow the scheduler's node order. Resources are an int64 matrix (cpu in milli, the rest in
units); label values are interned per key into int32 columns (-1 = label missing), so a selector
requirement or a topology domain lookup is one numpy operation; taint lists are interned into a
few distinct sets, so tolerations are evaluated once per set. The table is kept current as pods are
added, assumed and removed, which is what makes evaluating 100% of the nodes cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Node, Taint
from kubesched.framework.node_info import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, NodeInfo, PodInfo
from kubesched.framework.status import Status

IntArray = npt.NDArray[np.int64]
IndexArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]
T = TypeVar("T", bound=np.generic)

#: Columns always present, in this order.
BASE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE)
#: A pod added to (+1) or removed from (-1) a row.
PodChange = tuple[int, PodInfo, int]
#: Pod changes kept for incremental readers; one that falls further behind rescans the pods.
POD_LOG_LIMIT = 16384
#: `NodeTable.lowest_priority` of a node without pods: above any pod priority (an int32).
NO_POD_PRIORITY = 2**31


@dataclass(slots=True)
class LabelColumn:
    """One label key across all nodes: `ids[row]` indexes `values`, -1 where the node lacks the key."""

    ids: npt.NDArray[np.int32]
    values: list[str]
    index: dict[str, int]
    #: Every node has the key with a value of its own (kubernetes.io/hostname): values are interned
    #: in row order, so `ids[row] == row`, and whatever is per row is already per value.
    one_per_row: bool = False
    #: Every node has the key.
    complete: bool = False

    def matching(self, predicate: Callable[[str], bool]) -> BoolArray:
        """Rows whose value satisfies `predicate` (evaluated once per distinct value)."""
        ok = np.fromiter((predicate(v) for v in self.values), dtype=np.bool_, count=len(self.values))
        return _gather(ok, self.ids)

    def value_in(self, wanted: Sequence[str]) -> BoolArray:
        ok = np.zeros(len(self.values), dtype=np.bool_)
        for v in wanted:
            i = self.index.get(v)
            if i is not None:
                ok[i] = True
        return _gather(ok, self.ids)

    def present(self) -> BoolArray:
        return self.ids >= 0


def sum_per_value(ids: npt.NDArray[np.integer], amounts: IntArray, size: int) -> IntArray:
    """`amounts` summed per value id (every id in `0..size-1`), in int64. A weighted np.bincount
    sums in float64 and converts back; np.add.at stays exact and, once per pod and topology
    constraint, costs about two thirds of it (20,000 rows: 30 against 44 us)."""
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, ids, amounts)
    return out


def _gather(per_value: BoolArray, ids: npt.NDArray[np.int32]) -> BoolArray:
    """Map a per-distinct-value verdict onto rows; rows without the label get False."""
    padded = np.append(per_value, False)  # index -1 -> the appended False
    return padded[ids]


#: The per-row arrays besides the resource matrices, which `NodeTable._copy_rows` copies as they are.
_ROW_COLUMNS = (
    "non_zero_requested",
    "pod_count",
    "affinity_pods",
    "required_anti_affinity_pods",
    "host_port_pods",
    "allowed_pods",
    "lowest_priority",
    "unschedulable",
)


class NodeTable:
    """Columnar node state; `infos[i]` is the NodeInfo of row `i`."""

    def __init__(
        self,
        infos: Sequence[NodeInfo],
        *,
        previous: NodeTable | None = None,
        stale: AbstractSet[str] = frozenset(),
    ) -> None:
        """A table of `infos`, in that order. Rows of `previous` (a table being replaced because
        nodes came, went or were relabelled) are copied instead of loaded from their NodeInfos,
        except the `stale` ones: nodes whose NodeInfo changed while `previous` was not kept current."""
        self.infos: list[NodeInfo] = list(infos)
        self.names: list[str] = [ni.name for ni in self.infos]
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        self._name_rank: IntArray | None = None
        n = len(self.infos)
        names = list(BASE_RESOURCES)
        seen = {*names, PODS}  # PODS is never a column
        for ni in self.infos:
            # Most nodes name nothing new: a subset test in C, not a loop over their resources
            # (half the cost of a 5000-node table, rebuilt whenever a node comes or goes).
            if ni.allocatable.keys() <= seen and ni.requested.keys() <= seen:
                continue
            for r in (*ni.allocatable, *ni.requested):
                if r not in seen:
                    seen.add(r)
                    names.append(r)
        self.resources: list[str] = names
        self.resource_index: dict[str, int] = {r: i for i, r in enumerate(names)}
        self.allocatable: IntArray = np.zeros((n, len(names)), dtype=np.int64)
        self.requested: IntArray = np.zeros((n, len(names)), dtype=np.int64)
        self.non_zero_requested: IntArray = np.zeros((n, 2), dtype=np.int64)
        self.pod_count: IntArray = np.zeros(n, dtype=np.int64)
        #: Per node: pods with any pod (anti-)affinity, and pods with required anti-affinity, so
        #: affinity plugins visit only the nodes that can matter.
        self.affinity_pods: IntArray = np.zeros(n, dtype=np.int64)
        self.required_anti_affinity_pods: IntArray = np.zeros(n, dtype=np.int64)
        #: Their sums: whether anyone at all has any pod (anti-)affinity, or required
        #: anti-affinity, without a scan.
        self.affinity_total = 0
        self.required_anti_affinity_total = 0
        #: Per node: pods holding host ports, so NodePorts checks only those nodes.
        self.host_port_pods: IntArray = np.zeros(n, dtype=np.int64)
        self.allowed_pods: IntArray = np.zeros(n, dtype=np.int64)
        #: Per node: the lowest priority among its pods (NO_POD_PRIORITY without pods), so
        #: preemption finds the nodes with anyone to evict in one comparison instead of a visit each.
        self.lowest_priority: IntArray = np.full(n, NO_POD_PRIORITY, dtype=np.int64)
        #: Its minimum once read (None: to be computed), kept through pod changes until the lowest
        #: priority of some row rises: preemption asks it for every pod it might repeat a failure for.
        self._lowest_overall: int | None = None
        self.unschedulable: BoolArray = np.zeros(n, dtype=np.bool_)
        self._load_rows(range(n) if previous is None else self._copy_rows(previous, stale))
        self.taint_sets: list[tuple[Taint, ...]] = []
        self.taint_set_ids: npt.NDArray[np.int32] = np.zeros(n, dtype=np.int32)
        self._intern_taints()
        self._label_columns: dict[str, LabelColumn] = {}
        self._all_rows: IndexArray = np.arange(n, dtype=np.intp)
        self._all_rows.flags.writeable = False
        #: Pods added (+1) and removed (-1) through the table, oldest first: what incremental
        #: per-row counters (`PodRowCounts`) replay instead of rescanning every pod.
        self._pod_log: list[PodChange] = []
        self._pod_log_start = 0
        #: Bumped on every change (pods or nodes).
        self.generation = 0
        #: Bumped only when a Node object changes in place; a new table starts at 0.
        self.node_generation = 0

    # ------------------------------------------------------------------ construction helpers
    def _load_rows(self, rows: Sequence[int]) -> None:
        """Fill `rows` from their NodeInfos, a column at a time (numpy writes cell by cell cost more
        than the values): every row of a first table, the rows `_copy_rows` cannot copy, and the
        row of a Node changed in place."""
        infos = [self.infos[i] for i in rows]
        if not infos:
            return
        at = np.asarray(rows, dtype=np.intp)
        n, names = len(infos), self.resources
        self.allocatable[at] = np.array(
            [[ni.allocatable.get(r, 0) for r in names] for ni in infos], dtype=np.int64
        ).reshape(n, len(names))
        self.requested[at] = np.array(
            [[ni.requested.get(r, 0) for r in names] for ni in infos], dtype=np.int64
        ).reshape(n, len(names))
        self.non_zero_requested[at] = np.array(
            [(ni.non_zero_cpu, ni.non_zero_memory) for ni in infos], dtype=np.int64
        ).reshape(n, 2)
        self.pod_count[at] = [len(ni.pods) for ni in infos]
        affinity = np.array([ni.pods_with_affinity for ni in infos], dtype=np.int64)
        self.affinity_total += int(affinity.sum() - self.affinity_pods[at].sum())
        self.affinity_pods[at] = affinity
        anti = np.array([ni.pods_with_required_anti_affinity for ni in infos], dtype=np.int64)
        self.required_anti_affinity_total += int(anti.sum() - self.required_anti_affinity_pods[at].sum())
        self.required_anti_affinity_pods[at] = anti
        self.host_port_pods[at] = [sum(1 for pi in ni.pods.values() if pi.host_ports) for ni in infos]
        self.allowed_pods[at] = [ni.allowed_pod_number for ni in infos]
        lowest = (ni.lowest_priority() for ni in infos)
        self.lowest_priority[at] = [NO_POD_PRIORITY if v is None else v for v in lowest]
        self.unschedulable[at] = [bool(ni.node.spec.unschedulable) for ni in infos]
        self._lowest_overall = None

    def _copy_rows(self, previous: NodeTable, stale: AbstractSet[str]) -> list[int]:
        """Copy every row `previous` holds current (the same NodeInfo, not `stale`), resource
        columns matched by name; return the rows left to load. Loading walks each node's pods
        (host ports, lowest priority): ~30 ms for 5000 nodes of 13 pods, ~12 ms copied, paid
        whenever a node comes or goes."""
        to_rows: list[int] = []
        from_rows: list[int] = []
        to_load: list[int] = []
        for row, ni in enumerate(self.infos):
            old = previous.index.get(ni.name)
            if old is None or previous.infos[old] is not ni or ni.name in stale:
                to_load.append(row)
            else:
                to_rows.append(row)
                from_rows.append(old)
        if not to_rows:
            return to_load
        at = np.asarray(to_rows, dtype=np.intp)
        src = np.asarray(from_rows, dtype=np.intp)
        # A resource `previous` has no column for is one none of its current rows has or uses
        # (a pod requesting it would have added the column): read it from an appended zero column.
        zero = len(previous.resources)
        cols = np.asarray([previous.resource_index.get(r, zero) for r in self.resources], dtype=np.intp)
        for mine, theirs in ((self.allocatable, previous.allocatable), (self.requested, previous.requested)):
            padded = np.hstack([theirs, np.zeros((len(theirs), 1), dtype=np.int64)])
            mine[at] = padded[np.ix_(src, cols)]
        for name in _ROW_COLUMNS:
            getattr(self, name)[at] = getattr(previous, name)[src]
        self.affinity_total = int(self.affinity_pods.sum())
        self.required_anti_affinity_total = int(self.required_anti_affinity_pods.sum())
        return to_load

    def _intern_taints(self) -> None:
        interned: dict[tuple[Taint, ...], int] = {}
        for i, ni in enumerate(self.infos):
            taints = tuple(ni.node.spec.taints)
            self.taint_set_ids[i] = interned.setdefault(taints, len(interned))
        self.taint_sets = list(interned)

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return len(self.infos)

    def all(self) -> NodeSet:
        """Every row, in order; `full` lets plugins read columns as views instead of gathers."""
        return NodeSet(self, self._all_rows, full=True)

    def name_rank(self) -> IntArray:
        """Per row: the node's place in name order (the lowest name ranks 0), worked out once."""
        if self._name_rank is None:
            rank = np.empty(len(self.names), dtype=np.int64)
            rank[sorted(range(len(self.names)), key=self.names.__getitem__)] = np.arange(len(self.names))
            self._name_rank = rank
        return self._name_rank

    def subset(self, names: Sequence[str]) -> NodeSet:
        """The rows of the given node names, in table order; unknown names are dropped."""
        rows = sorted(self.index[n] for n in set(names) if n in self.index)
        return NodeSet(self, np.asarray(rows, dtype=np.intp))

    def resource_column(self, name: str) -> int | None:
        return self.resource_index.get(name)

    def label_column(self, key: str) -> LabelColumn:
        """Interned values of label `key` for every row (built on first use, cached)."""
        col = self._label_columns.get(key)
        if col is None:
            values: list[str] = []
            index: dict[str, int] = {}
            ids = np.full(len(self.infos), -1, dtype=np.int32)
            for i, ni in enumerate(self.infos):
                v = ni.node.metadata.labels.get(key)
                if v is not None:
                    j = index.get(v)
                    if j is None:
                        j = index[v] = len(values)
                        values.append(v)
                    ids[i] = j
            one_per_row = len(values) == len(self.infos)
            complete = not len(ids) or int(ids.min()) >= 0
            col = self._label_columns[key] = LabelColumn(ids, values, index, one_per_row, complete)
        return col

    def match_taint_sets(self, predicate: Callable[[tuple[Taint, ...]], bool]) -> BoolArray:
        """Rows whose taint list satisfies `predicate` (evaluated once per distinct taint list)."""
        ok = np.fromiter((predicate(t) for t in self.taint_sets), dtype=np.bool_, count=len(self.taint_sets))
        return ok[self.taint_set_ids]

    # ------------------------------------------------------------------ updates
    def ensure_resource(self, name: str) -> int:
        """The column of resource `name`, adding an all-zero column if no node had it."""
        col = self.resource_index.get(name)
        if col is not None:
            return col
        col = len(self.resources)
        self.resources.append(name)
        self.resource_index[name] = col
        n = len(self.infos)
        self.allocatable = np.hstack([self.allocatable, np.zeros((n, 1), dtype=np.int64)])
        self.requested = np.hstack([self.requested, np.zeros((n, 1), dtype=np.int64)])
        return col

    def add_pod(self, row: int, pi: PodInfo) -> None:
        self.infos[row].add_pod(pi)
        self._account(row, pi, +1)

    def remove_pod(self, row: int, key: str) -> PodInfo:
        pi = self.infos[row].remove_pod(key)
        self._account(row, pi, -1)
        return pi

    def _account(self, row: int, pi: PodInfo, sign: int) -> None:
        # Every bind and delete lands here, and a numpy element update costs several dict ones:
        # counters a pod leaves unchanged (most pods have no affinity, no host port) are not touched.
        index = self.resource_index
        for r, v in pi.requests.items():
            if r == PODS:
                continue
            col = index.get(r)
            if col is None:
                col = self.ensure_resource(r)  # grows the matrices: index them only afterwards
            self.requested[row, col] += sign * v
        self.non_zero_requested[row, 0] += sign * pi.non_zero_cpu
        self.non_zero_requested[row, 1] += sign * pi.non_zero_memory
        self.pod_count[row] += sign
        if pi.has_affinity:
            self.affinity_pods[row] += sign
            self.affinity_total += sign
        if pi.has_required_anti_affinity:
            self.required_anti_affinity_pods[row] += sign
            self.required_anti_affinity_total += sign
        if pi.host_ports:
            self.host_port_pods[row] += sign
        if sign > 0:
            if pi.priority < self.lowest_priority[row]:
                self.lowest_priority[row] = pi.priority
                if self._lowest_overall is not None and pi.priority < self._lowest_overall:
                    self._lowest_overall = pi.priority
        elif pi.priority == self.lowest_priority[row]:  # maybe the last pod of that priority left
            lowest = self.infos[row].lowest_priority()
            self.lowest_priority[row] = NO_POD_PRIORITY if lowest is None else lowest
            if lowest != pi.priority:
                self._lowest_overall = None
        self._log(row, pi, sign)

    def replace_pod(self, row: int, pi: PodInfo) -> None:
        """`remove_pod` then `add_pod` for another version of a pod with the same accounted facts
        (`PodInfo.same_facts`, e.g. the bound copy of an assumed pod): the same pod order, change log
        and generations, without redoing sums that would come back to what they were."""
        old = self.infos[row].replace_pod(pi)
        self._log(row, old, -1)
        self._log(row, pi, +1)

    def _log(self, row: int, pi: PodInfo, sign: int) -> None:
        log = self._pod_log
        log.append((row, pi, sign))
        if len(log) > POD_LOG_LIMIT:
            drop = len(log) // 2
            del log[:drop]
            self._pod_log_start += drop
        self.generation += 1

    @property
    def lowest_pod_priority(self) -> int:
        """The lowest priority of any pod on the table's nodes (NO_POD_PRIORITY without pods)."""
        if self._lowest_overall is None:
            self._lowest_overall = int(self.lowest_priority.min()) if len(self.infos) else NO_POD_PRIORITY
        return self._lowest_overall

    # ------------------------------------------------------------------ pod change log
    @property
    def pod_log_position(self) -> int:
        """The position after the latest pod change; pass it to `pod_changes` later."""
        return self._pod_log_start + len(self._pod_log)

    def pod_changes(self, since: int) -> list[PodChange] | None:
        """(row, pod, +1 added / -1 removed) for every pod change since position `since`, oldest
        first; None when some were already dropped (the caller then rescans `infos`)."""
        if since < self._pod_log_start:
            return None
        return self._pod_log[since - self._pod_log_start :]

    def rows_changed_since(self, since: int) -> list[int] | None:
        """The rows (ascending, each once) whose pods changed since log position `since`; None when
        part of that log was already dropped (the caller then treats every row as changed)."""
        changes = self.pod_changes(since)
        if changes is None:
            return None
        if len(changes) <= 1:  # the usual answer between two cycles: one bind or one delete
            return [changes[0][0]] if changes else []
        return sorted({row for row, _, _ in changes})

    def update_node(self, node: Node) -> bool:
        """Refresh a row in place when only status/allocatable changed; False if a rebuild is needed."""
        row = self.index.get(node.metadata.name)
        if row is None:
            return False
        ni = self.infos[row]
        old = ni.node
        if old.metadata.labels != node.metadata.labels or old.spec.taints != node.spec.taints:
            return False
        ni.set_node(node)
        self.node_generation += 1
        if any(r not in self.resource_index for r in ni.allocatable if r != PODS):
            return False
        self._load_rows([row])
        self.generation += 1
        return True


@dataclass(slots=True)
class NodeSet:
    """A set of rows of a NodeTable: what PreFilter, Filter, PreScore and Score plugins see."""

    table: NodeTable
    rows: IndexArray
    _infos: list[NodeInfo] | None = field(default=None, repr=False)
    #: True when `rows` is every row of the table in order (`table.all()`): `gather` and `column`
    #: then return views of the table's arrays instead of copies. Treat their results as read-only.
    full: bool = False

    def __len__(self) -> int:
        return len(self.rows)

    def gather(self, per_row: npt.NDArray[T]) -> npt.NDArray[T]:
        """`per_row[rows]` for an array aligned with the table's rows (a read-only view for a full set)."""
        if not self.full:
            return per_row[self.rows]
        view = per_row.view()
        view.flags.writeable = False
        return view

    def column(self, matrix: npt.NDArray[T], col: int) -> npt.NDArray[T]:
        """`matrix[rows, col]` for a table matrix such as `allocatable` (a read-only view for a full set)."""
        view: npt.NDArray[T]
        if not self.full:
            view = matrix[self.rows, col]
            return view
        view = matrix[:, col]
        view.flags.writeable = False
        return view

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.infos)

    @property
    def infos(self) -> list[NodeInfo]:
        if self._infos is None:
            all_infos = self.table.infos
            self._infos = [all_infos[i] for i in self.rows]
        return self._infos

    @property
    def names(self) -> list[str]:
        names = self.table.names
        return [names[i] for i in self.rows]

    def select(self, mask: BoolArray) -> NodeSet:
        return NodeSet(self.table, self.rows[mask])


class PodRowCounts:
    """A per-node count of the node's pods (`count(node_info)`, e.g. the pods matching a selector;
    0 for a node without pods) for every row of a table, remembered between cycles: only rows whose
    pods changed since the last read (from the table's pod change log) and rows never counted are
    counted again.

    Valid only while pods change through the table (`add_pod` / `remove_pod`).
    """

    __slots__ = ("_complete", "_counts", "_known", "_position", "count", "table")

    def __init__(self, table: NodeTable, count: Callable[[NodeInfo], int]) -> None:
        self.table = table
        self.count = count
        self._counts: IntArray = np.zeros(len(table), dtype=np.int64)
        self._known: BoolArray = np.zeros(len(table), dtype=np.bool_)
        #: Every row is known: a read recounts the changed rows and touches no other.
        self._complete = False
        self._position = table.pod_log_position

    def changed_rows(self) -> list[int] | None:
        """Rows whose pods changed since the last read (None: too many to tell, assume all)."""
        table = self.table
        if self._position == table.pod_log_position:
            return []
        changed = table.rows_changed_since(self._position)
        self._position = table.pod_log_position
        return changed

    def current(self, wanted: BoolArray | None = None) -> IntArray:
        """The counts, current at every row where `wanted` is set (every row when None).

        Other rows may hold stale values. The caller must not modify the array.
        """
        changed = self.changed_rows()
        known, counts = self._known, self._counts
        if changed is None:
            known[:] = False
            self._complete = False
        elif changed and self._complete:
            infos, count = self.table.infos, self.count
            for row in changed:
                counts[row] = count(infos[row])
            return counts
        elif changed:
            known[changed] = False
        if self._complete:
            return counts
        if wanted is None:
            # Rows without pods count 0 (no pod to count); only the others are visited.
            empty = ~known & (self.table.pod_count == 0)
            counts[empty] = 0
            known |= empty
        missing = np.flatnonzero(~known if wanted is None else wanted & ~known)
        if len(missing):
            infos, count = self.table.infos, self.count
            for row in missing.tolist():
                counts[row] = count(infos[row])
            known[missing] = True
        # Every row known now (asked for all, or the rows wanted were all the unknown ones): the
        # next reads recount only the rows that change.
        self._complete = wanted is None or bool(known.all())
        return counts


def minus_ones(n: int) -> npt.NDArray[np.int32]:
    """`n` codes of -1 (every node passes so far): `np.full` goes through a Python wrapper that
    costs more than filling a few rows, and filters ask for such arrays on every pass."""
    codes = np.empty(n, dtype=np.int32)
    codes.fill(-1)
    return codes


@dataclass(slots=True)
class BatchFilterResult:
    """A batch Filter's verdict on a NodeSet: `codes[i] == -1` passes, else `statuses[codes[i]]`."""

    codes: npt.NDArray[np.int32]
    statuses: list[Status]

    @classmethod
    def from_mask(cls, passed: BoolArray, status: Status) -> BatchFilterResult:
        """Every row that did not pass gets the same `status`."""
        codes = passed.astype(np.int32)
        np.negative(codes, out=codes)  # passed -> -1, failed -> 0
        return cls(codes, [status])

    @classmethod
    def all_pass(cls, n: int) -> BatchFilterResult:
        return cls(minus_ones(n), [])

    @classmethod
    def all_fail(cls, n: int, status: Status) -> BatchFilterResult:
        """Every row gets `status` (a pod every node rejects alike, e.g. its state is missing)."""
        return cls(np.zeros(n, dtype=np.int32), [status])

    @property
    def passed(self) -> BoolArray:
        return self.codes < 0
