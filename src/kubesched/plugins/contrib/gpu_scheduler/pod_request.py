"""What a pod asks of GPU nodes: which resources are GPUs, and the pod's GPU counts and annotations."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod
from kubesched.api.resources import pod_requests
from kubesched.framework.node_table import IntArray, NodeTable
from kubesched.framework.status import Status
from kubesched.plugins.contrib.gpu_scheduler.args import DRA_GPUS, GPUSchedulerArgs

_MIB_RE = re.compile(r"[0-9]{1,15}")


def parse_mib(value: str | None) -> int:
    """A memory label in MiB; -1 when missing or not a whole number."""
    if value is None or not _MIB_RE.fullmatch(value):
        return -1
    return int(value)


def _patterns(value: str | None) -> tuple[str, ...]:
    """A comma-separated annotation as a tuple of patterns (blank entries dropped)."""
    if value is None:
        return ()
    return tuple(p for p in (part.strip() for part in value.split(",")) if p)


def matches(value: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(value, p) for p in patterns)


def matcher(patterns: Sequence[str]) -> Callable[[str], bool]:
    def match(value: str) -> bool:
        return matches(value, patterns)

    return match


class ManagedResources:
    """The GPU resources the plugin accounts for: named in the args, or matching one of their patterns."""

    def __init__(self, args: GPUSchedulerArgs) -> None:
        self._names = tuple(dict.fromkeys(args.resource_names))
        self._patterns = tuple(dict.fromkeys(args.resource_patterns))
        self._memo: dict[str, bool] = {}

    def __contains__(self, resource: str) -> bool:
        known = self._memo.get(resource)
        if known is None:
            known = resource in self._names or matches(resource, self._patterns)
            self._memo[resource] = known
        return known

    def order(self, resource: str) -> tuple[int, str]:
        """Sort key: configured names first, in their order, then the rest by name."""
        try:
            return (self._names.index(resource), resource)
        except ValueError:
            return (len(self._names), resource)

    def amount(self, amounts: Mapping[str, int]) -> int:
        return sum(v for r, v in amounts.items() if r in self)

    def wanted_by(self, pod: Pod) -> bool:
        return any(v > 0 and r in self for r, v in pod_requests(pod).items())

    def table_amount(self, matrix: IntArray, table: NodeTable, rows: npt.NDArray[np.intp]) -> IntArray:
        """`amount` for each row of a NodeTable matrix (allocatable or requested)."""
        cols = [i for i, r in enumerate(table.resources) if r in self]
        if not cols:
            return np.zeros(len(rows), dtype=np.int64)
        out: IntArray = matrix[rows][:, np.asarray(cols, dtype=np.intp)].sum(axis=1)
        return out


@dataclass(frozen=True, slots=True)
class GpuPod:
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

    def clone(self) -> GpuPod:
        return self


@dataclass(frozen=True, slots=True)
class Invalid:
    """An annotation the pod got wrong: every node rejects it with the same status."""

    status: Status


def read_pod(
    pod: Pod, args: GPUSchedulerArgs, managed: ManagedResources, claimed_gpus: Callable[[Pod], int]
) -> GpuPod | Invalid:
    """The pod's GPU ask; `claimed_gpus` counts the GPUs its ResourceClaims ask of the DRA drivers."""
    requests = pod_requests(pod)
    needs = tuple(
        sorted(
            ((r, v) for r, v in requests.items() if v > 0 and r in managed),
            key=lambda item: managed.order(item[0]),
        )
    )
    dra = False
    if not needs and pod.spec.resource_claims:
        count = claimed_gpus(pod)
        if count > 0:
            needs, dra = ((DRA_GPUS, count),), True
    if not needs:  # GPU annotations on a pod that requests no GPU mean nothing
        return GpuPod((), 0, (), ())
    annotations = pod.metadata.annotations
    key = args.min_memory_annotation
    raw = annotations.get(key)
    min_memory = 0
    if raw is not None:
        text = raw.strip()
        if not _MIB_RE.fullmatch(text):
            return Invalid(
                Status.unschedulable_and_unresolvable(
                    f"invalid annotation {key}={raw!r}: must be a whole number of MiB"
                )
            )
        min_memory = int(text)
    products = _patterns(annotations.get(args.product_annotation))
    families = _patterns(annotations.get(args.family_annotation))
    return GpuPod(needs, min_memory, products, families, dra)
