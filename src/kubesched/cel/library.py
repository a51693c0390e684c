"""Kubernetes' CEL function libraries on top of cel-expr-python: Quantity, Semver, Lists, Regex, Sets.

Quantities and versions are CEL values of their own types, `kubernetes.Quantity` and
`kubernetes.Semver` (protobuf messages built at import time, which is how cel-expr-python carries
custom types). A Quantity holds its exact value in nano units, so equality is numeric equality
(`quantity("1") == quantity("1000m")`); a Semver holds its precedence fields, so versions that
differ only in build metadata are equal — both as Kubernetes' libraries define them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kubesched.api.quantity import NANO, QuantityError, quantity_nanos
from kubesched.cel.semver import SemverError, Version, parse_semver

__all__ = [
    "DESCRIPTOR_POOL",
    "QUANTITY_TYPE",
    "SEMVER_TYPE",
    "kubernetes_extension",
    "make_quantity",
    "make_semver",
]

_MAX_INT64 = 2**63 - 1
_MIN_INT64 = -(2**63)


def _build_pool() -> descriptor_pool.DescriptorPool:
    proto = descriptor_pb2.FileDescriptorProto(
        name="kubesched/cel/kubernetes.proto", package="kubernetes", syntax="proto3"
    )
    string, int64 = (
        descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
        descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
    )
    optional = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
    quantity = proto.message_type.add(name="Quantity")
    quantity.field.add(name="nanos", number=1, type=string, label=optional)
    semver = proto.message_type.add(name="Semver")
    for number, name in enumerate(("major", "minor", "patch"), start=1):
        semver.field.add(name=name, number=number, type=int64, label=optional)
    semver.field.add(name="pre", number=4, type=string, label=optional)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return pool


DESCRIPTOR_POOL = _build_pool()
_QuantityMessage: Any = message_factory.GetMessageClass(
    DESCRIPTOR_POOL.FindMessageTypeByName("kubernetes.Quantity")
)
_SemverMessage: Any = message_factory.GetMessageClass(
    DESCRIPTOR_POOL.FindMessageTypeByName("kubernetes.Semver")
)
QUANTITY_TYPE = cel.Type("kubernetes.Quantity")
SEMVER_TYPE = cel.Type("kubernetes.Semver")

T = cel.Type
_QUANTITY_PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


class _CelFunctionError(Exception):
    """Raised inside a function: cel-expr-python turns it into a CEL error value with this text."""


# --------------------------------------------------------------------------- Quantity


def make_quantity(value: str | int | float) -> Any:
    """The CEL value of a quantity as written in a manifest (raises QuantityError)."""
    return _QuantityMessage(nanos=str(quantity_nanos(value)))


def _nanos(q: Any) -> int:
    return int(q.nanos or "0")


def _from_nanos(nanos: int) -> Any:
    return _QuantityMessage(nanos=str(nanos))


def _quantity(text: str) -> Any:
    try:
        return make_quantity(text)
    except QuantityError:
        raise _CelFunctionError(
            f"quantities must match the regular expression '{_QUANTITY_PATTERN}'"
        ) from None


def _is_quantity(text: str) -> bool:
    try:
        quantity_nanos(text)
    except QuantityError:
        return False
    return True


def _compare(a: int, b: int) -> int:
    return (a > b) - (a < b)


def _as_integer(q: Any) -> int:
    nanos = _nanos(q)
    if nanos % NANO or not _MIN_INT64 <= nanos // NANO <= _MAX_INT64:
        raise _CelFunctionError("cannot convert value to integer")
    return nanos // NANO


def _is_integer(q: Any) -> bool:
    nanos = _nanos(q)
    return nanos % NANO == 0 and _MIN_INT64 <= nanos // NANO <= _MAX_INT64


def _quantity_functions() -> list[cel.FunctionDecl]:
    q_type = QUANTITY_TYPE

    def member(
        name: str, ident: str, ret: cel.Type, args: list[cel.Type], fn: Callable[..., Any]
    ) -> cel.FunctionDecl:
        return cel.FunctionDecl(name, [cel.Overload(ident, ret, [q_type, *args], is_member=True, impl=fn)])

    return [
        cel.FunctionDecl(
            "quantity", [cel.Overload("string_to_quantity", q_type, [T.STRING], impl=_quantity)]
        ),
        cel.FunctionDecl(
            "isQuantity", [cel.Overload("is_quantity_string", T.BOOL, [T.STRING], impl=_is_quantity)]
        ),
        member("sign", "quantity_sign", T.INT, [], lambda q: _compare(_nanos(q), 0)),
        member("isInteger", "quantity_is_integer", T.BOOL, [], _is_integer),
        member("asInteger", "quantity_as_integer", T.INT, [], _as_integer),
        member(
            "asApproximateFloat",
            "quantity_as_float",
            T.DOUBLE,
            [],
            lambda q: float(Fraction(_nanos(q), NANO)),
        ),
        cel.FunctionDecl(
            "add",
            [
                cel.Overload(
                    "quantity_add",
                    q_type,
                    [q_type, q_type],
                    is_member=True,
                    impl=lambda a, b: _from_nanos(_nanos(a) + _nanos(b)),
                ),
                cel.Overload(
                    "quantity_add_int",
                    q_type,
                    [q_type, T.INT],
                    is_member=True,
                    impl=lambda a, n: _from_nanos(_nanos(a) + n * NANO),
                ),
            ],
        ),
        cel.FunctionDecl(
            "sub",
            [
                cel.Overload(
                    "quantity_sub",
                    q_type,
                    [q_type, q_type],
                    is_member=True,
                    impl=lambda a, b: _from_nanos(_nanos(a) - _nanos(b)),
                ),
                cel.Overload(
                    "quantity_sub_int",
                    q_type,
                    [q_type, T.INT],
                    is_member=True,
                    impl=lambda a, n: _from_nanos(_nanos(a) - n * NANO),
                ),
            ],
        ),
    ]


# --------------------------------------------------------------------------- Semver


def make_semver(version: Version) -> Any:
    return _SemverMessage(
        major=version.major,
        minor=version.minor,
        patch=version.patch,
        pre=".".join(str(p) for p in version.pre),
    )


def _version(msg: Any) -> Version:
    pre = tuple(int(p) if p.isdigit() else p for p in msg.pre.split(".")) if msg.pre else ()
    return Version(msg.major, msg.minor, msg.patch, pre)


def _semver(text: str, normalize: bool = False) -> Any:
    try:
        return make_semver(parse_semver(text, normalize=normalize))
    except SemverError as err:
        raise _CelFunctionError(f"could not parse semver: {err}") from None


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        parse_semver(text, normalize=normalize)
    except SemverError:
        return False
    return True


def _semver_functions() -> list[cel.FunctionDecl]:
    s_type = SEMVER_TYPE
    return [
        cel.FunctionDecl(
            "semver",
            [
                cel.Overload("string_to_semver", s_type, [T.STRING], impl=_semver),
                cel.Overload("string_bool_to_semver", s_type, [T.STRING, T.BOOL], impl=_semver),
            ],
        ),
        cel.FunctionDecl(
            "isSemver",
            [
                cel.Overload("is_semver_string", T.BOOL, [T.STRING], impl=_is_semver),
                cel.Overload("is_semver_string_bool", T.BOOL, [T.STRING, T.BOOL], impl=_is_semver),
            ],
        ),
        cel.FunctionDecl(
            "major", [cel.Overload("semver_major", T.INT, [s_type], is_member=True, impl=lambda v: v.major)]
        ),
        cel.FunctionDecl(
            "minor", [cel.Overload("semver_minor", T.INT, [s_type], is_member=True, impl=lambda v: v.minor)]
        ),
        cel.FunctionDecl(
            "patch", [cel.Overload("semver_patch", T.INT, [s_type], is_member=True, impl=lambda v: v.patch)]
        ),
    ]


def _ordered(a: Any, b: Any) -> int:
    """compareTo of two Quantities or two Semvers (cel-expr-python's runtime tells message types
    apart only by kind, so the two libraries' comparisons share one overload)."""
    kind_a, kind_b = a.DESCRIPTOR.full_name, b.DESCRIPTOR.full_name
    if kind_a != kind_b:
        raise _CelFunctionError("no such overload")
    if kind_a == "kubernetes.Quantity":
        return _compare(_nanos(a), _nanos(b))
    return _version(a).compare(_version(b))


def _comparison_functions() -> list[cel.FunctionDecl]:
    dyn = T.DYN
    return [
        cel.FunctionDecl(
            "compareTo", [cel.Overload("compare_to", T.INT, [dyn, dyn], is_member=True, impl=_ordered)]
        ),
        cel.FunctionDecl(
            "isGreaterThan",
            [
                cel.Overload(
                    "is_greater_than",
                    T.BOOL,
                    [dyn, dyn],
                    is_member=True,
                    impl=lambda a, b: _ordered(a, b) > 0,
                )
            ],
        ),
        cel.FunctionDecl(
            "isLessThan",
            [
                cel.Overload(
                    "is_less_than", T.BOOL, [dyn, dyn], is_member=True, impl=lambda a, b: _ordered(a, b) < 0
                )
            ],
        ),
    ]


# --------------------------------------------------------------------------- Lists, Regex, Sets


def _plain(values: Sequence[Any]) -> list[Any]:
    return [v.value() if isinstance(v, cel.Value) else v for v in values]


def _is_sorted(values: Sequence[Any]) -> bool:
    items = _plain(values)
    return all(a <= b for a, b in itertools.pairwise(items))


def _minimum(values: Sequence[Any]) -> Any:
    items = _plain(values)
    if not items:
        raise _CelFunctionError("min called on empty list")
    return min(items)


def _maximum(values: Sequence[Any]) -> Any:
    items = _plain(values)
    if not items:
        raise _CelFunctionError("max called on empty list")
    return max(items)


def _index_of(values: Sequence[Any], item: Any) -> int:
    items = _plain(values)
    return items.index(item) if item in items else -1


def _last_index_of(values: Sequence[Any], item: Any) -> int:
    items = _plain(values)
    return len(items) - 1 - items[::-1].index(item) if item in items else -1


def _find(text: str, pattern: str) -> str:
    match = re.search(pattern, text)
    return match.group(0) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in re.finditer(pattern, text)]
    return found if limit < 0 else found[:limit]


def _list_functions() -> list[cel.FunctionDecl]:
    lst = T.List(T.DYN)
    return [
        cel.FunctionDecl(
            "isSorted", [cel.Overload("list_is_sorted", T.BOOL, [lst], is_member=True, impl=_is_sorted)]
        ),
        cel.FunctionDecl(
            "sum", [cel.Overload("list_sum", T.DYN, [lst], is_member=True, impl=lambda v: sum(_plain(v)))]
        ),
        cel.FunctionDecl("min", [cel.Overload("list_min", T.DYN, [lst], is_member=True, impl=_minimum)]),
        cel.FunctionDecl("max", [cel.Overload("list_max", T.DYN, [lst], is_member=True, impl=_maximum)]),
        cel.FunctionDecl(
            "indexOf", [cel.Overload("list_index_of", T.INT, [lst, T.DYN], is_member=True, impl=_index_of)]
        ),
        cel.FunctionDecl(
            "lastIndexOf",
            [cel.Overload("list_last_index_of", T.INT, [lst, T.DYN], is_member=True, impl=_last_index_of)],
        ),
        cel.FunctionDecl(
            "find", [cel.Overload("string_find", T.STRING, [T.STRING, T.STRING], is_member=True, impl=_find)]
        ),
        cel.FunctionDecl(
            "findAll",
            [
                cel.Overload(
                    "string_find_all", T.List(T.STRING), [T.STRING, T.STRING], is_member=True, impl=_find_all
                ),
                cel.Overload(
                    "string_find_all_n",
                    T.List(T.STRING),
                    [T.STRING, T.STRING, T.INT],
                    is_member=True,
                    impl=_find_all,
                ),
            ],
        ),
        cel.FunctionDecl(
            "sets.contains",
            [
                cel.Overload(
                    "list_sets_contains",
                    T.BOOL,
                    [lst, lst],
                    impl=lambda a, b: all(x in _plain(a) for x in _plain(b)),
                )
            ],
        ),
        cel.FunctionDecl(
            "sets.equivalent",
            [
                cel.Overload(
                    "list_sets_equivalent",
                    T.BOOL,
                    [lst, lst],
                    impl=lambda a, b: (
                        all(x in _plain(a) for x in _plain(b)) and all(x in _plain(b) for x in _plain(a))
                    ),
                )
            ],
        ),
        cel.FunctionDecl(
            "sets.intersects",
            [
                cel.Overload(
                    "list_sets_intersects",
                    T.BOOL,
                    [lst, lst],
                    impl=lambda a, b: any(x in _plain(a) for x in _plain(b)),
                )
            ],
        ),
    ]


def kubernetes_extension() -> cel.CelExtension:
    """The Kubernetes libraries DRA selectors may call, as one cel-expr-python extension."""
    return cel.CelExtension(
        "kubernetes",
        [*_quantity_functions(), *_semver_functions(), *_comparison_functions(), *_list_functions()],
    )
