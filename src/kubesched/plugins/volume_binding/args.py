"""VolumeBinding's pluginConfig args (kind VolumeBindingArgs): PreBind's timeout and the scoring shape."""

from __future__ import annotations

import msgspec

from kubesched.errors import InputError
from kubesched.plugins.node_resources_fit_args import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    validate_shape,
)
from kubesched.plugins.node_resources_fit_args import UtilizationShapePoint as _FitShapePoint

__all__ = ["DEFAULT_BIND_TIMEOUT_SECONDS", "UtilizationShapePoint", "VolumeBindingArgs", "default_shape"]

DEFAULT_BIND_TIMEOUT_SECONDS = 600


class UtilizationShapePoint(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """A point of the StorageCapacityScoring curve: utilization 0..100 -> score 0..10."""

    utilization: int = 0
    score: int = 0


class VolumeBindingArgs(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """pluginConfig args (kind VolumeBindingArgs)."""

    #: How long PreBind waits for the API binding to complete (0: do not wait).
    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    #: Scoring curve of StorageCapacityScoring (on by default since v1.37); upstream's default
    #: favours the node whose volumes leave the most room.
    shape: list[UtilizationShapePoint] = msgspec.field(default_factory=lambda: default_shape())

    def __post_init__(self) -> None:
        if not self.shape:  # upstream defaulting: an empty shape means the default one
            self.shape = default_shape()

    def validate(self) -> list[InputError]:
        errors: list[InputError] = []
        if self.bind_timeout_seconds < 0:
            errors.append(
                InputError(
                    "invalid BindTimeoutSeconds, should not be a negative value", path="bindTimeoutSeconds"
                )
            )
        points = [_FitShapePoint(utilization=p.utilization, score=p.score) for p in self.shape]
        errors.extend(validate_shape(points, "shape"))
        return errors


def default_shape() -> list[UtilizationShapePoint]:
    """v1.37's default VolumeBindingArgs.shape: utilization 0 scores 10, utilization 100 scores 0."""
    return [
        UtilizationShapePoint(utilization=0, score=MAX_CUSTOM_PRIORITY_SCORE),
        UtilizationShapePoint(utilization=MAX_UTILIZATION, score=0),
    ]
