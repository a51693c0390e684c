"""Find a field a document has and the object model does not: strict decoding, on demand.

The Structs ignore unknown fields, which live decoding needs (the API server adds fields over
time). For hand-written manifests of some kinds, a misspelt field must instead be reported, as
`kubectl apply` with strict field validation would; `unknown_field` walks a decoded document along
its Struct's type information and names the first such field.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec.inspect as mi

__all__ = ["field_names_at", "unknown_field"]

_SEGMENT = re.compile(r"\.?([^.\[\]]+)|\[([^\]]*)\]")


def unknown_field(doc: Any, info: mi.Type, path: str) -> str | None:
    """The path of the first key of `doc` that `info` (the type `doc` decodes into) does not define."""
    if doc is None:
        return None
    if isinstance(info, mi.UnionType):
        for member in info.types:
            if not isinstance(member, mi.NoneType):
                return unknown_field(doc, member, path)
        return None
    if isinstance(info, mi.StructType) and isinstance(doc, dict):
        fields = {f.encode_name: f.type for f in info.fields}
        if info.cls.__name__ == "ObjectMeta":
            return None  # metadata carries many server-set fields the scheduler never reads
        for key, value in doc.items():
            child = f"{path}.{key}" if path else str(key)
            field_type = fields.get(key)
            if field_type is None:
                return child
            found = unknown_field(value, field_type, child)
            if found is not None:
                return found
        return None
    if isinstance(info, mi.ListType) and isinstance(doc, list):
        for i, item in enumerate(doc):
            found = unknown_field(item, info.item_type, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if isinstance(info, mi.DictType) and isinstance(doc, dict):
        for key, value in doc.items():
            found = unknown_field(value, info.value_type, f"{path}[{key}]")
            if found is not None:
                return found
    return None


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
