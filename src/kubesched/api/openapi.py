"""Fields and kinds unknown to the Kubernetes v1.37 API, found as its strict field validation would.

kubesched's Structs read only what scheduling needs and ignore the rest, so a misspelt field
(`spec.nodeSelectr`, `resources.request`) would otherwise load silently and change the answer.
`unknown_fields` walks a decoded object along the published OpenAPI v3 schema of Kubernetes
v1.37.2, kept compact in `openapi_v1_37.json` (derived by `tools/openapi/compact_schema.py`, which
documents its format), and names every key the API server would refuse. Whatever the server accepts
or returns stays valid: `status`, `managedFields`, free-form objects (`fieldsV1`, opaque device
parameters) and maps are walked as the schema says, so `kubectl get -o yaml` output always passes.

Speed: only objects are visited, never scalars. Each object's keys are checked against its type's
field names by one set comparison, and only the fields whose values are objects or lists of them
are walked into, so a pod costs a few dozen dictionary visits.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from kubesched.errors import InputError, did_you_mean

__all__ = [
    "API_VERSION_TEXT",
    "KindProblem",
    "check_kind",
    "map_key_path",
    "unknown_fields",
    "unknown_list_fields",
]

#: How error messages name the API the inputs are checked against.
API_VERSION_TEXT = "Kubernetes v1.37"

#: A bound on the problems listed for one object: a file of another format is not worth 10,000 lines.
MAX_PROBLEMS = 50


@dataclass(eq=False)
class _Node:
    """One compiled type reference: an object type (`names`), a list or a map of `item`, or nothing
    to check (a scalar or a free-form object: `names` empty and `item` None)."""

    shape: str  # _OBJECT, _LIST, _MAP or _ANY (compared by identity)
    names: frozenset[str] = frozenset()
    #: The fields whose values hold objects, with their types.
    nested: dict[str, _Node] = field(default_factory=dict)
    nested_names: frozenset[str] = frozenset()
    item: _Node | None = None


_OBJECT, _LIST, _MAP, _ANY = "object", "list", "map", "any"
_FREE = _Node(_ANY)


class _Schema:
    """The compact schema, compiled into `_Node`s on first use."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.served: dict[str, frozenset[str]] = {gv: frozenset(k) for gv, k in data["served"].items()}
        self.groups = frozenset(gv.rpartition("/")[0] for gv in self.served)
        self._types: dict[str, dict[str, str]] = data["types"]
        self._compiled: dict[str, _Node] = {}
        self.kinds = {key: self._ref(name) for key, name in data["kinds"].items()}
        meta = self._ref(data["listMeta"])
        self.list_envelope = _Node(
            _OBJECT,
            names=frozenset({"apiVersion", "kind", "metadata", "items"}),
            nested={"metadata": meta},
            nested_names=frozenset({"metadata"}),
        )

    def _ref(self, ref: str) -> _Node:
        if ref in ("", "*"):
            return _FREE
        if ref[0] in "[{":
            item = self._ref(ref[1:])
            return _FREE if item is _FREE else _Node(_LIST if ref[0] == "[" else _MAP, item=item)
        node = self._compiled.get(ref)
        if node is None:
            fields = self._types[ref]
            node = self._compiled[ref] = _Node(_OBJECT, names=frozenset(fields))
            node.nested = {k: n for k, r in fields.items() if (n := self._ref(r)) is not _FREE}
            node.nested_names = frozenset(node.nested)
        return node


@cache
def _schema() -> _Schema:
    text = resources.files("kubesched.api").joinpath("openapi_v1_37.json").read_text(encoding="utf-8")
    return _Schema(json.loads(text))


_PLAIN_FIELD = re.compile(r"[A-Za-z0-9_-]+")
_PLAIN_MAP_KEY = re.compile(r"[A-Za-z0-9_./:@+-]+")


def _key_path(path: str, key: Any) -> str:
    """`path.key`; a key that is not a plain name is quoted, so the path stays one readable line."""
    key = str(key)
    if _PLAIN_FIELD.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def map_key_path(path: str, key: Any) -> str:
    """`path[key]`, as the loader names map entries (`attributes[productName]`), quoted if odd."""
    key = str(key)
    return f"{path}[{key}]" if _PLAIN_MAP_KEY.fullmatch(key) else f"{path}[{json.dumps(key)}]"


def _clean(doc: dict[Any, Any], node: _Node) -> bool:
    """Whether `doc` has only fields `node` defines, all the way down: the fast path, no paths kept."""
    if not node.names.issuperset(doc):
        return False
    nested = node.nested
    for key in node.nested_names.intersection(doc):
        value = doc[key]
        child = nested[key]
        if child.shape is _OBJECT:
            if type(value) is dict and not _clean(value, child):
                return False
        elif not _clean_value(value, child):
            return False
    return True


def _clean_value(value: Any, node: _Node) -> bool:
    shape = node.shape
    if shape is _OBJECT:
        return type(value) is not dict or _clean(value, node)
    item = node.item
    if shape is _LIST and type(value) is list:
        assert item is not None
        if item.shape is _OBJECT:  # the common case: containers, conditions, managedFields, ...
            return all(type(entry) is not dict or _clean(entry, item) for entry in value)
        return all(_clean_value(entry, item) for entry in value)
    if shape is _MAP and type(value) is dict:
        assert item is not None
        return all(_clean_value(entry, item) for entry in value.values())
    return True


def _walk(doc: dict[Any, Any], node: _Node, path: str, found: list[InputError]) -> None:
    """Append each unknown field in `doc` (of type `node`, at `path`) to `found`: the slow path."""
    names = node.names
    if not names.issuperset(doc):
        for key in doc:
            if key not in names and len(found) < MAX_PROBLEMS:
                hint = did_you_mean(key, names) if isinstance(key, str) else ""
                found.append(InputError(f"unknown field{hint}", path=_key_path(path, key)))
    for key in node.nested_names.intersection(doc):
        value = doc[key]
        if value is not None:
            _visit(value, node.nested[key], _key_path(path, key), found)


def _visit(value: Any, node: _Node, path: str, found: list[InputError]) -> None:
    shape = node.shape
    if shape is _OBJECT:
        if type(value) is dict:
            _walk(value, node, path, found)
    elif shape is _LIST:
        if type(value) is list:
            item = node.item
            assert item is not None
            for i, entry in enumerate(value):
                if entry is not None:
                    _visit(entry, item, f"{path}[{i}]", found)
    elif shape is _MAP and type(value) is dict:
        item = node.item
        assert item is not None
        for key, entry in value.items():
            if entry is not None:
                _visit(entry, item, map_key_path(path, key), found)


def unknown_fields(doc: dict[str, Any], kind: str, api_version: str) -> list[InputError]:
    """Each field of object `doc` (of `kind` in `api_version`) the v1.37 API does not define,
    with its path inside `doc` and a did-you-mean; [] also when the API does not serve that kind
    in that version (a custom resource's group): `check_kind` tells those apart."""
    node = _schema().kinds.get(f"{api_version}/{kind}")
    if node is None:
        return []
    if _clean(doc, node):
        return []
    found: list[InputError] = []
    _walk(doc, node, "", found)
    return found


def unknown_list_fields(doc: dict[str, Any]) -> list[InputError]:
    """The fields of a list envelope (`kind: List`, `PodList`, ...) other than its four."""
    envelope = _schema().list_envelope
    if _clean(doc, envelope):
        return []
    found: list[InputError] = []
    _walk(doc, envelope, "", found)
    return found


@dataclass(frozen=True)
class KindProblem:
    """Why a kind cannot be what the document says, as one line (`path` is `kind` or `apiVersion`)."""

    message: str
    path: str


def check_kind(kind: str, api_version: str, *, loaded: bool) -> KindProblem | None:
    """A problem with `kind` in `api_version` ("" when the document gives none), or None.

    A group the API does not serve (a custom resource, a scheduler configuration) is not checked.
    `loaded`: kubesched reads this kind (else it is left out, if the API knows it).
    """
    schema = _schema()
    group = api_version.rpartition("/")[0]
    if api_version and group not in schema.groups:
        return None
    if api_version and api_version not in schema.served:
        versions = sorted(gv for gv in schema.served if gv.rpartition("/")[0] == group)
        return KindProblem(
            f"{API_VERSION_TEXT} does not serve {api_version} (served: {', '.join(versions)})", "apiVersion"
        )
    if api_version and kind in schema.served[api_version]:
        return None
    homes = sorted(gv for gv, kinds in schema.served.items() if kind in kinds)
    if not api_version and (homes or loaded):
        return None
    if homes:
        return KindProblem(f"{kind} is not in {api_version} (it is in {', '.join(homes)})", "apiVersion")
    every = set().union(*schema.served.values())
    where = f" in {api_version}" if api_version else ""
    return KindProblem(f'unknown kind "{kind}"{where}{did_you_mean(kind, every)}', "kind")
