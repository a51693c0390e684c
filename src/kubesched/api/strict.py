"""Find the fields a document has and a Struct does not: strict decoding of kubesched's own formats.

The Structs ignore unknown fields, which live decoding needs (the API server adds fields over
time). A KubeSchedulerConfiguration must instead refuse them, as upstream's strict decoding does,
and list them all at once: `without_unknown_fields` walks a decoded document along its Struct's
type information and drops and names each one; `field_names_at` gives the names for a did-you-mean.
(Kubernetes objects are checked against the API's own schema instead: `kubesched.api.openapi`.)
"""

from __future__ import annotations

import re
from typing import Any

import msgspec.inspect as mi

__all__ = ["field_names_at", "without_unknown_fields"]

_SEGMENT = re.compile(r"\.?([^.\[\]]+)|\[([^\]]*)\]")


def without_unknown_fields(doc: Any, info: mi.Type, path: str, found: list[str]) -> Any:
    """`doc` less the keys `info` does not define (a copy where something is dropped); the path of
    each dropped key is appended to `found`. So that a file's other problems can be found in the same
    run, not one per run."""
    if doc is None:
        return None
    info = _unwrap(info)
    if isinstance(info, mi.StructType) and isinstance(doc, dict):
        fields = {f.encode_name: f.type for f in info.fields}
        kept: dict[Any, Any] = {}
        for key, value in doc.items():
            child = f"{path}.{key}" if path else str(key)
            field_type = fields.get(key)
            if field_type is None:
                found.append(child)
            else:
                kept[key] = without_unknown_fields(value, field_type, child, found)
        return kept
    if isinstance(info, mi.ListType) and isinstance(doc, list):
        return [without_unknown_fields(v, info.item_type, f"{path}[{i}]", found) for i, v in enumerate(doc)]
    if isinstance(info, mi.DictType) and isinstance(doc, dict):
        return {k: without_unknown_fields(v, info.value_type, f"{path}[{k}]", found) for k, v in doc.items()}
    return doc


def field_names_at(info: mi.Type, path: str) -> list[str]:
    """The field names of the object at `path` (`profiles[0].plugins`) inside `info`; [] when the
    path leads nowhere a Struct is. For "did you mean" on an unknown field."""
    for m in _SEGMENT.finditer(path):
        info = _unwrap(info)
        if m[1] is not None and isinstance(info, mi.StructType):
            found = next((f.type for f in info.fields if f.encode_name == m[1]), None)
            if found is None:
                return []
            info = found
        elif m[2] is not None and isinstance(info, mi.ListType | mi.DictType):
            info = info.item_type if isinstance(info, mi.ListType) else info.value_type
        else:
            return []
    info = _unwrap(info)
    return [f.encode_name for f in info.fields] if isinstance(info, mi.StructType) else []


def _unwrap(info: mi.Type) -> mi.Type:
    """The Struct (or list, dict) inside an optional type."""
    if isinstance(info, mi.UnionType):
        members = [t for t in info.types if not isinstance(t, mi.NoneType)]
        if len(members) == 1:
            return members[0]
    return info
