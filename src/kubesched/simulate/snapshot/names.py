"""`--pod NAME`: every name the report prints picks pods, not only the input's pending pods.

Pods a controller makes (`shop/checkout-7c9d4-x2x9k`, `data/kafka-0`) exist only once the run made
them, so names are resolved against the report, after the run. A name is a pod (`namespace/name`,
or a bare `name`, in `default` first, else in any namespace), or a workload as the report prints
it (`Deployment shop/checkout`, also `shop/checkout` when no pod has that name): all its pods.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubesched.errors import InputError, did_you_mean
from kubesched.simulate.snapshot.model import PodResult

__all__ = ["resolve_pod_names"]


def resolve_pod_names(pods: list[PodResult], names: Iterable[str]) -> frozenset[str]:
    """The `namespace/name` of every pod the `names` pick; an InputError for a name that picks none."""
    by_key = {f"{p.namespace}/{p.name}": p for p in pods}
    by_workload: dict[str, list[str]] = {}
    for key, p in by_key.items():
        if p.workload:
            kind, _, short = p.workload.partition(" ")
            for alias in (p.workload, f"{kind.lower()} {short}", short):
                by_workload.setdefault(alias, []).append(key)
    picked: set[str] = set()
    for name in names:
        keys = _pick(name, by_key, by_workload)
        if not keys:
            known = [*by_key, *(w for w in by_workload if " " in w and w[0].isupper())]
            hint = did_you_mean(name, known) or did_you_mean(f"default/{name}", known)
            raise InputError(f"no pod or workload {name!r} in the report{hint}", source="--pod")
        picked.update(keys)
    return frozenset(picked)


def _pick(name: str, by_key: dict[str, PodResult], by_workload: dict[str, list[str]]) -> list[str]:
    if name in by_key:
        return [name]
    if "/" not in name and f"default/{name}" in by_key:
        return [f"default/{name}"]
    if "/" not in name:
        anywhere = [key for key, p in by_key.items() if p.name == name]
        if anywhere:
            return anywhere
    kind, space, rest = name.partition(" ")
    return by_workload.get(name) or (by_workload.get(f"{kind.lower()} {rest}", []) if space else [])
