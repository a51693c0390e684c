"""YAML documents built straight from libyaml's event stream: the fast path for big snapshots.

`yaml.load` with `CSafeLoader` parses in C but then composes a node tree (each node with two
position marks) and walks it again in Python to construct the objects: a 20 MB `kubectl get -o
yaml` snapshot took four times as long as the same objects in JSON, and three times the memory.
`load_all` reads the parser's events one at a time and builds the dicts and lists directly, so no
node tree is ever held. Scalars are resolved and constructed exactly as `loader_class` would (its
resolver and constructors; plain scalars, which repeat a lot, are resolved once per distinct text).

Anything unusual is left to `loader_class` itself, so results and error messages stay PyYAML's: an
explicitly tagged collection, a merge key (`<<`), an unhashable key, an alias to an undefined anchor.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["load_all"]

_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_DEFAULT_TAGS = frozenset({None, "!", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"})
#: Distinct plain scalars remembered per load; a bound, so that a file of unique numbers stays small.
_CACHE_LIMIT = 100_000


class _Unusual(Exception):
    """A construct the event builder leaves to the full loader."""


_NO_KEY = object()


def load_all(text: str, loader_class: type[yaml.CSafeLoader]) -> list[Any]:
    """Every document of `text`, as `list(yaml.load_all(text, Loader=loader_class))` returns them."""
    try:
        return _build(text, loader_class)
    except yaml.YAMLError:
        raise
    except Exception:  # _Unusual, or a failure the full loader reports in its own way
        return list(yaml.load_all(text, Loader=loader_class))


def _build(text: str, loader_class: type[yaml.CSafeLoader]) -> list[Any]:
    loader = loader_class(text)
    try:
        return _events_to_documents(loader)
    finally:
        loader.dispose()


def _events_to_documents(loader: yaml.CSafeLoader) -> list[Any]:
    get_event = loader.get_event
    plain: dict[str, Any] = {}
    anchors: dict[str, Any] = {}
    documents: list[Any] = []
    stack: list[tuple[Any, Any]] = []  # the enclosing (collection, pending mapping key) pairs
    current: Any = None  # the collection being filled: a dict, a list, or None at document level
    key: Any = _NO_KEY
    document: Any = None
    scalar_event, alias_event = yaml.ScalarEvent, yaml.AliasEvent
    mapping_start, sequence_start = yaml.MappingStartEvent, yaml.SequenceStartEvent
    mapping_end, sequence_end = yaml.MappingEndEvent, yaml.SequenceEndEvent
    while True:
        event: Any = get_event()
        kind = type(event)
        if kind is scalar_event:
            if event.tag is None and event.implicit[0]:
                value = plain.get(event.value, _NO_KEY)
                if value is _NO_KEY:
                    value = _construct(loader, event)
                    if len(plain) < _CACHE_LIMIT:
                        plain[event.value] = value
            elif event.tag is None:
                value = event.value  # quoted
            else:
                value = _construct(loader, event)
            if event.anchor is not None:
                anchors[event.anchor] = value
        elif kind is mapping_start or kind is sequence_start:
            if event.tag not in _DEFAULT_TAGS:
                raise _Unusual
            stack.append((current, key))
            current = {} if kind is mapping_start else []
            key = _NO_KEY
            if event.anchor is not None:
                anchors[event.anchor] = current
            continue
        elif kind is mapping_end or kind is sequence_end:
            if key is not _NO_KEY:
                raise _Unusual  # a key without a value cannot come from the parser
            value = current
            current, key = stack.pop()
        elif kind is alias_event:
            value = anchors[event.anchor]  # KeyError: undefined, the full loader says so
        elif kind is yaml.DocumentEndEvent:
            documents.append(document)
            document = None
            continue
        elif kind is yaml.StreamEndEvent:
            return documents
        else:
            continue  # stream and document starts
        if current is None:
            document = value
        elif type(current) is list:
            current.append(value)
        elif key is _NO_KEY:
            if type(value) is str and value == "<<" and _is_merge(loader, value):
                raise _Unusual
            key = value
        else:
            current[key] = value  # TypeError: an unhashable key, the full loader says so
            key = _NO_KEY


def _construct(loader: yaml.CSafeLoader, event: Any) -> Any:
    """The value `loader` would construct for scalar `event` (resolved by its resolver if untagged)."""
    tag = event.tag
    if tag is None or tag == "!":
        tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)  # type: ignore[no-untyped-call]
    if tag == _STR:
        return event.value
    if tag == _MERGE:
        return event.value  # a merge key: `_is_merge` tells it from the string
    node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
    constructor = loader.yaml_constructors.get(tag)
    if constructor is None:
        raise _Unusual  # an unknown tag: the full loader names it
    return constructor(loader, node)


def _is_merge(loader: yaml.CSafeLoader, value: str) -> bool:
    return bool(loader.resolve(yaml.ScalarNode, value, (True, False)) == _MERGE)  # type: ignore[no-untyped-call]
