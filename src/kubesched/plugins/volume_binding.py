"""VolumeBinding: a pod's claims must be bound — or bindable on the node — before it runs there.

What upstream does (reference §3.2, §3.3, §3.5, §8.3), and how it maps here:

* **PreFilter** resolves the pod's claims (`persistentVolumeClaim` volumes and the claims of
  generic ephemeral volumes, `<pod>-<volume>`). It returns Skip for a pod without claims and
  rejects the pod (UnschedulableAndUnresolvable) when a claim does not exist (`persistentvolumeclaim
  "x" not found`; for an ephemeral volume `waiting for ephemeral volume controller to create the
  persistentvolumeclaim "x"`), is being deleted, is `Lost` (`... bound to non-existent
  persistentvolume ...`), belongs to another pod (ephemeral), or is unbound while its class binds
  immediately (`pod has unbound immediate PersistentVolumeClaims`: the PV controller binds those, not
  the scheduler). It narrows no candidate nodes (v1.37.2).
* **Filter** checks, per node: every bound claim's PV node affinity (`node(s) didn't match
  PersistentVolume's node affinity`) and that its PV exists (`node(s) unavailable due to one or more
  pvc(s) bound to non-existent pv(s)`); then for each unbound WaitForFirstConsumer claim, the
  smallest available static PV of its class that fits it (capacity ≥ request, access modes, volume
  mode, label selector, PV node affinity, not claimed by another claim, not chosen for another claim
  of the pod), or else dynamic provisioning (the class has a provisioner other than
  `kubernetes.io/no-provisioner` and its `allowedTopologies` admit the node) — otherwise `node(s)
  didn't find available persistent volumes to bind`. All of a node's reasons go into one
  UnschedulableAndUnresolvable status.
* **Reserve** records the node's choices in the plugin's assume cache: the chosen PVs count as
  claimed, so the next pod cannot take them; claims to provision count as provisioned for that node
  (the `volume.kubernetes.io/selected-node` annotation upstream sets). **Unreserve** undoes that.
* **PreBind** performs the binding. When the Handle implements `VolumeBinder` (live mode) it asks
  it to bind each claim to its PV or to provision it for the node, waiting up to
  `bindTimeoutSeconds`; a failure is an Error and the pod is retried. The simulator's Handle has no
  PV/PVC write API: there the assumed binding is committed in the assume cache, and later pods see
  the claim bound to that PV (or provisioned for that node).

* **Capacity** (CSIStorageCapacity): a claim to provision whose class's provisioner is a CSIDriver
  with `storageCapacity: true` and that requests storage needs, on the node, a CSIStorageCapacity of
  its class whose `nodeTopology` selects the node and whose `maximumVolumeSize` (else `capacity`)
  holds the request — otherwise `node(s) did not have enough free storage`. On each node the first
  claim to provision that fails decides the reason (claims with a selected node first, then the
  others from the smallest request up, as upstream orders them).
* **Score** (StorageCapacityScoring, beta and on by default since v1.37): PreScore never skips, so
  every pod gets a VolumeBinding score on every node, 0 unless the node has volumes to choose. Per
  storage class `u = requested * 100 // capacity` (100 when the capacity is 0 or too small) is
  mapped through `shape` (default: 0 -> 10, 100 -> 0, scores x10, so the tightest fit is *least*
  preferred), and the node scores the rounded mean over classes. The classes are those of the
  static PVs chosen on the node (their capacities summed) if there are any; otherwise those of the
  claims to provision there with a CSIStorageCapacity (the class's capacity on the node, requests
  summed). When several CSIStorageCapacity objects serve the same node and class, upstream takes
  whichever its lister yields first (not defined); kubesched takes the first by namespace and name.

Not modelled: VolumeAttributesClass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.api.objects import (
    CSIStorageCapacity,
    NodeSelector,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
)
from kubesched.api.quantity import QuantityError, quantity_nanos
from kubesched.api.selectors import compile_label_selector
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interfaces import (
    BatchFilterPlugin,
    BatchScorePlugin,
    EnqueueExtensions,
    FilterPlugin,
    PreBindPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from kubesched.framework.node_info import NodeInfo, pod_key
from kubesched.framework.node_table import BatchFilterResult, BoolArray, NodeSet, NodeTable
from kubesched.framework.signature import SignFragment, volumes_fragment
from kubesched.framework.status import Code, Status
from kubesched.framework.types import MAX_NODE_SCORE, PreFilterResult
from kubesched.plugins._node_selector_batch import BatchNodeSelector
from kubesched.plugins._volumes import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    VOLUME_KINDS,
    WAIT_FOR_FIRST_CONSUMER,
    RepeatsFailuresWithoutClaims,
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
from kubesched.plugins.node_resources_fit import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    broken_linear,
    validate_shape,
)
from kubesched.plugins.node_resources_fit import UtilizationShapePoint as _FitShapePoint

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "ERR_UNBOUND_IMMEDIATE",
    "AssumeCache",
    "VolumeBinder",
    "VolumeBinding",
    "VolumeBindingArgs",
    "default_shape",
]

ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"

PRE_FILTER_STATE_KEY = "PreFilterVolumeBinding"
RESERVE_STATE_KEY = "ReserveVolumeBinding"

DEFAULT_BIND_TIMEOUT_SECONDS = 600
FILESYSTEM = "Filesystem"
STORAGE = "storage"

IntArray = npt.NDArray[np.int64]


# --------------------------------------------------------------------------- args


class UtilizationShapePoint(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """A point of the StorageCapacityScoring curve: utilization 0..100 -> score 0..10."""

    utilization: int = 0
    score: int = 0


class VolumeBindingArgs(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """pluginConfig args (kind VolumeBindingArgs)."""

    #: How long PreBind waits for the API binding to complete (0: do not wait).
    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    #: Scoring curve of StorageCapacityScoring (on by default since v1.37); upstream's default
    #: favours the node whose volumes leave the most room.
    shape: list[UtilizationShapePoint] = msgspec.field(default_factory=lambda: default_shape())

    def __post_init__(self) -> None:
        if not self.shape:  # upstream defaulting: an empty shape means the default one
            self.shape = default_shape()

    def validate(self) -> list[InputError]:
        errors: list[InputError] = []
        if self.bind_timeout_seconds < 0:
            errors.append(
                InputError(
                    "invalid BindTimeoutSeconds, should not be a negative value", path="bindTimeoutSeconds"
                )
            )
        points = [_FitShapePoint(utilization=p.utilization, score=p.score) for p in self.shape]
        errors.extend(validate_shape(points, "shape"))
        return errors


def default_shape() -> list[UtilizationShapePoint]:
    """v1.37's default VolumeBindingArgs.shape: utilization 0 scores 10, utilization 100 scores 0."""
    return [
        UtilizationShapePoint(utilization=0, score=MAX_CUSTOM_PRIORITY_SCORE),
        UtilizationShapePoint(utilization=MAX_UTILIZATION, score=0),
    ]


# --------------------------------------------------------------------------- live binding


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


# --------------------------------------------------------------------------- assume cache


@dataclass(frozen=True, slots=True)
class _ClaimId:
    key: str  # namespace/name
    uid: str


class AssumeCache:
    """Binding decisions the listers do not show (yet, or ever in the simulator).

    * `pv -> claim`: a static PV chosen for a claim (its claimRef, as the API would show it);
    * `claim -> node`: a claim to be provisioned for a node (its selected-node annotation);
    * `claim -> pv`: a static binding PreBind completed (the claim counts as bound).

    Entries made by Reserve are remembered per pod, so Unreserve can revert exactly those;
    PreBind commits them. The listers win whenever they show a binding themselves.
    """

    def __init__(self) -> None:
        self._pv_claims: dict[str, _ClaimId] = {}
        self._claim_nodes: dict[str, tuple[str, str]] = {}
        self._claim_pvs: dict[str, tuple[str, str]] = {}
        self._undo: dict[str, list[tuple[str, str]]] = {}

    def claim_of(self, pv_name: str) -> _ClaimId | None:
        return self._pv_claims.get(pv_name)

    def bound_volume(self, key: str, uid: str) -> str:
        entry = self._claim_pvs.get(key)
        return entry[1] if entry is not None and entry[0] == uid else ""

    def selected_node(self, key: str, uid: str) -> str:
        entry = self._claim_nodes.get(key)
        return entry[1] if entry is not None and entry[0] == uid else ""

    def assume(self, owner: str, decision: _Decision) -> None:
        undo = self._undo.setdefault(owner, [])
        for claim, pv_name in decision.static:
            if pv_name not in self._pv_claims:
                self._pv_claims[pv_name] = claim.id
                undo.append(("pv", pv_name))
        for claim in decision.provision:
            if claim.key not in self._claim_nodes:
                self._claim_nodes[claim.key] = (claim.id.uid, decision.node)
                undo.append(("node", claim.key))

    def revert(self, owner: str) -> None:
        for kind, name in reversed(self._undo.pop(owner, [])):
            if kind == "pv":
                self._pv_claims.pop(name, None)
            else:
                self._claim_nodes.pop(name, None)

    def commit(self, owner: str, decision: _Decision) -> None:
        self._undo.pop(owner, None)
        for claim, pv_name in decision.static:
            self._claim_pvs[claim.key] = (claim.id.uid, pv_name)
            self._pv_claims.setdefault(pv_name, claim.id)

    def __len__(self) -> int:
        return len(self._pv_claims) + len(self._claim_nodes)


# --------------------------------------------------------------------------- claims


@dataclass(frozen=True, slots=True)
class _Claim:
    key: str
    pvc: PersistentVolumeClaim
    class_name: str
    #: Bound PV name ("" when unbound).
    volume: str = ""
    #: Node the claim is (to be) provisioned for ("" when none).
    selected_node: str = ""

    @property
    def id(self) -> _ClaimId:
        return _ClaimId(self.key, self.pvc.metadata.uid)


@dataclass(frozen=True, slots=True)
class _Decision:
    node: str
    static: tuple[tuple[_Claim, str], ...] = ()
    provision: tuple[_Claim, ...] = ()

    def clone(self) -> _Decision:
        return self


@dataclass(slots=True)
class _PreFilterState:
    objects: VolumeObjects
    table: NodeTable | None
    bound: tuple[_Claim, ...]
    delayed: tuple[_Claim, ...]
    _candidates: dict[str, tuple[PersistentVolume | None, list[PersistentVolume]]] = field(
        default_factory=dict
    )

    def clone(self) -> _PreFilterState:
        return self  # never changed after PreFilter (the candidate memo is the same for every clone)


@dataclass(slots=True)
class _Evaluation:
    """Per node (aligned with the NodeSet): the reasons, and the volume choices."""

    node_conflict: BoolArray
    bind_conflict: BoolArray
    not_enough_space: BoolArray
    pv_missing: BoolArray
    #: per claim to match: (claim, candidate PVs, index of the PV chosen per node or -1)
    static: list[tuple[_Claim, list[PersistentVolume], IntArray]]
    #: per claim needing provisioning somewhere: (claim, nodes where it is provisioned)
    provision: list[tuple[_Claim, BoolArray]]
    #: per claim provisioned by a driver that tracks capacity: (claim, its class's capacities
    #: large enough, index of the one serving each node or -1)
    capacity: list[tuple[_Claim, list[CSIStorageCapacity], IntArray]]

    def failed(self) -> BoolArray:
        return self.node_conflict | self.bind_conflict | self.not_enough_space | self.pv_missing


def _fully_bound(pvc: PersistentVolumeClaim) -> bool:
    """The claim names its volume and the binding is complete.

    Upstream requires the PV controller's bind-completed annotation; a hand-written claim with
    `volumeName` and no status (or `phase: Bound`) is taken as bound too, as applying it to a cluster
    with that PV would quickly make it.
    """
    if not pvc.spec.volume_name:
        return False
    return ANN_BIND_COMPLETED in pvc.metadata.annotations or pvc.status.phase in ("Bound", "")


def _affinity(pv: PersistentVolume) -> NodeSelector | None:
    return pv.spec.node_affinity.get("required") if pv.spec.node_affinity else None


def _storage(values: dict[str, str | int | float]) -> int:
    value = values.get(STORAGE)
    return quantity_nanos(value) if value is not None else 0


def _topology_mask(sc: StorageClass, nodes: NodeSet) -> BoolArray:
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


class VolumeBinding(
    PreFilterPlugin,
    FilterPlugin,
    BatchFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    BatchScorePlugin,
    ReservePlugin,
    PreBindPlugin,
    EnqueueExtensions,
    RepeatsFailuresWithoutClaims,
):
    """Check that the pod's claims are bound or bindable on the node; assume and bind them."""

    name: ClassVar[str] = "VolumeBinding"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = (*VOLUME_KINDS, *("CSIDriver", "CSIStorageCapacity"))
    args_type: ClassVar[type[VolumeBindingArgs]] = VolumeBindingArgs

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """KEP-5598: the parts of the pod this plugin's answers depend on."""
        return [volumes_fragment(pod)]

    def __init__(self, args: VolumeBindingArgs | None = None, handle: VolumeHandle | None = None) -> None:
        self.args = args if args is not None else VolumeBindingArgs()
        errors = self.args.validate()
        if errors:
            raise errors[0]
        self._handle = handle
        self.assume_cache = AssumeCache()
        self._shape_u = [p.utilization for p in self.args.shape]
        self._shape_s = [p.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE) for p in self.args.shape]

    # ------------------------------------------------------------------ PreFilter
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: NodeSet
    ) -> tuple[PreFilterResult | None, Status | None]:
        data = self._resolve(pod, nodes.table)
        if isinstance(data, Status):
            return None, data
        if data is None:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, data)
        # v1.37.2 narrows nothing at PreFilter (not even to the hosts of bound local volumes): every
        # node reaches Filter and reports its own reason (checked against the binary).
        return None, None

    def _resolve(self, pod: Pod, table: NodeTable | None) -> _PreFilterState | Status | None:
        """The pod's claims, split into bound and WaitForFirstConsumer ones; None if it has none."""
        refs = list(pod_claims(pod))
        if not refs:
            return None
        objects = VolumeObjects(self._handle)
        namespace = pod.metadata.namespace
        pvcs: list[PersistentVolumeClaim] = []
        for _, name, ephemeral in refs:
            pvc = objects.pvc(namespace, name)
            if pvc is None:
                if ephemeral:
                    return _unresolvable(
                        "waiting for ephemeral volume controller to create the persistentvolumeclaim "
                        f'"{name}"'
                    )
                return _unresolvable(pvc_not_found(name))
            if pvc.status.phase == "Lost":
                return _unresolvable(
                    f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                    f'"{pvc.spec.volume_name}"'
                )
            if pvc.metadata.deletion_timestamp:
                return _unresolvable(f'persistentvolumeclaim "{name}" is being deleted')
            if ephemeral:
                why = ephemeral_owner_error(pod, pvc)
                if why is not None:
                    return _unresolvable(why)
            pvcs.append(pvc)
        bound: list[_Claim] = []
        delayed: list[_Claim] = []
        immediate = False
        seen: set[str] = set()
        for pvc in pvcs:
            key = claim_key(namespace, pvc.metadata.name)
            if key in seen:
                continue  # the same claim mounted twice is one claim to bind
            seen.add(key)
            uid = pvc.metadata.uid
            class_name = claim_class(pvc)
            volume = pvc.spec.volume_name if _fully_bound(pvc) else self.assume_cache.bound_volume(key, uid)
            if volume:
                bound.append(_Claim(key, pvc, class_name, volume=volume))
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
            selected = pvc.metadata.annotations.get(ANN_SELECTED_NODE) or self.assume_cache.selected_node(
                key, uid
            )
            delayed.append(_Claim(key, pvc, class_name, selected_node=selected))
        if immediate:
            return _unresolvable(ERR_UNBOUND_IMMEDIATE)
        return _PreFilterState(objects, table, tuple(bound), tuple(delayed))

    def _state(self, state: CycleState, pod: Pod) -> _PreFilterState | Status | None:
        data = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(data, _PreFilterState):
            return data
        return self._resolve(pod, None)  # PreFilter disabled: resolve here

    # ------------------------------------------------------------------ Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        result = self.filter_nodes(state, pod, NodeTable([node_info]).all())
        return None if result.codes[0] < 0 else result.statuses[int(result.codes[0])]

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        n = len(nodes)
        data = self._state(state, pod)
        if data is None or n == 0:
            return BatchFilterResult.all_pass(n)
        if isinstance(data, Status):
            return BatchFilterResult.from_mask(np.zeros(n, dtype=np.bool_), data)
        try:
            ev = self._evaluate(data, nodes)
        except QuantityError as err:
            return BatchFilterResult.from_mask(np.zeros(n, dtype=np.bool_), Status.as_error(err))
        # One status per combination of reasons, in upstream's order.
        bits = (
            ev.node_conflict.astype(np.int32)
            | (ev.bind_conflict.astype(np.int32) << 1)
            | (ev.not_enough_space.astype(np.int32) << 2)
            | (ev.pv_missing.astype(np.int32) << 3)
        )
        codes = np.full(n, -1, dtype=np.int32)
        statuses: list[Status] = []
        for combo in np.unique(bits[bits > 0]):
            reasons = [
                reason
                for bit, reason in (
                    (1, ERR_REASON_NODE_CONFLICT),
                    (2, ERR_REASON_BIND_CONFLICT),
                    (4, ERR_REASON_NOT_ENOUGH_SPACE),
                    (8, ERR_REASON_PV_NOT_EXIST),
                )
                if combo & bit
            ]
            codes[bits == combo] = len(statuses)
            statuses.append(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons))
        return BatchFilterResult(codes, statuses)

    def _evaluate(self, data: _PreFilterState, nodes: NodeSet) -> _Evaluation:
        n = len(nodes)
        selectors: dict[str, BoolArray] = {}

        def fits(pv: PersistentVolume) -> BoolArray:
            mask = selectors.get(pv.metadata.name)
            if mask is None:
                required = _affinity(pv)
                mask = (
                    np.ones(n, dtype=np.bool_)
                    if required is None
                    else BatchNodeSelector(required).mask(nodes)
                )
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

        static: list[tuple[_Claim, list[PersistentVolume], IntArray]] = []
        provision: list[tuple[_Claim, BoolArray]] = []
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
                key=lambda c: _storage(c.pvc.spec.resources.requests),
            )
            for claim in to_match:
                prebound, candidates = self._candidates(data, claim)
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
        capacity: list[tuple[_Claim, list[CSIStorageCapacity], IntArray]] = []
        for claim, where in provision:
            need = undecided & where
            if not need.any():
                continue
            cannot = need & ~self._provisionable(data, claim, nodes)
            bind_conflict |= cannot
            undecided &= ~cannot
            tracked = self._capacity(data, claim, nodes)
            if tracked is None:
                continue
            short = need & ~cannot & (tracked[1] < 0)
            not_enough |= short
            undecided &= ~short
            capacity.append((claim, *tracked))
        return _Evaluation(node_conflict, bind_conflict, not_enough, pv_missing, static, provision, capacity)

    def _candidates(
        self, data: _PreFilterState, claim: _Claim
    ) -> tuple[PersistentVolume | None, list[PersistentVolume]]:
        """The PV pre-bound to the claim (if usable), else the available PVs that fit it, smallest first.

        Everything here is independent of the node, so it is worked out once per claim and cycle.
        """
        memo = data._candidates.get(claim.key)
        if memo is not None:
            return memo
        pvc = claim.pvc
        requested = _storage(pvc.spec.resources.requests)
        mode = pvc.spec.volume_mode or FILESYSTEM
        selector = compile_label_selector(pvc.spec.selector) if pvc.spec.selector is not None else None
        wanted_modes = set(pvc.spec.access_modes)
        sized: list[tuple[int, str, PersistentVolume]] = []
        prebound: PersistentVolume | None = None
        for pv in data.objects.pvs():
            if volume_class(pv) != claim.class_name:
                continue
            owner = self._claim_ref(pv)
            if owner is not None and not self._is_for(owner, claim):
                continue
            try:
                capacity = _storage(pv.spec.capacity)
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
        data._candidates[claim.key] = result
        return result

    def _claim_ref(self, pv: PersistentVolume) -> _ClaimId | None:
        """Who the PV is bound or pre-bound to: its claimRef, else this plugin's assumption."""
        ref = pv.spec.claim_ref
        if ref is not None and ref.get("name"):
            return _ClaimId(claim_key(ref.get("namespace") or "default", ref["name"]), ref.get("uid", ""))
        return self.assume_cache.claim_of(pv.metadata.name)

    @staticmethod
    def _is_for(owner: _ClaimId, claim: _Claim) -> bool:
        return owner.key == claim.key and (not owner.uid or owner.uid == claim.pvc.metadata.uid)

    @staticmethod
    def _provisionable(data: _PreFilterState, claim: _Claim, nodes: NodeSet) -> BoolArray:
        sc = data.objects.storage_class(claim.class_name)
        if sc is None or not sc.provisioner or sc.provisioner == NOT_SUPPORTED_PROVISIONER:
            return np.zeros(len(nodes), dtype=np.bool_)
        return _topology_mask(sc, nodes)

    @staticmethod
    def _capacity(
        data: _PreFilterState, claim: _Claim, nodes: NodeSet
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

    # ------------------------------------------------------------------ Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        """Never Skip: with StorageCapacityScoring on, upstream scores every pod (mostly 0)."""
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return int(self.score_nodes(state, pod, NodeTable([node_info]).all())[0])

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> IntArray:
        """Per node, the rounded mean over storage classes of the shape at the class's utilization:
        by the static PVs chosen there if any, else by the volumes to provision there against the
        capacity their CSIStorageCapacity reports; 0 where the pod has neither."""
        n = len(nodes)
        out = np.zeros(n, dtype=np.int64)
        data = self._state(state, pod)
        if not isinstance(data, _PreFilterState) or not data.delayed or n == 0:
            return out
        try:
            ev = self._evaluate(data, nodes)
        except QuantityError:
            return out  # Filter reported it already
        for pos in range(n):
            classes: dict[str, list[int]] = {}
            for claim, pvs, choice in ev.static:
                if choice[pos] < 0:
                    continue
                used = classes.setdefault(claim.class_name, [0, 0])
                used[0] += _storage(claim.pvc.spec.resources.requests)
                used[1] += _storage(pvs[int(choice[pos])].spec.capacity)
            if not classes:
                for claim, caps, choice in ev.capacity:
                    if choice[pos] < 0:
                        continue
                    used = classes.setdefault(claim.class_name, [0, 0])
                    used[0] += _storage(claim.pvc.spec.resources.requests)
                    # the class's capacity on the node, not a sum (as upstream)
                    used[1] = _capacity_value(caps[int(choice[pos])])
            if classes:
                total = sum(self._class_score(req, cap) for req, cap in classes.values())
                out[pos] = (2 * total + len(classes)) // (2 * len(classes))  # Go math.Round
        return out

    def _class_score(self, requested: int, capacity: int) -> int:
        u = (
            MAX_UTILIZATION
            if capacity == 0 or requested > capacity
            else requested * MAX_UTILIZATION // capacity
        )
        return broken_linear(self._shape_u, self._shape_s, u)

    # ------------------------------------------------------------------ Reserve / Unreserve
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Assume the node's volume choices, so later pods do not get the same PVs."""
        data = self._state(state, pod)
        if isinstance(data, Status):
            return data  # only reachable with PreFilter disabled, where Filter rejected the pod too
        if data is None or not data.delayed:
            return None  # no claims, or all bound: nothing to bind
        table = data.table
        if table is None or node_name not in table.index:
            table = self._handle.snapshot if self._handle is not None else None
        if table is None or node_name not in table.index:
            return Status.as_error(f'node "{node_name}" not found')
        nodes = table.subset([node_name])
        try:
            ev = self._evaluate(data, nodes)
        except QuantityError as err:
            return Status.as_error(err)
        if ev.failed()[0]:
            return Status.as_error(
                f'volumes of pod "{pod.metadata.name}" can no longer be bound on {node_name}'
            )
        decision = _Decision(
            node_name,
            static=tuple(
                (claim, pvs[int(choice[0])].metadata.name)
                for claim, pvs, choice in ev.static
                if choice[0] >= 0
            ),
            provision=tuple(claim for claim, where in ev.provision if where[0]),
        )
        self.assume_cache.assume(pod_key(pod), decision)
        state.write(RESERVE_STATE_KEY, decision)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Forget what Reserve assumed for this pod (idempotent)."""
        self.assume_cache.revert(pod_key(pod))
        state.delete(RESERVE_STATE_KEY)

    # ------------------------------------------------------------------ PreBind
    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Work only when Reserve left claims to bind or provision (then the pod shows its
        nominatedNodeName while PreBind waits for them)."""
        decision = state.get(RESERVE_STATE_KEY)
        if not isinstance(decision, _Decision) or not (decision.static or decision.provision):
            return Status.skip()
        return None

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Bind the claims Reserve decided on: through the cluster in live mode, in the cache otherwise."""
        decision = state.get(RESERVE_STATE_KEY)
        if not isinstance(decision, _Decision) or not (decision.static or decision.provision):
            return None
        handle: object = self._handle
        binder = handle if isinstance(handle, VolumeBinder) else None
        if binder is not None:
            timeout = float(self.args.bind_timeout_seconds)
            try:
                for claim, pv_name in decision.static:
                    binder.bind_pvc(claim.pvc, pv_name, timeout=timeout)
                for claim in decision.provision:
                    binder.provision_pvc(claim.pvc, node_name, timeout=timeout)
            except Exception as exc:  # an API failure fails this pod's binding, not the scheduler
                return Status.as_error(f"binding volumes: {exc}")
        self.assume_cache.commit(pod_key(pod), decision)
        return None

    # ------------------------------------------------------------------ requeueing
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Claims, volumes, classes, node labels and the CSI objects all feed the decision."""
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.STORAGE_CLASS, ActionType.ADD | ActionType.UPDATE), _after_class_change
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                _after_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE)
            ),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(Resource.CSI_DRIVER, ActionType.UPDATE)),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_STORAGE_CAPACITY, ActionType.ADD | ActionType.UPDATE)
            ),
        ]


def _capacity_value(cap: CSIStorageCapacity) -> int:
    """The reported capacity (0 when absent or unreadable: the class then scores as full)."""
    try:
        return quantity_nanos(cap.capacity) if cap.capacity is not None else 0
    except QuantityError:
        return 0


def _unresolvable(reason: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)


def _after_claim_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Queue only for the pod's own claims."""
    meta = getattr(new, "metadata", None)
    if meta is None:
        return QueueingHint.QUEUE
    if meta.namespace != pod.metadata.namespace:
        return QueueingHint.SKIP
    names: Sequence[str] = [name for _, name, _ in pod_claims(pod)]
    return QueueingHint.QUEUE if meta.name in names else QueueingHint.SKIP


def _after_class_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A new class may be the missing one; an update matters only if provisioning changed."""
    if not isinstance(old, StorageClass) or not isinstance(new, StorageClass):
        return QueueingHint.QUEUE
    changed = old.allowed_topologies != new.allowed_topologies or old.provisioner != new.provisioner
    return QueueingHint.QUEUE if changed else QueueingHint.SKIP
