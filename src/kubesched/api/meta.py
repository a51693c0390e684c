"""The metadata and selector structs every Kubernetes object shares, and their common base.

`KubeStruct` fixes the decoding rules for the whole object model: keyword construction, the Kubernetes
JSON (camelCase) names, defaults left out when encoding, immutable values. `Int32`/`Int64` bound the
API's fixed-width integers so an out-of-range value is refused with its field path while decoding,
as the API server refuses it, instead of surfacing later as an overflow.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class KubeStruct(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel", frozen=True):
    """Common options: keyword construction, camelCase wire names, defaults omitted, immutable."""


# --------------------------------------------------------------------------- metadata


class OwnerReference(KubeStruct, frozen=True):
    kind: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


def controller_reference(
    api_version: str, kind: str, name: str, uid: str, *, block_owner_deletion: bool | None = True
) -> OwnerReference:
    """The ownerReference a controller puts on what it creates (`controller: true`; upstream's
    controllers also set `blockOwnerDeletion`, the scheduler's extended-resource claim does not)."""
    return OwnerReference(
        api_version=api_version,
        kind=kind,
        name=name,
        uid=uid,
        controller=True,
        block_owner_deletion=block_owner_deletion,
    )


class ObjectMeta(KubeStruct, frozen=True):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    owner_references: list[OwnerReference] = []
    finalizers: list[str] = []
    generation: int = 0


def controller_of(meta: ObjectMeta) -> OwnerReference | None:
    """The ownerReference marked `controller: true` (the API server allows one at most), or None:
    upstream's `metav1.GetControllerOf`, the one answer to "which workload owns this object"."""
    for ref in meta.owner_references:
        if ref.controller:
            return ref
    return None


def is_controlled_by(meta: ObjectMeta, uid: str) -> bool:
    """The object's controller is the object with `uid` (upstream's `metav1.IsControlledBy`)."""
    ref = controller_of(meta)
    return ref is not None and ref.uid == uid


# --------------------------------------------------------------------------- selectors


class LabelSelectorRequirement(KubeStruct, frozen=True):
    key: str
    operator: str
    values: list[str] = []


class LabelSelector(KubeStruct, frozen=True):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class NodeSelectorRequirement(KubeStruct, frozen=True):
    key: str
    operator: str
    values: list[str] = []


class NodeSelectorTerm(KubeStruct, frozen=True):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(KubeStruct, frozen=True):
    node_selector_terms: list[NodeSelectorTerm] = []
