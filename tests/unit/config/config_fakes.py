"""Fake plugin classes and registry for the config tests: names and extension points as upstream's.

Only the methods matter (the config layer looks at which extension points a class implements);
bodies are never run.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from kubesched.errors import InputError
from kubesched.framework.registry import Registry


class _Fake:
    name: ClassVar[str]


def _make(name: str, methods: tuple[str, ...], **extra: Any) -> type:
    body: dict[str, Any] = {"name": name, **extra}
    for m in methods:
        body[m] = lambda self, *a: None
    return type(name, (_Fake,), body)


class Resource(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    name: str
    weight: int = 1


class ScoringStrategy(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    type: str = "LeastAllocated"
    resources: list[Resource] = msgspec.field(
        default_factory=lambda: [Resource(name="cpu"), Resource(name="memory")]
    )


class NodeResourcesFitArgs(
    msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True, omit_defaults=True
):
    ignored_resources: list[str] = []
    scoring_strategy: ScoringStrategy = msgspec.field(default_factory=ScoringStrategy)

    def validate(self) -> list[InputError]:
        errs = []
        for i, r in enumerate(self.scoring_strategy.resources):
            if not 0 < r.weight <= 100:
                errs.append(
                    InputError("must be in the range (0, 100]", path=f"scoringStrategy.resources[{i}].weight")
                )
        if self.scoring_strategy.type not in ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"):
            errs.append(
                InputError(f"invalid type {self.scoring_strategy.type!r}", path="scoringStrategy.type")
            )
        return errs


class DefaultPreemptionArgs(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


class PrioritySortArgs(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    reverse: bool = False


FILTER = ("filter",)
PRE_FILTER = ("pre_filter",)
SCORE = ("score",)
PRE_SCORE = ("pre_score",)

# Upstream's default plugins, minus VolumeBinding/VolumeZone/NodeVolumeLimits (kubesched does not ship
# them yet), which the tests use as "upstream default the registry does not know".
SchedulingGates = _make("SchedulingGates", ("pre_enqueue",))
PrioritySort = _make("PrioritySort", ("less",))
NodeUnschedulable = _make("NodeUnschedulable", FILTER)
NodeName = _make("NodeName", FILTER)
TaintToleration = _make("TaintToleration", FILTER + PRE_SCORE + SCORE)
NodeAffinity = _make("NodeAffinity", PRE_FILTER + FILTER + PRE_SCORE + SCORE)
NodePorts = _make("NodePorts", PRE_FILTER + FILTER)
NodeResourcesFit = _make(
    "NodeResourcesFit",
    (*PRE_FILTER, "filter_nodes", *PRE_SCORE, "score_nodes"),
    args_type=NodeResourcesFitArgs,
)
VolumeRestrictions = _make("VolumeRestrictions", PRE_FILTER + FILTER)
PodTopologySpread = _make("PodTopologySpread", PRE_FILTER + FILTER + PRE_SCORE + SCORE)
InterPodAffinity = _make("InterPodAffinity", PRE_FILTER + FILTER + PRE_SCORE + SCORE)
DefaultPreemption = _make("DefaultPreemption", ("post_filter",), args_type=DefaultPreemptionArgs)
NodeResourcesBalancedAllocation = _make("NodeResourcesBalancedAllocation", PRE_SCORE + SCORE)
ImageLocality = _make("ImageLocality", SCORE)
DefaultBinder = _make("DefaultBinder", ("bind",))

# Custom plugins.
CustomFilter = _make("CustomFilter", FILTER)
CustomScore = _make("CustomScore", SCORE)
CustomMulti = _make("CustomMulti", PRE_FILTER + FILTER + SCORE + ("reserve", "unreserve", "permit"))
CustomSort = _make("CustomSort", ("less",))
SortWithArgs = _make("SortWithArgs", ("less",), args_type=PrioritySortArgs)
CustomBinder = _make("CustomBinder", ("bind",))
RawArgs = _make("RawArgs", FILTER)  # no args type: args pass through undecoded

DEFAULTS = [
    SchedulingGates,
    PrioritySort,
    NodeUnschedulable,
    NodeName,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    NodeResourcesFit,
    VolumeRestrictions,
    PodTopologySpread,
    InterPodAffinity,
    DefaultPreemption,
    NodeResourcesBalancedAllocation,
    ImageLocality,
    DefaultBinder,
]
CUSTOM = [CustomFilter, CustomScore, CustomMulti, CustomSort, SortWithArgs, CustomBinder, RawArgs]

#: The default multiPoint list the fake registry yields, with weights.
DEFAULT_ORDER = [
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeName", None),
    ("NodeUnschedulable", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
]


def registry() -> Registry:
    return Registry([*DEFAULTS, *CUSTOM])
