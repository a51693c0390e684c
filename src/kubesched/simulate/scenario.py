"""Scenarios: a timeline of creates, updates and deletes that `simulate --scenario` replays in virtual time.

    apiVersion: kubesched.io/v1alpha1
    kind: Scenario
    metadata: {name: morning-rush}
    spec:
      until: 2h              # optional: stop the replay here
      sampleInterval: 30s    # optional: how often the report samples pending pods and utilization
      events:
      - at: 0s
        create: {kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "4", memory: 16Gi}}}
      - at: 10s
        runFor: 5m           # the pod completes (and is deleted) 5 minutes after it is bound
        create: {kind: Pod, metadata: {name: job-1}, spec: {containers: [...]}}
      - at: 1m
        delete: {kind: Node, name: n1}
      - at: 2m
        runFor: 1m           # on a Job: each of its pods runs 1 minute; the Job runs to its completions
        create: {apiVersion: batch/v1, kind: Job, metadata: {name: report}, spec: {...}}

The format is documented in docs/scenarios.md. Errors name the file and the field path
(`scenario.yaml: spec.events[3].runFor: invalid duration "5 minutes"`), as everywhere else.
"""

from __future__ import annotations

import contextlib
import gc
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import msgspec
import yaml

from kubesched.api.compact import Compactor
from kubesched.api.controllers import CronJob
from kubesched.api.json_shape import type_name
from kubesched.api.loader import LoadedObject, LoadedObjects, decode_object, parse_documents, read_text
from kubesched.api.objects import Pod
from kubesched.api.workloads import WORKLOAD_KINDS
from kubesched.config.duration import parse_duration
from kubesched.errors import InputError

__all__ = [
    "API_VERSION",
    "KIND",
    "TIMELINE_KINDS",
    "WORKLOAD_TIMELINE_KINDS",
    "ObjectRef",
    "Scenario",
    "TimelineEvent",
    "dump_scenario",
    "load_scenario",
    "parse_scenario",
    "scenario_document",
]

API_VERSION = "kubesched.io/v1alpha1"
KIND = "Scenario"
#: Workload kinds whose controllers the replay runs: their pods appear as the controllers create them.
WORKLOAD_TIMELINE_KINDS = (
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "ReplicationController",
)
#: Kinds that may be created, updated or deleted at any time; other kinds only exist from 0s on.
TIMELINE_KINDS = ("Node", "Pod", *WORKLOAD_TIMELINE_KINDS)
_RUN_FOR_KINDS = ("Pod", "Job")
_RUN_FOR_ONLY = "runFor applies only to created pods and Jobs (how long each of their pods runs once bound)"
_ACTIONS = ("create", "update", "delete")
#: A field name printed as is in an error path; any other is quoted.
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ACTION_SET = frozenset(_ACTIONS)
_EVENT_FIELDS = frozenset({"at", "runFor", *_ACTIONS})
_SPEC_FIELDS = frozenset({"until", "sampleInterval", "events"})
_REF_FIELDS = frozenset({"kind", "name", "namespace"})
#: Objects of these types live in a namespace ("default" when none is given); the rest are cluster-scoped.
#: Objects are told apart by exact type (`decode_object` returns exactly these classes): isinstance
#: against Struct classes is slow enough to count, 100,000 times over.
_NAMESPACED_TYPES = frozenset({Pod, *WORKLOAD_KINDS})


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """Which object an event is about: kind, namespace ("" for cluster-scoped kinds) and name."""

    kind: str
    name: str
    namespace: str = ""

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    """One entry of the timeline; `obj` is set for create and update, `ref` always."""

    at: float
    action: str
    ref: ObjectRef
    obj: LoadedObject | None = None
    #: Pods and Jobs (create only): seconds the pod (each of the Job's pods) runs once bound;
    #: None runs until deleted.
    run_for: float | None = None
    #: Position in `spec.events`, so that runtime notes can point back at the file.
    index: int = -1


@dataclass(slots=True)
class Scenario:
    """A parsed scenario: the timeline sorted by time (file order kept within one instant)."""

    name: str
    events: list[TimelineEvent]
    #: Objects of the other kinds (PriorityClass, PodGroup, ...) present from the start.
    objects: LoadedObjects = field(default_factory=LoadedObjects)
    until: float | None = None
    sample_interval: float | None = None
    source: str = ""

    def every_object(self) -> LoadedObjects:
        """The objects present from the start and each object an event creates or updates: what a
        check spanning the timeline reads (a pod naming a PriorityClass that no file holds)."""
        every = LoadedObjects()
        for f in fields(LoadedObjects):
            if f.name not in ("skipped", "warnings"):
                setattr(every, f.name, list(getattr(self.objects, f.name)))
        for event in self.events:
            if event.obj is not None:
                every.add(event.obj)
        return every


# --------------------------------------------------------------------------- reading


def load_scenario(path: str | Path, *, lenient: list[InputError] | None = None) -> Scenario:
    """Read and validate a scenario file (YAML or JSON); `InputError` names the file and field."""
    source = str(path)
    return parse_scenario(read_text(path), source, lenient=lenient)


def parse_scenario(
    text: str, source: str = "<scenario>", *, lenient: list[InputError] | None = None
) -> Scenario:
    """Validate a scenario document; every error names `source` and the field path.

    A field or kind the Kubernetes v1.37 API does not have, in an object of the timeline, is an
    error too, unless `lenient` is given: it is then appended there and ignored (`decode_object`).
    """
    with _collector_paused():
        documents = [d for d in parse_documents(text, source) if d is not None]
        # The text is parsed: free it now rather than when the events are decoded (a 100,000-event
        # file's text is as large as the file; `load_scenario` holds no other reference).
        del text
        if len(documents) != 1:
            raise InputError(f"expected one Scenario document, found {len(documents)}", source=source)
        found: list[InputError] | None = None if lenient is None else []
        try:
            scenario = _scenario(documents[0], source, found)
        except InputError as err:
            raise InputError(err.message, source=source, path=err.path) from None
        if lenient is not None and found:
            lenient.extend(e.at(source=source) for e in found)
        # Free the parsed text's objects before the collector is back: it would walk them once more.
        del documents
    return scenario


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Keep the cyclic garbage collector off while a scenario is read, and off what it read.

    Reading allocates millions of objects (the parsed document, then the Structs and their lists)
    and frees none: every collection on the way walked them again, and full ones the caller's heap
    too (5000 nodes, 100,000 events in the benchmark's process: 15 CPU s with the collector on, 4
    without). Nothing read forms a reference cycle.
    When done, freeze + unfreeze moves every tracked object into the oldest generation at once,
    without walking them (the first young collection would walk them all only to promote them);
    skipped when a caller has frozen objects, whose unfreezing is theirs. The collector is switched
    back on (if it was on), also when the file is refused.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if was_enabled:
            gc.enable()


def _scenario(doc: Any, source: str, lenient: list[InputError] | None) -> Scenario:
    root = _mapping(doc, "")
    api_version = root.get("apiVersion")
    if api_version != API_VERSION:
        raise InputError(f"expected {_quote(API_VERSION)}, got {_show(api_version)}", path="apiVersion")
    if root.get("kind") != KIND:
        raise InputError(f"expected {_quote(KIND)}, got {_show(root.get('kind'))}", path="kind")
    metadata = _mapping(root.get("metadata") or {}, "metadata")
    name = metadata.get("name", "")
    if not isinstance(name, str):
        raise InputError(f"expected str, got {type_name(name)}", path="metadata.name")
    spec = _mapping(root.get("spec"), "spec")
    _no_unknown_fields(spec, _SPEC_FIELDS, "spec")
    until = _optional_duration(spec.get("until"), "spec.until")
    interval = _optional_duration(spec.get("sampleInterval"), "spec.sampleInterval")
    if interval is not None and interval <= 0:
        raise InputError("must be positive", path="spec.sampleInterval")
    raw_events = spec.get("events")
    if raw_events is None:
        raise InputError("required field is missing", path="spec.events")
    if not isinstance(raw_events, list):
        raise InputError(f"expected array, got {type_name(raw_events)}", path="spec.events")
    objects = LoadedObjects()
    events: list[TimelineEvent] = []
    compactor = Compactor()  # the timeline lives as long as the replay: its objects share alike parts
    for i, raw in enumerate(raw_events):
        # Each parsed event's dicts are freed once decoded, so their memory holds the next events'
        # Structs: reading peaks near the Structs' size, not the parsed document's plus theirs.
        raw_events[i] = None
        event = _event(raw, i, lenient)
        if event.obj is not None:
            compactor.compact(event.obj)
        if event.ref.kind in TIMELINE_KINDS:
            events.append(event)
        else:
            assert event.obj is not None  # only timeline kinds may be deleted or updated
            objects.add(event.obj)
    events.sort(key=lambda e: e.at)  # stable: file order within one instant
    return Scenario(name, events, objects, until, interval, source)


def _event(raw: Any, i: int, lenient: list[InputError] | None) -> TimelineEvent:
    where = f"spec.events[{i}]"
    entry = _mapping(raw, where)
    _no_unknown_fields(entry, _EVENT_FIELDS, where)
    if "at" not in entry:
        raise InputError("required field is missing", path=f"{where}.at")
    at = _duration(entry["at"], f"{where}.at")
    actions = _ACTION_SET.intersection(entry)
    if len(actions) != 1:
        raise InputError("expected exactly one of create, update, delete", path=where)
    (action,) = actions
    body_path = f"{where}.{action}"
    run_for = _optional_duration(entry.get("runFor"), f"{where}.runFor")
    if run_for is not None and run_for <= 0:
        raise InputError("must be positive", path=f"{where}.runFor")
    if action == "delete":
        ref = _ref(entry[action], body_path)
        if run_for is not None:
            raise InputError(_RUN_FOR_ONLY, path=f"{where}.runFor")
        return TimelineEvent(at, action, ref, index=i)
    obj = _object(entry[action], body_path, lenient)
    ref = _ref_of(obj)
    if type(obj) is CronJob:
        raise InputError(
            "CronJob objects are not replayed: a scenario has no wall clock to run their schedule by; "
            "create the Jobs they run at the times they run",
            path=f"{body_path}.kind",
        )
    if ref.kind not in TIMELINE_KINDS and (action != "create" or at > 0):
        raise InputError(
            f"{ref.kind} objects can only be created at 0s; the timeline changes "
            f"{', '.join(TIMELINE_KINDS)} objects",
            path=body_path if action != "create" else f"{where}.at",
        )
    if run_for is not None and not (action == "create" and ref.kind in _RUN_FOR_KINDS):
        raise InputError(_RUN_FOR_ONLY, path=f"{where}.runFor")
    if action == "update" and type(obj) is Pod and obj.spec.node_name:
        raise InputError(
            "a pod update must not set nodeName: the replay decides where pods run",
            path=f"{body_path}.spec.nodeName",
        )
    return TimelineEvent(at, action, ref, obj=obj, run_for=run_for, index=i)


def _object(raw: Any, path: str, lenient: list[InputError] | None) -> LoadedObject:
    found: list[InputError] | None = None if lenient is None else []
    try:
        obj = decode_object(raw, lenient=found)
    except InputError as err:
        raise err.at(path_prefix=path) from None
    if lenient is not None and found:
        lenient.extend(e.at(path_prefix=path) for e in found)
    if obj is None:
        kind = raw.get("kind") if isinstance(raw, dict) else None
        raise InputError(f"kind {_show(kind)} is not supported in a scenario", path=f"{path}.kind")
    if not obj.metadata.name:
        raise InputError("required field is missing", path=f"{path}.metadata.name")
    return obj


def _ref_of(obj: LoadedObject) -> ObjectRef:
    namespaced = type(obj) in _NAMESPACED_TYPES
    namespace = (obj.metadata.namespace or "default") if namespaced else obj.metadata.namespace
    return ObjectRef(str(obj.kind), obj.metadata.name, namespace)


def _ref(raw: Any, path: str) -> ObjectRef:
    ref = _mapping(raw, path)
    _no_unknown_fields(ref, _REF_FIELDS, path)
    values: dict[str, str] = {}
    for key in ("kind", "name", "namespace"):
        value = ref.get(key, "")
        if not isinstance(value, str):
            raise InputError(f"expected str, got {type_name(value)}", path=f"{path}.{key}")
        values[key] = value
    if values["kind"] not in TIMELINE_KINDS:
        raise InputError(
            f"expected one of {', '.join(TIMELINE_KINDS)}, got {_show(ref.get('kind'))}", path=f"{path}.kind"
        )
    if not values["name"]:
        raise InputError("required field is missing", path=f"{path}.name")
    namespace = (values["namespace"] or "default") if values["kind"] != "Node" else ""
    return ObjectRef(values["kind"], values["name"], namespace)


def _duration(raw: Any, path: str) -> float:
    """A Go duration string (`90s`, `1h30m`) or a number of seconds; never negative."""
    if type(raw) is float or type(raw) is int:  # what JSON files hold: the checks below, fewer steps
        seconds = float(raw)
        if seconds >= 0 and math.isfinite(seconds):
            return seconds
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise InputError(
            f'expected a duration such as "90s" or a number of seconds, got {type_name(raw)}', path=path
        )
    if isinstance(raw, str):
        try:
            seconds = parse_duration(raw)
        except InputError as err:
            raise InputError(err.message, path=path) from None
    else:
        seconds = float(raw)
        if not math.isfinite(seconds):
            raise InputError(f"expected a finite number of seconds, got {raw}", path=path)
    if seconds < 0:
        raise InputError("must not be negative", path=path)
    return seconds


def _optional_duration(raw: Any, path: str) -> float | None:
    return None if raw is None else _duration(raw, path)


def _mapping(raw: Any, path: str) -> Mapping[str, Any]:
    if raw is None:
        raise InputError("required field is missing", path=path)
    if not isinstance(raw, dict):
        raise InputError(f"expected object, got {type_name(raw)}", path=path)
    return raw


def _no_unknown_fields(raw: Mapping[str, Any], known: frozenset[str], path: str) -> None:
    if known.issuperset(raw):  # the common case, checked in C; the loop below finds the culprit
        return
    for key in raw:
        if key not in known:
            name = str(key)
            if not _PLAIN_KEY.fullmatch(name):  # quoted, so a newline or a dot in it stays readable
                name = f"[{msgspec.json.encode(name).decode()}]"
            where = (f"{path}{name}" if name.startswith("[") else f"{path}.{name}") if path else name
            raise InputError(f"unknown field (expected one of {', '.join(sorted(known))})", path=where)


def _quote(text: str) -> str:
    return f'"{text}"'


def _show(value: Any) -> str:
    return _quote(value) if isinstance(value, str) else "nothing" if value is None else type_name(value)


# --------------------------------------------------------------------------- writing


def scenario_document(
    name: str,
    events: Iterable[TimelineEvent],
    *,
    until: float | None = None,
    sample_interval: float | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The plain-data document of a scenario, ready for YAML or JSON (what `kubesched record` writes)."""
    spec: dict[str, Any] = {}
    if until is not None:
        spec["until"] = _seconds(until)
    if sample_interval is not None:
        spec["sampleInterval"] = _seconds(sample_interval)
    spec["events"] = [_event_document(e) for e in events]
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}


def _event_document(event: TimelineEvent) -> dict[str, Any]:
    out: dict[str, Any] = {"at": _seconds(event.at)}
    if event.run_for is not None:
        out["runFor"] = _seconds(event.run_for)
    if event.obj is not None:
        # apiVersion and kind are the structs' defaults, which encoding omits; a reader needs them.
        head = {"apiVersion": event.obj.api_version, "kind": event.obj.kind}
        out[event.action] = head | msgspec.to_builtins(event.obj)
    else:
        ref: dict[str, str] = {"kind": event.ref.kind, "name": event.ref.name}
        if event.ref.namespace:
            ref["namespace"] = event.ref.namespace
        out[event.action] = ref
    return out


def _seconds(value: float) -> int | float:
    """Seconds as written to a file: whole numbers stay ints, others keep millisecond precision."""
    rounded = round(value, 3)
    return int(rounded) if rounded == int(rounded) else rounded


def dump_scenario(document: Mapping[str, Any], *, json: bool) -> bytes:
    """Encode a scenario document as JSON (fast to replay) or YAML (easy to read and edit)."""
    if json:
        return msgspec.json.format(msgspec.json.encode(document), indent=1) + b"\n"
    dumper: Callable[..., str] = yaml.safe_dump
    return dumper(dict(document), sort_keys=False, default_flow_style=False, width=120).encode()
