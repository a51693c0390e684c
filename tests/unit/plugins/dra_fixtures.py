"""Small builders for DRA objects in tests: dicts in, structs out (the manifest shapes users write)."""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import Node
from kubesched.api.resource import DeviceClass, ResourceClaim, ResourceSlice

DRIVER = "gpu.example.com"


def device(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


def gpu(name: str, model: str = "a100", **fields: Any) -> dict[str, Any]:
    return device(name, attributes={"model": {"string": model}}, **fields)


def slice_(
    name: str,
    devices: list[dict[str, Any]],
    *,
    node: str | None = None,
    pool: str | None = None,
    driver: str = DRIVER,
    generation: int = 1,
    count: int = 1,
    **spec: Any,
) -> ResourceSlice:
    body: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool or node or name, "generation": generation, "resourceSliceCount": count},
        "devices": devices,
        **spec,
    }
    if node is not None:
        body["nodeName"] = node
    return msgspec.convert({"metadata": {"name": name}, "spec": body}, ResourceSlice)


def device_class(name: str = DRIVER, expression: str | None = None, **spec: Any) -> DeviceClass:
    selectors = [{"cel": {"expression": expression or f'device.driver == "{DRIVER}"'}}]
    return msgspec.convert(
        {"metadata": {"name": name}, "spec": {"selectors": selectors, **spec}}, DeviceClass
    )


def claim(name: str, requests: list[dict[str, Any]], **devices: Any) -> ResourceClaim:
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"devices": {"requests": requests, **devices}},
        },
        ResourceClaim,
    )


def exactly(name: str = "gpu", cls: str = DRIVER, **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, **fields}}


def first_available(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def sub(name: str, cls: str = DRIVER, **fields: Any) -> dict[str, Any]:
    return {"name": name, "deviceClassName": cls, **fields}


def node(name: str, labels: dict[str, str] | None = None) -> Node:
    return Node(metadata=ObjectMeta(name=name, labels=labels or {}))
