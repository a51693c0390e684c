"""A pod's ask in the policies' terms: its CPU, and the GPUs its ResourceClaims ask of the GPU driver's
device class (`count` whole GPUs, or one GPU's `share` as consumable capacity)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubesched.api.objects import Pod
from kubesched.api.quantity import NANO, QuantityError, quantity_nanos
from kubesched.api.resource import DeviceRequest, ResourceClaim
from kubesched.api.resources import pod_non_zero_requests
from kubesched.plugins.contrib.gpu_share.shapes import GPU_MILLI, TaskShape
from kubesched.plugins.dynamic_resources.claims import resolve_pod_claims

__all__ = ["gpu_requests", "pod_shape"]


def pod_shape(
    pod: Pod, claims: Mapping[str, ResourceClaim], device_class: str, capacity: str
) -> TaskShape | None:
    """The pod's shape; None when its GPU ask is not one the policies model (a claim not found yet, a
    share of several GPUs, a share beside whole GPUs)."""
    cpu, _ = pod_non_zero_requests(pod)
    if not pod.spec.resource_claims:
        return TaskShape(cpu, 0, 0)
    resolved = resolve_pod_claims(pod, claims)
    if isinstance(resolved, str):
        return None
    whole = 0
    shares: list[int] = []
    for ref in resolved:
        n, wanted = gpu_requests(ref.claim.spec.devices.requests, device_class, capacity)
        whole += n
        try:
            shares += [quantity_nanos(w) // NANO for w in wanted]
        except QuantityError:
            return None
    if shares:
        if whole or len(shares) > 1 or not 0 < shares[0] <= GPU_MILLI:
            return None
        return TaskShape(cpu, shares[0], 1)
    return TaskShape(cpu, GPU_MILLI, whole) if whole else TaskShape(cpu, 0, 0)


def gpu_requests(
    requests: Iterable[DeviceRequest], device_class: str, capacity: str
) -> tuple[int, list[str | int | float]]:
    """What one claim's `requests` ask of the GPU class: whole GPUs, and the `capacity` quantity asked
    of each shared GPU (one entry per GPU). The policies and the replay's GPU metrics both read it."""
    whole = 0
    shares: list[str | int | float] = []
    for req in requests:
        ex = req.exactly
        if ex is None or ex.device_class_name != device_class:
            continue
        count = ex.count if ex.count is not None else 1
        wanted = ex.capacity.requests.get(capacity) if ex.capacity is not None else None
        if wanted is None:
            whole += count
        else:
            shares += [wanted] * count
    return whole, shares
