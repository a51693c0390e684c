"""The args of NodeResourcesFit (kind NodeResourcesFitArgs) and their validation.

Upstream keeps them apart from the plugin too (`pkg/scheduler/apis/config/types_pluginargs.go`,
`pkg/scheduler/apis/config/validation/validation_pluginargs.go`). VolumeBinding's shape reuses
`UtilizationShapePoint` and `validate_shape`.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from kubesched.api.selectors import qualified_name_error
from kubesched.errors import InputError
from kubesched.framework.node_info import CPU, MEMORY

__all__ = [
    "LEAST_ALLOCATED",
    "MAX_CUSTOM_PRIORITY_SCORE",
    "MAX_RESOURCE_WEIGHT",
    "MAX_UTILIZATION",
    "MOST_ALLOCATED",
    "REQUESTED_TO_CAPACITY_RATIO",
    "SCORING_STRATEGY_TYPES",
    "NodeResourcesFitArgs",
    "RequestedToCapacityRatioParam",
    "ResourceSpec",
    "ScoringStrategy",
    "UtilizationShapePoint",
    "default_resources",
    "validate_resource_specs",
    "validate_shape",
]

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

#: Shape scores are written 0..10 and scaled to node scores 0..100.
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100
MAX_RESOURCE_WEIGHT = 100


class _Args(msgspec.Struct, kw_only=True, rename="camel"):
    """Plugin args decode from camelCase pluginConfig and are keyword-constructed in Python."""


class ResourceSpec(_Args):
    """A resource the score looks at, and its weight in the weighted average (0 means 1)."""

    name: str = ""
    weight: int = 1

    def __post_init__(self) -> None:
        if self.weight == 0:  # upstream defaulting: an unset weight counts 1
            self.weight = 1


def default_resources() -> list[ResourceSpec]:
    return [ResourceSpec(name=CPU, weight=1), ResourceSpec(name=MEMORY, weight=1)]


class UtilizationShapePoint(_Args):
    """A point of the RequestedToCapacityRatio curve: utilization 0..100 -> score 0..10."""

    utilization: int = 0
    score: int = 0


class RequestedToCapacityRatioParam(_Args):
    shape: list[UtilizationShapePoint] = []


class ScoringStrategy(_Args):
    type: str = LEAST_ALLOCATED
    resources: list[ResourceSpec] = msgspec.field(default_factory=default_resources)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    def __post_init__(self) -> None:
        if not self.resources:  # upstream defaulting: an empty list means cpu:1, memory:1
            self.resources = default_resources()


class NodeResourcesFitArgs(_Args):
    """pluginConfig args of NodeResourcesFit (kind NodeResourcesFitArgs)."""

    ignored_resources: list[str] = []
    ignored_resource_groups: list[str] = []
    scoring_strategy: ScoringStrategy = msgspec.field(default_factory=ScoringStrategy)

    def validate(self) -> list[InputError]:
        """Field errors with paths relative to the args, e.g. `scoringStrategy.type`."""
        errors: list[InputError] = []
        for i, name in enumerate(self.ignored_resources):
            why = qualified_name_error(name)
            if why:
                errors.append(
                    InputError(f"invalid resource name {name!r}: {why}", path=f"ignoredResources[{i}]")
                )
        for i, group in enumerate(self.ignored_resource_groups):
            path = f"ignoredResourceGroups[{i}]"
            if "/" in group:
                errors.append(InputError(f"resource group name {group!r} can't contain '/'", path=path))
            else:
                why = qualified_name_error(group)
                if why:
                    errors.append(InputError(f"invalid resource group name {group!r}: {why}", path=path))
        strategy = self.scoring_strategy
        if strategy.type not in SCORING_STRATEGY_TYPES:
            supported = ", ".join(f'"{t}"' for t in SCORING_STRATEGY_TYPES)
            errors.append(
                InputError(
                    f'unsupported value "{strategy.type}": supported values: {supported}',
                    path="scoringStrategy.type",
                )
            )
        errors.extend(validate_resource_specs(strategy.resources, "scoringStrategy.resources"))
        ratio = strategy.requested_to_capacity_ratio
        shape_path = "scoringStrategy.requestedToCapacityRatio.shape"
        if ratio is not None:
            errors.extend(validate_shape(ratio.shape, shape_path))
        elif strategy.type == REQUESTED_TO_CAPACITY_RATIO:
            errors.append(InputError("at least one point must be specified", path=shape_path))
        return errors


def validate_resource_specs(resources: Sequence[ResourceSpec], path: str) -> list[InputError]:
    errors: list[InputError] = []
    for i, spec in enumerate(resources):
        if not spec.name:
            errors.append(InputError("must not be empty", path=f"{path}[{i}].name"))
        if not 1 <= spec.weight <= MAX_RESOURCE_WEIGHT:
            errors.append(
                InputError(f"must be in the range [1, {MAX_RESOURCE_WEIGHT}]", path=f"{path}[{i}].weight")
            )
    return errors


def validate_shape(shape: Sequence[UtilizationShapePoint], path: str) -> list[InputError]:
    if not shape:
        return [InputError("at least one point must be specified", path=path)]
    errors: list[InputError] = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errors.append(
                InputError(
                    "utilization values must be sorted in increasing order", path=f"{path}[{i}].utilization"
                )
            )
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= MAX_UTILIZATION:
            errors.append(
                InputError(f"must be in the range [0, {MAX_UTILIZATION}]", path=f"{path}[{i}].utilization")
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errors.append(
                InputError(
                    f"must be in the range [0, {MAX_CUSTOM_PRIORITY_SCORE}]", path=f"{path}[{i}].score"
                )
            )
    return errors
