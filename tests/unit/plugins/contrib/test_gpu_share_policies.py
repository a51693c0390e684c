"""The six policies' scores and GPU choices on node rows, computed by hand from the paper's formulas."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from kubesched.plugins.contrib.gpu_share import TaskShape, typical_tasks
from kubesched.plugins.contrib.gpu_share.policies import (
    best_fit_gpus,
    best_fit_scores,
    dot_product_scores,
    fgd_gpus,
    fgd_scores,
    gpu_class,
    gpu_clustering_scores,
    gpu_packing_scores,
    random_gpus,
    random_scores,
)

SHARE = TaskShape(cpu_milli=4000, gpu_milli=500, gpu_count=1)
CPU_ONLY = TaskShape(cpu_milli=4000, gpu_milli=0, gpu_count=0)


def rows(*free: tuple[int, ...]) -> np.ndarray:
    width = max(len(f) for f in free)
    return np.array([list(f) + [0] * (width - len(f)) for f in free], dtype=np.int64)


def ints(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


@pytest.mark.parametrize(
    ("cpu_free", "free", "shape", "expected"),
    [
        # CPU left 32000 -> 0.125, GPU left 2000 -> 0.125: (1 - 0.25) x 100
        (40000, (1000, 1000, 300, 0), TaskShape(8000, 300, 1), 75),
        # nothing left on CPU, 700 of 8000 on GPU: 95.625 truncated
        (8000, (1000,), TaskShape(8000, 300, 1), 95),
        # does not fit on CPU
        (4000, (1000,), TaskShape(8000, 300, 1), 0),
    ],
)
def test_best_fit(cpu_free: int, free: tuple[int, ...], shape: TaskShape, expected: int) -> None:
    assert best_fit_scores(ints(cpu_free), rows(free), shape).tolist() == [expected]


@pytest.mark.parametrize(
    ("cpu_free", "free", "expected"),
    [
        # (0.5, 0.5) . (0.25, 0.25) = 0.25, halved: 0.125 -> 87.5
        (64000, (1000, 1000, 1000, 1000), 87),
        # the largest node: (1, 1) . (0.25, 0.25) = 0.5 -> 75
        (128000, (1000,) * 8, 75),
        # too little CPU
        (16000, (1000, 1000), 0),
    ],
)
def test_dot_product(cpu_free: int, free: tuple[int, ...], expected: int) -> None:
    two = TaskShape(32000, 1000, 2)
    assert dot_product_scores(ints(cpu_free), rows(free), two).tolist() == [expected]


@pytest.mark.parametrize(
    ("free", "shape", "expected"),
    [
        ((1000,) * 8, SHARE, 25),  # idle node: max(33 - 8, 8)
        ((1000, 1000), SHARE, 31),  # idle node: max(33 - 2, 2)
        ((600, 1000, 0, 0), SHARE, 94),  # on the used GPU with 60 % free: 100 - 60 / 10
        ((300, 1000), SHARE, 49),  # needs one idle GPU of a used node: 50 - 1
        ((300, 200), SHARE, 0),  # does not fit
        ((1000, 1000, 1000, 0), TaskShape(8000, 1000, 2), 48),  # two idle GPUs of a used node
        ((600, 1000), CPU_ONLY, 0),
    ],
)
def test_gpu_packing(free: tuple[int, ...], shape: TaskShape, expected: int) -> None:
    assert gpu_packing_scores(rows(free), ints(len(free)), shape).tolist() == [expected]


def test_gpu_clustering_bands() -> None:
    free = rows((1000, 0), (0, 0), (1000,) * 8, (1000,) * 6 + (0, 0))
    classes = [Counter(share=2), Counter({"share": 1, "1-gpu": 1}), Counter(), Counter({"2-gpu": 1})]
    # 25 x (8000 - free) // 8000 plus the band: only shares (75), shares among others (50),
    # no GPU task (25), other classes only (0)
    assert gpu_clustering_scores(free, classes, SHARE).tolist() == [21 + 75, 25 + 50, 0 + 25, 6]
    assert gpu_clustering_scores(free, classes, CPU_ONLY).tolist() == [0, 0, 0, 0]
    assert [gpu_class(s) for s in (SHARE, CPU_ONLY, TaskShape(1, 1000, 1), TaskShape(1, 1000, 4))] == [
        "share",
        "",
        "1-gpu",
        "4-gpu",
    ]


def test_random_draws_one_node_and_one_gpu_from_the_seed() -> None:
    a, b = random.Random(7), random.Random(7)
    first = random_scores(5, a)
    assert sorted(first.tolist()) == [0, 0, 0, 0, 100]
    assert random_scores(5, b).tolist() == first.tolist()
    order = random_gpus([1000, 100, 600, 500], SHARE, a)
    assert sorted(order) == [0, 2, 3] and order == random_gpus([1000, 100, 600, 500], SHARE, b)
    assert random_gpus([1000, 300, 1000], TaskShape(1, 1000, 2), a) == [0, 2]
    assert random_scores(0, a).tolist() == []


def test_best_fit_gpus_take_the_tightest_first() -> None:
    assert best_fit_gpus([700, 1000, 200, 500], SHARE) == [3, 0, 1]
    assert best_fit_gpus([1000, 900, 1000], TaskShape(1, 1000, 2)) == [0, 2]


def test_fgd_scores_the_least_fragmenting_gpu() -> None:
    typical = typical_tasks([SHARE])
    free = rows((1000, 600), (1000, 1000), (700, 1000))
    cpu = ints(32000, 6000, 32000)
    accepts = np.ones((3, 1), dtype=np.bool_)
    scores, best = fgd_scores(cpu, free, accepts, SHARE, typical)
    # row 0: on GPU 0 nothing is stranded (sigmoid 0 -> 50); on GPU 1, 100 is (sigmoid(-0.1) -> 47)
    # row 1: 2000 CPU left cannot take another typical task: all 1500 left strand (sigmoid(-1.5) -> 18)
    # row 2: GPU 0 would strand 200 (45); GPU 1 leaves 700 and 500, both usable (50)
    assert scores.tolist() == [50, 18, 50]
    assert best.tolist() == [0, 0, 1]
    assert fgd_gpus(32000, [700, 1000], np.ones(1, dtype=np.bool_), SHARE, typical) == [1, 0]
    assert fgd_gpus(32000, [700, 300], np.ones(1, dtype=np.bool_), SHARE, typical) == [0]


def test_fgd_whole_gpus_and_cpu_tasks_move_the_measure_too() -> None:
    typical = typical_tasks([SHARE])
    accepts = np.ones((2, 1), dtype=np.bool_)
    free = rows((1000, 1000, 400), (1000, 1000))
    # a whole GPU: row 0 keeps 1000 + 400 (400 stranded before and after: 50); row 1 keeps one GPU (50)
    scores, best = fgd_scores(ints(32000, 32000), free, accepts, TaskShape(4000, 1000, 1), typical)
    assert scores.tolist() == [50, 50] and best.tolist() == [-1, -1]
    # a CPU task that leaves 3000 CPU: no typical task fits any more, all 2000 strand (sigmoid(-2) -> 11)
    scores, _ = fgd_scores(ints(32000, 7000), free, accepts, CPU_ONLY, typical)
    assert scores.tolist() == [50, 11]
