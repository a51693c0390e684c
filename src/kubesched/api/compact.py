"""Decoded objects made to share what they hold alike: equal strings, and one empty list and dict.

A scenario holds its whole timeline, tens of thousands of pods, for the length of a replay. Decoded
one by one, each pod carries its own copy of every string (kind, image, namespace, label values,
quantities) and a fresh empty list or dict for each of the dozen or so absent fields: about 40 % of
its memory. Go's decoder leaves absent slices and maps nil, which cost nothing; sharing does the
same here. It is safe because objects are never changed in place (every struct is frozen, and
changes are copies made with `msgspec.structs.replace`), which the shared empties also check.

Each struct class gets a plan, worked out once from its declared field types (`msgspec.inspect`):
its string fields, and the fields that may hold a list, a dict or a struct; fields of other types
(numbers, booleans) are not visited. Walking every field of every struct cost as much as decoding
the timeline. Dict values are shared in place; their keys are left as decoded.
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

#: Declared types whose values hold nothing to share.
_SCALARS = (mi.IntType, mi.BoolType, mi.FloatType, mi.NoneType, mi.LiteralType, mi.EnumType)
_STR, _SCALAR, _OTHER = 0, 1, 2


def _kind(t: mi.Type) -> int:
    """A declared type as a string (or an optional one), a scalar, or anything else."""
    if isinstance(t, mi.UnionType):
        kinds = {_kind(member) for member in t.types}
        if kinds <= {_STR, _SCALAR}:
            return _STR if _STR in kinds else _SCALAR
        return _OTHER
    if isinstance(t, mi.StrType):
        return _STR
    return _SCALAR if isinstance(t, _SCALARS) else _OTHER


def _plan(cls: type[msgspec.Struct]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The string fields of `cls`, and those that may hold a list, a dict or a struct."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    kinds = [(f.name, _kind(f.type)) for f in info.fields]
    return tuple(n for n, k in kinds if k == _STR), tuple(n for n, k in kinds if k == _OTHER)


class Compactor:
    """Compacts objects in place; equal strings are shared among all the objects it has seen."""

    def __init__(self) -> None:
        self._strings: dict[str, str] = {}
        self._plans: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def compact(self, obj: msgspec.Struct) -> None:
        cls = type(obj)
        plan = self._plans.get(cls)
        if plan is None:
            plan = self._plans[cls] = _plan(cls)
        strings, others = plan
        share = self._strings.setdefault
        for name in strings:
            value = getattr(obj, name)
            if value:  # not None, not "" (one object already)
                shared = share(value, value)
                if shared is not value:
                    force_setattr(obj, name, shared)
        for name in others:
            value = getattr(obj, name)
            if value is None:
                continue
            kind = type(value)
            if kind is list:
                if not value:
                    force_setattr(obj, name, EMPTY_LIST)
                    continue
                for i, item in enumerate(value):
                    if type(item) is str:
                        value[i] = share(item, item)
                    elif isinstance(item, msgspec.Struct):
                        self.compact(item)
            elif kind is dict:
                if not value:
                    force_setattr(obj, name, EMPTY_DICT)
                    continue
                for key, item in value.items():
                    if type(item) is str:
                        value[key] = share(item, item)
            elif kind is str:
                shared = share(value, value)
                if shared is not value:
                    force_setattr(obj, name, shared)
            elif isinstance(value, msgspec.Struct):
                self.compact(value)
