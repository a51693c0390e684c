"""Quantities as a person reads them in a table; JSON reports keep the exact quantity.

`939094179Ki` is exact and unreadable: a table shows `895.6Gi`; `72860m` cpu shows `72.9` cores.
"""

from __future__ import annotations

from fractions import Fraction

from kubesched.api.quantity import QuantityError, parse_quantity

__all__ = ["human_quantity", "human_requests"]

_BINARY = (("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_BYTES = frozenset({"memory", "ephemeral-storage", "storage"})


def human_quantity(resource: str, quantity: str) -> str:
    """cpu in cores with one decimal (below a core, millicores: `250m`); bytes in the largest binary
    unit that keeps a whole number in front, with one decimal; other resources unchanged."""
    try:
        value = parse_quantity(quantity)
    except QuantityError:
        return quantity
    if resource == "cpu":
        if 0 < value < 1:
            return f"{round(value * 1000)}m"
        return _one_decimal(value)
    if resource in _BYTES or resource.startswith("hugepages-"):
        for suffix, size in _BINARY:
            if value >= size:
                return f"{_one_decimal(value / size)}{suffix}"
        return _one_decimal(value)
    return quantity


def human_requests(requests: dict[str, str]) -> str:
    """`cpu=1.5 memory=4Gi nvidia.com/gpu=1`: a requests map on one table line."""
    return " ".join(f"{r}={human_quantity(r, v)}" for r, v in requests.items())


def _one_decimal(value: Fraction) -> str:
    text = f"{float(value):.1f}"
    return text.removesuffix(".0")
