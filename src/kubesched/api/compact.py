"""Decoded objects made to share what they hold alike: equal strings, and one empty list and dict.

A scenario holds its whole timeline, tens of thousands of pods, for the length of a replay. Decoded
one by one, each pod carries its own copy of every string (kind, image, namespace, label values,
quantities) and a fresh empty list or dict for each of the dozen or so absent fields: about 40 % of
its memory. Go's decoder leaves absent slices and maps nil, which cost nothing; sharing does the
same here. It is safe because objects are never changed in place (every struct is frozen, and
changes are copies made with `msgspec.structs.replace`), which the shared empties also check.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["EMPTY_DICT", "EMPTY_LIST", "Compactor"]

#: What every compacted empty list and dict field is (tests assert they stay empty).
EMPTY_LIST: list[Any] = []
EMPTY_DICT: dict[Any, Any] = {}


class Compactor:
    """Compacts objects in place; equal strings are shared among all the objects it has seen."""

    def __init__(self) -> None:
        self._strings: dict[str, str] = {}

    def compact(self, obj: msgspec.Struct) -> None:
        strings = self._strings
        for name in obj.__struct_fields__:
            value = getattr(obj, name)
            kind = type(value)
            if kind is str:
                shared = strings.setdefault(value, value)
                if shared is not value:
                    msgspec.structs.force_setattr(obj, name, shared)
            elif kind is list:
                if not value:
                    msgspec.structs.force_setattr(obj, name, EMPTY_LIST)
                    continue
                for i, item in enumerate(value):
                    if isinstance(item, msgspec.Struct):
                        self.compact(item)
                    elif type(item) is str:
                        value[i] = strings.setdefault(item, item)
            elif kind is dict:
                if not value:
                    msgspec.structs.force_setattr(obj, name, EMPTY_DICT)
                    continue
                if all(type(k) is str and type(v) is str for k, v in value.items()):
                    shared_map = {
                        strings.setdefault(k, k): strings.setdefault(v, v) for k, v in value.items()
                    }
                    msgspec.structs.force_setattr(obj, name, shared_map)
            elif isinstance(value, msgspec.Struct):
                self.compact(value)
