"""DRA device selectors: compile a CEL expression once, evaluate it against devices.

The environment is the one Kubernetes gives selectors: one variable, `device`, with `driver`,
`attributes` (domain -> id -> int/bool/string/Semver), `capacity` (domain -> id -> Quantity) and
`allowMultipleAllocations`; the standard library with macros, `cel.bind`, optional types
(`.?`, `orValue`), the strings extension; Kubernetes' Quantity, Semver, Lists, Regex and Sets
functions (`library.py`). Differences from cel-go that Kubernetes relies on are bridged here:

* cross-type numeric comparisons (`1 < 2.5`): the runtime supports them, the type checker does not,
  so an expression whose only type errors are such comparisons is compiled unchecked;
* an unknown domain (`device.attributes["other.example.com"]`) yields an empty map: every string
  literal of the expression that is not a domain of the device is added as an empty domain, so a
  literal lookup, `.?` and `in` behave as upstream (`size()` of the outer map does not);
* error texts are upstream's (`compilation failed: ...`, `no such key: x. consider using ...`).

Programs are cached by expression text (`compile_selector`), and results of an expression on a
device are a pure function of the device's content, which callers memoise (see `DeviceInput.key`).

Not available: the runtime cost limit (cel-expr-python exposes no cost tracking; device inputs are
bounded by the API's limits instead), `ext.Lists` (`sort`, `lists.range`) and two-variable
comprehensions, which the underlying library does not ship.

The CEL runtime (cel-expr-python, protobuf and the Kubernetes library built on them) is imported
when a selector is compiled or a device is converted, not with this module: every profile imports
the DRA plugins, and a cluster without DRA objects should not pay for it (~0.2 CPU s per process).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from kubesched.api.quantity import QuantityError
from kubesched.api.resource import Device
from kubesched.cel.semver import SemverError, parse_semver

if TYPE_CHECKING:
    from cel_expr_python import cel

__all__ = [
    "MAX_EXPRESSION_LENGTH",
    "CELError",
    "CompiledSelector",
    "DeviceInput",
    "compile_selector",
    "device_input",
]

#: Longest expression the API accepts (10 KiB).
MAX_EXPRESSION_LENGTH = 10 * 1024
_NO_SUCH_KEY_HINT = (
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() "
    "for optional fields"
)


class CELError(Exception):
    """A compile or runtime error, with upstream's text."""


@lru_cache(maxsize=1)
def _environment() -> cel.Env:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_bindings, ext_math, ext_optional, ext_strings

    from kubesched.cel.library import DESCRIPTOR_POOL, kubernetes_extension

    return cel.NewEnv(
        descriptor_pool=DESCRIPTOR_POOL,
        variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
        extensions=[
            ext_bindings.ExtBindings(),
            ext_optional.ExtOptional(),
            ext_strings.ExtStrings(),
            ext_math.ExtMath(),
            kubernetes_extension(),
        ],
    )


_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r"\s*\[[A-Z_]+\]$")
_CROSS_NUMERIC = re.compile(
    r"found no matching overload for '_(?:<|<=|>|>=|==|!=)_' applied to "
    r"'\((?:int|uint|double|dyn), (?:int|uint|double|dyn)\)'"
)
_STRING_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'')


def _status_text(err: BaseException | str) -> str:
    text = str(err)
    return _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", text, count=1))


def _only_cross_numeric(message: str) -> bool:
    errors = [line for line in message.splitlines() if line.startswith("ERROR:")]
    return bool(errors) and all(_CROSS_NUMERIC.search(line) for line in errors)


_KEY_NOT_FOUND = re.compile(r'Key not found in map\s*:\s*"?(.*?)"?$')
_INDEX = re.compile(r"Index error: index=(-?\d+) size=(\d+)")


def runtime_error_text(raw: str) -> str:
    """cel-cpp's runtime error, in cel-go's words (the ones Kubernetes users see)."""
    text = _status_text(raw)
    match = _KEY_NOT_FOUND.search(text)
    if match:
        return f"no such key: {match[1]}{_NO_SUCH_KEY_HINT}"
    match = _INDEX.search(text)
    if match:
        return f"index '{match[1]}' out of range in list size '{match[2]}'"
    if "No matching overloads" in text or "no matching overload" in text:
        return "no such overload"
    if "divide by zero" in text.lower() or "division by zero" in text.lower():
        return "division by zero"
    return text


@dataclass(frozen=True, slots=True)
class DeviceInput:
    """What a selector sees of a device, and a key that is equal for devices a selector cannot tell apart."""

    driver: str
    attributes: Mapping[str, Mapping[str, Any]]
    capacity: Mapping[str, Mapping[str, Any]]
    allow_multiple_allocations: bool
    key: tuple[Any, ...]
    #: A `version` attribute that does not parse, as upstream reports it (evaluation then fails).
    error: str = ""
    _activations: dict[frozenset[str], Any] = field(default_factory=dict, compare=False, hash=False)

    def activation(self, literals: frozenset[str]) -> Any:
        """The `device` variable, with every literal that is not a domain added as an empty domain."""
        act = self._activations.get(literals)
        if act is None:
            attributes = dict(self.attributes)
            capacity = dict(self.capacity)
            for literal in literals:
                attributes.setdefault(literal, {})
                capacity.setdefault(literal, {})
            value = {
                "driver": self.driver,
                "allowMultipleAllocations": self.allow_multiple_allocations,
                "attributes": attributes,
                "capacity": capacity,
            }
            act = _environment().Activation({"device": value})
            self._activations[literals] = act
        return act


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def device_input(driver: str, device: Device) -> DeviceInput:
    """The `device` variable of `device` from a slice of `driver` (names without domain get the driver's)."""
    from kubesched.cel.library import make_quantity, make_semver

    attributes: dict[str, dict[str, Any]] = {}
    error = ""
    for name, attr in sorted(device.attributes.items()):
        domain, ident = _split(name, driver)
        value: Any
        if attr.int is not None:
            value = attr.int
        elif attr.bool is not None:
            value = attr.bool
        elif attr.string is not None:
            value = attr.string
        elif attr.version is not None:
            try:
                value = make_semver(parse_semver(attr.version))
            except SemverError as err:
                error = error or f"attribute {name}: parse semantic version: {err}"
                continue
        else:
            error = error or f"attribute {name}: unsupported attribute value"
            continue
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in sorted(device.capacity.items()):
        domain, ident = _split(name, driver)
        try:
            capacity.setdefault(domain, {})[ident] = make_quantity(cap.value)
        except QuantityError as err:
            error = error or f"capacity {name}: {err.message}"
    multi = bool(device.allow_multiple_allocations)
    key = (
        driver,
        multi,
        tuple(sorted((k, repr(v)) for k, v in device.attributes.items())),
        tuple(sorted((k, repr(v.value)) for k, v in device.capacity.items())),
    )
    return DeviceInput(driver, attributes, capacity, multi, key, error)


class CompiledSelector:
    """One compiled selector expression (or its compile error)."""

    __slots__ = ("_program", "error", "expression", "literals")

    def __init__(self, expression: str) -> None:
        from cel_expr_python import cel

        self.expression = expression
        self.error = ""
        self._program: Any = None
        self.literals = frozenset(
            (m[1] if m[1] is not None else m[2]) for m in _STRING_LITERAL.finditer(expression)
        )
        if len(expression) > MAX_EXPRESSION_LENGTH:
            self.error = (
                f"compilation failed: expression too long ({len(expression)} > {MAX_EXPRESSION_LENGTH})"
            )
            return
        env = _environment()
        try:
            program = env.compile(expression)
        except Exception as err:  # cel-expr-python raises RuntimeError with the checker's issues
            message = _status_text(err)
            if not _only_cross_numeric(message):
                self.error = f"compilation failed: {message}"
                return
            try:
                program = env.compile(expression, disable_check=True)
            except Exception as again:
                self.error = f"compilation failed: {_status_text(again)}"
                return
        else:
            out = program.return_type()
            if out != cel.Type.BOOL and out != cel.Type.DYN:
                self.error = f"must evaluate to bool or the unknown type, not {_type_name(out)}"
                return
        self._program = program

    def matches(self, device: DeviceInput) -> bool:
        """Evaluate on `device`; raises CELError (runtime error or a non-bool result)."""
        from cel_expr_python import cel

        if self.error:
            raise CELError(self.error)
        if device.error:
            raise CELError(device.error)
        try:
            result = self._program.eval(device.activation(self.literals))
        except Exception as err:
            raise CELError(runtime_error_text(str(err))) from None
        kind = result.type()
        if kind == cel.Type.BOOL:
            return bool(result.value())
        if kind == cel.Type.ERROR:
            raise CELError(runtime_error_text(str(result.value())))
        name = _type_name(kind)
        raise CELError(f"CEL result of type {name} could not be converted to bool: type conversion error")


def _type_name(kind: Any) -> str:
    """cel-go's spelling of a type (`string`, `int`, `map`), as upstream's messages show it."""
    name = str(kind.name()) if hasattr(kind, "name") else str(kind)
    return name.lower() if name.isupper() else name


@lru_cache(maxsize=1024)
def compile_selector(expression: str) -> CompiledSelector:
    """The compiled selector for `expression`, compiled once per process (errors included)."""
    return CompiledSelector(expression)
