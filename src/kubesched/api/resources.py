"""A pod's resource requests as the scheduler counts them (upstream `PodRequests`,
`k8s.io/component-helpers/resource/helpers.go`).

Amounts come back in the scheduler's units: milli-cores for `cpu`, plain units (bytes, devices)
for everything else. Quantities are summed and compared exactly (in nano units) and converted once
at the end, as upstream adds `Quantity` values exactly and rounds only when it reads them.

This runs for every pod, so parsed quantity strings are cached (`quantity.quantity_nanos`) and the
common shape — regular containers only — takes a short path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

import msgspec

from kubesched.api.objects import Container, Pod, PodSpec
from kubesched.api.quantity import MILLI_PER_NANO, NANO, QuantityError, _ceil_div_away, quantity_nanos
from kubesched.api.selectors import is_qualified_name

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "default_requests_from_limits",
    "is_scalar_resource",
    "pod_container_non_zero_requests",
    "pod_non_zero_requests",
    "pod_requests",
]

#: What a container that requests no cpu counts for when spreading load (upstream: 100m).
DEFAULT_MILLI_CPU_REQUEST = 100
#: What a container that requests no memory counts for when spreading load (upstream: 200Mi).
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

_NON_MISSING_NANOS = {
    "cpu": DEFAULT_MILLI_CPU_REQUEST * MILLI_PER_NANO,
    "memory": DEFAULT_MEMORY_REQUEST * NANO,
}
_RESTART_ALWAYS = "Always"
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")

Nanos = dict[str, int]


def _field(path: str, name: str) -> str:
    """`path.name`, or `path[name]` when the name holds dots or slashes (`nvidia.com/gpu`)."""
    return f"{path}.{name}" if _PLAIN_KEY.fullmatch(name) else f"{path}[{name}]"


def _parse_list(values: Mapping[str, str | int | float], path: str) -> Nanos:
    try:
        parsed = {name: quantity_nanos(v) for name, v in values.items()}
    except QuantityError:
        for name, v in values.items():
            try:
                quantity_nanos(v)
            except QuantityError as err:
                raise QuantityError(err.message, path=_field(path, name)) from None
        raise
    for name, amount in parsed.items():
        if amount < 0:  # the API server refuses these; counting them would free capacity
            raise QuantityError("must be greater than or equal to 0", path=_field(path, name))
    return parsed


def _container_nanos(c: Container, path: str, defaults: Mapping[str, int]) -> Nanos:
    requests = c.resources.requests
    parsed = _parse_list(requests, f"{path}.resources.requests") if requests else {}
    for name, default in defaults.items():
        if name not in requests:
            parsed[name] = default
    return parsed


def _add(into: Nanos, other: Nanos) -> None:
    for name, n in other.items():
        into[name] = into.get(name, 0) + n


def _max(into: Nanos, other: Nanos) -> None:
    for name, n in other.items():
        if name not in into or n > into[name]:
            into[name] = n


def _is_pod_level_resource(name: str) -> bool:
    """Resources a pod may request for itself in `spec.resources` (PodLevelResources, v1.37 set)."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _pod_level_requests(pod: Pod) -> Mapping[str, str | int | float] | None:
    """`spec.resources.requests` when it names a resource pods may request for themselves."""
    pod_level = pod.spec.resources.requests if pod.spec.resources is not None else None
    if pod_level and any(_is_pod_level_resource(name) for name in pod_level):
        return pod_level
    return None


def _non_missing_defaults(pod: Pod, non_missing: bool, pod_level: bool) -> Mapping[str, int]:
    """The 100m / 200Mi a container lacking a cpu / memory request counts for (upstream
    `getNonMissingContainerRequests`): with pod-level requests set, only for a resource that neither
    a container nor the pod-level requests name."""
    if not non_missing:
        return {}
    if not pod_level or _pod_level_requests(pod) is None:
        return _NON_MISSING_NANOS
    named = _aggregate(pod, False, pod_level)
    return {name: n for name, n in _NON_MISSING_NANOS.items() if name not in named}


def _aggregate(pod: Pod, non_missing: bool, pod_level: bool = True) -> Nanos:
    """`PodRequests` in nano units; `non_missing` fills absent cpu/memory container requests,
    `pod_level` lets `spec.resources.requests` replace the containers' sum."""
    spec = pod.spec
    reqs: Nanos = {}
    defaults = _non_missing_defaults(pod, non_missing, pod_level)
    for i, c in enumerate(spec.containers):
        _add(reqs, _container_nanos(c, f"spec.containers[{i}]", defaults))

    if spec.init_containers:
        # A regular init container runs alongside the sidecars started before it; sidecars
        # (restartPolicy Always) keep running, so they also add to the regular containers.
        sidecars: Nanos = {}
        init_peak: Nanos = {}
        for i, c in enumerate(spec.init_containers):
            own = _container_nanos(c, f"spec.initContainers[{i}]", defaults)
            if c.restart_policy == _RESTART_ALWAYS:
                _add(reqs, own)
                _add(sidecars, own)
                _max(init_peak, sidecars)
            else:
                _add(own, sidecars)
                _max(init_peak, own)
        _max(reqs, init_peak)

    pod_requests = _pod_level_requests(pod) if pod_level else None
    if pod_requests is not None:
        supported = {name: v for name, v in pod_requests.items() if _is_pod_level_resource(name)}
        reqs.update(_parse_list(supported, "spec.resources.requests"))

    if spec.overhead:
        _add(reqs, _parse_list(spec.overhead, "spec.overhead"))
    return reqs


#: `_aggregate` results of the pods seen last, by pod object: the PodInfo and the resource plugins
#: of one scheduling cycle ask for the same pod's requests several times.
_AGGREGATES: dict[tuple[int, bool, bool], tuple[Pod, Nanos]] = {}
_AGGREGATES_SIZE = 256


def _names_cpu_and_memory(pod: Pod) -> bool:
    """Every container (regular and init) requests both cpu and memory explicitly."""
    spec = pod.spec
    for c in (*spec.containers, *spec.init_containers) if spec.init_containers else spec.containers:
        requests = c.resources.requests
        if "cpu" not in requests or "memory" not in requests:
            return False
    return True


def _aggregate_cached(pod: Pod, non_missing: bool, pod_level: bool = True) -> Nanos:
    """`_aggregate`, remembered per pod object (the result must not be modified)."""
    key = (id(pod), non_missing, pod_level)
    hit = _AGGREGATES.get(key)
    if hit is not None and hit[0] is pod:
        return hit[1]
    if not pod_level and _pod_level_requests(pod) is None:
        reqs = _aggregate_cached(pod, non_missing)  # nothing at pod level to skip: the same sums
    elif non_missing and _names_cpu_and_memory(pod):
        reqs = _aggregate_cached(pod, False, pod_level)  # no default to fill in: the same sums
    else:
        reqs = _aggregate(pod, non_missing, pod_level)
    if len(_AGGREGATES) >= _AGGREGATES_SIZE:
        _AGGREGATES.clear()
    _AGGREGATES[key] = (pod, reqs)
    return reqs


def pod_requests(pod: Pod) -> dict[str, int]:
    """Everything `pod` requests, by resource name: cpu in milli-cores, the rest in units.

    Regular containers are summed; init containers are taken in order, each counted together
    with the sidecars (`restartPolicy: Always`) started before it, and the pod needs the larger of
    the two phases per resource; pod-level `spec.resources.requests` replace the container sum for
    the resources they name; `spec.overhead` is added. Raises `QuantityError` naming the field of a
    bad quantity, e.g. `spec.containers[1].resources.requests.memory: invalid quantity "12XB"`.
    """
    return {
        name: _ceil_div_away(n, MILLI_PER_NANO if name == "cpu" else NANO)
        for name, n in _aggregate_cached(pod, non_missing=False).items()
    }


def pod_non_zero_requests(pod: Pod) -> tuple[int, int]:
    """(milli-cpu, memory bytes) for spreading and balancing scores (upstream `NonZeroRequested`).

    Same rules as `pod_requests`, except that a container (regular or init) that does not mention
    cpu or memory counts as requesting 100m / 200Mi, so best-effort pods are not free to pack. An
    explicit zero stays zero.
    """
    reqs = _aggregate_cached(pod, non_missing=True)
    return _ceil_div_away(reqs.get("cpu", 0), MILLI_PER_NANO), _ceil_div_away(reqs.get("memory", 0), NANO)


def pod_container_non_zero_requests(pod: Pod) -> dict[str, int]:
    """Everything `pod`'s containers request, with the 100m / 200Mi defaults and without pod-level
    `spec.resources`: what v1.37's NodeResourcesFit *scorer* counts for the incoming pod (its
    resource scorer is built without the PodLevelResources option, an upstream quirk kept here)."""
    return {
        name: _ceil_div_away(n, MILLI_PER_NANO if name == "cpu" else NANO)
        for name, n in _aggregate_cached(pod, non_missing=True, pod_level=False).items()
    }


@lru_cache(maxsize=1024)
def is_scalar_resource(name: str) -> bool:
    """Whether the scheduler tracks `name` as a scalar resource beside cpu, memory, storage and pods.

    That is (upstream `IsScalarResourceName`): extended resources (a qualified `domain/name` outside
    the `kubernetes.io/` namespace, e.g. `nvidia.com/gpu`), names in that native namespace
    (`kubernetes.io/...`, which upstream also counts), `hugepages-*` and `attachable-volumes-*`.
    """
    if name.startswith(("hugepages-", "attachable-volumes-")):
        return True
    if "kubernetes.io/" in name:
        return True
    if "/" not in name or name.startswith("requests."):
        return False
    # Upstream checks the name as it would appear in a ResourceQuota (`requests.<name>`).
    return is_qualified_name("requests." + name)


def default_requests_from_limits(spec: PodSpec) -> PodSpec:
    """A container's missing requests default to its limits, as the API server's defaulting does.

    Without this, a manifest that sets only `limits` (common for GPUs) would request nothing.
    """

    def defaulted(containers: list[Container]) -> list[Container] | None:
        changed = False
        out = []
        for c in containers:
            missing = {r: v for r, v in c.resources.limits.items() if r not in c.resources.requests}
            if missing:
                changed = True
                resources = msgspec.structs.replace(c.resources, requests={**c.resources.requests, **missing})
                c = msgspec.structs.replace(c, resources=resources)
            out.append(c)
        return out if changed else None

    containers = defaulted(spec.containers)
    init_containers = defaulted(spec.init_containers)
    if containers is None and init_containers is None:
        return spec
    return msgspec.structs.replace(
        spec,
        containers=containers if containers is not None else spec.containers,
        init_containers=init_containers if init_containers is not None else spec.init_containers,
    )
