"""Memoised CEL selector results per device content.

Separate because the device table (`device_table.py`) and the allocator's search share one cache,
and it outlives both: the plugin keeps it across cycles, since a device's content only changes with
its slice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from kubesched.api.resource import Device, DeviceClass, DeviceSelector
from kubesched.cel import CELError, compile_selector, device_input
from kubesched.cel.selectors import DeviceInput

__all__ = ["MatchCache"]

_CONTENT = msgspec.json.Encoder()


class MatchCache:
    """Selector results by (expression, device content): a device's `device` variable never changes
    while its slice does not, so each distinct device is evaluated once per expression, ever."""

    def __init__(self) -> None:
        self._results: dict[tuple[str, tuple[Any, ...]], bool | str] = {}
        self._verdicts: dict[tuple[Any, ...], bool | tuple[str, int, str, str]] = {}
        self._inputs: dict[tuple[str, int], DeviceInput] = {}
        self._by_content: dict[tuple[str, bytes], DeviceInput] = {}
        self._devices: list[Device] = []

    def input(self, driver: str, device: Device) -> DeviceInput:
        """The `device` variable of a device; devices with the same content share one."""
        key = (driver, id(device))
        found = self._inputs.get(key)
        if found is None:
            content = (
                driver,
                _CONTENT.encode((device.attributes, device.capacity, device.allow_multiple_allocations)),
            )
            found = self._by_content.get(content)
            if found is None:
                found = self._by_content[content] = device_input(driver, device)
            self._inputs[key] = found
            self._devices.append(device)  # keeps id(device) from being reused while cached
        return found

    def remember(self, driver: str, device: Device, found: DeviceInput) -> None:
        """Record `device`'s variable, found by content elsewhere (the device table), so the
        allocator's `input` for it is a lookup instead of an encoding of its attributes."""
        key = (driver, id(device))
        if key not in self._inputs:
            self._inputs[key] = found
            self._devices.append(device)

    def matches(self, expression: str, device: DeviceInput) -> bool:
        """True/False, or raises CELError (compile error, runtime error)."""
        key = (expression, device.key)
        result = self._results.get(key)
        if result is None:
            try:
                result = compile_selector(expression).matches(device)
            except CELError as err:
                result = str(err) or "error"
            self._results[key] = result
        if isinstance(result, str):
            raise CELError(result)
        return result

    def compile_error(self, expression: str) -> str:
        return compile_selector(expression).error

    def verdict(
        self, cls: DeviceClass, selectors: Sequence[DeviceSelector], device: DeviceInput
    ) -> bool | tuple[str, int, str, str]:
        """Do the class's and then the request's selectors all accept `device`? Or the first failure
        as (owner "class"/"claim", selector index, "compile"/"runtime", text). Memoised by content."""
        exprs = (
            tuple(s.cel.expression if s.cel is not None else "" for s in cls.spec.selectors),
            tuple(s.cel.expression if s.cel is not None else "" for s in selectors),
        )
        key = (exprs, device.key)
        found = self._verdicts.get(key)
        if found is None:
            found = self._evaluate(exprs, device)
            self._verdicts[key] = found
        return found

    def _evaluate(
        self, exprs: tuple[tuple[str, ...], tuple[str, ...]], device: DeviceInput
    ) -> bool | tuple[str, int, str, str]:
        for owner, expressions in (("class", exprs[0]), ("claim", exprs[1])):
            for i, expression in enumerate(expressions):
                error = self.compile_error(expression)
                if error:
                    return (owner, i, "compile", error)
                try:
                    if not self.matches(expression, device):
                        return False
                except CELError as err:
                    return (owner, i, "runtime", str(err))
        return True

    def __len__(self) -> int:
        return len(self._results)
