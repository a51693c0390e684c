"""The FGD paper's model: task shapes, the typical-task distribution and the fragmentation measure,
checked on cases computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.plugins.contrib.gpu_share import (
    GpuStateTable,
    NodeGpuState,
    TaskShape,
    cluster_fragmentation,
    node_fragmentation,
    typical_tasks,
)
from kubesched.plugins.contrib.gpu_share.shapes import model_accepts

SHARE = TaskShape(cpu_milli=4000, gpu_milli=500, gpu_count=1)
WHOLE = TaskShape(cpu_milli=8000, gpu_milli=1000, gpu_count=1)
TWO = TaskShape(cpu_milli=8000, gpu_milli=1000, gpu_count=2)
CPU_ONLY = TaskShape(cpu_milli=2000, gpu_milli=0, gpu_count=0)
ON_T4 = TaskShape(cpu_milli=1000, gpu_milli=300, gpu_count=1, gpu_spec="T4|A10")


def node(gpu_free: tuple[int, ...], cpu_free: int = 32000, model: str = "V100M32") -> NodeGpuState:
    return NodeGpuState("n", model, cpu_free, 65536, gpu_free)


def test_a_shape_checks_its_fields() -> None:
    for bad in ((1000, 500, 2), (1000, 0, 1), (1000, 300, 0), (-1, 0, 0), (0, 1200, 1)):
        with pytest.raises(ValueError):
            TaskShape(*bad)
    assert SHARE.shared and not WHOLE.shared and not CPU_ONLY.shared
    assert TWO.gpu_total == 2000
    assert ON_T4.accepts("T4") and ON_T4.accepts("A10") and not ON_T4.accepts("T4X") and not ON_T4.accepts("")
    assert SHARE.accepts("")


def test_model_accepts_is_one_row_per_node_model() -> None:
    got = model_accepts(["T4", "", "V100M32", "T4", "A10"], [ON_T4, SHARE])
    expected = [[True, True], [False, True], [False, True], [True, True], [True, True]]
    assert got.tolist() == expected
    assert model_accepts([], [ON_T4]).shape == (0, 1)


def test_typical_tasks_keep_the_most_frequent_shapes_until_the_coverage() -> None:
    tasks = [SHARE] * 6 + [WHOLE] * 3 + [CPU_ONLY] * 1
    typical = typical_tasks(tasks, coverage=0.9)
    # 6 (60 %) < 9, then 6+3 = 9 (90 %) reaches it: the CPU-only shape is cut, the rest renormalised
    assert typical.shapes == (SHARE, WHOLE)
    assert typical.freqs == pytest.approx([6 / 9, 3 / 9])
    full = typical_tasks(tasks, coverage=1.0)
    assert full.shapes == (SHARE, WHOLE, CPU_ONLY)
    assert full.freqs == pytest.approx([0.6, 0.3, 0.1])


def test_typical_tasks_break_ties_by_the_larger_shape_and_can_leave_cpu_tasks_out() -> None:
    typical = typical_tasks([SHARE, WHOLE, CPU_ONLY, CPU_ONLY], coverage=1.0, include_cpu=False)
    assert typical.shapes == (WHOLE, SHARE)  # equal counts: WHOLE has more CPU
    assert typical.freqs == pytest.approx([0.5, 0.5])
    assert typical_tasks([], coverage=0.5).shapes == ()
    with pytest.raises(ValueError, match="coverage"):
        typical_tasks([SHARE], coverage=0)


@pytest.mark.parametrize(
    ("state", "shape", "expected"),
    [
        # the share task fits: only the GPUs with less than 500 left are stranded (300 + 200)
        (node((1000, 300, 200, 600)), SHARE, 500),
        # nothing below 500 -> no fragment
        (node((1000, 500)), SHARE, 0),
        # whole GPU: every partly used GPU is stranded
        (node((1000, 300, 999)), WHOLE, 1299),
        # two whole GPUs, only one free: the task cannot run, all free share is a fragment
        (node((1000, 300)), TWO, 1300),
        # too little CPU: all of it
        (node((1000, 300), cpu_free=3000), SHARE, 1300),
        # a task without GPUs uses none of them
        (node((1000, 300)), CPU_ONLY, 1300),
        # a model the task does not accept
        (node((1000, 1000)), ON_T4, 2000),
        (node((1000, 200), model="T4"), ON_T4, 200),
        # a node with no GPU share left has no fragment whatever the task
        (node((0, 0)), WHOLE, 0),
        (node(()), CPU_ONLY, 0),
    ],
)
def test_node_fragmentation_against_one_shape(state: NodeGpuState, shape: TaskShape, expected: int) -> None:
    assert node_fragmentation(state, typical_tasks([shape])) == pytest.approx(expected)


def test_node_fragmentation_weights_shapes_by_frequency() -> None:
    typical = typical_tasks([SHARE] * 3 + [WHOLE], coverage=1.0)
    state = node((1000, 300, 600))
    # SHARE (3/4): 300 stranded; WHOLE (1/4): 300 + 600 stranded
    assert node_fragmentation(state, typical) == pytest.approx(0.75 * 300 + 0.25 * 900)


def test_cluster_fragmentation_sums_nodes_of_different_widths() -> None:
    typical = typical_tasks([SHARE] * 3 + [WHOLE], coverage=1.0)
    a = node((1000, 300, 600))
    b = NodeGpuState("b", "T4", 1000, 0, (700,))  # 1 core: SHARE cannot run (700), WHOLE cannot (700)
    c = NodeGpuState("c", "", 64000, 0, ())
    expected = (0.75 * 300 + 0.25 * 900) + 700
    assert cluster_fragmentation([a, b, c], typical) == pytest.approx(expected)
    table = GpuStateTable.from_states([a, b, c])
    assert table.gpu_free.shape == (3, 3)
    assert cluster_fragmentation(table, typical) == pytest.approx(expected)
    assert table.state(1) == b and table.state(2) == c
    assert table.gpu_capacity() == 4000
    assert list(table.gpu_free_total()) == [1900, 700, 0]
    assert cluster_fragmentation([], typical) == 0.0


def test_place_and_fits_follow_the_shares() -> None:
    state = node((1000, 600), cpu_free=10000)
    assert state.fits(SHARE) and state.fits(WHOLE) and not state.fits(TWO)
    after = state.place(SHARE, [1], memory=1024)
    assert after.gpu_free == (1000, 100) and after.cpu_free == 6000 and after.memory_free == 65536 - 1024
    assert not after.fits(TaskShape(8000, 1000, 1))  # CPU now short
    with pytest.raises(ValueError, match="has 100 left"):
        after.place(SHARE, [1])
    assert not node((1000,), model="V100M16").fits(ON_T4)
    assert np.isclose(node_fragmentation(after, typical_tasks([SHARE])), 100)
