"""GPUScheduler: free GPU counts (MIG too), GPU memory / product / family annotations against GPU
Feature Discovery labels, keepNonGpuPodsOff, binpack / spread scores with hand-computed numbers, args
validation, batch / per-node agreement, requeue hints, and a run through `kubesched simulate`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.plugins.explain_harness import simulate_explain, single_plugin_config

from kubesched.api.objects import Pod
from kubesched.errors import FieldErrors, InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, QueueingHint, Resource
from kubesched.framework.interfaces import extension_points_of
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.registry import decode_args, instantiate
from kubesched.framework.status import Code, Status
from kubesched.plugins import default_registry
from kubesched.plugins.contrib.gpu_scheduler import (
    NON_GPU_POD_REASON,
    GPUScheduler,
    GPUSchedulerArgs,
    insufficient_gpus_reason,
    rank_normalize,
)
from kubesched.plugins.contrib.gpu_scheduler.filtering import distinct_rows
from kubesched.testing.builders import make_node, make_pod, make_table

GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-3g.20gb"
MEM = "gpu.kubesched.io/min-memory-mib"
PRODUCT = "gpu.kubesched.io/product"
FAMILY = "gpu.kubesched.io/family"
UNRES = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
UNSCHED = Code.UNSCHEDULABLE


def gpu_node(
    name: str,
    gpus: int = 8,
    *,
    memory: str | None = None,
    product: str | None = None,
    family: str | None = None,
    extra: Mapping[str, int] | None = None,
) -> Any:
    labels = {}
    if memory is not None:
        labels["nvidia.com/gpu.memory"] = memory
    if product is not None:
        labels["nvidia.com/gpu.product"] = product
    if family is not None:
        labels["nvidia.com/gpu.family"] = family
    resources: dict[str, str | int] = {GPU: gpus} if gpus else {}
    resources.update(extra or {})
    return make_node(name, cpu="64", memory="512Gi", extra=resources, labels=labels)


def gpu_pod(name: str, gpus: int = 0, *, node: str = "", annotations: Mapping[str, str] | None = None) -> Pod:
    return make_pod(name, extra={GPU: gpus} if gpus else {}, node_name=node, annotations=annotations)


def mig_pod(name: str, count: int, *, node: str = "") -> Pod:
    return make_pod(name, extra={MIG: count}, node_name=node)


def both_forms(
    plugin: GPUScheduler, pod: Pod, table: NodeTable, *, pre_filter: bool = True
) -> tuple[Status | None, list[Status | None]]:
    """(PreFilter status, per-node filter statuses) after checking the batch form says the same."""
    state = CycleState()
    pre = plugin.pre_filter(state, pod, table.all()) if pre_filter else None
    per_node = [plugin.filter(state, pod, ni) for ni in table.infos]
    res = plugin.filter_nodes(state, pod, table.all())
    batch = [None if c < 0 else res.statuses[c] for c in res.codes]
    assert batch == per_node
    return pre, per_node


def filter_one(plugin: GPUScheduler, pod: Pod, node: Any, running: Sequence[Pod] = ()) -> Status | None:
    pre, (status,) = both_forms(plugin, pod, make_table([node], running))
    assert pre is None
    return status


def scores(plugin: GPUScheduler, pod: Pod, table: NodeTable) -> dict[str, int]:
    """Normalized scores by node name, checking the per-node raw scores equal the batch ones."""
    state = CycleState()
    assert plugin.pre_score(state, pod, table.all()) is None
    raw = plugin.score_nodes(state, pod, table.all())
    assert raw.tolist() == [plugin.score(state, pod, ni) for ni in table.infos]
    out = raw.copy()
    assert plugin.normalize_score(state, pod, table.all(), out) is None
    return dict(zip(table.names, out.tolist(), strict=True))


# --------------------------------------------------------------------------- filter: counts


@pytest.mark.parametrize(
    ("gpus", "running", "need", "expected"),
    [
        (8, [], 4, None),
        (8, [4], 4, None),  # exactly enough
        (8, [2, 4], 4, Status(UNSCHED, "Insufficient free GPUs: need 4, have 2")),
        (8, [8], 1, Status(UNSCHED, "Insufficient free GPUs: need 1, have 0")),
        # More than the node has at all: preemption cannot help.
        (2, [], 4, Status(UNRES, "Insufficient free GPUs: need 4, have 2")),
        (0, [], 1, Status(UNRES, "Insufficient free GPUs: need 1, have 0")),
    ],
)
def test_free_gpu_count(gpus: int, running: list[int], need: int, expected: Status | None) -> None:
    pods = [gpu_pod(f"r{i}", n, node="n") for i, n in enumerate(running)]
    assert filter_one(GPUScheduler(), gpu_pod("p", need), gpu_node("n", gpus), pods) == expected


def test_overcommitted_node_reports_zero_free() -> None:
    # Pods bound by someone else can exceed allocatable; "have" never goes negative.
    status = filter_one(GPUScheduler(), gpu_pod("p", 1), gpu_node("n", 2), [gpu_pod("r", 3, node="n")])
    assert status == Status(UNSCHED, "Insufficient free GPUs: need 1, have 0")


def test_mig_resources_count_and_are_named() -> None:
    node = gpu_node("n", 0, extra={MIG: 3})
    plugin = GPUScheduler()
    assert filter_one(plugin, mig_pod("p", 2), node, [mig_pod("r", 1, node="n")]) is None
    assert filter_one(plugin, mig_pod("p", 2), node, [mig_pod("r", 2, node="n")]) == Status(
        UNSCHED, f"Insufficient free GPUs ({MIG}): need 2, have 1"
    )
    assert filter_one(plugin, mig_pod("p", 4), node) == Status(
        UNRES, f"Insufficient free GPUs ({MIG}): need 4, have 3"
    )


def test_every_short_resource_is_reported_full_gpus_first() -> None:
    pod = make_pod("p", extra={MIG: 2, "nvidia.com/mig-1g.5gb": 1, GPU: 2})
    node = gpu_node("n", 1, extra={MIG: 1})
    assert filter_one(GPUScheduler(), pod, node) == Status(
        UNRES,
        "Insufficient free GPUs: need 2, have 1",
        "Insufficient free GPUs (nvidia.com/mig-1g.5gb): need 1, have 0",
        f"Insufficient free GPUs ({MIG}): need 2, have 1",
    )


def test_unmanaged_resources_are_not_this_plugins_business() -> None:
    plugin = GPUScheduler()
    pod = make_pod("p", extra={"amd.com/gpu": 1, "nvidia.com/gpu.shared": 1})
    state = CycleState()
    assert plugin.pre_filter(state, pod, make_table([gpu_node("n")]).all()) == Status.skip()
    assert plugin.is_managed(GPU) and plugin.is_managed("nvidia.com/mig-1g.5gb")
    assert not plugin.is_managed("amd.com/gpu") and not plugin.is_managed("nvidia.com/gpu.shared")


def test_resource_args_select_what_counts() -> None:
    plugin = GPUScheduler(GPUSchedulerArgs(resource_names=["amd.com/gpu"], resource_patterns=[]))
    assert plugin.is_managed("amd.com/gpu") and not plugin.is_managed(GPU) and not plugin.is_managed(MIG)
    node = make_node("n", extra={"amd.com/gpu": 1})
    assert filter_one(plugin, make_pod("p", extra={"amd.com/gpu": 2}), node) == Status(
        UNRES, "Insufficient free GPUs (amd.com/gpu): need 2, have 1"
    )
    # A pod asking only nvidia.com/gpu is not a GPU pod for this configuration.
    assert plugin.pre_filter(CycleState(), gpu_pod("q", 1), make_table([node]).all()) == Status.skip()


# --------------------------------------------------------------------------- filter: labels


MEMORY_NEED = "Insufficient GPU memory: need 40000 MiB"


@pytest.mark.parametrize(
    ("memory", "annotation", "expected"),
    [
        ("81920", "40000", None),
        ("40000", "40000", None),  # equal is enough
        ("15360", "40000", Status(UNRES, f"{MEMORY_NEED}, have 15360 MiB")),
        (None, "40000", Status(UNRES, f"{MEMORY_NEED}, node has no valid nvidia.com/gpu.memory label")),
        ("80GB", "40000", Status(UNRES, f"{MEMORY_NEED}, node has no valid nvidia.com/gpu.memory label")),
        (None, "0", None),  # 0 asks for nothing
        ("15360", " 16000 ", Status(UNRES, "Insufficient GPU memory: need 16000 MiB, have 15360 MiB")),
    ],
)
def test_min_gpu_memory(memory: str | None, annotation: str, expected: Status | None) -> None:
    pod = gpu_pod("p", 1, annotations={MEM: annotation})
    assert filter_one(GPUScheduler(), pod, gpu_node("n", memory=memory)) == expected


@pytest.mark.parametrize("bad", ["40Gi", "-1", "", "4e4", "1.5"])
def test_invalid_memory_annotation_rejects_the_pod(bad: str) -> None:
    pod = gpu_pod("p", 1, annotations={MEM: bad})
    expected = Status(UNRES, f"invalid annotation {MEM}={bad!r}: must be a whole number of MiB")
    table = make_table([gpu_node("a"), gpu_node("b")])
    pre, per_node = both_forms(GPUScheduler(), pod, table)
    assert pre == expected
    assert per_node == [expected, expected]
    # Also when PreFilter is disabled.
    _, per_node = both_forms(GPUScheduler(), pod, table, pre_filter=False)
    assert per_node == [expected, expected]


A100 = "NVIDIA-A100-SXM4-80GB"


@pytest.mark.parametrize(
    ("product", "wanted", "expected"),
    [
        (A100, A100, None),
        (A100, "NVIDIA-H100-80GB-HBM3, NVIDIA-A100-SXM4-80GB", None),  # any of a list
        (A100, "NVIDIA-A100-*", None),  # shell-style pattern
        (A100, "nvidia-a100-*", Status(UNRES, f"GPU product mismatch: need nvidia-a100-*, node has {A100}")),
        (
            "Tesla-T4",
            "NVIDIA-A100-*,NVIDIA-H100-*",
            Status(UNRES, "GPU product mismatch: need NVIDIA-A100-* or NVIDIA-H100-*, node has Tesla-T4"),
        ),
        (
            None,
            "*",
            Status(UNRES, "GPU product mismatch: need *, node has no nvidia.com/gpu.product label"),
        ),
        ("Tesla-T4", " , ", None),  # blank list: no constraint
    ],
)
def test_product(product: str | None, wanted: str, expected: Status | None) -> None:
    pod = gpu_pod("p", 1, annotations={PRODUCT: wanted})
    assert filter_one(GPUScheduler(), pod, gpu_node("n", product=product)) == expected


@pytest.mark.parametrize(
    ("family", "wanted", "expected"),
    [
        ("hopper", "hopper", None),
        ("ampere", "ampere,hopper", None),
        (
            "turing",
            "ampere,hopper",
            Status(UNRES, "GPU family mismatch: need ampere or hopper, node has turing"),
        ),
        (
            None,
            "hopper",
            Status(UNRES, "GPU family mismatch: need hopper, node has no nvidia.com/gpu.family label"),
        ),
    ],
)
def test_family(family: str | None, wanted: str, expected: Status | None) -> None:
    pod = gpu_pod("p", 1, annotations={FAMILY: wanted})
    assert filter_one(GPUScheduler(), pod, gpu_node("n", family=family)) == expected


def test_all_reasons_in_order_and_count_shortage_alone_stays_resolvable() -> None:
    pod = gpu_pod("p", 4, annotations={MEM: "40000", PRODUCT: "NVIDIA-A100-*", FAMILY: "ampere"})
    node = gpu_node("n", 8, memory="15360", product="Tesla-T4", family="turing")
    running = [gpu_pod("r", 6, node="n")]
    assert filter_one(GPUScheduler(), pod, node, running) == Status(
        UNRES,
        "Insufficient free GPUs: need 4, have 2",
        "Insufficient GPU memory: need 40000 MiB, have 15360 MiB",
        "GPU product mismatch: need NVIDIA-A100-*, node has Tesla-T4",
        "GPU family mismatch: need ampere, node has turing",
    )


def test_label_and_annotation_names_are_args() -> None:
    args = GPUSchedulerArgs(
        min_memory_annotation="example.com/vram",
        product_annotation="example.com/model",
        family_annotation="example.com/arch",
        memory_label="example.com/vram-mib",
        product_label="example.com/model",
        family_label="example.com/arch",
    )
    plugin = GPUScheduler(args)
    labels = {"example.com/vram-mib": "24576", "example.com/model": "L4", "example.com/arch": "ada"}
    node = make_node("n", extra={GPU: 1}, labels=labels)
    ok = gpu_pod(
        "p",
        1,
        annotations={"example.com/vram": "24576", "example.com/model": "L4", "example.com/arch": "ada"},
    )
    assert filter_one(plugin, ok, node) is None
    # The default annotations mean nothing to this configuration.
    assert filter_one(plugin, gpu_pod("q", 1, annotations={MEM: "99999", PRODUCT: "H100"}), node) is None
    bad = gpu_pod("p", 1, annotations={"example.com/vram": "40000", "example.com/arch": "hopper"})
    assert filter_one(plugin, bad, node) == Status(
        UNRES,
        "Insufficient GPU memory: need 40000 MiB, have 24576 MiB",
        "GPU family mismatch: need hopper, node has ada",
    )


def test_annotations_on_a_pod_without_gpus_are_ignored() -> None:
    pod = gpu_pod("p", annotations={MEM: "not a number", PRODUCT: "H100"})
    table = make_table([make_node("cpu"), gpu_node("g")])
    pre, per_node = both_forms(GPUScheduler(), pod, table)
    assert pre == Status.skip()
    assert per_node == [None, None]
    assert GPUScheduler().pre_score(CycleState(), pod, table.all()) == Status.skip()


# --------------------------------------------------------------------------- keepNonGpuPodsOff


def test_keep_non_gpu_pods_off_gpu_nodes() -> None:
    plugin = GPUScheduler(GPUSchedulerArgs(keep_non_gpu_pods_off=True))
    nodes = [
        make_node("cpu"),
        gpu_node("full", 8),
        gpu_node("mig", 0, extra={MIG: 7}),
        make_node("zero", extra={GPU: 0}),  # the device plugin reports no healthy GPU
    ]
    table = make_table(nodes)
    off = Status(UNRES, NON_GPU_POD_REASON)
    pre, per_node = both_forms(plugin, make_pod("web", cpu="1"), table)
    assert pre is None  # not skipped: this pod is the point
    assert per_node == [None, off, off, None]
    assert scores(plugin, make_pod("web", cpu="1"), table) == {"cpu": 100, "full": 0, "mig": 0, "zero": 100}
    # GPU pods are unaffected by the option.
    pre, per_node = both_forms(plugin, gpu_pod("train", 1), table)
    assert pre is None and per_node[1] is None


def test_without_keep_non_gpu_pods_off_cpu_pods_skip() -> None:
    table = make_table([make_node("cpu"), gpu_node("g")])
    pre, per_node = both_forms(GPUScheduler(), make_pod("web", cpu="1"), table)
    assert pre == Status.skip()
    assert per_node == [None, None]  # even if the framework called Filter anyway


# --------------------------------------------------------------------------- scoring


def packing_cluster() -> NodeTable:
    """A: 8 GPUs, 2 used (free 6); B: 4 GPUs, none used; C: 8 GPUs, 6 used (free 2), 80 GiB GPUs;
    D: like C with 40 GiB GPUs; E: 8 GPUs, 7 used (free 1: too few for 2)."""
    nodes = [
        gpu_node("A", 8, memory="81920"),
        gpu_node("B", 4, memory="81920"),
        gpu_node("C", 8, memory="81920"),
        gpu_node("D", 8, memory="40960"),
        gpu_node("E", 8, memory="81920"),
    ]
    running = [
        gpu_pod("a", 2, node="A"),
        gpu_pod("c", 6, node="C"),
        gpu_pod("d", 6, node="D"),
        gpu_pod("e", 7, node="E"),
    ]
    table: NodeTable = make_table(nodes, running)
    return table


def test_binpack_scores() -> None:
    # Keys, best first: D (fits, partly used, free 2, 40 GiB) > C (same, 80 GiB) > A (partly used,
    # free 6) > B (whole node) > E (does not fit). Five distinct keys -> ranks 4..0 -> 100*r//4.
    assert scores(GPUScheduler(), gpu_pod("p", 2), packing_cluster()) == {
        "A": 50,
        "B": 25,
        "C": 75,
        "D": 100,
        "E": 0,
    }


def test_spread_scores() -> None:
    # Free share after placing 2: A (6-2)/8 = B (4-2)/4 = 1/2; C = D = 0/8; E does not fit.
    # A and B tie (same memory); D beats C on memory. Keys: A=B > D > C > E -> 100, 66, 33, 0.
    plugin = GPUScheduler(GPUSchedulerArgs(scoring_strategy="spread"))
    assert scores(plugin, gpu_pod("p", 2), packing_cluster()) == {
        "A": 100,
        "B": 100,
        "C": 33,
        "D": 66,
        "E": 0,
    }


def test_raw_binpack_key_layout() -> None:
    """fits << 43 | partly used << 42 | (2^21-1 - free) << 21 | (2^21-1 - memory MiB)."""
    table = packing_cluster()
    plugin = GPUScheduler()
    state = CycleState()
    plugin.pre_score(state, gpu_pod("p", 2), table.all())
    tier = 2**21 - 1
    d = table.infos[table.index["D"]]
    assert plugin.score(state, gpu_pod("p", 2), d) == (1 << 43) | (1 << 42) | ((tier - 2) << 21) | (
        tier - 40960
    )


def test_smallest_sufficient_memory_wins_and_unknown_memory_is_last() -> None:
    table = make_table(
        [gpu_node("big", 4, memory="81920"), gpu_node("small", 4, memory="40960"), gpu_node("unknown", 4)]
    )
    pod = gpu_pod("p", 1, annotations={MEM: "40000"})
    # With a minimum, "unknown" does not fit at all; without one it only sorts last.
    assert scores(GPUScheduler(), pod, table) == {"big": 50, "small": 100, "unknown": 0}
    assert scores(GPUScheduler(), gpu_pod("q", 1), table) == {"big": 50, "small": 100, "unknown": 0}


def test_product_mismatch_scores_as_not_fitting() -> None:
    table = make_table([gpu_node("t4", 4, product="Tesla-T4"), gpu_node("a100", 8, product=A100)])
    pod = gpu_pod("p", 1, annotations={PRODUCT: "NVIDIA-A100-*"})
    # The whole 4-GPU T4 node would be the tighter fit, but it is the wrong product.
    assert scores(GPUScheduler(), pod, table) == {"t4": 0, "a100": 100}


def test_mig_scores_use_the_requested_profile() -> None:
    nodes = [gpu_node("m1", 0, extra={MIG: 7}), gpu_node("m2", 0, extra={MIG: 7}), gpu_node("full", 8)]
    table = make_table(nodes, [mig_pod("x", 3, node="m2")])
    # m2 is partly used (free 4) and beats m1 (whole, free 7); "full" has no such MIG device.
    assert scores(GPUScheduler(), mig_pod("p", 2), table) == {"m1": 50, "m2": 100, "full": 0}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ([], []),
        ([7], [100]),
        ([3, 3, 3], [100, 100, 100]),
        ([5, 5, 9], [0, 0, 100]),
        ([10, 30, 20], [0, 100, 50]),
        ([1 << 43, 0, 1 << 43 | 5, 1], [66, 0, 100, 33]),
    ],
)
def test_rank_normalize(raw: list[int], expected: list[int]) -> None:
    scores_ = np.asarray(raw, dtype=np.int64)
    rank_normalize(scores_)
    assert scores_.tolist() == expected


@pytest.mark.parametrize(("rows", "columns", "spread"), [(50, 3, 3), (400, 8, 10_000)])
def test_distinct_rows(rows: int, columns: int, spread: int) -> None:
    """Grouping failing nodes: exact, also when the mixed-radix key would overflow (the second case
    has up to 400**8 > 2**62 combinations and takes the np.unique(axis=0) path)."""
    keys = np.random.default_rng(7).integers(-2, spread, size=(rows, columns), dtype=np.int64)
    distinct, inverse = distinct_rows(keys)
    assert (distinct[inverse] == keys).all()
    assert (
        len({tuple(r) for r in distinct.tolist()}) == len(distinct) == len({tuple(r) for r in keys.tolist()})
    )


def test_pre_score_rejects_invalid_annotation() -> None:
    pod = gpu_pod("p", 1, annotations={MEM: "lots"})
    status = GPUScheduler().pre_score(CycleState(), pod, make_table([gpu_node("n")]).all())
    assert status is not None and status.code == UNRES and "must be a whole number of MiB" in status.message()
    # Without PreScore, both Score forms report it.
    table = make_table([gpu_node("n")])
    assert GPUScheduler().score(CycleState(), pod, table.infos[0]) == (0, status)
    with pytest.raises(ValueError, match="must be a whole number"):
        GPUScheduler().score_nodes(CycleState(), pod, table.all())


def test_score_without_pre_score_computes_the_pod() -> None:
    table = packing_cluster()
    pod = gpu_pod("p", 2)
    state = CycleState()
    assert GPUScheduler().score_nodes(state, pod, table.all()).tolist() == [
        GPUScheduler().score(CycleState(), pod, ni) for ni in table.infos
    ]


# --------------------------------------------------------------------------- args


def test_default_args_and_registry() -> None:
    args = decode_args(GPUScheduler, None)
    assert args == GPUSchedulerArgs()
    assert args.resource_names == [GPU] and args.resource_patterns == ["nvidia.com/mig-*"]
    assert args.scoring_strategy == "binpack" and args.keep_non_gpu_pods_off is False
    assert (args.min_memory_annotation, args.product_annotation, args.family_annotation) == (
        MEM,
        PRODUCT,
        FAMILY,
    )
    assert (args.memory_label, args.product_label, args.family_label) == (
        "nvidia.com/gpu.memory",
        "nvidia.com/gpu.product",
        "nvidia.com/gpu.family",
    )
    assert default_registry(entry_points=False)["GPUScheduler"] is GPUScheduler
    assert isinstance(instantiate(GPUScheduler), GPUScheduler)
    assert extension_points_of(GPUScheduler) == ["preFilter", "filter", "preScore", "score"]


def test_camel_case_args_decode() -> None:
    args = decode_args(
        GPUScheduler,
        {
            "resourceNames": ["nvidia.com/gpu", "amd.com/gpu"],
            "resourcePatterns": [],
            "scoringStrategy": "spread",
            "keepNonGpuPodsOff": True,
            "minMemoryAnnotation": "a.io/m",
            "productAnnotation": "a.io/p",
            "familyAnnotation": "a.io/f",
            "memoryLabel": "b.io/m",
            "productLabel": "b.io/p",
            "familyLabel": "b.io/f",
        },
    )
    assert args.resource_names == ["nvidia.com/gpu", "amd.com/gpu"] and args.resource_patterns == []
    assert args.scoring_strategy == "spread" and args.keep_non_gpu_pods_off
    assert (args.min_memory_annotation, args.product_label, args.family_label) == (
        "a.io/m",
        "b.io/p",
        "b.io/f",
    )


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        (
            {"resourceNames": ["gpu"]},
            "args.resourceNames[0]",
            "invalid resource name 'gpu': must be an extended",
        ),
        ({"resourceNames": ["kubernetes.io/gpu"]}, "args.resourceNames[0]", "outside kubernetes.io"),
        ({"resourcePatterns": ["mig-*"]}, "args.resourcePatterns[0]", "invalid resource pattern 'mig-*'"),
        ({"resourcePatterns": ["nvidia.com/[ab]"]}, "args.resourcePatterns[0]", "with optional * and ?"),
        (
            {"resourceNames": [], "resourcePatterns": []},
            "args.resourceNames",
            "at least one GPU resource name or pattern is required",
        ),
        (
            {"scoringStrategy": "MostAllocated"},
            "args.scoringStrategy",
            'supported values: "binpack", "spread"',
        ),
        ({"minMemoryAnnotation": "bad key"}, "args.minMemoryAnnotation", "invalid annotation key 'bad key'"),
        ({"productAnnotation": ""}, "args.productAnnotation", "invalid annotation key ''"),
        ({"familyAnnotation": "a/b/c"}, "args.familyAnnotation", "at most one '/'"),
        ({"memoryLabel": "-x"}, "args.memoryLabel", "invalid label key '-x'"),
        ({"productLabel": "UPPER.case/x"}, "args.productLabel", "invalid label key"),
        ({"familyLabel": "x" * 64}, "args.familyLabel", "invalid label key"),
        ({"scoringStrategy": 3}, "args.scoringStrategy", "Expected `str`"),
        ({"keepNonGpuPodsOff": "maybe"}, "args.keepNonGpuPodsOff", "Expected `bool`"),
    ],
)
def test_arg_validation(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        decode_args(GPUScheduler, raw)
    assert info.value.path == path
    assert message in info.value.message


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(msgspec.ValidationError, match="unknown field `strategy`"):
        msgspec.convert({"strategy": "spread"}, GPUSchedulerArgs, strict=False)


def test_invalid_args_fail_the_constructor_with_every_problem() -> None:
    with pytest.raises(FieldErrors) as info:
        GPUScheduler(GPUSchedulerArgs(resource_names=["x"], scoring_strategy="pack"))
    assert [e.path for e in info.value.errors] == ["resourceNames[0]", "scoringStrategy"]


def test_reason_helper() -> None:
    assert insufficient_gpus_reason(GPU, 4, 2) == "Insufficient free GPUs: need 4, have 2"
    assert insufficient_gpus_reason(MIG, 1, 0) == f"Insufficient free GPUs ({MIG}): need 1, have 0"


# --------------------------------------------------------------------------- requeueing


def test_events_and_hints() -> None:
    plugin = GPUScheduler()
    regs = plugin.events_to_register()
    assert [r.event for r in regs] == [
        ClusterEvent(Resource.POD, ActionType.DELETE),
        ClusterEvent(
            Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE | ActionType.UPDATE_NODE_LABEL
        ),
    ]
    hint = regs[0].hint
    assert hint is not None and regs[1].hint is None
    waiting, cpu_waiting = gpu_pod("w", 2), make_pod("web", cpu="1")
    gpu_gone, cpu_gone, mig_gone = (
        gpu_pod("g", 1, node="n"),
        make_pod("c", cpu="1", node_name="n"),
        mig_pod("m", 1),
    )
    assert hint(waiting, gpu_gone, None) is QueueingHint.QUEUE
    assert hint(waiting, mig_gone, None) is QueueingHint.QUEUE
    assert hint(waiting, cpu_gone, None) is QueueingHint.SKIP
    assert hint(cpu_waiting, gpu_gone, None) is QueueingHint.SKIP  # keepNonGpuPodsOff is not about free GPUs
    assert hint(waiting, None, None) is QueueingHint.QUEUE


# --------------------------------------------------------------------------- batch == per node

_memories = st.sampled_from([None, "bad", "15360", "40960", "81920"])
_products = st.sampled_from([None, "Tesla-T4", A100, "NVIDIA-H100-80GB-HBM3"])
_families = st.sampled_from([None, "turing", "ampere", "hopper"])
_node_st = st.tuples(
    st.integers(0, 8),
    st.integers(0, 9),
    st.integers(0, 3),
    st.integers(0, 3),
    _memories,
    _products,
    _families,
)


@settings(max_examples=300, deadline=None)
@given(
    nodes=st.lists(_node_st, max_size=7),
    need=st.integers(0, 5),
    mig_need=st.integers(0, 2),
    min_memory=st.sampled_from([None, "0", "40000", "x"]),
    products=st.sampled_from([None, "NVIDIA-*", "Tesla-T4,NVIDIA-H100-80GB-HBM3", "*"]),
    families=st.sampled_from([None, "ampere", "hopper,turing"]),
    keep_off=st.booleans(),
    spread=st.booleans(),
    data=st.data(),
)
def test_batch_agrees_with_per_node(
    nodes: list[tuple[int, int, int, int, str | None, str | None, str | None]],
    need: int,
    mig_need: int,
    min_memory: str | None,
    products: str | None,
    families: str | None,
    keep_off: bool,
    spread: bool,
    data: st.DataObject,
) -> None:
    node_objs, running = [], []
    for i, (gpus, used, migs, mig_used, memory, product, family) in enumerate(nodes):
        name = f"n{i}"
        node_objs.append(
            gpu_node(name, gpus, memory=memory, product=product, family=family, extra={MIG: migs})
        )
        if used:
            running.append(gpu_pod(f"u{i}", used, node=name))
        if mig_used:
            running.append(mig_pod(f"m{i}", mig_used, node=name))
    table = make_table(node_objs, running)
    rows = sorted(data.draw(st.sets(st.integers(0, len(nodes) - 1))) if nodes else set())
    subset = NodeSet(table, np.asarray(rows, dtype=np.intp))
    annotations = {
        k: v for k, v in ((MEM, min_memory), (PRODUCT, products), (FAMILY, families)) if v is not None
    }
    requests = {k: v for k, v in ((GPU, need), (MIG, mig_need)) if v}
    pod = make_pod("p", extra=requests, annotations=annotations)
    plugin = GPUScheduler(
        GPUSchedulerArgs(keep_non_gpu_pods_off=keep_off, scoring_strategy="spread" if spread else "binpack")
    )
    state = CycleState()
    pre = plugin.pre_filter(state, pod, table.all())
    res = plugin.filter_nodes(state, pod, subset)
    batch = [None if c < 0 else res.statuses[c] for c in res.codes]
    assert batch == [plugin.filter(state, pod, ni) for ni in subset]
    assert len(set(res.statuses)) == len(res.statuses)  # one Status per distinct verdict
    state = CycleState()
    if plugin.pre_score(state, pod, subset) is None and pre is None:
        raw = plugin.score_nodes(state, pod, subset)
        assert raw.tolist() == [plugin.score(state, pod, ni) for ni in subset]
        normalized = raw.copy()
        plugin.normalize_score(state, pod, subset, normalized)
        assert all(0 <= s <= 100 for s in normalized.tolist())
        # Ranking is kept: a higher raw key never gets a lower normalized score.
        order = np.argsort(raw, kind="stable")
        assert (np.diff(normalized[order]) >= 0).all()


# --------------------------------------------------------------------------- kubesched simulate

CLUSTER = """\
apiVersion: v1
kind: Node
metadata:
  name: a100-partly
  labels: {nvidia.com/gpu.memory: "81920", nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
status: {allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "8"}}
---
apiVersion: v1
kind: Node
metadata:
  name: a100-whole
  labels: {nvidia.com/gpu.memory: "81920", nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
status: {allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "8"}}
---
apiVersion: v1
kind: Node
metadata:
  name: t4
  labels: {nvidia.com/gpu.memory: "15360", nvidia.com/gpu.product: Tesla-T4}
status: {allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "4"}}
---
apiVersion: v1
kind: Node
metadata: {name: cpu}
status: {allocatable: {cpu: "64", memory: 512Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: default}
spec:
  nodeName: a100-partly
  containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: "6"}}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: train
  namespace: default
  annotations: {gpu.kubesched.io/min-memory-mib: "40000"}
spec:
  containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: "2"}}}]
"""


def test_simulate_explains_gpu_scheduler(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = single_plugin_config("GPUScheduler")
    expected_args = {"GPUScheduler": {"kind": "GPUSchedulerArgs", "scoringStrategy": "binpack"}}
    report = simulate_explain(tmp_path, capsys, CLUSTER, config, expected_args=expected_args)
    (train,) = [p for p in report["pods"] if p["name"] == "train"]
    assert (train["result"], train["node"]) == ("Scheduled", "a100-partly")
    assert train["filter"] == {
        "cpu": {
            "plugin": "GPUScheduler",
            "code": "UnschedulableAndUnresolvable",
            "reasons": [
                "Insufficient free GPUs: need 2, have 0",
                "Insufficient GPU memory: need 40000 MiB, node has no valid nvidia.com/gpu.memory label",
            ],
        },
        "t4": {
            "plugin": "GPUScheduler",
            "code": "UnschedulableAndUnresolvable",
            "reasons": ["Insufficient GPU memory: need 40000 MiB, have 15360 MiB"],
        },
    }
    # Binpack: the partly used node (free 2) ranks above the whole one (free 8): 100 and 0.
    assert train["scores"] == {
        "a100-partly": {"plugins": {"GPUScheduler": 100}, "total": 100},
        "a100-whole": {"plugins": {"GPUScheduler": 0}, "total": 0},
    }
