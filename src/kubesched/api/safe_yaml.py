"""Limits that make YAML safe to hand to libyaml: nesting depth and alias expansion.

libyaml's composer recurses in C once per nesting level, so a few hundred kilobytes of `[[[[...`
crash the process (SIGSEGV, exit 139) before Python can raise anything. And aliases are shared
when loaded but copied by everything that walks the result, so an 877-byte "billion laughs"
document grows past 4 GiB once decoded. `check_yaml` refuses both before the document is composed,
with one line naming where in the file:

* nesting deeper than `MAX_DEPTH` (Kubernetes objects need a few dozen levels);
* aliases that expand the document to more than `MAX_EXPANSION` times its written size (plus
  `EXPANSION_ALLOWANCE` nodes, so ordinary anchors for shared blocks always pass).

The exact check walks libyaml's event stream (iterative in C, never recursive), which costs about a
third of a load. It runs only when a cheap bound says it might find something: the depth of a YAML
text is at most its deepest run of block indentation and indicators (`- `, `? `, `: `) on one line
plus its deepest bracket nesting, both computed at C speed; and aliases need both `&` and `*`.
"""

from __future__ import annotations

import re

import numpy as np
import yaml

from kubesched.errors import InputError

__all__ = ["EXPANSION_ALLOWANCE", "MAX_DEPTH", "MAX_EXPANSION", "check_yaml"]

MAX_DEPTH = 512
MAX_EXPANSION = 10
EXPANSION_ALLOWANCE = 100_000

_BLOCK_PREFIX_RE = re.compile(r"^[ \t?:-]*", re.MULTILINE)
_OPEN = np.zeros(256, dtype=np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1


def depth_bound(text: str, lines: str | None = None) -> int:
    """An upper bound of the nesting depth of the YAML in `text` (loose, never too low). `lines`,
    the text's `yaml_lines.distinct_lines`, give the block part faster."""
    block = max((len(m) for m in _BLOCK_PREFIX_RE.findall(text if lines is None else lines)), default=0)
    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    steps = _OPEN[data]
    brackets = steps[steps != 0].astype(np.int32)  # only the brackets: few, even in a big file
    if not len(brackets):
        return block + 1
    level = np.cumsum(brackets, dtype=np.int32)
    flow = int((level - np.minimum.accumulate(np.minimum(level, 0))).max())
    return block + flow + 1


def check_yaml(text: str, source: str, lines: str | None = None) -> None:
    """Raise InputError (naming `source` and a line) if `text` nests too deep or its aliases explode;
    `lines` as for `depth_bound`."""
    if depth_bound(text, lines) <= MAX_DEPTH and not ("&" in text and "*" in text):
        return
    _scan(text, source)


def _scan(text: str, source: str) -> None:
    stack: list[tuple[int, str | None]] = []  # (nodes so far in this collection, its anchor)
    anchors: dict[str, int] = {}
    written = expanded = 0
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            kind = type(event)
            if kind is yaml.SequenceStartEvent or kind is yaml.MappingStartEvent:
                written += 1
                if len(stack) >= MAX_DEPTH:
                    raise _located(event, f"invalid YAML: nested deeper than {MAX_DEPTH} levels", source)
                stack.append((0, _anchor(event)))
                continue
            if kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
                size, anchor = stack.pop()
                size += 1
                expanded += 1
                if anchor is not None:
                    anchors[anchor] = size
            elif kind is yaml.ScalarEvent:
                written += 1
                expanded += 1
                size = 1
                if (name := _anchor(event)) is not None:
                    anchors[name] = 1
            elif kind is yaml.AliasEvent:
                written += 1
                size = anchors.get(_anchor(event) or "", 1)
                expanded += size
            else:
                continue  # stream and document boundaries
            if stack:
                count, anchor = stack[-1]
                stack[-1] = (count + size, anchor)
            if expanded > MAX_EXPANSION * written + EXPANSION_ALLOWANCE:
                raise _located(
                    event,
                    f"invalid YAML: aliases expand the document more than {MAX_EXPANSION}-fold "
                    "(an alias bomb?)",
                    source,
                )
    except yaml.YAMLError:
        return  # a syntax error: the real load reports it with its position


def _anchor(event: yaml.Event) -> str | None:
    """The anchor a node event defines, or the one an alias event refers to."""
    return event.anchor if isinstance(event, yaml.NodeEvent) else None


def _located(event: yaml.Event, message: str, source: str) -> InputError:
    mark = event.start_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return InputError(message, source=source, path=where)
