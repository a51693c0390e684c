"""Go `time.Duration` strings (`15s`, `1m30s`, `1.5h`, `-2ms`), as metav1.Duration fields use them.

KubeSchedulerConfiguration writes durations the way Go parses and prints them, so a config file
that kube-scheduler accepts must be accepted here with the same value. Values are handled as
integer nanoseconds internally (Go's resolution), exposed as float seconds.
"""

from __future__ import annotations

import re

from kubesched.config._util import quote
from kubesched.errors import InputError

__all__ = ["format_duration", "parse_duration", "parse_duration_ns"]

_NS_PER_UNIT: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_MAX_NS = 2**63 - 1  # Go durations are int64 nanoseconds
# One `<number><unit>` element; the number needs digits before or after the dot (`5.s` and `.5s` are ok).
_ELEMENT = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


def parse_duration_ns(text: str) -> int:
    """Nanoseconds in a Go duration string; `InputError` names the bad input."""
    if not isinstance(text, str):
        raise InputError(f'invalid duration {quote(text)}: expected a string such as "15s"')
    body = text
    negative = False
    if body[:1] in ("+", "-"):
        negative = body[0] == "-"
        body = body[1:]
    if body == "0":
        return 0
    if not body:
        raise InputError(f"invalid duration {quote(text)}")
    total = 0
    pos = 0
    while pos < len(body):
        m = _ELEMENT.match(body, pos)
        if m is None:
            raise InputError(
                f"invalid duration {quote(text)}: expected a number and a unit (ns, us, ms, s, m, h)"
            )
        number, unit = m.group(1), m.group(2)
        whole, _, frac = number.partition(".")
        scale = _NS_PER_UNIT[unit]
        total += int(whole or "0") * scale
        if frac:
            total += int(frac) * scale // 10 ** len(frac)  # truncates below 1ns, as Go does
        if total > _MAX_NS + (1 if negative else 0):
            raise InputError(f"invalid duration {quote(text)}: out of range")
        pos = m.end()
    return -total if negative else total


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string (`"1m30s"` -> 90.0)."""
    return parse_duration_ns(text) / 1e9


def format_duration(seconds: float) -> str:
    """The Go `Duration.String()` form of `seconds`, rounded to the nanosecond (90.0 -> `"1m30s"`)."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000:
        return f"{sign}{ns}ns"
    if ns < 1_000_000:
        return f"{sign}{_fixed(ns, 1_000)}\u00b5s"
    if ns < 1_000_000_000:
        return f"{sign}{_fixed(ns, 1_000_000)}ms"
    hours, rest = divmod(ns, 3600 * 1_000_000_000)
    minutes, rest = divmod(rest, 60 * 1_000_000_000)
    secs = _fixed(rest, 1_000_000_000)
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{sign}{minutes}m{secs}s"
    return f"{sign}{secs}s"


def _fixed(value: int, unit: int) -> str:
    """`value / unit` in decimal without trailing zeros (1_500, 1_000 -> `1.5`)."""
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")
