"""Semantic versions as Kubernetes' CEL Semver library and DRA's `version` attributes read them.

Parsing follows semver 2.0.0 strictly (`MAJOR.MINOR.PATCH[-PRE][+BUILD]`, no leading zeros in
numeric parts), as the Go library Kubernetes uses does; `normalize` first strips a leading `v`,
adds a missing minor/patch and drops leading zeros, as the library's optional argument does.
Precedence ignores build metadata; pre-release identifiers compare numerically when both are
numbers, else as text, and a numeric one sorts first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SemverError", "Version", "parse_semver"]

_ALNUM = re.compile(r"[0-9A-Za-z-]+")


class SemverError(ValueError):
    """Text that is not a semantic version."""


@dataclass(frozen=True, slots=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()

    def compare(self, other: Version) -> int:
        """-1, 0 or 1 by semver precedence."""
        a = (self.major, self.minor, self.patch)
        b = (other.major, other.minor, other.patch)
        if a != b:
            return -1 if a < b else 1
        if self.pre == other.pre:
            return 0
        if not self.pre:
            return 1  # a release sorts after its pre-releases
        if not other.pre:
            return -1
        for x, y in zip(self.pre, other.pre, strict=False):
            if x == y:
                continue
            if isinstance(x, int) and isinstance(y, int):
                return -1 if x < y else 1
            if isinstance(x, int):
                return -1
            if isinstance(y, int):
                return 1
            return -1 if str(x) < str(y) else 1
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(p) for p in self.pre)
        return text


def _number(text: str, what: str, *, strict: bool = True) -> int:
    if not text or not text.isdigit() or not text.isascii():
        raise SemverError(f"invalid character(s) found in {what} number {text!r}")
    if strict and len(text) > 1 and text[0] == "0":
        raise SemverError(f"{what} number must not contain leading zeroes {text!r}")
    return int(text)


def _normalize(text: str) -> str:
    text = text.removeprefix("v")
    core, sep, rest = text, "", ""
    for mark in ("-", "+"):
        index = text.find(mark)
        if index >= 0 and (not sep or index < len(core)):
            core, sep, rest = text[:index], mark, text[index + 1 :]
    parts = core.split(".")
    while len(parts) < 3:
        parts.append("0")
    parts = [p.lstrip("0") or "0" if p.isdigit() else p for p in parts]
    return ".".join(parts) + (sep + rest if sep else "")


def parse_semver(text: str, *, normalize: bool = False) -> Version:
    """Parse `text`; raises SemverError saying what is wrong."""
    if normalize:
        text = _normalize(text)
    if not text:
        raise SemverError("version string empty")
    core, _, build = text.partition("+")
    core, has_pre, pre_text = core.partition("-")
    parts = core.split(".")
    if len(parts) != 3:
        raise SemverError("no major, minor and patch version found")
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    patch = _number(parts[2], "patch")
    pre: list[int | str] = []
    if has_pre:
        for ident in pre_text.split("."):
            if not ident or not _ALNUM.fullmatch(ident):
                raise SemverError(f"invalid character(s) found in prerelease {ident!r}")
            if ident.isdigit():
                pre.append(_number(ident, "prerelease"))
            else:
                pre.append(ident)
    if build and not all(_ALNUM.fullmatch(b) for b in build.split(".")):
        raise SemverError(f"invalid character(s) found in build meta data {build!r}")
    return Version(major, minor, patch, tuple(pre))
