"""CEL for Dynamic Resource Allocation: device selectors with Kubernetes' variable and libraries."""

from kubesched.cel.selectors import (
    MAX_EXPRESSION_LENGTH,
    CELError,
    CompiledSelector,
    DeviceInput,
    compile_selector,
    device_input,
)

__all__ = [
    "MAX_EXPRESSION_LENGTH",
    "CELError",
    "CompiledSelector",
    "DeviceInput",
    "compile_selector",
    "device_input",
]
