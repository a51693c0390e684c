"""A pod that does not decode (a bad quantity, a field of the wrong type) still names itself and
its scheduler; reading just that much lets the live scheduler tell the pod's owner why it is not
scheduled instead of skipping it in silence."""

from __future__ import annotations

import msgspec

from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import Pod, PodSpec

__all__ = ["pod_identity"]


class _PodIdentitySpec(msgspec.Struct, kw_only=True, rename="camel", frozen=True):
    scheduler_name: str = "default-scheduler"
    node_name: str = ""


class _PodIdentity(msgspec.Struct, kw_only=True, frozen=True):
    """What we can still read of a pod that did not decode: who it is and who should schedule it."""

    metadata: ObjectMeta = ObjectMeta()
    spec: _PodIdentitySpec = _PodIdentitySpec()


def pod_identity(raw: bytes) -> Pod | None:
    """The pod in `raw` with only its metadata, scheduler and node name; None when not even those
    decode."""
    try:
        ident = msgspec.json.decode(raw, type=_PodIdentity)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return Pod(
        metadata=ident.metadata,
        spec=PodSpec(scheduler_name=ident.spec.scheduler_name, node_name=ident.spec.node_name),
    )
