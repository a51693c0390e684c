"""The `k8s.io/kube-scheduler/extender/v1` wire format, shared by the server and the client.

The Go types of that package carry no json tags, so their JSON keys are the Go field names
(`Pod`, `NodeNames`, `FailedAndUnresolvableNodes`, `PodUID`, `NumPDBViolations`, ...), nil
pointers, slices and maps are written as `null`, and Go's decoder matches keys
case-insensitively (an exact match wins). This module reproduces all three:

* results are encoded from Structs whose wire names are the Go names, with every field present
  (`omit_defaults` off), so a Go caller decoding into its structs sees exactly what a Go extender
  would have sent;
* requests and results are decoded in two steps: the envelope into `{key: raw JSON}` (cheap:
  `msgspec.Raw` leaves values undecoded), keys resolved to the Go names the way encoding/json does,
  then each value decoded into its own type. A 5,000-node `NodeList` is therefore decoded once,
  straight into the lean `Node` structs, with no intermediate dicts;
* nested Kubernetes objects (`v1.Pod`, `v1.NodeList`) are ordinary Kubernetes JSON decoded with the
  project's structs, which keep only what scheduling needs.

Anything that does not have the expected shape raises `WireError`, whose message names the field
(`ExtenderArgs.NodeNames[3]: expected str, got int`); the server answers it with a 400.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import msgspec

from kubesched.api.json_shape import drop_nulls
from kubesched.api.json_shape import type_name as json_type_name
from kubesched.api.objects import Node, Pod
from kubesched.api.resources import pod_non_zero_requests, pod_requests
from kubesched.errors import InputError

__all__ = [
    "MAX_EXTENDER_PRIORITY",
    "MIN_EXTENDER_PRIORITY",
    "ExtenderArgs",
    "ExtenderBindingArgs",
    "ExtenderBindingResult",
    "ExtenderFilterResult",
    "ExtenderPreemptionArgs",
    "ExtenderPreemptionResult",
    "HostPriority",
    "MetaPod",
    "MetaVictims",
    "NodeList",
    "NodeNamesMemo",
    "RawNodeList",
    "Victims",
    "WireError",
    "decode_binding_args",
    "decode_binding_result",
    "decode_extender_args",
    "decode_extender_args_raw",
    "decode_filter_result",
    "decode_host_priority_list",
    "decode_preemption_args",
    "decode_preemption_result",
    "encode",
    "encode_host_priorities",
    "host_priority_prefix",
]

#: The score range an extender's prioritize verb answers in (upstream's constants).
MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10


class WireError(ValueError):
    """A body that is not valid JSON of the expected extender type; `str()` is one line."""


# --------------------------------------------------------------------------- the types


class _Go(msgspec.Struct, kw_only=True, rename="pascal"):
    """Go field names on the wire (`node_names` -> `NodeNames`); every field always written."""


class NodeList(msgspec.Struct, kw_only=True):
    """A `v1.NodeList`; only `items` matters to the protocol (`metadata` is written as `{}`)."""

    metadata: dict[str, Any] = {}
    items: list[Node] = []


class ExtenderArgs(_Go):
    """filter and prioritize request: the pod and either full `Nodes` or just `NodeNames`."""

    pod: Pod | None = None
    nodes: NodeList | None = None
    node_names: list[str] | None = None


class RawNodeList(msgspec.Struct, kw_only=True):
    """A `v1.NodeList` whose items are kept as the exact JSON received (echoed back by filter)."""

    metadata: dict[str, Any] = {}
    items: list[msgspec.Raw] = []


class ExtenderFilterResult(_Go):
    """filter reply: the nodes that passed, why the others failed, or an `Error` for the whole call.

    A server answering a `Nodes` request echoes the passing nodes' JSON unchanged (`RawNodeList`),
    since kube-scheduler goes on with the Node objects the extender returns.
    """

    nodes: NodeList | RawNodeList | None = None
    node_names: list[str] | None = None
    failed_nodes: dict[str, str] | None = None
    failed_and_unresolvable_nodes: dict[str, str] | None = None
    error: str = ""


class HostPriority(msgspec.Struct, rename="pascal"):
    """One entry of a prioritize reply (a `HostPriorityList` is a JSON array of these).

    Positional (`HostPriority(host, score)`): a reply for 5,000 nodes builds 5,000 of them.
    """

    host: str = ""
    score: int = 0


class ExtenderBindingArgs(_Go):
    pod_name: str = ""
    pod_namespace: str = ""
    pod_uid: str = msgspec.field(default="", name="PodUID")
    node: str = ""


class ExtenderBindingResult(_Go):
    error: str = ""


class MetaPod(_Go):
    uid: str = msgspec.field(default="", name="UID")


class Victims(_Go):
    pods: list[Pod] | None = None
    num_pdb_violations: int = msgspec.field(default=0, name="NumPDBViolations")


class MetaVictims(_Go):
    pods: list[MetaPod] | None = None
    num_pdb_violations: int = msgspec.field(default=0, name="NumPDBViolations")


class ExtenderPreemptionArgs(_Go):
    """preempt request: full victims, or (nodeCacheCapable) only their UIDs."""

    pod: Pod | None = None
    node_name_to_victims: dict[str, Victims | None] | None = None
    node_name_to_meta_victims: dict[str, MetaVictims | None] | None = None


class ExtenderPreemptionResult(_Go):
    node_name_to_meta_victims: dict[str, MetaVictims | None] | None = None


# --------------------------------------------------------------------------- encoding

_encoder = msgspec.json.Encoder()


def encode(value: Any) -> bytes:
    """JSON bytes of a wire value (a Struct above, a list of HostPriority, ...)."""
    return _encoder.encode(value)


#: `<score>},` closing one HostPriority object (and its comma), for each score an extender may answer.
_SCORE_ENDINGS = tuple(b"%d}," % score for score in range(MAX_EXTENDER_PRIORITY + 1))


def host_priority_prefix(host: str) -> bytes:
    """`{"Host":<host>,"Score":`, the JSON a HostPriority of `host` starts with: a server keeps one
    per node, so a reply is joined from bytes instead of 5,000 structs built and encoded."""
    return b'{"Host":' + _encoder.encode(host) + b',"Score":'


def encode_host_priorities(prefixes: Sequence[bytes], scores: Sequence[int]) -> bytes:
    """A HostPriorityList's JSON, as `encode` writes a list of HostPriority: each host's prefix
    (`host_priority_prefix`) with its score, which must lie in 0..MAX_EXTENDER_PRIORITY.

    One join over prefixes and endings interleaved by slice assignment: no per-entry object."""
    n = len(prefixes)
    if n == 0:
        return b"[]"
    parts = [b"["] * (2 * n + 1)
    parts[1::2] = prefixes
    parts[2::2] = map(_SCORE_ENDINGS.__getitem__, scores)
    parts[-1] = parts[-1][:-1] + b"]"  # the last entry: no comma, then the array's end
    return b"".join(parts)


# --------------------------------------------------------------------------- decoding

T = TypeVar("T")

_envelope = msgspec.json.Decoder(dict[str, msgspec.Raw])
_raw_list = msgspec.json.Decoder(list[msgspec.Raw])


def _msgspec_message(err: msgspec.ValidationError, where: str) -> str:
    text = str(err)
    message, _, path = text.partition(" - at `$")
    path = path.rstrip("`")
    message = message.replace("`", "")
    return f"{where}{path}: {message[:1].lower()}{message[1:]}"


class _Typed:
    """A decoder for one value type that treats nulls inside Kubernetes objects as unset."""

    def __init__(self, type_: Any, *, k8s: bool) -> None:
        self.type = type_
        self.k8s = k8s
        self._decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(type_)

    def decode(self, raw: bytes | msgspec.Raw, where: str) -> Any:
        try:
            return self._decoder.decode(raw)
        except msgspec.ValidationError as err:
            if not self.k8s:
                raise WireError(_msgspec_message(err, where)) from None
            first = err
        except msgspec.DecodeError as err:  # pragma: no cover - the envelope was valid JSON already
            raise WireError(f"{where}: invalid JSON: {err}") from None
        # Slow path, only for objects carrying nulls (e.g. `creationTimestamp: null` in a template).
        try:
            return msgspec.convert(drop_nulls(msgspec.json.decode(raw)), self.type)
        except msgspec.ValidationError:
            raise WireError(_msgspec_message(first, where)) from None


_pod = _Typed(Pod, k8s=True)
_pods = _Typed(list[Pod | None], k8s=True)
_node = _Typed(Node, k8s=True)
_node_list = _Typed(NodeList, k8s=True)
_strings = _Typed(list[str], k8s=False)
_string_map = _Typed(dict[str, str], k8s=False)
_string = _Typed(str, k8s=False)
_int = _Typed(int, k8s=False)


def _fields(
    raw: bytes | bytearray | msgspec.Raw, type_name: str, names: tuple[str, ...], where: str
) -> dict[str, Any]:
    """The object's values by Go field name, matched as encoding/json matches them.

    An exact key wins; otherwise a key equal ignoring case is used (the last one, if several).
    Unknown keys are ignored, as Go ignores them. Values stay raw; `null` values are left out,
    so a missing field and an explicit null both read as Go's nil.
    """
    try:
        obj = _envelope.decode(raw)
    except msgspec.ValidationError:  # valid JSON, but not an object (ValidationError is a DecodeError)
        got = json_type_name(msgspec.json.decode(raw))
        raise WireError(f"{where or type_name}: expected object, got {got}") from None
    except msgspec.DecodeError as err:
        raise WireError(f"{where or type_name}: invalid JSON: {_json_detail(err)}") from None
    by_fold = {name.casefold(): name for name in names}
    exact: dict[str, msgspec.Raw] = {}
    folded: dict[str, msgspec.Raw] = {}
    for key, value in obj.items():
        if key in by_fold.values():
            exact[key] = value
        else:
            name = by_fold.get(key.casefold())
            if name is not None:
                folded[name] = value
    out: dict[str, Any] = {}
    for name in names:
        found = exact.get(name, folded.get(name))
        if found is not None and bytes(found) != b"null":
            out[name] = found
    return out


def _json_detail(err: msgspec.DecodeError) -> str:
    return str(err).removeprefix("JSON is malformed: ")


def _map_of(
    raw: msgspec.Raw, where: str, decode_value: Callable[[msgspec.Raw, str], T]
) -> dict[str, T | None]:
    """A JSON object of string keys whose values are decoded by `decode_value` (null stays None)."""
    try:
        obj = _envelope.decode(raw)
    except msgspec.ValidationError:
        raise WireError(f"{where}: expected object, got {json_type_name(msgspec.json.decode(raw))}") from None
    return {
        key: None if bytes(value) == b"null" else decode_value(value, f"{where}[{key}]")
        for key, value in obj.items()
    }


def _list_of(raw: msgspec.Raw, where: str, decode_item: Callable[[msgspec.Raw, str], T]) -> list[T | None]:
    try:
        items = _raw_list.decode(raw)
    except msgspec.ValidationError:
        raise WireError(f"{where}: expected array, got {json_type_name(msgspec.json.decode(raw))}") from None
    return [None if bytes(v) == b"null" else decode_item(v, f"{where}[{i}]") for i, v in enumerate(items)]


def _strings_or_none(fields: Mapping[str, Any], name: str, where: str) -> list[str] | None:
    raw = fields.get(name)
    value: list[str] | None = None if raw is None else _strings.decode(raw, f"{where}.{name}")
    return value


def _string_map_or_none(fields: Mapping[str, Any], name: str, where: str) -> dict[str, str] | None:
    raw = fields.get(name)
    value: dict[str, str] | None = None if raw is None else _string_map.decode(raw, f"{where}.{name}")
    return value


# -- requests (what the server decodes)


def decode_extender_args(body: bytes | bytearray) -> ExtenderArgs:
    """filter / prioritize request. Both `Nodes` and `NodeNames` may be null (the caller decides)."""
    return decode_extender_args_raw(body)[0]


class NodeNamesMemo:
    """The last `NodeNames` list a server decoded, by its exact JSON. kube-scheduler sends the same
    list call after call; comparing its bytes costs about a hundredth of decoding 5,000 strings.
    The list is handed to every request that sends those bytes: nobody may change it."""

    __slots__ = ("_json", "_names")

    def __init__(self) -> None:
        self._json = b""
        self._names: list[str] | None = None

    def decode(self, raw: msgspec.Raw, where: str) -> list[str]:
        data = bytes(raw)
        if self._names is not None and data == self._json:
            return self._names
        names: list[str] = _strings.decode(raw, where)
        self._json, self._names = data, names
        return names


def decode_extender_args_raw(
    body: bytes | bytearray, names: NodeNamesMemo | None = None
) -> tuple[ExtenderArgs, list[msgspec.Raw] | None]:
    """As `decode_extender_args`, plus the exact JSON of each `Nodes` item (None without `Nodes`);
    `NodeNames` through `names` when given."""
    where = "ExtenderArgs"
    f = _fields(body, where, ("Pod", "Nodes", "NodeNames"), "")
    pod = _checked_pod(f["Pod"], f"{where}.Pod") if "Pod" in f else None
    nodes: NodeList | None = None
    raws: list[msgspec.Raw] | None = None
    if "Nodes" in f:
        lf = _fields(f["Nodes"], "NodeList", ("items",), f"{where}.Nodes")
        raws = []
        items: list[Node] = []
        if "items" in lf:
            for i, raw in enumerate(_list_of(lf["items"], f"{where}.Nodes.items", _as_raw)):
                if raw is None:
                    continue
                items.append(_node.decode(raw, f"{where}.Nodes.items[{i}]"))
                raws.append(raw)
        nodes = NodeList(items=items)
    raw_names = f.get("NodeNames")
    node_names = (
        _strings_or_none(f, "NodeNames", where)
        if names is None or raw_names is None
        else names.decode(raw_names, f"{where}.NodeNames")
    )
    return ExtenderArgs(pod=pod, nodes=nodes, node_names=node_names), raws


def _checked_pod(raw: msgspec.Raw, where: str) -> Pod:
    """The request's Pod, its quantities checked now: a bad one is the body's fault (400), not a
    plugin error later (500)."""
    pod: Pod = _pod.decode(raw, where)
    try:
        pod_requests(pod)
        pod_non_zero_requests(pod)
    except InputError as exc:
        raise WireError(f"{where}.{exc}") from None
    return pod


def _as_raw(raw: msgspec.Raw, where: str) -> msgspec.Raw:
    return raw


def decode_binding_args(body: bytes | bytearray) -> ExtenderBindingArgs:
    where = "ExtenderBindingArgs"
    f = _fields(body, where, ("PodName", "PodNamespace", "PodUID", "Node"), "")
    values = {k: _string.decode(v, f"{where}.{k}") for k, v in f.items()}
    return ExtenderBindingArgs(
        pod_name=values.get("PodName", ""),
        pod_namespace=values.get("PodNamespace", ""),
        pod_uid=values.get("PodUID", ""),
        node=values.get("Node", ""),
    )


def _victims(raw: msgspec.Raw, where: str) -> Victims:
    f = _fields(raw, "Victims", ("Pods", "NumPDBViolations"), where)
    pods = _pods.decode(f["Pods"], f"{where}.Pods") if "Pods" in f else None
    if pods is not None:
        pods = [p for p in pods if p is not None]
    violations = (
        _int.decode(f["NumPDBViolations"], f"{where}.NumPDBViolations") if "NumPDBViolations" in f else 0
    )
    return Victims(pods=pods, num_pdb_violations=violations)


def _meta_pod(raw: msgspec.Raw, where: str) -> MetaPod:
    f = _fields(raw, "MetaPod", ("UID",), where)
    return MetaPod(uid=_string.decode(f["UID"], f"{where}.UID") if "UID" in f else "")


def _meta_victims(raw: msgspec.Raw, where: str) -> MetaVictims:
    f = _fields(raw, "MetaVictims", ("Pods", "NumPDBViolations"), where)
    pods: list[MetaPod] | None = None
    if "Pods" in f:
        pods = [p for p in _list_of(f["Pods"], f"{where}.Pods", _meta_pod) if p is not None]
    violations = (
        _int.decode(f["NumPDBViolations"], f"{where}.NumPDBViolations") if "NumPDBViolations" in f else 0
    )
    return MetaVictims(pods=pods, num_pdb_violations=violations)


def decode_preemption_args(body: bytes | bytearray) -> ExtenderPreemptionArgs:
    where = "ExtenderPreemptionArgs"
    f = _fields(body, where, ("Pod", "NodeNameToVictims", "NodeNameToMetaVictims"), "")
    pod = _checked_pod(f["Pod"], f"{where}.Pod") if "Pod" in f else None
    victims = None
    if "NodeNameToVictims" in f:
        victims = _map_of(f["NodeNameToVictims"], f"{where}.NodeNameToVictims", _victims)
    meta = None
    if "NodeNameToMetaVictims" in f:
        meta = _map_of(f["NodeNameToMetaVictims"], f"{where}.NodeNameToMetaVictims", _meta_victims)
    return ExtenderPreemptionArgs(pod=pod, node_name_to_victims=victims, node_name_to_meta_victims=meta)


# -- results (what the client decodes from an external extender)


def decode_filter_result(body: bytes) -> ExtenderFilterResult:
    where = "ExtenderFilterResult"
    f = _fields(body, where, ("Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"), "")
    return ExtenderFilterResult(
        nodes=_node_list.decode(f["Nodes"], f"{where}.Nodes") if "Nodes" in f else None,
        node_names=_strings_or_none(f, "NodeNames", where),
        failed_nodes=_string_map_or_none(f, "FailedNodes", where),
        failed_and_unresolvable_nodes=_string_map_or_none(f, "FailedAndUnresolvableNodes", where),
        error=_string.decode(f["Error"], f"{where}.Error") if "Error" in f else "",
    )


def _host_priority(raw: msgspec.Raw, where: str) -> HostPriority:
    f = _fields(raw, "HostPriority", ("Host", "Score"), where)
    return HostPriority(
        host=_string.decode(f["Host"], f"{where}.Host") if "Host" in f else "",
        score=_int.decode(f["Score"], f"{where}.Score") if "Score" in f else 0,
    )


def decode_host_priority_list(body: bytes) -> list[HostPriority]:
    """A prioritize reply; `null` (a nil list) reads as no scores."""
    try:
        if msgspec.json.decode(body) is None:
            return []
    except msgspec.DecodeError as err:
        raise WireError(f"HostPriorityList: invalid JSON: {_json_detail(err)}") from None
    items = _list_of(msgspec.Raw(body), "HostPriorityList", _host_priority)
    return [item for item in items if item is not None]


def decode_binding_result(body: bytes) -> ExtenderBindingResult:
    f = _fields(body, "ExtenderBindingResult", ("Error",), "")
    return ExtenderBindingResult(
        error=_string.decode(f["Error"], "ExtenderBindingResult.Error") if "Error" in f else ""
    )


def decode_preemption_result(body: bytes) -> ExtenderPreemptionResult:
    where = "ExtenderPreemptionResult"
    f = _fields(body, where, ("NodeNameToMetaVictims",), "")
    meta = None
    if "NodeNameToMetaVictims" in f:
        meta = _map_of(f["NodeNameToMetaVictims"], f"{where}.NodeNameToMetaVictims", _meta_victims)
    return ExtenderPreemptionResult(node_name_to_meta_victims=meta)
