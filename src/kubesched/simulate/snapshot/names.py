"""`--pod NAME`: every name the report prints picks pods, not only the input's pending pods.

Pods a controller makes (`shop/checkout-7c9d4-x2x9k`, `data/kafka-0`) exist only once the run made
them, so names are resolved against the report, after the run. A name is a pod (`namespace/name`,
or a bare `name`, in `default` first, else in any namespace), or a workload as the report prints
it (`Deployment shop/checkout`, also `shop/checkout` when no pod has that name): all its pods.
The per-node detail a picked pod gets must be kept while the run goes, so `PodPicker` matches the
same names against each pod as the run meets it.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubesched.errors import InputError, did_you_mean
from kubesched.simulate.snapshot.model import PodResult

__all__ = ["PodPicker", "resolve_pod_names"]


def workload_aliases(label: str) -> tuple[str, str, str]:
    """The names `--pod` takes for the workload `label` (`Deployment shop/checkout`)."""
    kind, _, short = label.partition(" ")
    return (label, f"{kind.lower()} {short}", short)


class PodPicker:
    """`--pod` names matched against a pod while the run goes, before the report exists.

    It picks what `resolve_pod_names` would, and a bare name also in every namespace (that one
    prefers `default` only once all pods are known): an extra pod's detail costs memory, a missing
    one loses the answer asked for.
    """

    __slots__ = ("_names",)

    def __init__(self, names: Iterable[str]) -> None:
        forms: set[str] = set()
        for name in names:
            forms.add(name)
            kind, space, rest = name.partition(" ")
            if space:
                forms.add(f"{kind.lower()} {rest}")
        self._names = frozenset(forms)

    def __bool__(self) -> bool:
        return bool(self._names)

    def picks(self, namespace: str, name: str, workloads: Iterable[str]) -> bool:
        """Whether a name picks the pod `namespace/name`, held by the workloads labelled `workloads`."""
        names = self._names
        if f"{namespace}/{name}" in names or name in names:
            return True
        return any(alias in names for label in workloads for alias in workload_aliases(label))


def resolve_pod_names(pods: list[PodResult], names: Iterable[str]) -> frozenset[str]:
    """The `namespace/name` of every pod the `names` pick; an InputError for a name that picks none."""
    by_key = {f"{p.namespace}/{p.name}": p for p in pods}
    by_workload: dict[str, list[str]] = {}
    for key, p in by_key.items():
        if p.workload:
            for alias in workload_aliases(p.workload):
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
