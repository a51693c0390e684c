"""DynamicResources: the plugin, its structured allocator and the claim bookkeeping, one job per module.

The plugin (`plugin.py`) reads its PreFilter state (`state.py`), shares devices in use across
profiles (`manager.py`), filters fast where it can (`fast_filter.py`), waits for binding
conditions (`binding.py`) and registers its events (`events.py`); the allocator (`allocator.py`,
`search.py` and their parts) is pure.
"""

from kubesched.plugins.dynamic_resources.args import DynamicResourcesArgs
from kubesched.plugins.dynamic_resources.plugin import CANNOT_ALLOCATE, NOT_AVAILABLE, DynamicResources
from kubesched.plugins.dynamic_resources.writer import ResourceClaimWriter

__all__ = [
    "CANNOT_ALLOCATE",
    "NOT_AVAILABLE",
    "DynamicResources",
    "DynamicResourcesArgs",
    "ResourceClaimWriter",
]
