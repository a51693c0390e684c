"""Pods with the same answer, told once: explanations grouped by workload and shape.

A Deployment of 2000 replicas that do not fit gives 2000 identical explanations; a reader needs one
block saying "2000 pods of Deployment shop/checkout, all for this reason". Pods group when they
belong to the same workload (or are the same bare pod) and their explanation would read the same:
result, node, nomination, victims, PreFilter verdict and per-reason rejections. Attempts may differ;
the block gives their range.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from kubesched.simulate.snapshot.model import PodResult

__all__ = ["PodGroup", "group_pods"]


@dataclass
class PodGroup:
    """Pods that share an explanation, in report order; `first` stands for all of them."""

    pods: list[PodResult] = field(default_factory=list)

    @property
    def first(self) -> PodResult:
        return self.pods[0]

    @property
    def attempts(self) -> str:
        """`3`, or `1-4` when the pods needed different numbers of attempts."""
        low, high = min(p.attempts for p in self.pods), max(p.attempts for p in self.pods)
        return str(low) if low == high else f"{low}-{high}"


def group_pods(pods: list[PodResult]) -> list[PodGroup]:
    """The pods grouped by workload and explanation, groups in the order of their first pod."""
    groups: dict[bytes, PodGroup] = {}
    for p in pods:
        groups.setdefault(_shape(p), PodGroup()).pods.append(p)
    return list(groups.values())


def _shape(p: PodResult) -> bytes:
    owner = p.workload or f"Pod {p.namespace}/{p.name}"
    return msgspec.json.encode(
        [owner, p.result, p.node, p.nominated_node, p.victims, p.pre_filter, p.explanation]
    )
