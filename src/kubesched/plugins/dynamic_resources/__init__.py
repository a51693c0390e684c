"""DynamicResources: the plugin, its structured allocator and the claim bookkeeping, one module each."""

from kubesched.plugins.dynamic_resources.plugin import (
    CANNOT_ALLOCATE,
    NOT_AVAILABLE,
    DynamicResources,
    DynamicResourcesArgs,
    ResourceClaimWriter,
)

__all__ = [
    "CANNOT_ALLOCATE",
    "NOT_AVAILABLE",
    "DynamicResources",
    "DynamicResourcesArgs",
    "ResourceClaimWriter",
]
