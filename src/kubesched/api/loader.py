"""Decode Kubernetes objects from YAML / JSON files (`kubectl get -o yaml|json`, hand-written manifests).

Accepted: a single object, multi-document YAML (`---`), JSON, `kind: List` and typed lists
(`PodList`, `NodeList`, ...) whose items may omit `kind`. Kinds the scheduler does not model
(ConfigMap, Ingress, ...) are counted in `LoadedObjects.skipped`, not rejected. Workloads
(Deployment, Job, ...) are checked as the API server validates them (`kubesched.api.workloads`).
A `PodGroup` is the `scheduling.k8s.io` kind (`kubesched.api.scheduling_groups`) when its apiVersion
(or its list's) is of that group, scheduler-plugins' `scheduling.x-k8s.io` kind otherwise.
Empty documents are ignored. As in the API server, a field set to null counts as absent.

Errors are `InputError`s with `source` = the file and a path inside it:
`items[3].spec.containers[0].name: expected str, got int`. When a file holds several YAML
documents the path starts with the 1-based document number: `document 2: spec.priority: ...`.
Syntax errors carry the line and column: `line 4, column 7: invalid YAML: ...`.

Hostile files get the same one line, never a crash: YAML nested deeper than `safe_yaml.MAX_DEPTH`
or whose aliases explode (a "billion laughs") is refused before libyaml composes it, JSON nested
deeper than the decoder goes is refused as it is decoded. A node's capacity and allocatable must be
finite, non-negative quantities. The same object (kind, namespace, name) given twice is an error
naming both places (`load_paths`).

Speed: plain YAML is parsed by rapidyaml and decoded as JSON (`fast_yaml`, a kubectl list a
quarter megabyte of entries at a time, so its memory stays near JSON's); YAML it declines is
parsed by libyaml and built from its event stream (`yaml_events`); JSON is decoded by msgspec;
each object then costs one `msgspec.convert` into the lean Structs of `kubesched.api` (`kinds`) and
one walk along the API schema (`openapi`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

import msgspec
import yaml

from kubesched.api.cluster_objects import Namespace, PodDisruptionBudget, PriorityClass, Service
from kubesched.api.controllers import (
    CronJob,
    DaemonSet,
    Deployment,
    Job,
    ReplicaSet,
    ReplicationController,
    StatefulSet,
)
from kubesched.api.fast_yaml import load_fast
from kubesched.api.json_shape import drop_nulls, type_name
from kubesched.api.kinds import KINDS, KubeObject
from kubesched.api.objects import Node, Pod
from kubesched.api.openapi import check_kind, map_key_path, unknown_fields, unknown_list_fields
from kubesched.api.quantity import QuantityError, quantity_nanos
from kubesched.api.resource import (
    RESOURCE_KINDS,
    DeviceClass,
    DeviceTaintRule,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from kubesched.api.safe_yaml import check_yaml
from kubesched.api.scheduler_plugins import PodGroup
from kubesched.api.scheduling_group_checks import check_scheduling_group
from kubesched.api.scheduling_groups import SCHEDULING_GROUP, SCHEDULING_KINDS, CompositePodGroup, Workload
from kubesched.api.scheduling_groups import PodGroup as SchedulingPodGroup
from kubesched.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from kubesched.api.workloads import WORKLOAD_KINDS, check_workload
from kubesched.api.yaml_events import load_all
from kubesched.api.yaml_lines import distinct_lines
from kubesched.errors import InputError

__all__ = [
    "FILE_SUFFIXES",
    "LoadedObject",
    "LoadedObjects",
    "decode_object",
    "load_documents",
    "load_paths",
    "manifest_files",
    "parse_documents",
    "read_text",
]

#: Any object the loader returns.
LoadedObject = (
    KubeObject
    | DeviceClass
    | ResourceClaim
    | ResourceClaimTemplate
    | ResourceSlice
    | DeviceTaintRule
    | Workload
    | SchedulingPodGroup
    | CompositePodGroup
)
#: Every kind the loader decodes, by `kind` ("PodGroup": scheduler-plugins' unless `_GROUP_KINDS` says).
_KINDS: dict[str, type[msgspec.Struct]] = {**SCHEDULING_KINDS, **KINDS, **RESOURCE_KINDS}
#: Kinds whose name two API groups share, by (group, kind): the group of `apiVersion` picks the type.
_GROUP_KINDS: dict[tuple[str, str], type[msgspec.Struct]] = {
    (SCHEDULING_GROUP, "PodGroup"): SchedulingPodGroup
}

#: The PATH that means standard input.
STDIN = "-"
#: File name endings picked up when walking a directory.
FILE_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass
class LoadedObjects:
    """Objects decoded from files, by kind, plus counts of the kinds that were skipped."""

    pods: list[Pod] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    persistent_volumes: list[PersistentVolume] = field(default_factory=list)
    persistent_volume_claims: list[PersistentVolumeClaim] = field(default_factory=list)
    storage_classes: list[StorageClass] = field(default_factory=list)
    csi_nodes: list[CSINode] = field(default_factory=list)
    csi_drivers: list[CSIDriver] = field(default_factory=list)
    csi_storage_capacities: list[CSIStorageCapacity] = field(default_factory=list)
    pod_disruption_budgets: list[PodDisruptionBudget] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    replication_controllers: list[ReplicationController] = field(default_factory=list)
    replica_sets: list[ReplicaSet] = field(default_factory=list)
    stateful_sets: list[StatefulSet] = field(default_factory=list)
    deployments: list[Deployment] = field(default_factory=list)
    daemon_sets: list[DaemonSet] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    cron_jobs: list[CronJob] = field(default_factory=list)
    pod_groups: list[PodGroup] = field(default_factory=list)
    device_classes: list[DeviceClass] = field(default_factory=list)
    resource_claims: list[ResourceClaim] = field(default_factory=list)
    resource_claim_templates: list[ResourceClaimTemplate] = field(default_factory=list)
    resource_slices: list[ResourceSlice] = field(default_factory=list)
    device_taint_rules: list[DeviceTaintRule] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    #: `scheduling.k8s.io` PodGroups (`pod_groups` holds scheduler-plugins' kind of that name).
    scheduling_pod_groups: list[SchedulingPodGroup] = field(default_factory=list)
    composite_pod_groups: list[CompositePodGroup] = field(default_factory=list)
    #: kind -> number of objects of that kind that were not loaded (the scheduler ignores them).
    skipped: dict[str, int] = field(default_factory=dict)
    #: Fields and kinds the v1.37 API does not have, ignored because loaded with `strict=False`.
    warnings: list[InputError] = field(default_factory=list)

    def add(self, obj: LoadedObject) -> None:
        """File `obj` under the list for its kind."""
        bucket: list[Any] = getattr(self, _ATTRIBUTES[type(obj)])
        bucket.append(obj)

    def __len__(self) -> int:
        return sum(len(getattr(self, name)) for name in _ATTRIBUTES.values())

    def of_type(self, cls: type[msgspec.Struct]) -> list[Any]:
        """The list `add` files objects of `cls` under (the object itself, not a copy)."""
        listed: list[Any] = getattr(self, _ATTRIBUTES[cls])
        return listed

    def with_added(self, obj: LoadedObject) -> LoadedObjects:
        """A shallow copy holding `obj` besides the objects of its kind; this one stays as it is."""
        attribute = _ATTRIBUTES[type(obj)]
        copy = dataclasses.replace(self)
        setattr(copy, attribute, [*getattr(self, attribute), obj])
        return copy

    def with_object(self, obj: LoadedObject) -> LoadedObjects:
        """A shallow copy holding `obj` instead of the object of its kind, namespace and name (a new
        version of it), or besides the others when there is none; this one stays as it is."""
        attribute = _ATTRIBUTES[type(obj)]
        meta = obj.metadata
        same = (meta.namespace or "default", meta.name)
        others = getattr(self, attribute)
        kept = [o for o in others if (o.metadata.namespace or "default", o.metadata.name) != same]
        copy = dataclasses.replace(self)
        setattr(copy, attribute, [*kept, obj])
        return copy


_ATTRIBUTES: dict[type[msgspec.Struct], str] = {
    Pod: "pods",
    Node: "nodes",
    Namespace: "namespaces",
    PriorityClass: "priority_classes",
    PersistentVolume: "persistent_volumes",
    PersistentVolumeClaim: "persistent_volume_claims",
    StorageClass: "storage_classes",
    CSINode: "csi_nodes",
    CSIDriver: "csi_drivers",
    CSIStorageCapacity: "csi_storage_capacities",
    PodDisruptionBudget: "pod_disruption_budgets",
    Service: "services",
    ReplicationController: "replication_controllers",
    ReplicaSet: "replica_sets",
    StatefulSet: "stateful_sets",
    Deployment: "deployments",
    DaemonSet: "daemon_sets",
    Job: "jobs",
    CronJob: "cron_jobs",
    PodGroup: "pod_groups",
    DeviceClass: "device_classes",
    ResourceClaim: "resource_claims",
    ResourceClaimTemplate: "resource_claim_templates",
    ResourceSlice: "resource_slices",
    DeviceTaintRule: "device_taint_rules",
    Workload: "workloads",
    SchedulingPodGroup: "scheduling_pod_groups",
    CompositePodGroup: "composite_pod_groups",
}


# --------------------------------------------------------------------------- syntax


class _YamlLoader(yaml.CSafeLoader):
    """libyaml's safe loader, except that timestamps stay strings, as the API server keeps them."""


def _timestamp_as_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


_YamlLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)

_JSON_BYTE_RE = re.compile(r"\(byte (\d+)\)")


def _line_column(text: str, offset: int) -> str:
    """`line L, column C` (1-based) for a UTF-8 byte offset into `text`."""
    before = text.encode()[:offset].decode(errors="ignore")
    line = before.count("\n") + 1
    column = len(before) - (before.rfind("\n") + 1) + 1
    return f"line {line}, column {column}"


def _parse_json(text: str, source: str) -> list[Any]:
    try:
        return [msgspec.json.decode(text)]
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", source=source) from None
    except msgspec.DecodeError as err:
        message = str(err)
        match = _JSON_BYTE_RE.search(message)
        where = _line_column(text, int(match[1])) if match else ""
        message = _JSON_BYTE_RE.sub("", message).removeprefix("JSON is malformed:").strip()
        raise InputError(
            f"invalid JSON: {message[0].lower()}{message[1:]}", source=source, path=where
        ) from None


def _parse_yaml(text: str, source: str) -> list[Any]:
    lines = distinct_lines(text)
    check_yaml(text, source, lines)
    if (fast := load_fast(text, lines)) is not None:
        return fast
    try:
        return load_all(text, _YamlLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = err.problem or err.context or "malformed document"
        raise InputError(f"invalid YAML: {problem}", source=source, path=where) from None
    except yaml.YAMLError as err:
        raise InputError(f"invalid YAML: {err}", source=source) from None


# --------------------------------------------------------------------------- objects

_MSGSPEC_PATH_RE = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_PLAIN_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")


def _key_segment(key: str) -> str:
    """`.key`, or `[key]` for a map key; quoted when it would break the path's one line."""
    if _PLAIN_KEY_RE.fullmatch(key):
        return f".{key}"
    return f"[{key}]" if key.isprintable() and not _BRACKETS.intersection(key) else f"[{json.dumps(key)}]"


_BRACKETS = frozenset("[]")


def _translate_path(raw: str, doc: Any, got: str) -> str:
    """`$.spec.containers[0].name` -> `spec.containers[0].name`, naming map keys msgspec elides.

    msgspec reports a bad map value as `labels[...]`; the key is recovered by walking the document
    and picking the first value of the reported type (exact whenever the map has one such value).
    """
    out: list[str] = []
    node = doc
    segments = list(_MSGSPEC_PATH_RE.finditer(raw.removeprefix("$")))
    for i, seg in enumerate(segments):
        name, index = seg[1], seg[2]
        if name is not None:
            out.append(f".{name}")
            node = node.get(name) if isinstance(node, dict) else None
        elif index != "...":
            out.append(f"[{index}]")
            node = node[int(index)] if isinstance(node, list) and int(index) < len(node) else None
        else:
            key = None
            if isinstance(node, dict) and i == len(segments) - 1:
                key = next((k for k, v in node.items() if type_name(v) == got and isinstance(k, str)), None)
            if key is None:
                out.append("[...]")
                node = None
            else:
                out.append(_key_segment(key))
                node = node[key]
    return "".join(out).removeprefix(".")


def _validation_error(err: msgspec.ValidationError, doc: Any) -> InputError:
    text = str(err)
    message, _, raw_path = text.partition(" - at `")
    raw_path = raw_path.removesuffix("`")
    got_match = re.search(r"got `([^`]*)`", message)
    path = _translate_path(raw_path, doc, got_match[1] if got_match else "") if raw_path else ""
    if message.startswith("Expected"):
        message = message.replace("`", "")
    else:
        message = re.sub(r"`([^`]*)`", r'"\1"', message)
    return InputError(message[0].lower() + message[1:], path=path)


def _check_node_quantities(node: Node) -> None:
    """A node's capacity and allocatable must parse, and be non-negative: a bad one would otherwise
    fail (or show as `0/-4`) far from its file."""
    for field_name, values in (("capacity", node.status.capacity), ("allocatable", node.status.allocatable)):
        for resource, value in values.items():
            path = map_key_path(f"status.{field_name}", resource)
            try:
                nanos = quantity_nanos(value)
            except QuantityError as err:
                raise InputError(err.message, path=path) from None
            if nanos < 0:
                raise InputError(
                    f"must be greater than or equal to 0, got {value!r}",
                    path=path,
                )


def _convert(doc: dict[str, Any], kind_type: type[msgspec.Struct]) -> LoadedObject:
    try:
        return cast(LoadedObject, msgspec.convert(doc, type=kind_type))
    except msgspec.ValidationError:
        # The rare slow path: retry without nulls, and report against that document.
        doc = drop_nulls(doc)
        try:
            return cast(LoadedObject, msgspec.convert(doc, type=kind_type))
        except msgspec.ValidationError as err:
            raise _validation_error(err, doc) from None


#: What becomes of a problem the API server's strict validation would refuse: raised or recorded.
_Refuse = Callable[[InputError], None]


def _api_version(doc: dict[str, Any], default: str) -> str:
    value = doc.get("apiVersion")
    return value if type(value) is str and value else default


def _decode_checked(
    doc: dict[str, Any], kind: str, kind_type: type[msgspec.Struct], list_version: str, refuse: _Refuse
) -> LoadedObject:
    """`doc` decoded, after its kind, its fields (as the v1.37 API's strict field validation finds
    them: a misspelt field would otherwise be dropped silently) and then its values are checked."""
    given = _api_version(doc, list_version)
    problem = check_kind(kind, given, loaded=True)
    if problem is not None:
        refuse(InputError(problem.message, path=problem.path))
    obj = _convert(doc, kind_type)
    for unknown in unknown_fields(doc, kind, given or obj.api_version):
        refuse(unknown)
    _check(obj)
    return obj


def _join(prefix: str, error: InputError) -> InputError:
    if not prefix:
        return error
    path = f"{prefix}{error.path}" if error.path.startswith("[") else f"{prefix}.{error.path}".rstrip(".")
    return InputError(error.message, path=path)


def _is_list(kind: str, doc: dict[str, Any]) -> bool:
    return kind == "List" or (kind.endswith("List") and ("items" in doc or kind[: -len("List")] in _KINDS))


def _kind_type(kind: str, doc: dict[str, Any], list_version: str) -> type[msgspec.Struct] | None:
    """The Struct `kind` decodes into; for a kind name two groups share, the one of its apiVersion."""
    kind_type = _KINDS.get(kind)
    if kind_type is not None and kind in _SHARED_NAMES:
        group = _api_version(doc, list_version).rpartition("/")[0]
        return _GROUP_KINDS.get((group, kind), kind_type)
    return kind_type


_SHARED_NAMES = frozenset(kind for _group, kind in _GROUP_KINDS)


def _kind_of(doc: dict[str, Any], default: str | None) -> str:
    kind = doc.get("kind")
    if kind is None or kind == "":
        if default is None:
            raise InputError("missing kind")
        return default
    if not isinstance(kind, str):
        raise InputError(f"expected str, got {type_name(kind)}", path="kind")
    return kind


def _decode_object(
    doc: Any,
    out: list[LoadedObject],
    skipped: dict[str, int],
    *,
    default_kind: str | None = None,
    list_version: str = "",
    where: list[str] | None = None,
    path: str = "",
    lenient: list[InputError] | None = None,
) -> None:
    """Decode `doc` (an object or a list of them) into `out`; `where` gets each one's path.

    Kinds and fields the v1.37 API does not have are errors, or with `lenient` appended to it
    (located by `path`) and left out.
    """
    if not isinstance(doc, dict):
        raise InputError(f"expected an object with a kind, got {type_name(doc)}")
    kind = _kind_of(doc, default_kind)
    kind_type = _kind_type(kind, doc, list_version)
    if kind_type is not None:
        obj = _decode_checked(
            doc, kind, kind_type, list_version, partial(_refuse, lenient=lenient, path=path)
        )
        out.append(obj)
        if where is not None:
            where.append(path)
    elif default_kind is None and _is_list(kind, doc):
        for problem in unknown_list_fields(doc):
            _refuse(problem, lenient=lenient, path=path)
        items = doc.get("items")
        if items is None:
            return
        if not isinstance(items, list):
            raise InputError(f"expected array, got {type_name(items)}", path="items")
        item_kind = None if kind == "List" else kind[: -len("List")]
        item_version = "" if kind == "List" else _api_version(doc, "")
        for i, item in enumerate(items):
            try:
                _decode_object(
                    item,
                    out,
                    skipped,
                    default_kind=item_kind,
                    list_version=item_version,
                    where=where,
                    path=f"{path}items[{i}]",
                    lenient=lenient,
                )
            except InputError as err:
                raise _join(f"items[{i}]", err) from None
    else:
        wrong = check_kind(kind, _api_version(doc, ""), loaded=False)
        if wrong is not None:
            _refuse(InputError(wrong.message, path=wrong.path), lenient=lenient, path=path)
        skipped[kind] = skipped.get(kind, 0) + 1


def _refuse(problem: InputError, *, lenient: list[InputError] | None, path: str) -> None:
    """Raise `problem` (its path relative to the object), or append it located at `path`."""
    if lenient is None:
        raise problem
    if not path:
        lenient.append(problem)
        return
    if not problem.path or path.endswith(": "):
        where = f"{path}{problem.path}".removesuffix(": ")
    else:
        where = f"{path}{problem.path}" if problem.path.startswith("[") else f"{path}.{problem.path}"
    lenient.append(InputError(problem.message, path=where))


def _check(obj: LoadedObject) -> None:
    """What the Structs' types cannot say: a node's quantities, a workload the API server refuses.

    Looked up by exact type (objects are decoded into exactly the `_KINDS` types): isinstance against
    Struct classes costs about as much as decoding a small pod, and pods, which get neither check,
    are most of what a big file holds.
    """
    check = _CHECKS.get(type(obj))
    if check is not None:
        check(obj)


#: The checks of each kind that has one (`check_workload` passes kinds other than workloads).
_CHECKS: dict[type[msgspec.Struct], Callable[[Any], None]] = {
    Node: _check_node_quantities,
    **dict.fromkeys(WORKLOAD_KINDS, check_workload),
    **dict.fromkeys((Workload, SchedulingPodGroup, CompositePodGroup), check_scheduling_group),
}


def decode_object(doc: Any, *, lenient: list[InputError] | None = None) -> LoadedObject | None:
    """One object of a kind the loader knows, or None for another kind (a `List` is not one object).

    For documents that embed objects (scenario timelines): `InputError.path` is relative to `doc`,
    as are the paths of the problems appended to `lenient` (see `_decode_object`).
    """
    kind = doc.get("kind") if type(doc) is dict else None
    kind_type = _kind_type(kind, doc, "") if type(kind) is str else None
    if kind_type is not None:  # a plain object of a known kind (no kind ends in "List"): decoded directly
        # A scenario holds 100,000 of them; this skips the general path.
        assert isinstance(kind, str)
        return _decode_checked(doc, kind, kind_type, "", partial(_refuse, lenient=lenient, path=""))
    out: list[LoadedObject] = []
    if isinstance(doc, dict) and _is_list(str(doc.get("kind") or ""), doc):
        raise InputError("expected one object, got a list")
    _decode_object(doc, out, {}, lenient=lenient)
    return out[0] if out else None


def parse_documents(text: str, source: str) -> list[Any]:
    """The documents of a YAML or JSON text, undecoded (nulls and empty documents included).

    JSON is tried first when the text looks like it (msgspec is much faster than YAML on it).
    Raises `InputError` (source = `source`) with the line and column of a syntax error.
    """
    is_json_file = source.endswith(".json")
    stripped = text.lstrip()
    if stripped.startswith("{") or (is_json_file and stripped):
        try:
            return _parse_json(text, source)
        except InputError:
            if is_json_file:
                raise
    return _parse_yaml(text, source)


def load_documents(
    text: str,
    source: str,
    *,
    skipped: dict[str, int] | None = None,
    lenient: list[InputError] | None = None,
) -> list[LoadedObject]:
    """Decode every supported object in `text` (YAML or JSON); `source` names it in errors.

    Objects of kinds the scheduler does not model are left out and counted into `skipped` when
    given. Raises `InputError` (source = `source`) for malformed text or an invalid object, and
    for a field or kind the Kubernetes v1.37 API does not have, unless `lenient` is given: those
    are then appended to it (the field is ignored, the object of an unknown kind left out).
    """
    return _load_located(text, source, skipped, lenient)[0]


def _load_located(
    text: str, source: str, skipped: dict[str, int] | None, lenient: list[InputError] | None = None
) -> tuple[list[LoadedObject], list[str]]:
    """`load_documents`, plus where in the file each object is (`document 2: items[3]`)."""
    counts: dict[str, int] = {} if skipped is None else skipped
    documents = parse_documents(text, source)
    out: list[LoadedObject] = []
    where: list[str] = []
    several = len(documents) > 1
    for number, doc in enumerate(documents, start=1):
        if doc is None:
            continue
        prefix = f"document {number}: " if several else ""
        found: list[InputError] | None = None if lenient is None else []
        try:
            try:
                _decode_object(doc, out, counts, where=where, path=prefix, lenient=found)
            except RecursionError:
                raise InputError("nested too deeply") from None
        except InputError as err:
            if several:
                location = f"document {number}: {err.path}" if err.path else f"document {number}"
            else:
                location = err.path
            raise InputError(err.message, source=source, path=location) from None
        if lenient is not None and found:
            lenient.extend(InputError(e.message, source=source, path=e.path) for e in found)
    return out, [f"{source}: {w.removesuffix(': ')}" if w else source for w in where]


#: Kinds whose objects have no namespace: their identity is the name alone.
_CLUSTER_SCOPED = frozenset(
    {"Node", "Namespace", "PriorityClass", "PersistentVolume", "StorageClass", "CSINode", "CSIDriver"}
)


#: Kinds whose duplicates are an error. A workload given again (a Deployment in a snapshot and its
#: edited manifest after it) is a what-if rollout, which replaces the first: not checked here.
_UNIQUE_KINDS = frozenset({"Pod", "Node"})


def _identity(obj: LoadedObject) -> tuple[str, str, str] | None:
    """(kind, namespace, name) as the API server tells objects apart; None without a name, or for a
    kind that may be given again on purpose."""
    kind = type(obj).__name__
    meta = obj.metadata
    if not meta.name or kind not in _UNIQUE_KINDS:
        return None
    namespace = "" if kind in _CLUSTER_SCOPED else (meta.namespace or "default")
    return kind, namespace, meta.name


def _walk(root: Path) -> list[Path]:
    """Manifest files below `root` in sorted order; hidden files and directories are left out."""
    found: list[tuple[tuple[str, ...], Path]] = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if name.endswith(FILE_SUFFIXES) and not name.startswith("."):
                path = Path(directory, name)
                found.append((path.relative_to(root).parts, path))
    return [path for _, path in sorted(found)]


def manifest_files(root: Path) -> list[Path]:
    """The files `load_paths` reads below directory `root`, in the order it reads them."""
    return _walk(root)


def _read(path: Path, source: str) -> str:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise InputError(err.strerror or str(err), source=source) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text (byte {err.start})", source=source) from None


def _texts(given: str | Path) -> Iterator[tuple[str, str]]:
    """(source, text) of each file `given` names, one at a time; `-` is standard input."""
    if str(given) == STDIN:
        yield "<stdin>", sys.stdin.read()
        return
    root = Path(given)
    if root.is_dir():
        files = _walk(root)
    elif root.exists():
        files = [root]
    else:
        raise InputError("no such file or directory", source=str(given))
    for path in files:
        yield str(path), _read(path, str(path))


def read_text(path: str | Path) -> str:
    """A manifest file's text (UTF-8, BOM allowed); `InputError` naming the file when unreadable."""
    return _read(Path(path), str(path))


def load_paths(paths: Sequence[str | Path], *, strict: bool = True) -> LoadedObjects:
    """Load files, and directories walked recursively for *.yaml, *.yml and *.json, in sorted order.

    A file named explicitly is read whatever its extension; `-` reads standard input. Raises
    `InputError` naming the file, also when one object (same kind, namespace and name) is given
    twice, in one file or two: the simulator would otherwise keep one of them silently. Fields and
    kinds the Kubernetes v1.37 API does not have are errors too, or with `strict=False` go to
    `LoadedObjects.warnings` (for snapshots of newer clusters).
    """
    loaded = LoadedObjects()
    seen: dict[tuple[str, str, str], str] = {}
    lenient = None if strict else loaded.warnings
    for given in paths:
        for source, text in _texts(given):
            objects, where = _load_located(text, source, loaded.skipped, lenient)
            for obj, at in zip(objects, where, strict=True):
                identity = _identity(obj)
                if identity is not None:
                    if identity in seen:
                        kind, namespace, name = identity
                        shown = f"{namespace}/{name}" if namespace else name
                        message = f"{kind} {shown} is given twice (also at {seen[identity]})"
                        raise InputError(message, source=at)
                    seen[identity] = at
                loaded.add(obj)
    return loaded
