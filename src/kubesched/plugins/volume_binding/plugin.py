"""The VolumeBinding plugin: its extension points, its assume cache, its events and queueing hints.

PreFilter resolves the claims (`binder.resolve_claims`), Filter and Score evaluate them on a batch
(`binder.evaluate`, `scorer`), Reserve assumes the node's choices in the plugin's `AssumeCache` and
PreBind binds them, through the live Handle's `VolumeBinder` or in the cache in the simulator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.quantity import QuantityError, quantity_nanos
from kubesched.api.storage import CSIDriver, CSINode, CSIStorageCapacity, StorageClass
from kubesched.config.features import DEFAULT_GATES, FeatureGates
from kubesched.framework.cycle_state import CycleState, pre_filter_state
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
from kubesched.framework.node_table import BatchFilterResult, IntArray, NodeSet, NodeTable
from kubesched.framework.signature import SignFragment, volumes_fragment
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PreFilterResult
from kubesched.framework.uniform_scores import uniform
from kubesched.plugins._volumes import VOLUME_KINDS, RepeatsFailuresWithoutClaims, VolumeHandle, pod_claims
from kubesched.plugins.volume_binding.args import VolumeBindingArgs
from kubesched.plugins.volume_binding.assume_cache import AssumeCache
from kubesched.plugins.volume_binding.binder import Evaluation, VolumeBinder, evaluate, resolve_claims
from kubesched.plugins.volume_binding.claims import PRE_FILTER_STATE_KEY, Decision, PreFilterState
from kubesched.plugins.volume_binding.scorer import CapacityScorer

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "RESERVE_STATE_KEY",
    "VolumeBinding",
]

ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

RESERVE_STATE_KEY = "ReserveVolumeBinding"


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

    def __init__(
        self,
        args: VolumeBindingArgs | None = None,
        handle: VolumeHandle | None = None,
        features: FeatureGates = DEFAULT_GATES,
    ) -> None:
        self.args = args if args is not None else VolumeBindingArgs()
        errors = self.args.validate()
        if errors:
            raise errors[0]
        self._handle = handle
        #: StorageCapacityScoring: off, upstream builds no scorer and PreScore skips every pod.
        self._scores = features.enabled("StorageCapacityScoring")
        self.assume_cache = AssumeCache()
        self._scorer = CapacityScorer(self.args)

    # PreFilter
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

    def _resolve(self, pod: Pod, table: NodeTable | None) -> PreFilterState | Status | None:
        """The pod's claims, split into bound and WaitForFirstConsumer ones; None if it has none."""
        return resolve_claims(pod, table, self._handle, self.assume_cache)

    def _state(self, state: CycleState, pod: Pod) -> PreFilterState | Status | None:
        """The claims PreFilter found; resolved here when PreFilter is disabled (upstream's Filter,
        PreScore and Reserve return an error then: see docs/writing-plugins.md)."""
        return pre_filter_state(
            state, PRE_FILTER_STATE_KEY, PreFilterState, lambda: self._resolve(pod, None), keep=False
        )

    # Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        result = self.filter_nodes(state, pod, NodeTable([node_info]).all())
        return None if result.codes[0] < 0 else result.statuses[int(result.codes[0])]

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        n = len(nodes)
        data = self._state(state, pod)
        if data is None or n == 0:
            return BatchFilterResult.all_pass(n)
        if isinstance(data, Status):
            return BatchFilterResult.all_fail(n, data)
        try:
            ev = self._evaluate(data, nodes)
        except QuantityError as err:
            return BatchFilterResult.all_fail(n, Status.as_error(err))
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

    def _evaluate(self, data: PreFilterState, nodes: NodeSet) -> Evaluation:
        return evaluate(data, nodes, self.assume_cache)

    # Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        """Never Skip with StorageCapacityScoring on (upstream scores every pod, mostly 0); always
        Skip with it off."""
        return None if self._scores else Status.skip()

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return int(self.score_nodes(state, pod, NodeTable([node_info]).all())[0])

    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> IntArray:
        """Per node, the rounded mean over storage classes of the shape at the class's utilization:
        by the static PVs chosen there if any, else by the volumes to provision there against the
        capacity their CSIStorageCapacity reports; 0 where the pod has neither."""
        n = len(nodes)
        data = self._state(state, pod)
        if not isinstance(data, PreFilterState) or not data.delayed or n == 0:
            return uniform(n, 0)
        try:
            ev = self._evaluate(data, nodes)
        except QuantityError:
            return uniform(n, 0)  # Filter reported it already
        return self._scorer.scores(ev, n)

    # Reserve / Unreserve
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
        decision = Decision(
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

    # PreBind
    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Work only when Reserve left claims to bind or provision (then the pod shows its
        nominatedNodeName while PreBind waits for them)."""
        decision = state.get(RESERVE_STATE_KEY)
        if not isinstance(decision, Decision) or not (decision.static or decision.provision):
            return Status.skip()
        return None

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Bind the claims Reserve decided on: through the cluster in live mode, in the cache otherwise."""
        decision = state.get(RESERVE_STATE_KEY)
        if not isinstance(decision, Decision) or not (decision.static or decision.provision):
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

    # requeueing
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
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_NODE, ActionType.ADD | ActionType.UPDATE), _after_csi_node_change
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_DRIVER, ActionType.UPDATE), _after_csi_driver_change
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_STORAGE_CAPACITY, ActionType.ADD | ActionType.UPDATE),
                _after_capacity_change,
            ),
        ]


#: The CSINode annotation naming the in-tree plugins migrated to CSI on that node.
_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"


def _after_csi_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """As v1.37.2: a new CSINode queues; an updated one only when its migrated plugins changed."""
    if old is None:
        return QueueingHint.QUEUE
    if not isinstance(old, CSINode) or not isinstance(new, CSINode):
        return QueueingHint.QUEUE
    before = old.metadata.annotations.get(_MIGRATED_PLUGINS)
    changed = before != new.metadata.annotations.get(_MIGRATED_PLUGINS)
    return QueueingHint.QUEUE if changed else QueueingHint.SKIP


def _after_csi_driver_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """As v1.37.2: queue when a driver of the pod's inline CSI volumes stops publishing storage
    capacity (its capacity no longer limits where the pod fits)."""
    if not isinstance(old, CSIDriver) or not isinstance(new, CSIDriver):
        return QueueingHint.QUEUE
    stopped = old.spec.storage_capacity is True and new.spec.storage_capacity is not True
    uses = any(v.csi is not None and v.csi.get("driver") == new.metadata.name for v in pod.spec.volumes)
    return QueueingHint.QUEUE if stopped and uses else QueueingHint.SKIP


def _after_capacity_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """As v1.37.2: a new CSIStorageCapacity queues; an updated one when its volume limit (the
    maximum volume size, else the capacity) appeared or grew."""
    if old is None:
        return QueueingHint.QUEUE
    if not isinstance(old, CSIStorageCapacity) or not isinstance(new, CSIStorageCapacity):
        return QueueingHint.QUEUE
    try:
        before, after = _volume_limit(old), _volume_limit(new)
    except QuantityError:
        return QueueingHint.QUEUE
    grew = after is not None and (before is None or after > before)
    return QueueingHint.QUEUE if grew else QueueingHint.SKIP


def _volume_limit(cap: CSIStorageCapacity) -> int | None:
    """The largest volume the capacity admits, in nanos: maximumVolumeSize when set, else capacity."""
    limit = cap.maximum_volume_size if cap.maximum_volume_size is not None else cap.capacity
    return None if limit is None else quantity_nanos(limit)


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
