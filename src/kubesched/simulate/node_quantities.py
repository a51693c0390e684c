"""A node's bad quantity is bad input: named by node and field before any command runs."""

from __future__ import annotations

import re

from kubesched.api.objects import Node
from kubesched.api.quantity import QuantityError, resource_amount
from kubesched.errors import InputError

__all__ = ["check_node_quantities"]

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")


def check_node_quantities(node: Node) -> None:
    """Raise InputError naming the node and field of an invalid allocatable (or capacity) quantity.

    A bad node is bad input, not one bad pod. The loader already checks nodes read from files (and
    names the file); this covers LoadedObjects built in code, whose bad quantity would otherwise
    surface from the scheduler's cache without naming the node or the field.
    """
    field_name = "allocatable" if node.status.allocatable else "capacity"
    for resource, value in node.effective_allocatable().items():
        try:
            resource_amount(resource, value)
        except QuantityError as err:
            key = f".{resource}" if _PLAIN_KEY.fullmatch(resource) else f"[{resource}]"
            where = f'node "{node.metadata.name}": status.{field_name}{key}'
            raise InputError(err.message, path=where) from None
