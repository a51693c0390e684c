"""What VolumeBinding decides for a pod's claims: resolved at PreFilter, evaluated per node.

As upstream's binder: `resolve_claims` splits the pod's claims into bound and WaitForFirstConsumer
ones (or rejects the pod); `evaluate` checks, on a batch of nodes, the bound claims' PVs, chooses
the smallest fitting static PV for each claim to bind, and checks that the rest can be provisioned
there, CSIStorageCapacity included. `VolumeBinder` is how the live scheduler writes the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from kubesched.api.meta import NodeSelector
from kubesched.api.objects import Pod
from kubesched.api.quantity import QuantityError, quantity_nanos
from kubesched.api.selectors import compile_label_selector
from kubesched.api.storage import CSIStorageCapacity, PersistentVolume, PersistentVolumeClaim, StorageClass
from kubesched.errors import InputError
from kubesched.framework.node_table import BoolArray, IntArray, NodeSet, NodeTable
from kubesched.framework.status import Status
from kubesched.plugins._node_selector_batch import BatchNodeSelector
from kubesched.plugins._volumes import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    VolumeHandle,
    VolumeObjects,
    binding_mode,
    binding_mode_not_set,
    claim_class,
    claim_key,
    ephemeral_owner_error,
    pod_claims,
    pvc_not_found,
    volume_class,
)
from kubesched.plugins.volume_binding.assume_cache import AssumeCache
from kubesched.plugins.volume_binding.claims import (
    ERR_UNBOUND_IMMEDIATE,
    Claim,
    ClaimId,
    PreFilterState,
    fully_bound,
    unresolvable,
)

__all__ = ["STORAGE", "Evaluation", "VolumeBinder", "evaluate", "resolve_claims", "storage_of"]

FILESYSTEM = "Filesystem"
STORAGE = "storage"


@runtime_checkable
class VolumeBinder(Protocol):
    """Writes volume bindings to the cluster; offered by the live scheduler's Handle.

    PreBind calls it for the claims the pod's Reserve decided on. Each call returns once the
    binding is complete (the PV controller bound the claim) and raises on failure or when
    `timeout` seconds pass; the pod is then retried.
    """

    def bind_pvc(self, pvc: PersistentVolumeClaim, pv_name: str, *, timeout: float) -> None:
        """Bind `pvc` to the existing PersistentVolume `pv_name` (sets the PV's claimRef)."""
        ...

    def provision_pvc(self, pvc: PersistentVolumeClaim, node_name: str, *, timeout: float) -> None:
        """Have `pvc` provisioned for `node_name` (sets `volume.kubernetes.io/selected-node`)."""
        ...


@dataclass(slots=True)
class Evaluation:
    """Per node (aligned with the NodeSet): the reasons, and the volume choices."""

    node_conflict: BoolArray
    bind_conflict: BoolArray
    not_enough_space: BoolArray
    pv_missing: BoolArray
    #: per claim to match: (claim, candidate PVs, index of the PV chosen per node or -1)
    static: list[tuple[Claim, list[PersistentVolume], IntArray]]
    #: per claim needing provisioning somewhere: (claim, nodes where it is provisioned)
    provision: list[tuple[Claim, BoolArray]]
    #: per claim provisioned by a driver that tracks capacity: (claim, its class's capacities
    #: large enough, index of the one serving each node or -1)
    capacity: list[tuple[Claim, list[CSIStorageCapacity], IntArray]]

    def failed(self) -> BoolArray:
        return self.node_conflict | self.bind_conflict | self.not_enough_space | self.pv_missing


def pv_affinity(pv: PersistentVolume) -> NodeSelector | None:
    return pv.spec.node_affinity.get("required") if pv.spec.node_affinity else None


def storage_of(values: dict[str, str | int | float]) -> int:
    value = values.get(STORAGE)
    return quantity_nanos(value) if value is not None else 0


def topology_mask(sc: StorageClass, nodes: NodeSet) -> BoolArray:
    """Rows whose labels satisfy the class's allowedTopologies (no terms: every node)."""
    n = len(nodes)
    if not sc.allowed_topologies:
        return np.ones(n, dtype=np.bool_)
    result = np.zeros(n, dtype=np.bool_)
    for term in sc.allowed_topologies:
        expressions = term.get("matchLabelExpressions") or []
        if not expressions:
            continue  # an empty term selects nothing
        ok = np.ones(n, dtype=np.bool_)
        for expr in expressions:
            col = nodes.table.label_column(str(expr.get("key", "")))
            ok &= col.value_in([str(v) for v in expr.get("values") or ()])[nodes.rows]
        result |= ok
    return result


def resolve_claims(
    pod: Pod, table: NodeTable | None, handle: VolumeHandle | None, assume_cache: AssumeCache
) -> PreFilterState | Status | None:
    """The pod's claims, split into bound and WaitForFirstConsumer ones; None if it has none."""
    refs = list(pod_claims(pod))
    if not refs:
        return None
    objects = VolumeObjects(handle)
    namespace = pod.metadata.namespace
    pvcs: list[PersistentVolumeClaim] = []
    for _, name, ephemeral in refs:
        pvc = objects.pvc(namespace, name)
        if pvc is None:
            if ephemeral:
                return unresolvable(
                    f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
                )
            return unresolvable(pvc_not_found(name))
        if pvc.status.phase == "Lost":
            return unresolvable(
                f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                f'"{pvc.spec.volume_name}"'
            )
        if pvc.metadata.deletion_timestamp:
            return unresolvable(f'persistentvolumeclaim "{name}" is being deleted')
        if ephemeral:
            why = ephemeral_owner_error(pod, pvc)
            if why is not None:
                return unresolvable(why)
        pvcs.append(pvc)
    bound: list[Claim] = []
    delayed: list[Claim] = []
    immediate = False
    seen: set[str] = set()
    for pvc in pvcs:
        key = claim_key(namespace, pvc.metadata.name)
        if key in seen:
            continue  # the same claim mounted twice is one claim to bind
        seen.add(key)
        uid = pvc.metadata.uid
        class_name = claim_class(pvc)
        volume = pvc.spec.volume_name if fully_bound(pvc) else assume_cache.bound_volume(key, uid)
        if volume:
            bound.append(Claim(key, pvc, class_name, volume=volume))
            continue
        delay = False
        sc = objects.storage_class(class_name) if class_name else None
        if sc is not None:
            mode = binding_mode(sc)
            if mode is None:
                return Status.as_error(binding_mode_not_set(class_name))
            delay = mode == WAIT_FOR_FIRST_CONSUMER
        if not delay or pvc.spec.volume_name:
            immediate = True  # the PV controller binds it; the scheduler must wait
            continue
        selected = pvc.metadata.annotations.get(ANN_SELECTED_NODE) or assume_cache.selected_node(key, uid)
        delayed.append(Claim(key, pvc, class_name, selected_node=selected))
    if immediate:
        return unresolvable(ERR_UNBOUND_IMMEDIATE)
    return PreFilterState(objects, table, tuple(bound), tuple(delayed))


def evaluate(data: PreFilterState, nodes: NodeSet, assume_cache: AssumeCache) -> Evaluation:
    """Per node of `nodes`: the reasons the pod's claims fail there, and the volume choices."""
    n = len(nodes)
    selectors: dict[str, BoolArray] = {}

    def fits(pv: PersistentVolume) -> BoolArray:
        mask = selectors.get(pv.metadata.name)
        if mask is None:
            required = pv_affinity(pv)
            mask = np.ones(n, dtype=np.bool_) if required is None else BatchNodeSelector(required).mask(nodes)
            selectors[pv.metadata.name] = mask
        return mask

    # Bound claims, in order; a node's first failing claim decides its reason.
    undecided = np.ones(n, dtype=np.bool_)
    node_conflict = np.zeros(n, dtype=np.bool_)
    pv_missing = np.zeros(n, dtype=np.bool_)
    for claim in data.bound:
        pv = data.objects.pv(claim.volume)
        if pv is None:
            pv_missing |= undecided
            break
        ok = fits(pv)
        node_conflict |= undecided & ~ok
        undecided &= ok

    static: list[tuple[Claim, list[PersistentVolume], IntArray]] = []
    provision: list[tuple[Claim, BoolArray]] = []
    wrong_node = np.zeros(n, dtype=np.bool_)
    if data.delayed:
        names = np.asarray(nodes.names, dtype=object)
        chosen: dict[str, BoolArray] = {}
        # Upstream's order: claims with a selected node first, then the others from the
        # smallest request up (each takes the smallest PV that fits; the sort is stable).
        for claim in data.delayed:
            if claim.selected_node:
                wrong_node |= names != claim.selected_node
                provision.append((claim, np.ones(n, dtype=np.bool_)))
        to_match = sorted(
            (c for c in data.delayed if not c.selected_node),
            key=lambda c: storage_of(c.pvc.spec.resources.requests),
        )
        for claim in to_match:
            prebound, candidates = _candidates(data, claim, assume_cache)
            choice = np.full(n, -1, dtype=np.int64)
            if prebound is not None:
                candidates = [prebound]
                choice[fits(prebound)] = 0  # elsewhere the claim's own PV is no option
            else:
                remaining = np.ones(n, dtype=np.bool_)
                for i, pv in enumerate(candidates):
                    taken = chosen.get(pv.metadata.name)
                    take = remaining & fits(pv)
                    if taken is not None:
                        take &= ~taken
                    if not take.any():
                        continue
                    choice[take] = i
                    remaining &= ~take
                    chosen[pv.metadata.name] = take if taken is None else taken | take
                    if not remaining.any():
                        break
            static.append((claim, candidates, choice))
            unmatched = choice < 0
            if unmatched.any():
                provision.append((claim, unmatched))
    # Claims to provision, in order: on each node the first one that cannot be provisioned
    # there decides its reason (a node with a claim selected for another node has no other).
    bind_conflict = wrong_node.copy()
    not_enough = np.zeros(n, dtype=np.bool_)
    undecided = ~wrong_node
    capacity: list[tuple[Claim, list[CSIStorageCapacity], IntArray]] = []
    for claim, where in provision:
        need = undecided & where
        if not need.any():
            continue
        cannot = need & ~_provisionable(data, claim, nodes)
        bind_conflict |= cannot
        undecided &= ~cannot
        tracked = _capacity(data, claim, nodes)
        if tracked is None:
            continue
        short = need & ~cannot & (tracked[1] < 0)
        not_enough |= short
        undecided &= ~short
        capacity.append((claim, *tracked))
    return Evaluation(node_conflict, bind_conflict, not_enough, pv_missing, static, provision, capacity)


def _candidates(
    data: PreFilterState, claim: Claim, assume_cache: AssumeCache
) -> tuple[PersistentVolume | None, list[PersistentVolume]]:
    """The PV pre-bound to the claim (if usable), else the available PVs that fit it, smallest first.

    Everything here is independent of the node, so it is worked out once per claim and cycle.
    """
    memo = data.candidates.get(claim.key)
    if memo is not None:
        return memo
    pvc = claim.pvc
    requested = storage_of(pvc.spec.resources.requests)
    mode = pvc.spec.volume_mode or FILESYSTEM
    selector = compile_label_selector(pvc.spec.selector) if pvc.spec.selector is not None else None
    wanted_modes = set(pvc.spec.access_modes)
    sized: list[tuple[int, str, PersistentVolume]] = []
    prebound: PersistentVolume | None = None
    for pv in data.objects.pvs():
        if volume_class(pv) != claim.class_name:
            continue
        owner = _claim_ref(pv, assume_cache)
        if owner is not None and not _is_for(owner, claim):
            continue
        try:
            capacity = storage_of(pv.spec.capacity)
        except QuantityError:
            continue  # a volume whose size cannot be read fits nothing
        if capacity < requested or (pv.spec.volume_mode or FILESYSTEM) != mode:
            continue
        if owner is not None:
            prebound = pv
            break
        if pv.status.phase not in ("", "Available"):
            continue
        if selector is not None and not selector.matches(pv.metadata.labels):
            continue
        if not wanted_modes <= set(pv.spec.access_modes):
            continue
        sized.append((capacity, pv.metadata.name, pv))
    sized.sort(key=lambda item: (item[0], item[1]))
    result = (prebound, [] if prebound is not None else [pv for _, _, pv in sized])
    data.candidates[claim.key] = result
    return result


def _claim_ref(pv: PersistentVolume, assume_cache: AssumeCache) -> ClaimId | None:
    """Who the PV is bound or pre-bound to: its claimRef, else this plugin's assumption."""
    ref = pv.spec.claim_ref
    if ref is not None and ref.get("name"):
        return ClaimId(claim_key(ref.get("namespace") or "default", ref["name"]), ref.get("uid", ""))
    return assume_cache.claim_of(pv.metadata.name)


def _is_for(owner: ClaimId, claim: Claim) -> bool:
    return owner.key == claim.key and (not owner.uid or owner.uid == claim.pvc.metadata.uid)


def _provisionable(data: PreFilterState, claim: Claim, nodes: NodeSet) -> BoolArray:
    sc = data.objects.storage_class(claim.class_name)
    if sc is None or not sc.provisioner or sc.provisioner == NOT_SUPPORTED_PROVISIONER:
        return np.zeros(len(nodes), dtype=np.bool_)
    return topology_mask(sc, nodes)


def _capacity(
    data: PreFilterState, claim: Claim, nodes: NodeSet
) -> tuple[list[CSIStorageCapacity], IntArray] | None:
    """Which CSIStorageCapacity serves the claim on each node (-1: none with room), or None
    when capacity is not checked (no storage request, or the driver does not ask for it).

    As upstream: the claim's class must be named by the capacity, its `maximumVolumeSize`
    (else `capacity`) must hold the request, and its `nodeTopology` must select the node.
    """
    requested = claim.pvc.spec.resources.requests.get(STORAGE)
    sc = data.objects.storage_class(claim.class_name)
    if requested is None or sc is None:
        return None
    driver = data.objects.csi_driver(sc.provisioner)
    if driver is None or not driver.spec.storage_capacity:
        return None
    size = quantity_nanos(requested)
    roomy: list[CSIStorageCapacity] = []
    for cap in data.objects.storage_capacities(claim.class_name):
        limit = cap.maximum_volume_size if cap.maximum_volume_size is not None else cap.capacity
        try:
            if limit is not None and quantity_nanos(limit) >= size:
                roomy.append(cap)
        except QuantityError:
            continue  # a capacity that cannot be read serves nothing
    choice = np.full(len(nodes), -1, dtype=np.int64)
    labels = [info.node.metadata.labels for info in nodes.infos]
    for i, cap in enumerate(roomy):
        if cap.node_topology is None:
            continue  # upstream: "unavailable"
        try:
            matcher = compile_label_selector(cap.node_topology)
        except InputError:
            continue  # upstream logs the bad selector and skips the object
        open_rows = np.flatnonzero(choice < 0)
        for pos in open_rows:
            if matcher.matches(labels[pos]):
                choice[pos] = i
        if not (choice < 0).any():
            break
    return roomy, choice
