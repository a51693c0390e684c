"""GPUScheduler: place GPU pods where their GPUs are free and fit, packing them to keep whole nodes free.

GPUs are extended resources published by the NVIDIA device plugin (`nvidia.com/gpu`, and with MIG
"mixed" strategy one resource per profile, `nvidia.com/mig-3g.20gb`, ...). NodeResourcesFit already
rejects a node without enough of them, but only as `Insufficient nvidia.com/gpu` and with no idea of
which GPU model is there. This plugin adds what GPU clusters need on top:

* Filter: the free count of each managed GPU resource (allocatable minus the requests of the pods on
  the node) against the pod's request, with the numbers in the reason; a minimum GPU memory, product
  or family asked for in pod annotations against NVIDIA GPU Feature Discovery's node labels
  (`nvidia.com/gpu.memory` in MiB, `nvidia.com/gpu.product`, `nvidia.com/gpu.family`); and,
  optionally, keeping pods that request no GPU off GPU nodes so CPU work cannot strand GPUs.
* Score: `binpack` (default) fills partly used GPU nodes first, so whole nodes stay free for large
  or gang jobs, and among those prefers the tightest fit; `spread` prefers the emptiest nodes. Both
  prefer the smallest GPU memory that is enough, leaving big-memory GPUs to pods that need them.
  The raw score is a lexicographic key; NormalizeScore ranks the distinct keys onto 0..100, because
  scaling such a key linearly would erase every preference below the first.

Both Filter and Score come in a per-node and a batch form that agree exactly (hypothesis-tested).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, ClassVar, Final

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.api.resource import ResourceClaim
from kubesched.api.resources import pod_requests
from kubesched.api.selectors import qualified_name_error
from kubesched.errors import FieldErrors, InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interfaces import (
    BatchFilterPlugin,
    BatchScorePlugin,
    EnqueueExtensions,
    FilterPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
    Scores,
)
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import BatchFilterResult, NodeSet, NodeTable
from kubesched.framework.status import Code, Status
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.plugins._volumes import ListerSource
from kubesched.plugins.contrib._dra_gpus import DraGpuView, pod_claim_device_count
from kubesched.plugins.node_resources_fit import is_extended_resource

__all__ = [
    "BINPACK",
    "DEFAULT_FAMILY_ANNOTATION",
    "DEFAULT_MIN_MEMORY_ANNOTATION",
    "DEFAULT_PRODUCT_ANNOTATION",
    "GPU_RESOURCE",
    "LABEL_GPU_FAMILY",
    "LABEL_GPU_MEMORY",
    "LABEL_GPU_PRODUCT",
    "MIG_RESOURCE_PATTERN",
    "NON_GPU_POD_REASON",
    "SPREAD",
    "GPUScheduler",
    "GPUSchedulerArgs",
    "insufficient_gpus_reason",
    "rank_normalize",
]

GPU_RESOURCE = "nvidia.com/gpu"
#: NVIDIA's DRA driver: GPUs published in ResourceSlices instead of as an extended resource.
DRA_GPU_DRIVER = "gpu.nvidia.com"
#: The pseudo-resource a DRA pod's GPU need is accounted under.
DRA_GPUS = "DRA GPUs"
MIG_RESOURCE_PATTERN = "nvidia.com/mig-*"
#: NVIDIA GPU Feature Discovery node labels (memory is MiB per GPU, or per MIG device).
LABEL_GPU_MEMORY = "nvidia.com/gpu.memory"
LABEL_GPU_PRODUCT = "nvidia.com/gpu.product"
LABEL_GPU_FAMILY = "nvidia.com/gpu.family"
DEFAULT_MIN_MEMORY_ANNOTATION = "gpu.kubesched.io/min-memory-mib"
DEFAULT_PRODUCT_ANNOTATION = "gpu.kubesched.io/product"
DEFAULT_FAMILY_ANNOTATION = "gpu.kubesched.io/family"

BINPACK = "binpack"
SPREAD = "spread"
_STRATEGIES = (BINPACK, SPREAD)

NON_GPU_POD_REASON = "node(s) had GPUs and the pod requests none"

_STATE_KEY = "GPUScheduler"

# The packed score key: fits (bit 43) | partly used (bit 42, binpack) | free tier (bits 21..41) |
# memory tier (bits 0..20). 21 bits hold counts up to 2M GPUs and memory up to 2 TiB per GPU.
_TIER_BITS: Final = 21
_TIER_MAX: Final = (1 << _TIER_BITS) - 1
_PARTLY_SHIFT: Final = 2 * _TIER_BITS
_FITS_SHIFT: Final = 2 * _TIER_BITS + 1

_MIB_RE = re.compile(r"[0-9]{1,15}")

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


# --------------------------------------------------------------------------- args


def _default_resource_names() -> list[str]:
    return [GPU_RESOURCE]


def _default_resource_patterns() -> list[str]:
    return [MIG_RESOURCE_PATTERN]


def _supported(values: Sequence[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


class GPUSchedulerArgs(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """pluginConfig args (kind GPUSchedulerArgs).

    A resource is managed when it is in `resourceNames` or matches one of `resourcePatterns`
    (shell-style `*` / `?`), so every MIG profile counts without listing each one.
    """

    resource_names: list[str] = msgspec.field(default_factory=_default_resource_names)
    resource_patterns: list[str] = msgspec.field(default_factory=_default_resource_patterns)
    scoring_strategy: str = BINPACK
    keep_non_gpu_pods_off: bool = False
    min_memory_annotation: str = DEFAULT_MIN_MEMORY_ANNOTATION
    product_annotation: str = DEFAULT_PRODUCT_ANNOTATION
    family_annotation: str = DEFAULT_FAMILY_ANNOTATION
    memory_label: str = LABEL_GPU_MEMORY
    product_label: str = LABEL_GPU_PRODUCT
    family_label: str = LABEL_GPU_FAMILY
    #: DRA drivers whose ResourceSlices hold whole GPUs (pods with ResourceClaims are scored by them).
    dra_drivers: list[str] = msgspec.field(default_factory=lambda: [DRA_GPU_DRIVER])

    def validate(self) -> list[InputError]:
        """Field errors with paths relative to the args, e.g. `resourcePatterns[0]`."""
        errors: list[InputError] = []
        if not self.resource_names and not self.resource_patterns:
            errors.append(
                InputError("at least one GPU resource name or pattern is required", path="resourceNames")
            )
        for i, name in enumerate(self.resource_names):
            if not is_extended_resource(name):
                errors.append(
                    InputError(
                        f"invalid resource name {name!r}: must be an extended resource "
                        "(<domain>/<name> outside kubernetes.io)",
                        path=f"resourceNames[{i}]",
                    )
                )
        for i, pattern in enumerate(self.resource_patterns):
            if not is_extended_resource(pattern.replace("*", "x").replace("?", "x")):
                errors.append(
                    InputError(
                        f"invalid resource pattern {pattern!r}: must be an extended resource name "
                        "(<domain>/<name> outside kubernetes.io) with optional * and ? wildcards",
                        path=f"resourcePatterns[{i}]",
                    )
                )
        if self.scoring_strategy not in _STRATEGIES:
            errors.append(
                InputError(
                    f'unsupported value "{self.scoring_strategy}": '
                    f"supported values: {_supported(_STRATEGIES)}",
                    path="scoringStrategy",
                )
            )
        for field, kind, key in (
            ("minMemoryAnnotation", "annotation", self.min_memory_annotation),
            ("productAnnotation", "annotation", self.product_annotation),
            ("familyAnnotation", "annotation", self.family_annotation),
            ("memoryLabel", "label", self.memory_label),
            ("productLabel", "label", self.product_label),
            ("familyLabel", "label", self.family_label),
        ):
            why = qualified_name_error(key)
            if why is not None:
                errors.append(InputError(f"invalid {kind} key {key!r}: {why}", path=field))
        return errors


# --------------------------------------------------------------------------- reasons


def insufficient_gpus_reason(resource: str, need: int, have: int) -> str:
    """`Insufficient free GPUs: need 4, have 2`; other resources are named: `GPUs (nvidia.com/mig-1g.5gb)`."""
    what = "GPUs" if resource == GPU_RESOURCE else f"GPUs ({resource})"
    return f"Insufficient free {what}: need {need}, have {have}"


def _memory_reason(need: int, have: int | None, label: str) -> str:
    if have is None:
        return f"Insufficient GPU memory: need {need} MiB, node has no valid {label} label"
    return f"Insufficient GPU memory: need {need} MiB, have {have} MiB"


def _mismatch_reason(what: str, wanted: Sequence[str], have: str | None, label: str) -> str:
    node = f"node has {have}" if have is not None else f"node has no {label} label"
    return f"GPU {what} mismatch: need {' or '.join(wanted)}, {node}"


def _parse_mib(value: str | None) -> int:
    """A memory label in MiB; -1 when missing or not a whole number."""
    if value is None or not _MIB_RE.fullmatch(value):
        return -1
    return int(value)


def _patterns(value: str | None) -> tuple[str, ...]:
    """A comma-separated annotation as a tuple of patterns (blank entries dropped)."""
    if value is None:
        return ()
    return tuple(p for p in (part.strip() for part in value.split(",")) if p)


def _matches(value: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(value, p) for p in patterns)


def _matcher(patterns: Sequence[str]) -> Callable[[str], bool]:
    def match(value: str) -> bool:
        return _matches(value, patterns)

    return match


def _distinct_rows(keys: IntArray) -> tuple[IntArray, npt.NDArray[np.intp]]:
    """Distinct rows of an int matrix and, per row, the index of its distinct row.

    `np.unique(axis=0)` sorts rows as opaque byte strings and is slow; instead each column is
    replaced by its rank among the column's distinct values and the ranks are combined into one
    exact mixed-radix int64 per row (falling back to `axis=0` if that could overflow).
    """
    combined = np.zeros(len(keys), dtype=np.int64)
    radix = 1
    for j in range(keys.shape[1]):
        values, ranks = np.unique(keys[:, j], return_inverse=True)
        if radix > (1 << 62) // len(values):
            rows, inverse = np.unique(keys, axis=0, return_inverse=True)
            return rows, inverse.reshape(-1)
        combined += ranks.reshape(-1) * radix
        radix *= len(values)
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    return keys[first], inverse.reshape(-1)


def rank_normalize(scores: Scores) -> None:
    """Rewrite `scores` in place by dense rank: the best distinct value 100, the worst 0, the rest
    evenly spaced by rank; all equal -> all 100. Keeps a lexicographic key's order exactly."""
    if scores.size == 0:
        return
    uniq, inverse = np.unique(scores, return_inverse=True)
    if len(uniq) == 1:
        scores[...] = MAX_NODE_SCORE
        return
    scores[...] = inverse.reshape(-1).astype(np.int64) * MAX_NODE_SCORE // (len(uniq) - 1)


# --------------------------------------------------------------------------- cycle state


@dataclass(frozen=True, slots=True)
class _GpuPod:
    """What the pod asks of GPU nodes (PreFilter / PreScore output; never mutated)."""

    #: (managed resource, amount) with amount > 0, configured names first, then by name.
    needs: tuple[tuple[str, int], ...]
    #: Minimum GPU memory in MiB; 0 = no minimum.
    min_memory: int
    products: tuple[str, ...]
    families: tuple[str, ...]
    #: The GPUs come from ResourceClaims (DRA): counts and products are read from ResourceSlices.
    dra: bool = False

    @property
    def total(self) -> int:
        return sum(amount for _, amount in self.needs)

    def clone(self) -> _GpuPod:
        return self


@dataclass(frozen=True, slots=True)
class _Invalid:
    """An annotation the pod got wrong: every node rejects it with the same status."""

    status: Status

    def clone(self) -> _Invalid:
        return self


# --------------------------------------------------------------------------- plugin


class GPUScheduler(
    PreFilterPlugin,
    FilterPlugin,
    BatchFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    BatchScorePlugin,
    ScoreExtensions,
    EnqueueExtensions,
):
    """Filter nodes without enough free GPUs of the right memory / product / family; score by
    binpack or spread. Pods that request no managed GPU resource are skipped (PreFilter and
    PreScore return Skip) unless `keepNonGpuPodsOff` is set, which keeps them off GPU nodes."""

    name: ClassVar[str] = "GPUScheduler"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ("ResourceSlice", "ResourceClaim")
    args_type: ClassVar[type[GPUSchedulerArgs]] = GPUSchedulerArgs

    def __init__(self, args: GPUSchedulerArgs | None = None, handle: ListerSource | None = None) -> None:
        self.args = args if args is not None else GPUSchedulerArgs()
        self._handle = handle
        self._dra = DraGpuView(self.args.dra_drivers)
        errors = self.args.validate()
        if errors:
            raise FieldErrors(errors)
        self._names = tuple(dict.fromkeys(self.args.resource_names))
        self._patterns = tuple(dict.fromkeys(self.args.resource_patterns))
        self._managed_memo: dict[str, bool] = {}
        self._binpack = self.args.scoring_strategy == BINPACK

    # ------------------------------------------------------------------ pod and node facts
    def is_managed(self, resource: str) -> bool:
        """Whether `resource` is one of the GPU resources this plugin accounts for."""
        known = self._managed_memo.get(resource)
        if known is None:
            known = resource in self._names or _matches(resource, self._patterns)
            self._managed_memo[resource] = known
        return known

    def _order(self, resource: str) -> tuple[int, str]:
        try:
            return (self._names.index(resource), resource)
        except ValueError:
            return (len(self._names), resource)

    def _parse(self, pod: Pod) -> _GpuPod | _Invalid:
        requests = pod_requests(pod)
        needs = tuple(
            sorted(
                ((r, v) for r, v in requests.items() if v > 0 and self.is_managed(r)),
                key=lambda item: self._order(item[0]),
            )
        )
        dra = False
        if not needs and pod.spec.resource_claims and self._handle is not None and self.args.dra_drivers:
            count = pod_claim_device_count(pod, self._claims_by_key())
            if count > 0:
                needs, dra = ((DRA_GPUS, count),), True
        if not needs:  # GPU annotations on a pod that requests no GPU mean nothing
            return _GpuPod((), 0, (), ())
        annotations = pod.metadata.annotations
        key = self.args.min_memory_annotation
        raw = annotations.get(key)
        min_memory = 0
        if raw is not None:
            text = raw.strip()
            if not _MIB_RE.fullmatch(text):
                return _Invalid(
                    Status.unschedulable_and_unresolvable(
                        f"invalid annotation {key}={raw!r}: must be a whole number of MiB"
                    )
                )
            min_memory = int(text)
        products = _patterns(annotations.get(self.args.product_annotation))
        families = _patterns(annotations.get(self.args.family_annotation))
        return _GpuPod(needs, min_memory, products, families, dra)

    # ------------------------------------------------------------------ DRA clusters
    def _claims_by_key(self) -> dict[str, ResourceClaim]:
        claims: Sequence[ResourceClaim] = self._handle.lister("ResourceClaim") if self._handle else ()
        return {c.key: c for c in claims}

    def _dra_rows(
        self, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> tuple[IntArray, IntArray, IntArray, list[frozenset[str]]]:
        handle = self._handle
        self._dra.refresh(
            handle.lister("ResourceSlice") if handle else (), handle.lister("ResourceClaim") if handle else ()
        )
        view = self._dra.rows(table)
        return view.total[rows], view.used[rows], view.memory_mib[rows], [view.products[i] for i in rows]

    def _dra_filter_nodes(self, s: _GpuPod, nodes: NodeSet) -> BatchFilterResult:
        """Product and memory against the node's GPUs in ResourceSlices; the count is
        DynamicResources' to check (it allocates the very devices)."""
        n = len(nodes)
        codes = np.full(n, -1, dtype=np.int32)
        if not s.products and s.min_memory <= 0:
            return BatchFilterResult(codes, [])
        _, _, memory, products = self._dra_rows(nodes.table, nodes.rows)
        distinct: dict[Status, int] = {}
        for i in range(n):
            reasons = []
            if s.min_memory > 0 and memory[i] < s.min_memory:
                have = int(memory[i]) if memory[i] >= 0 else None
                reasons.append(_memory_reason(s.min_memory, have, "ResourceSlice GPU memory"))
            if s.products and not any(_matches(p, s.products) for p in products[i]):
                shown = ", ".join(sorted(products[i])) or None
                reasons.append(_mismatch_reason("product", s.products, shown, "ResourceSlice productName"))
            if reasons:
                codes[i] = distinct.setdefault(
                    Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons), len(distinct)
                )
        return BatchFilterResult(codes, list(distinct))

    def _dra_scores(self, s: _GpuPod, nodes: NodeSet) -> Scores:
        """The same packed key as for device-plugin GPUs, from the GPUs in ResourceSlices and claims."""
        total, used, memory, products = self._dra_rows(nodes.table, nodes.rows)
        free = np.maximum(total - used, 0)
        fits = free >= s.total
        if s.products:
            fits &= np.fromiter(
                (any(_matches(p, s.products) for p in ps) for ps in products), bool, len(products)
            )
        if s.min_memory > 0:
            fits &= memory >= s.min_memory
        memory_tier = np.where(memory >= 0, _TIER_MAX - np.minimum(memory, _TIER_MAX), 0)
        key = (fits.astype(np.int64) << _FITS_SHIFT) | memory_tier
        if self._binpack:
            key |= ((used > 0).astype(np.int64) << _PARTLY_SHIFT) | (
                (_TIER_MAX - np.minimum(free, _TIER_MAX)) << _TIER_BITS
            )
        else:
            left = np.maximum(free - s.total, 0)
            key |= np.where(total > 0, left * _TIER_MAX // np.maximum(total, 1), 0) << _TIER_BITS
        out: Scores = key.astype(np.int64)
        return out

    def _state(self, state: CycleState, pod: Pod) -> _GpuPod | _Invalid:
        s = state.get(_STATE_KEY)
        if isinstance(s, _GpuPod | _Invalid):
            return s
        computed = self._parse(pod)  # PreFilter/PreScore not run (disabled): compute here
        state.write(_STATE_KEY, computed)
        return computed

    def _gpu_amount(self, amounts: Mapping[str, int]) -> int:
        return sum(v for r, v in amounts.items() if self.is_managed(r))

    def _managed_columns(self, table: NodeTable) -> list[int]:
        return [i for i, r in enumerate(table.resources) if self.is_managed(r)]

    def _table_gpu_amount(self, matrix: IntArray, table: NodeTable, rows: npt.NDArray[np.intp]) -> IntArray:
        cols = self._managed_columns(table)
        if not cols:
            return np.zeros(len(rows), dtype=np.int64)
        out: IntArray = matrix[rows][:, np.asarray(cols, dtype=np.intp)].sum(axis=1)
        return out

    # ------------------------------------------------------------------ PreFilter / Filter
    def pre_filter(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        s = self._parse(pod)
        state.write(_STATE_KEY, s)
        if isinstance(s, _Invalid):
            return s.status
        if not s.needs and not self.args.keep_non_gpu_pods_off:
            return Status.skip()
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = self._state(state, pod)
        if isinstance(s, _Invalid):
            return s.status
        if s.dra:
            result = self._dra_filter_nodes(s, NodeTable([node_info]).all())
            return None if result.codes[0] < 0 else result.statuses[int(result.codes[0])]
        if not s.needs:
            if self.args.keep_non_gpu_pods_off and self._gpu_amount(node_info.allocatable) > 0:
                return Status.unschedulable_and_unresolvable(NON_GPU_POD_REASON)
            return None
        reasons: list[str] = []
        unresolvable = False
        alloc, used = node_info.allocatable, node_info.requested
        for resource, need in s.needs:
            total = alloc.get(resource, 0)
            free = total - used.get(resource, 0)
            if need > free:
                reasons.append(insufficient_gpus_reason(resource, need, max(free, 0)))
                unresolvable = unresolvable or need > total
        labels = node_info.labels
        if s.min_memory > 0:
            memory = _parse_mib(labels.get(self.args.memory_label))
            if memory < s.min_memory:
                reasons.append(
                    _memory_reason(s.min_memory, memory if memory >= 0 else None, self.args.memory_label)
                )
                unresolvable = True
        for what, wanted, label in (
            ("product", s.products, self.args.product_label),
            ("family", s.families, self.args.family_label),
        ):
            if wanted:
                value = labels.get(label)
                if value is None or not _matches(value, wanted):
                    reasons.append(_mismatch_reason(what, wanted, value, label))
                    unresolvable = True
        if not reasons:
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE, *reasons)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        s = self._state(state, pod)
        n = len(nodes)
        if isinstance(s, _Invalid):
            return BatchFilterResult.from_mask(np.zeros(n, dtype=np.bool_), s.status)
        if s.dra:
            return self._dra_filter_nodes(s, nodes)
        table, rows = nodes.table, nodes.rows
        if not s.needs:
            if not self.args.keep_non_gpu_pods_off:
                return BatchFilterResult.all_pass(n)
            gpu_node = self._table_gpu_amount(table.allocatable, table, rows) > 0
            return BatchFilterResult.from_mask(
                ~gpu_node, Status.unschedulable_and_unresolvable(NON_GPU_POD_REASON)
            )
        # One key column per check: the node's value where it fails, a sentinel where it passes.
        # Nodes failing the same way share a row of keys, hence one Status (np.unique below).
        k = len(s.needs)
        keys = np.full((n, k + 4), -2, dtype=np.int64)
        unresolvable = np.zeros(n, dtype=np.bool_)
        for j, (resource, need) in enumerate(s.needs):
            col = table.resource_index.get(resource)
            if col is None:
                total = np.zeros(n, dtype=np.int64)
                free = total
            else:
                total = table.allocatable[rows, col]
                free = total - table.requested[rows, col]
            short = need > free
            keys[:, j] = np.where(short, np.maximum(free, 0), -2)
            unresolvable |= need > total
        if s.min_memory > 0:
            memory = self._memory_rows(table, rows)
            keys[:, k] = np.where(memory < s.min_memory, memory, -2)  # -1: missing / invalid
        for j, wanted, label in (
            (k + 1, s.products, self.args.product_label),
            (k + 2, s.families, self.args.family_label),
        ):
            if wanted:
                column = table.label_column(label)
                ids = column.ids[rows].astype(np.int64)
                ok = column.matching(_matcher(wanted))[rows]
                keys[:, j] = np.where(ok, -2, ids)  # -1: label missing
        failed = (keys[:, : k + 3] != -2).any(axis=1)
        unresolvable |= (keys[:, k : k + 3] != -2).any(axis=1)
        keys[:, k + 3] = unresolvable
        failing = np.flatnonzero(failed)
        codes = np.full(n, -1, dtype=np.int32)
        if len(failing) == 0:
            return BatchFilterResult(codes, [])
        distinct, inverse = _distinct_rows(keys[failing])
        codes[failing] = inverse
        product_values = table.label_column(self.args.product_label).values if s.products else []
        family_values = table.label_column(self.args.family_label).values if s.families else []
        statuses = [self._status_of(s, row.tolist(), product_values, family_values) for row in distinct]
        return BatchFilterResult(codes, statuses)

    def _status_of(
        self, s: _GpuPod, key: list[int], product_values: Sequence[str], family_values: Sequence[str]
    ) -> Status:
        """The Status a row of filter keys stands for, worded exactly as `filter` words it."""
        k = len(s.needs)
        reasons = [
            insufficient_gpus_reason(resource, need, key[j])
            for j, (resource, need) in enumerate(s.needs)
            if key[j] != -2
        ]
        if key[k] != -2:
            reasons.append(
                _memory_reason(s.min_memory, key[k] if key[k] >= 0 else None, self.args.memory_label)
            )
        for j, what, wanted, label, values in (
            (k + 1, "product", s.products, self.args.product_label, product_values),
            (k + 2, "family", s.families, self.args.family_label, family_values),
        ):
            if key[j] != -2:
                reasons.append(_mismatch_reason(what, wanted, values[key[j]] if key[j] >= 0 else None, label))
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if key[k + 3] else Code.UNSCHEDULABLE, *reasons)

    def _labels_fit(self, s: _GpuPod, labels: Mapping[str, str]) -> bool:
        """Whether the node's GPU labels satisfy the pod's memory / product / family annotations."""
        if s.min_memory > 0 and _parse_mib(labels.get(self.args.memory_label)) < s.min_memory:
            return False
        for wanted, label in ((s.products, self.args.product_label), (s.families, self.args.family_label)):
            if wanted:
                value = labels.get(label)
                if value is None or not _matches(value, wanted):
                    return False
        return True

    def _labels_fit_rows(self, s: _GpuPod, table: NodeTable, rows: npt.NDArray[np.intp]) -> BoolArray:
        """`_labels_fit` for every row, once per distinct label value."""
        ok = np.ones(len(rows), dtype=np.bool_)
        if s.min_memory > 0:
            ok &= self._memory_rows(table, rows) >= s.min_memory
        for wanted, label in ((s.products, self.args.product_label), (s.families, self.args.family_label)):
            if wanted:
                ok &= table.label_column(label).matching(_matcher(wanted))[rows]
        return ok

    def _memory_rows(self, table: NodeTable, rows: npt.NDArray[np.intp]) -> IntArray:
        """Each row's GPU memory label in MiB; -1 when missing or not a number."""
        column = table.label_column(self.args.memory_label)
        parsed = np.fromiter((_parse_mib(v) for v in column.values), dtype=np.int64, count=len(column.values))
        padded = np.append(parsed, np.int64(-1))  # id -1 (no label) -> the appended -1
        out: IntArray = padded[column.ids[rows]]
        return out

    # ------------------------------------------------------------------ PreScore / Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        """The same preparation as PreFilter (the state it writes serves both)."""
        return self.pre_filter(state, pod, nodes)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | tuple[int, Status | None]:
        s = self._state(state, pod)
        if isinstance(s, _Invalid):
            return 0, s.status
        if s.dra:
            return int(self._dra_scores(s, NodeTable([node_info]).all())[0])
        alloc, used = node_info.allocatable, node_info.requested
        if not s.needs:  # keepNonGpuPodsOff: nodes without GPUs first
            return 0 if self._gpu_amount(alloc) > 0 else 1
        alloc_total = free_total = 0
        fits = True
        for resource, need in s.needs:
            total = alloc.get(resource, 0)
            free = total - used.get(resource, 0)
            fits = fits and need <= free
            alloc_total += total
            free_total += max(free, 0)
        labels = node_info.labels
        fits = fits and self._labels_fit(s, labels)
        memory = _parse_mib(labels.get(self.args.memory_label))
        memory_tier = _TIER_MAX - min(memory, _TIER_MAX) if memory >= 0 else 0
        key = (int(fits) << _FITS_SHIFT) | memory_tier
        if self._binpack:
            partly = self._gpu_amount(used) > 0
            key |= (int(partly) << _PARTLY_SHIFT) | ((_TIER_MAX - min(free_total, _TIER_MAX)) << _TIER_BITS)
        else:
            left = max(free_total - s.total, 0)
            ratio = left * _TIER_MAX // alloc_total if alloc_total > 0 else 0
            key |= ratio << _TIER_BITS
        return key

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Scores:
        s = self._state(state, pod)
        if isinstance(s, _Invalid):
            raise ValueError(s.status.message())
        if s.dra:
            return self._dra_scores(s, nodes)
        table, rows = nodes.table, nodes.rows
        n = len(rows)
        if not s.needs:
            no_gpus: Scores = (self._table_gpu_amount(table.allocatable, table, rows) == 0).astype(np.int64)
            return no_gpus
        fits = np.ones(n, dtype=np.bool_)
        alloc_total = np.zeros(n, dtype=np.int64)
        free_total = np.zeros(n, dtype=np.int64)
        for resource, need in s.needs:
            col = table.resource_index.get(resource)
            if col is None:
                fits[:] = False
                continue
            total = table.allocatable[rows, col]
            free = total - table.requested[rows, col]
            fits &= need <= free
            alloc_total += total
            free_total += np.maximum(free, 0)
        fits &= self._labels_fit_rows(s, table, rows)
        memory = self._memory_rows(table, rows)
        memory_tier = np.where(memory >= 0, _TIER_MAX - np.minimum(memory, _TIER_MAX), 0)
        key = (fits.astype(np.int64) << _FITS_SHIFT) | memory_tier
        if self._binpack:
            partly = self._table_gpu_amount(table.requested, table, rows) > 0
            key |= (partly.astype(np.int64) << _PARTLY_SHIFT) | (
                (_TIER_MAX - np.minimum(free_total, _TIER_MAX)) << _TIER_BITS
            )
        else:
            left = np.maximum(free_total - s.total, 0)
            ratio = np.where(alloc_total > 0, left * _TIER_MAX // np.maximum(alloc_total, 1), 0)
            key |= ratio << _TIER_BITS
        out: Scores = key.astype(np.int64)
        return out

    def normalize_score(self, state: CycleState, pod: Pod, nodes: NodeSet, scores: Scores) -> Status | None:
        rank_normalize(scores)
        return None

    # ------------------------------------------------------------------ requeueing
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A deleted GPU pod frees GPUs; a node added, grown or relabelled (GPU Feature Discovery
        labels appear after the device plugin starts) may now fit."""
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE), self._after_pod_delete),
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE | ActionType.UPDATE_NODE_LABEL,
                )
            ),
        ]

    def _after_pod_delete(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Only a GPU pod leaving frees GPUs, and only a pod that wants GPUs can use them."""
        deleted = old if isinstance(old, Pod) else new
        if not isinstance(deleted, Pod):
            return QueueingHint.QUEUE
        wants = any(v > 0 and self.is_managed(r) for r, v in pod_requests(pod).items())
        freed = any(v > 0 and self.is_managed(r) for r, v in pod_requests(deleted).items())
        return QueueingHint.QUEUE if wants and freed else QueueingHint.SKIP
