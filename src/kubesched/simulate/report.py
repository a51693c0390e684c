"""The simulate report: a JSON contract that tests and outside tools rely on.

    {"pods": [...], "nodes": [...], "summary": {...}}

Field names and meanings are documented in docs/simulate-report.md; change them only with care.
"""

from __future__ import annotations

import msgspec

#: The values of `pods[].result`.
RESULTS = ("Scheduled", "Unschedulable", "Error", "Gated", "Waiting", "Ignored")


class _Out(msgspec.Struct, kw_only=True, rename="camel"):
    """Report structs: camelCase keys, every field always present (null when unknown)."""


class FilterVerdict(_Out):
    plugin: str
    code: str
    reasons: list[str]


class NodeScores(_Out):
    plugins: dict[str, int]
    total: int


class AllocatedDevice(_Out):
    """A device DynamicResources allocated to one of the pod's ResourceClaims."""

    claim: str
    request: str
    driver: str
    pool: str
    device: str
    share_id: str | None = msgspec.field(default=None, name="shareID")


class PodResult(_Out):
    namespace: str
    name: str
    scheduler_name: str
    result: str
    node: str | None = None
    nominated_node: str | None = None
    #: Pods evicted to make room for this pod (preemption), as `namespace/name`; [] when none.
    victims: list[str] = []
    message: str | None = None
    attempts: int = 0
    filter: dict[str, FilterVerdict] = {}
    scores: dict[str, NodeScores] = {}
    #: Devices of the pod's ResourceClaims (DRA), as `claim` (namespace/name) -> driver/pool/device.
    devices: list[AllocatedDevice] = []


class NodeUsage(_Out):
    name: str
    pods: int
    allocatable: dict[str, str]
    requested: dict[str, str]


class Summary(_Out):
    scheduled: int
    unschedulable: int
    pods: int
    nodes: int
    seconds: float
    pods_per_second: float
    errors: int = 0
    gated: int = 0
    waiting: int = 0
    ignored: int = 0


class Report(_Out):
    pods: list[PodResult]
    nodes: list[NodeUsage]
    summary: Summary


def to_json(report: Report, *, indent: int = 2) -> bytes:
    raw = msgspec.json.encode(report)
    return msgspec.json.format(raw, indent=indent) if indent else raw
