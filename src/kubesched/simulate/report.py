"""The public base of every report kubesched's commands print: simulate, replay, explain, compare,
capacity and sweep. Each command's report structs (its `model` module) derive from `ReportStruct`,
so every JSON report has camelCase keys and every field present, and `to_json` prints any of them.
"""

from __future__ import annotations

import msgspec

__all__ = ["ReportStruct", "to_json"]


class ReportStruct(msgspec.Struct, kw_only=True, rename="camel"):
    """Report structs: camelCase keys, every field always present (null when unknown)."""


def to_json(report: msgspec.Struct, *, indent: int = 2) -> bytes:
    """A report (simulate, replay, explain, capacity, compare, sweep) as indented JSON."""
    raw = msgspec.json.encode(report)
    return msgspec.json.format(raw, indent=indent) if indent else raw
