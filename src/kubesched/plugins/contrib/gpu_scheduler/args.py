"""GPUScheduler's names (resources, node labels, pod annotations, strategies) and its pluginConfig args."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from kubesched.api.selectors import qualified_name_error
from kubesched.errors import InputError
from kubesched.plugins.node_resources_fit import is_extended_resource

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
STRATEGIES = (BINPACK, SPREAD)

NON_GPU_POD_REASON = "node(s) had GPUs and the pod requests none"


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
        if self.scoring_strategy not in STRATEGIES:
            errors.append(
                InputError(
                    f'unsupported value "{self.scoring_strategy}": '
                    f"supported values: {_supported(STRATEGIES)}",
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
