"""What the config layer needs to know about plugins, without importing the framework above it.

`kubesched.framework.registry.Registry` implements `PluginCatalog`; config functions take one
wherever they look plugins up by name (to check they exist, which extension points they implement,
and to decode their pluginConfig args). The score bounds live here so that config can check Score
weights and the framework imports the same values.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

__all__ = ["MAX_NODE_SCORE", "MAX_TOTAL_SCORE", "MIN_NODE_SCORE", "PluginCatalog"]

#: The highest score a Score plugin may give a node (after normalizing).
MAX_NODE_SCORE = 100
#: The lowest score a Score plugin may give a node.
MIN_NODE_SCORE = 0
#: The weighted sum of all Score plugins' scores must fit an int64.
MAX_TOTAL_SCORE = 2**63 - 1


class PluginCatalog(Protocol):
    """Plugins by name. Only `resolve` accepts unknown names; the other methods take known ones."""

    def resolve(self, name: str) -> type | None:
        """The plugin class named `name` (or `module:Class`), None if unknown.

        Raises InputError when a `module:Class` name cannot be imported (the message says why).
        """
        ...

    def extension_points(self, name: str) -> list[str]:
        """The config keys (`filter`, `score`, ...) of the extension points the plugin implements."""
        ...

    def args_type(self, name: str) -> type | None:
        """The plugin's pluginConfig args type, or None when its args pass through undecoded."""
        ...

    def decode_args(self, name: str, raw: Any, path: str) -> Any:
        """Decoded, validated args for the plugin; InputError paths start with `path`."""
        ...

    def __iter__(self) -> Iterator[str]:
        """The names of the plugins it knows (for "did you mean" on an unknown name)."""
        ...
