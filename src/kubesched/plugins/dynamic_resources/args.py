"""DynamicResourcesArgs: the plugin's pluginConfig args and their validation.

Separate because the config loader decodes and validates them without building the plugin
(upstream: `pkg/scheduler/apis/config` types and validation).
"""

from __future__ import annotations

import msgspec

from kubesched.config.duration import parse_duration_ns
from kubesched.errors import InputError

__all__ = ["DynamicResourcesArgs"]


class DynamicResourcesArgs(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """pluginConfig args (kind DynamicResourcesArgs)."""

    #: Per-node allocation limit in Filter; 0 disables it.
    filter_timeout: str = "10s"
    #: How long PreBind waits for devices' binding conditions.
    binding_timeout: str = "10m0s"

    def validate(self) -> list[InputError]:
        errors: list[InputError] = []
        for path, value in (("filterTimeout", self.filter_timeout), ("bindingTimeout", self.binding_timeout)):
            try:
                ns = parse_duration_ns(value)
            except InputError as err:
                errors.append(InputError(err.message, path=path))
                continue
            if ns < 0:
                errors.append(InputError("must be zero or positive", path=path))
        try:
            if parse_duration_ns(self.binding_timeout) == 0:
                errors.append(InputError("must be positive", path="bindingTimeout"))
        except InputError:
            pass
        return errors
