"""DomainCounts on a key each node carries a value of its own (the hostname): the rows' amounts
are the domains' amounts, read without a gather, and agree with the general path."""

from __future__ import annotations

import dataclasses

import numpy as np

from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.plugins.inter_pod_affinity.counting import DomainCounts
from kubesched.testing.builders import make_node, make_table

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def table() -> NodeTable:
    return make_table([make_node(f"n{i}", labels={HOST: f"n{i}", ZONE: f"z{i % 2}"}) for i in range(5)])


def counts(t: NodeTable, general: bool) -> DomainCounts:
    if general:  # the path a key shared by nodes takes
        col = t.label_column(HOST)
        t._label_columns[HOST] = dataclasses.replace(col, one_per_row=False)
    c = DomainCounts(t)
    assert c.add_rows(HOST, np.array([0, 2, 0, 1, 0], dtype=np.int64), 3)
    assert not c.add_rows(HOST, np.zeros(5, dtype=np.int64))
    assert c.add_rows(HOST, np.array([1, 0, 0, 1, 0], dtype=np.int64))
    return c


def test_a_value_per_node_is_counted_per_row_as_the_general_path_counts_it() -> None:
    t = table()
    assert t.label_column(HOST).one_per_row and not t.label_column(ZONE).one_per_row
    fast, slow = counts(t, general=False), counts(table(), general=True)
    expected = [1, 6, 0, 4, 0]
    assert fast.amounts(t.all(), HOST).tolist() == slow.amounts(slow.table.all(), HOST).tolist() == expected
    rows = NodeSet(t, np.array([3, 1], dtype=np.intp))
    assert fast.amounts(rows, HOST).tolist() == [4, 6]
    assert [fast.get(HOST, f"n{i}") for i in range(5)] == expected
    assert not fast.amounts(t.all(), HOST).flags.writeable  # a view of the counts themselves


def test_a_node_without_the_key_is_not_one_per_row() -> None:
    t = make_table([make_node("a", labels={"rack": "a"}), make_node("b")])
    col = t.label_column("rack")
    assert not col.one_per_row and col.ids.tolist() == [0, -1]
