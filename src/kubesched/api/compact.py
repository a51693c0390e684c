"""Decoded objects made to share one empty list and one empty dict for their absent fields.

A scenario holds its whole timeline, tens of thousands of pods, for the length of a replay. Decoded
one by one, each pod carries a fresh empty list or dict for each of the dozen or so absent fields
(about 940 B of its 2.4 KB). Go's decoder leaves absent slices and maps nil, which cost nothing;
sharing does the same here. It is safe because objects are never changed in place (every struct is
frozen, and changes are copies made with `msgspec.structs.replace`), which the shared empties also
check.

Only the fields whose declared type can hold a list, a dict or a struct are visited (a plan per
struct class, worked out once from `msgspec.inspect`): the walk over every field of every struct
cost as much as decoding the timeline. Equal strings are not shared: at 5000 nodes / 100,000 events
that saved 5 MiB for 0.2 CPU s (msgspec already shares short dict keys).
"""

from __future__ import annotations

from typing import Any

import msgspec
import msgspec.inspect as mi
from msgspec.structs import force_setattr

__all__ = ["EMPTY_DICT", "EMPTY_LIST", "Compactor"]

#: What every compacted empty list and dict field is (tests assert they stay empty).
EMPTY_LIST: list[Any] = []
EMPTY_DICT: dict[Any, Any] = {}

#: Declared types whose values hold nothing to compact.
_LEAVES = (mi.StrType, mi.IntType, mi.BoolType, mi.FloatType, mi.NoneType, mi.LiteralType, mi.EnumType)


def _is_leaf(t: mi.Type) -> bool:
    if isinstance(t, mi.UnionType):
        return all(_is_leaf(member) for member in t.types)
    return isinstance(t, _LEAVES)


def _plan(cls: type[msgspec.Struct]) -> tuple[str, ...]:
    """The fields of `cls` that may hold a list, a dict or a struct (any other type counts as may)."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    return tuple(f.name for f in info.fields if not _is_leaf(f.type))


class Compactor:
    """Compacts objects in place: empty list and dict fields, at any depth, become the shared ones."""

    def __init__(self) -> None:
        self._plans: dict[type, tuple[str, ...]] = {}

    def compact(self, obj: msgspec.Struct) -> None:
        cls = type(obj)
        plan = self._plans.get(cls)
        if plan is None:
            plan = self._plans[cls] = _plan(cls)
        for name in plan:
            value = getattr(obj, name)
            if value is None:
                continue
            kind = type(value)
            if kind is list:
                if not value:
                    force_setattr(obj, name, EMPTY_LIST)
                    continue
                for item in value:
                    if isinstance(item, msgspec.Struct):
                        self.compact(item)
            elif kind is dict:
                if not value:
                    force_setattr(obj, name, EMPTY_DICT)
            elif isinstance(value, msgspec.Struct):
                self.compact(value)
