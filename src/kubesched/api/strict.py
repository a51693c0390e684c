"""Find a field a document has and the object model does not: strict decoding, on demand.

The Structs ignore unknown fields, which live decoding needs (the API server adds fields over
time). For hand-written manifests of some kinds, a misspelt field must instead be reported, as
`kubectl apply` with strict field validation would; `unknown_field` walks a decoded document along
its Struct's type information and names the first such field.
"""

from __future__ import annotations

from typing import Any

import msgspec.inspect as mi

__all__ = ["unknown_field"]


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
