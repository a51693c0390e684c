"""Kubernetes resource quantities (`500m`, `1.5Gi`, `1e3`): exact parsing with upstream rounding.

The accepted syntax and every rounding rule follow apimachinery's `ParseQuantity`, so the same text
yields the same numbers here as in the scheduler (one difference at the edge: the API server's JSON
decoder trims surrounding whitespace before parsing; like `ParseQuantity`, this module does not):

* `[+-]` digits, an optional `.` and fraction digits, then one optional suffix: a binary one
  (`Ki Mi Gi Ti Pi Ei`), a decimal SI one (`n u m k M G T P E`) or a decimal exponent (`e3`, `E-2`,
  `e+6`). Like upstream, the digits may be missing entirely (`.`, `+`, `k` parse as zero), while
  whitespace, a second `.`, unknown suffixes (`Kb`, `ki`, `1m5`) and the empty string are errors.
* A parsed value is exact, then its magnitude is rounded *up* to a whole number of nano units
  (10^-9): upstream keeps at most nine decimal places and never rounds a request down to nothing.
* Binary-suffixed magnitudes are capped at 2^63-1, as upstream does.
* One deliberate difference: values above 10^1000 (`1e1001`), and more than 1000 digits, are
  refused instead of being computed; upstream truncates such exponents to 32 bits, which is no better.

Values are kept internally as integers counting nano units, which makes sums and maxima exact and
fast. `Value()`/`MilliValue()` round away from zero, as upstream does. Unlike Go's int64, results
never overflow: a caller storing them in fixed-width arrays must check the range itself.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from functools import lru_cache

from kubesched.errors import InputError

__all__ = [
    "MAX_INT64",
    "NANO",
    "QuantityError",
    "format_quantity",
    "parse_quantity",
    "quantity_milli_value",
    "quantity_nanos",
    "quantity_value",
    "resource_amount",
]

#: Nano units per unit: quantities are stored internally as integer multiples of 10^-9.
NANO = 10**9
MILLI_PER_NANO = 10**6
MAX_INT64 = 2**63 - 1

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
#: Largest binary-suffixed magnitude upstream keeps, in nano units.
_BINARY_CAP_NANOS = MAX_INT64 * NANO
#: Decimal exponents above this are refused: such values have no meaning for a scheduler and the
#: exact integer would be enormous (upstream silently truncates exponents to 32 bits instead).
_MAX_DECIMAL_EXPONENT = 1000
#: More digits than this are refused (as out of range) before any arithmetic on them.
_MAX_DIGITS = 1000

_QUANTITY_RE = re.compile(
    r"(?P<sign>[+-]?)(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?P<suffix>[numkMGTPE]|[KMGTPE]i|[eE][+-]?[0-9]+)?"
)

#: Resources whose amounts are bytes: reports print them with binary suffixes.
_BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})


class QuantityError(InputError):
    """A quantity that upstream's parser would refuse; the message quotes the offending text."""

    def at(self, *, source: str | None = None, path_prefix: str = "") -> QuantityError:
        located = super().at(source=source, path_prefix=path_prefix)
        return QuantityError(located.message, source=located.source, path=located.path)


def _invalid(text: object, reason: str = "") -> QuantityError:
    shown = json.dumps(text, ensure_ascii=False) if isinstance(text, str) else f'"{text!r}"'
    return QuantityError(f"invalid quantity {shown}" + (f": {reason}" if reason else ""))


def _ceil_div_away(n: int, d: int) -> int:
    """`n / d` rounded away from zero (d > 0), the direction upstream rounds quantities."""
    q, r = divmod(abs(n), d)
    if r:
        q += 1
    return q if n >= 0 else -q


def _scale_to_nanos(mantissa: int, shift10: int) -> int:
    """`ceil(mantissa * 10^shift10)` for mantissa >= 0, cheap even for absurd negative shifts."""
    if shift10 >= 0:
        factor: int = 10**shift10
        return mantissa * factor
    if mantissa == 0:
        return 0
    if -shift10 > len(str(mantissa)):  # the value is below one nano unit: it rounds up to one
        return 1
    return _ceil_div_away(mantissa, 10**-shift10)


@lru_cache(maxsize=16384)
def _parse_text(text: str) -> int:
    match = _QUANTITY_RE.fullmatch(text)
    if match is None or not text:
        raise _invalid(text)
    int_digits, frac_digits = match["int"], match["frac"] or ""
    suffix = match["suffix"] or ""
    if len(int_digits) + len(frac_digits) > _MAX_DIGITS or len(suffix) > _MAX_DIGITS:
        raise _invalid(text[:40] + "..." if len(text) > 40 else text, "out of range")
    mantissa = int(int_digits + frac_digits or "0")

    if suffix in _BINARY_SUFFIXES:
        # value = mantissa * 2^exp / 10^len(frac); in nano units:
        nanos = _scale_to_nanos(mantissa << _BINARY_SUFFIXES[suffix], 9 - len(frac_digits))
        nanos = min(nanos, _BINARY_CAP_NANOS)
    else:
        if suffix in _DECIMAL_SUFFIXES:
            exponent = _DECIMAL_SUFFIXES[suffix]
        else:
            exponent = int(suffix[1:])
            if not -(2**63) <= exponent <= MAX_INT64:
                raise _invalid(text)
        scale = exponent - len(frac_digits)
        if not int_digits and not frac_digits and scale < -9:
            # Upstream handles sub-nano scales with a decimal library that demands a digit.
            raise _invalid(text)
        if mantissa and scale > _MAX_DECIMAL_EXPONENT:
            raise _invalid(text, "out of range")
        nanos = _scale_to_nanos(mantissa, scale + 9)
    return -nanos if match["sign"] == "-" else nanos


def quantity_nanos(value: str | int | float) -> int:
    """The quantity as an exact integer count of nano units (10^-9), after upstream's rounding.

    The working form for arithmetic: sums and maxima of these are exact, and converting once at the
    end reproduces upstream, which also adds quantities exactly and rounds only when it reads them.
    """
    if type(value) is int:
        return value * NANO
    if type(value) is str:
        return _parse_text(value)
    if type(value) is float:
        if not math.isfinite(value):
            raise _invalid(value)
        return _parse_text(repr(value))
    raise _invalid(value, f"expected a string or a number, got {type(value).__name__}")


def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a quantity, e.g. `"1.5Gi"` -> 1610612736, `"100m"` -> 1/10.

    Numbers are accepted because YAML turns `cpu: 2` or `cpu: 0.5` into numbers; a float is read
    through its shortest representation (`0.1` is exactly 1/10), like upstream reads the JSON text.
    """
    return Fraction(quantity_nanos(value), NANO)


def quantity_value(value: str | int | float) -> int:
    """Like `Quantity.Value()`: the value rounded up (away from zero) to an integer; "1.5" -> 2."""
    return _ceil_div_away(quantity_nanos(value), NANO)


def quantity_milli_value(value: str | int | float) -> int:
    """Like `Quantity.MilliValue()`: thousandths rounded up (away from zero); "0.1m" -> 1."""
    return _ceil_div_away(quantity_nanos(value), MILLI_PER_NANO)


def resource_amount(name: str, value: str | int | float) -> int:
    """The amount in the unit the scheduler counts `name` in: milli-cores for cpu, units otherwise."""
    if name == "cpu":
        return quantity_milli_value(value)
    return quantity_value(value)


def _is_byte_resource(resource: str) -> bool:
    return resource in _BYTE_RESOURCES or resource.startswith("hugepages-")


def format_quantity(amount: int, resource: str) -> str:
    """Render a scheduler amount (see `resource_amount`) the way a person would write it.

    cpu (milli-cores): 1500 -> "1500m", 2000 -> "2". Byte resources (memory, storage,
    ephemeral-storage, hugepages-*): the largest binary suffix that divides exactly, 536870912 ->
    "512Mi", else plain bytes. Everything else: the plain integer. The text parses back to `amount`.
    """
    if resource == "cpu":
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if amount and abs(amount) <= MAX_INT64 and _is_byte_resource(resource):
        # Beyond int64 a binary suffix would be capped on parsing; plain digits round-trip.
        magnitude = abs(amount)
        for suffix, shift in reversed(_BINARY_SUFFIXES.items()):
            if magnitude & ((1 << shift) - 1) == 0:
                return f"{amount >> shift}{suffix}" if amount > 0 else f"-{magnitude >> shift}{suffix}"
    return str(amount)
