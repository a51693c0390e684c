"""Small helpers for reporting on decoded JSON/YAML values before they become typed objects."""

from __future__ import annotations

from typing import Any

_TYPE_NAMES = {
    type(None): "null",
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    list: "array",
    dict: "object",
}


def type_name(value: object) -> str:
    """The JSON name of a decoded value's type (`object`, `array`, ...), for "expected X, got Y"."""
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def drop_nulls(value: Any) -> Any:
    """The value with null mapping entries removed: Kubernetes treats a null field as unset."""
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value
