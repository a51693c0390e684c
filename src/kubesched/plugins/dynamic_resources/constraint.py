"""Claim constraints: `matchAttribute` and `distinctAttribute` over the devices picked so far.

Separate because a constraint keeps its own undo stack through the search's backtracking
(upstream: `internal/*/constraint.go` and the stable allocator's constraint types).
"""

from __future__ import annotations

from typing import Any

from kubesched.api.resource import Device
from kubesched.plugins.dynamic_resources.requests import Candidate

__all__ = ["Constraint", "lookup_attribute"]


def lookup_attribute(device: Device, driver: str, name: str) -> Any:
    """The typed value of a fully qualified attribute; `<driver>/<id>` falls back to `<id>`."""
    attr = device.attributes.get(name)
    if attr is None:
        domain, sep, ident = name.partition("/")
        if not sep or domain != driver:
            return None
        attr = device.attributes.get(ident)
        if attr is None:
            return None
    for kind in ("int", "bool", "string", "version"):
        value = getattr(attr, kind)
        if value is not None:
            return (kind, value)
    return None


class Constraint:
    """One `matchAttribute`/`distinctAttribute` constraint of a claim, with the values taken so far."""

    def __init__(self, requests: list[str], attribute: str, distinct: bool) -> None:
        self.requests = set(requests)
        self.attribute = attribute
        self.distinct = distinct
        self.values: list[Any] = []

    def applies(self, base: str, sub: str) -> bool:
        if not self.requests:
            return True
        return base in self.requests or (bool(sub) and f"{base}/{sub}" in self.requests)

    def add(self, base: str, sub: str, cand: Candidate) -> bool:
        if not self.applies(base, sub):
            return True
        value = lookup_attribute(cand.device, cand.id.driver, self.attribute)
        if value is None:
            return False
        if self.values:
            if self.distinct and value in self.values:
                return False
            if not self.distinct and value != self.values[0]:
                return False
        self.values.append(value)
        return True

    def remove(self, base: str, sub: str, cand: Candidate) -> None:
        if self.applies(base, sub):
            self.values.pop()
