"""A pod's claims as VolumeBinding sees them: bound, to bind (WaitForFirstConsumer) or in the way.

`resolve_claims` is PreFilter's work (upstream's GetPodVolumeClaims): it reads the pod's
`persistentVolumeClaim` volumes and generic ephemeral volumes' claims, and rejects the pod when a
claim is missing, lost, being deleted, not the pod's own (ephemeral) or waiting for the PV
controller (immediate binding). What it returns is the PreFilter state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubesched.api.storage import PersistentVolume, PersistentVolumeClaim
from kubesched.framework.node_table import NodeTable
from kubesched.framework.status import Code, Status
from kubesched.plugins._volumes import (
    ANN_BIND_COMPLETED,
    VolumeObjects,
)

__all__ = [
    "ERR_UNBOUND_IMMEDIATE",
    "PRE_FILTER_STATE_KEY",
    "Claim",
    "ClaimId",
    "Decision",
    "PreFilterState",
    "fully_bound",
    "unresolvable",
]

ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"

PRE_FILTER_STATE_KEY = "PreFilterVolumeBinding"


@dataclass(frozen=True, slots=True)
class ClaimId:
    key: str  # namespace/name
    uid: str


@dataclass(frozen=True, slots=True)
class Claim:
    key: str
    pvc: PersistentVolumeClaim
    class_name: str
    #: Bound PV name ("" when unbound).
    volume: str = ""
    #: Node the claim is (to be) provisioned for ("" when none).
    selected_node: str = ""

    @property
    def id(self) -> ClaimId:
        return ClaimId(self.key, self.pvc.metadata.uid)


@dataclass(frozen=True, slots=True)
class Decision:
    node: str
    static: tuple[tuple[Claim, str], ...] = ()
    provision: tuple[Claim, ...] = ()

    def clone(self) -> Decision:
        return self


@dataclass(slots=True)
class PreFilterState:
    objects: VolumeObjects
    table: NodeTable | None
    bound: tuple[Claim, ...]
    delayed: tuple[Claim, ...]
    #: The PVs each claim to bind could take (`binder._candidates`), worked out once per cycle.
    candidates: dict[str, tuple[PersistentVolume | None, list[PersistentVolume]]] = field(
        default_factory=dict
    )

    def clone(self) -> PreFilterState:
        return self  # never changed after PreFilter (the candidate memo is the same for every clone)


def fully_bound(pvc: PersistentVolumeClaim) -> bool:
    """The claim names its volume and the binding is complete.

    Upstream requires the PV controller's bind-completed annotation; a hand-written claim with
    `volumeName` and no status (or `phase: Bound`) is taken as bound too, as applying it to a cluster
    with that PV would quickly make it.
    """
    if not pvc.spec.volume_name:
        return False
    return ANN_BIND_COMPLETED in pvc.metadata.annotations or pvc.status.phase in ("Bound", "")


def unresolvable(reason: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)
