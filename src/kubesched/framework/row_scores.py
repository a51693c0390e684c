"""Score arrays remembered between cycles, for scorers whose score of a node depends only on that
node's row of the table (allocatable and requested columns) and on the pod's shape.

NodeResourcesFit and BalancedAllocation are such scorers, and on a large cluster they were a
quarter of a cycle: ~20 numpy passes over every row for every pod, while a pod changes one row.
`RowScores` keeps the whole table's scores per pod shape and, on the next cycle, recomputes only
the rows whose pods changed since (the table's pod change log), with the same elementwise
operations, so every value is what a full recomputation would give.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np

from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import IntArray, NodeSet, NodeTable

__all__ = ["RowScores"]

#: Up to this many changed rows are scored one node at a time.
_ONE_BY_ONE = 8


@dataclass(slots=True)
class _Entry:
    table: NodeTable
    node_generation: int
    #: the table's matrices when computed (replaced, not edited, when a resource column is added)
    matrices: tuple[IntArray, IntArray, IntArray]
    position: int
    values: IntArray

    def current_for(self, table: NodeTable) -> bool:
        return (
            self.table is table
            and self.node_generation == table.node_generation
            and self.matrices[0] is table.allocatable
            and self.matrices[1] is table.requested
            and self.matrices[2] is table.non_zero_requested
        )


class RowScores:
    """Per pod shape (a hashable key), the scores of every row of the current table."""

    def __init__(self, limit: int = 16) -> None:
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._limit = limit

    def scores(
        self,
        nodes: NodeSet,
        key: Hashable,
        compute: Callable[[NodeSet], IntArray],
        compute_one: Callable[[NodeInfo], int] | None = None,
    ) -> IntArray:
        """`compute(nodes)` (read-only), from the remembered rows where nothing changed.

        `compute` must give each row a value that depends only on that row and on what `key`
        stands for, whichever rows it is asked for together; `compute_one`, the same value for one
        node (the plugin's per-node Score), is used when only a few rows changed, where a handful
        of Python operations cost less than numpy's per-call overhead.
        """
        table = nodes.table
        entry = self._entries.get(key)
        if entry is None or not entry.current_for(table):
            entry = self._compute_all(table, key, compute)
        elif entry.position != table.pod_log_position:
            changed = table.rows_changed_since(entry.position)
            if changed is None:
                entry = self._compute_all(table, key, compute)
            else:
                if compute_one is not None and len(changed) <= _ONE_BY_ONE:
                    infos, values = table.infos, entry.values
                    for row in changed:
                        values[row] = compute_one(infos[row])
                else:
                    rows = np.asarray(changed, dtype=np.intp)
                    entry.values[rows] = compute(NodeSet(table, rows))
                entry.position = table.pod_log_position
        self._entries.move_to_end(key)
        out = entry.values if nodes.full else entry.values[nodes.rows]
        view = out.view()
        view.flags.writeable = False
        return view

    def _compute_all(self, table: NodeTable, key: Hashable, compute: Callable[[NodeSet], IntArray]) -> _Entry:
        values = np.array(compute(table.all()), dtype=np.int64, copy=True)
        matrices = (table.allocatable, table.requested, table.non_zero_requested)
        entry = _Entry(table, table.node_generation, matrices, table.pod_log_position, values)
        self._entries[key] = entry
        while len(self._entries) > self._limit:
            self._entries.popitem(last=False)
        return entry
