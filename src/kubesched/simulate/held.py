"""Pending pods another scheduler holds: their `schedulerName` names no profile of the configuration.

The run leaves them pending and does not reserve room for them, so a free-room answer (capacity's
`fits`, compare's stranded and largest-free figures) would silently hand their room to others.
Every summary therefore names them, with what they request, and says the free figures leave them out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from kubesched.api.objects import Pod
from kubesched.api.quantity import QuantityError, format_quantity
from kubesched.api.resources import default_requests_from_limits, pod_requests
from kubesched.config.types import DEFAULT_SCHEDULER_NAME, KubeSchedulerConfiguration
from kubesched.simulate.report import ReportStruct
from kubesched.simulate.units import human_requests

__all__ = ["HeldPods", "held", "held_pods", "held_text", "summed_requests"]


class HeldPods(ReportStruct):
    """Pending pods whose schedulerName names no profile; not counted in the free-room figures."""

    pods: int
    #: schedulerName -> pods.
    scheduler_names: dict[str, int]
    #: What they request together (pods with an invalid quantity left out).
    requests: dict[str, str]


def held_pods(pods: Iterable[Pod], config: KubeSchedulerConfiguration) -> HeldPods:
    """The pending pods among `pods` that no profile of `config` schedules."""
    profiles = {p.scheduler_name or DEFAULT_SCHEDULER_NAME for p in config.profiles}
    return held([p for p in pods if not p.spec.node_name and p.spec.scheduler_name not in profiles])


def held(pods: list[Pod]) -> HeldPods:
    """`pods`, known to be held by other schedulers, counted."""
    names = Counter(p.spec.scheduler_name for p in pods)
    return HeldPods(
        pods=len(pods), scheduler_names=dict(sorted(names.items())), requests=summed_requests(pods)
    )


def held_text(h: HeldPods) -> str:
    """One line for a table: who holds them and what they request, and that free figures leave them out."""
    names = ", ".join(f"{name} ({n})" for name, n in h.scheduler_names.items())
    requests = human_requests(h.requests)
    return (
        f"{h.pods} pending pod(s) held by another scheduler ({names}; no profile of that name), "
        f"requesting {requests or 'nothing'}: the free-room figures do not keep room for them"
    )


def summed_requests(pods: Iterable[Pod]) -> dict[str, str]:
    """The requests of `pods` added up, by resource, as quantities (limits-only resources request
    their limits, as the API server defaults them)."""
    total: Counter[str] = Counter()
    for pod in pods:
        try:
            total.update(pod_requests(Pod(spec=default_requests_from_limits(pod.spec))))
        except QuantityError:
            continue  # the pod's own report names the bad value
    return {r: format_quantity(v, r) for r, v in sorted(total.items()) if v}
