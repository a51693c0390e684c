"""Small helpers shared by the config modules."""

from __future__ import annotations

import json


def quote(value: object) -> str:
    """`value` quoted as Go's `%q` does for strings (`"Foo"`), so messages read like upstream's."""
    return json.dumps(value, ensure_ascii=False, default=str)


def snake(key: str) -> str:
    """Python attribute name of a camelCase config key (`multiPoint` -> `multi_point`)."""
    return "".join("_" + c.lower() if c.isupper() else c for c in key)
