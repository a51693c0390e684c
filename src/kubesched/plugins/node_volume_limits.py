"""NodeVolumeLimits (upstream's CSILimits): a node attaches at most N volumes of each CSI driver.

The limit of driver D on node X is `spec.drivers[name=D].allocatable.count` of the CSINode named X;
a node without a CSINode, or a driver without a count, has no limit. Volumes are counted once per
unique `driver + volume handle` (upstream `pkg/scheduler/framework/plugins/nodevolumelimits/csi.go`):

* a claim bound to a PV with `spec.csi` counts as (`csi.driver`, `csi.volumeHandle`);
* a claim not bound yet counts as (its StorageClass's provisioner, `<namespace>-<claim>`): the
  volume the provisioner will create;
* generic ephemeral volumes count like the claim the ephemeral volume controller makes for them;
* in-tree AWS EBS and GCE PD volumes (inline or in a PV, and claims of classes with in-tree
  provisioners) count against the CSI driver that took them over (`ebs.csi.aws.com`,
  `pd.csi.storage.gke.io`, ...), as CSI migration (GA) does. Upstream applies that translation on
  nodes with a CSINode; only those can have limits, so it is applied throughout here.

Inline `csi:` volumes (CSI ephemeral volumes) are not attached through the attach/detach
controller and, as upstream, are not counted.

Before the limits, the driver check of v1.37 (VolumeLimitScaling, beta, on): when the CSIDriver
object of a driver the pod's volumes use sets `spec.preventPodSchedulingIfMissing: true`, a node
whose CSINode does not list that driver — or that has no CSINode — fails with `<driver> CSI driver
is not installed on the node` (Unschedulable). A driver without a CSIDriver object passes (it may
not be a CSI driver). On a node without a CSINode, in-tree volumes are not translated, as upstream.
Not modelled: v1.37 also counts the node's VolumeAttachment objects towards the limits (kubesched
counts the volumes of the pods on the node only).

A node fails with `node(s) exceed max volume count` (Unschedulable) when, for some driver, the
volumes already used by its pods plus the pod's volumes not already on it exceed the limit. A claim
the pod names that does not exist makes every node UnschedulableAndUnresolvable (`looking up PVC
ns/name: persistentvolumeclaim "name" not found`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Pod, Volume
from kubesched.api.storage import CSINode, CSINodeDriver, PersistentVolume, PersistentVolumeClaim
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interfaces import (
    BatchFilterPlugin,
    EnqueueExtensions,
    FilterPlugin,
    PreFilterPlugin,
)
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import BatchFilterResult, NodeSet, NodeTable
from kubesched.framework.signature import SignFragment, volumes_fragment
from kubesched.framework.status import Code, Status
from kubesched.plugins._volumes import (
    VOLUME_KINDS,
    RepeatsFailuresWithoutClaims,
    VolumeHandle,
    VolumeObjects,
    claim_class,
    ephemeral_owner_error,
    pod_claims,
    pvc_not_found,
)

__all__ = [
    "ERR_REASON_MAX_VOLUME_COUNT",
    "IN_TREE_TO_CSI",
    "NodeVolumeLimits",
    "driver_not_installed",
    "node_volume_limits",
]

ERR_REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"

#: In-tree provisioner / plugin name -> the CSI driver that took it over (CSI migration, GA).
IN_TREE_TO_CSI: dict[str, str] = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
}
_EBS = "kubernetes.io/aws-ebs"
_GCE_PD = "kubernetes.io/gce-pd"

#: unique volume name (`driver/handle`) -> driver
Volumes = dict[str, str]


class _LookupError(Exception):
    """A volume of the pod cannot be resolved; `code` says whether that can resolve itself."""

    def __init__(self, message: str, code: Code) -> None:
        super().__init__(message)
        self.code = code


def node_volume_limits(csi_node: CSINode | None) -> dict[str, int]:
    """Driver -> attach limit declared by the node's CSINode (drivers without a count have none)."""
    if csi_node is None:
        return {}
    return {
        d.name: d.allocatable.count
        for d in csi_node.spec.drivers
        if d.allocatable is not None and d.allocatable.count is not None
    }


def _ebs_handle(volume_id: str) -> str:
    """`aws://zone/vol-1` and `vol-1` name the same EBS volume: keep the last path element."""
    return volume_id.rsplit("/", 1)[-1] if volume_id.startswith("aws://") else volume_id


def _in_tree(source_gce: dict[str, Any] | None, source_ebs: dict[str, Any] | None) -> tuple[str, str] | None:
    """(in-tree plugin, CSI volume handle) of an in-tree GCE PD / AWS EBS source, or None."""
    if source_ebs is not None:
        return _EBS, _ebs_handle(str(source_ebs.get("volumeID", "")))
    if source_gce is not None:
        return _GCE_PD, f"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{source_gce.get('pdName', '')}"
    return None


class _Counter:
    """Resolves pods' volumes to unique CSI volumes, reading objects through one VolumeObjects."""

    __slots__ = ("migrate", "objects")

    def __init__(self, objects: VolumeObjects, *, migrate: bool = True) -> None:
        self.objects = objects
        #: Count in-tree volumes against the CSI driver that took them over. Upstream does so on
        #: nodes with a CSINode only; limits exist only there, so only the driver check needs False.
        self.migrate = migrate

    def attachable(self, pod: Pod, *, new_pod: bool, into: Volumes) -> None:
        """Add the pod's CSI volumes to `into`.

        For the pod being scheduled a missing claim raises (the pod cannot run without it); for
        pods already on the node a missing claim is not counted, as nothing says which volume it was.
        """
        namespace = pod.metadata.namespace
        for volume in pod.spec.volumes:
            if volume.persistent_volume_claim is None and volume.ephemeral is None and self.migrate:
                self._inline(volume, into)
        for _, claim_name, ephemeral in pod_claims(pod):
            if not claim_name:
                raise _LookupError("PersistentVolumeClaim had no name", Code.ERROR)
            pvc = self.objects.pvc(namespace, claim_name)
            if pvc is None:
                if new_pod:
                    raise _LookupError(
                        f"looking up PVC {namespace}/{claim_name}: {pvc_not_found(claim_name)}",
                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    )
                continue
            if ephemeral:
                why = ephemeral_owner_error(pod, pvc)
                if why is not None:
                    raise _LookupError(why, Code.ERROR)
            found = self._driver_of_claim(pvc)
            if found is not None:
                driver, handle = found
                into[f"{driver}/{handle}"] = driver

    @staticmethod
    def _inline(volume: Volume, into: Volumes) -> None:
        tree = _in_tree(volume.gce_persistent_disk, volume.aws_elastic_block_store)
        if tree is None:
            return
        driver = IN_TREE_TO_CSI[tree[0]]
        into[f"{driver}/{tree[1]}"] = driver

    def _driver_of_claim(self, pvc: PersistentVolumeClaim) -> tuple[str, str] | None:
        pv_name = pvc.spec.volume_name
        pv = self.objects.pv(pv_name) if pv_name else None
        if pv is None:
            return self._driver_of_class(pvc)
        return self._driver_of_volume(pv)

    def _driver_of_volume(self, pv: PersistentVolume) -> tuple[str, str] | None:
        csi = pv.spec.csi
        if csi is not None:
            driver, handle = str(csi.get("driver", "")), str(csi.get("volumeHandle", ""))
            return (driver, handle) if driver and handle else None
        if not self.migrate:
            return None
        tree = _in_tree(pv.spec.gce_persistent_disk, pv.spec.aws_elastic_block_store)
        return (IN_TREE_TO_CSI[tree[0]], tree[1]) if tree is not None else None

    def _driver_of_class(self, pvc: PersistentVolumeClaim) -> tuple[str, str] | None:
        """An unbound claim will get a volume from its class's provisioner; name it by the claim."""
        class_name = claim_class(pvc)
        sc = self.objects.storage_class(class_name) if class_name else None
        if sc is None:
            return None
        handle = f"{pvc.metadata.namespace}-{pvc.metadata.name}"
        if sc.provisioner in IN_TREE_TO_CSI and not self.migrate:
            return None
        provisioner = IN_TREE_TO_CSI.get(sc.provisioner, sc.provisioner)
        return (provisioner, handle) if provisioner else None


def _may_use_csi(pod: Pod) -> bool:
    return any(
        v.persistent_volume_claim is not None
        or v.ephemeral is not None
        or v.aws_elastic_block_store is not None
        or v.gce_persistent_disk is not None
        for v in pod.spec.volumes
    )


class NodeVolumeLimits(
    PreFilterPlugin, FilterPlugin, BatchFilterPlugin, EnqueueExtensions, RepeatsFailuresWithoutClaims
):
    """Keep each node's CSI volumes per driver within its CSINode's attach limits."""

    name: ClassVar[str] = "NodeVolumeLimits"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = (*VOLUME_KINDS, *("CSIDriver",))

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """KEP-5598: the parts of the pod this plugin's answers depend on."""
        return [volumes_fragment(pod)]

    def __init__(self, handle: VolumeHandle | None = None) -> None:
        self._handle = handle

    def pre_filter(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        """Skip pods without claims, ephemeral volumes or migratable in-tree volumes."""
        return None if _may_use_csi(pod) else Status.skip()

    # -- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        result = self.filter_nodes(state, pod, NodeTable([node_info]).all())
        return None if result.codes[0] < 0 else result.statuses[int(result.codes[0])]

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        """The driver check on every node when a driver of the pod's volumes asks for it; the
        limits only on nodes whose CSINode limits a driver the pod's volumes use."""
        n = len(nodes)
        if not pod.spec.volumes or n == 0:
            return BatchFilterResult.all_pass(n)
        counter = _Counter(VolumeObjects(self._handle))
        # Which drivers do the pod's volumes use? A missing claim fails every node alike.
        drivers: Volumes = {}
        try:
            counter.attachable(pod, new_pod=True, into=drivers)
        except _LookupError as err:
            return BatchFilterResult.all_fail(n, _status(err))
        wanted = set(drivers.values())
        if not wanted:
            return BatchFilterResult.all_pass(n)
        codes = np.full(n, -1, dtype=np.int32)
        statuses: dict[Status, int] = {}
        self._check_drivers(counter, pod, nodes, drivers, codes, statuses)
        position = {int(row): i for i, row in enumerate(nodes.rows)}
        table = nodes.table
        for csi_node in counter.objects.csi_nodes():
            row = table.index.get(csi_node.metadata.name, -1)
            pos = position.get(row)
            if pos is None or codes[pos] >= 0 or not wanted & node_volume_limits(csi_node).keys():
                continue
            status = self._check(counter, pod, table.infos[row], csi_node, drivers)
            if status is not None:
                codes[pos] = statuses.setdefault(status, len(statuses))
        return BatchFilterResult(codes, list(statuses))

    @staticmethod
    def _check_drivers(
        counter: _Counter,
        pod: Pod,
        nodes: NodeSet,
        drivers: Volumes,
        codes: npt.NDArray[np.int32],
        statuses: dict[Status, int],
    ) -> None:
        """v1.37 (VolumeLimitScaling, beta): a CSIDriver with `preventPodSchedulingIfMissing`
        keeps the pod off nodes whose CSINode does not list the driver (or that have none)."""
        objects = counter.objects
        opted = [d for d in dict.fromkeys(drivers.values()) if _prevents_if_missing(objects, d)]
        if not opted:
            return
        # On a node without CSINode upstream does not translate in-tree volumes: count them anew.
        native: Volumes = {}
        _Counter(objects, migrate=False).attachable(pod, new_pod=True, into=native)
        opted_native = [d for d in dict.fromkeys(native.values()) if d in opted]
        for pos, name in enumerate(nodes.names):
            csi_node = objects.csi_node(name)
            if csi_node is None:
                missing = opted_native[0] if opted_native else None
            else:
                installed = {d.name for d in csi_node.spec.drivers}
                missing = next((d for d in opted if d not in installed), None)
            if missing is not None:
                status = Status.unschedulable(driver_not_installed(missing))
                codes[pos] = statuses.setdefault(status, len(statuses))

    def _check(
        self, counter: _Counter, pod: Pod, node_info: NodeInfo, csi_node: CSINode | None, wanted: Volumes
    ) -> Status | None:
        """Would the pod's volumes `wanted` push some driver over the node's limit?"""
        new = dict(wanted)
        if not new:
            return None
        limits = node_volume_limits(csi_node)
        if not limits:
            return None
        attached: Volumes = {}
        try:
            for pi in node_info.pods.values():
                counter.attachable(pi.pod, new_pod=False, into=attached)
        except _LookupError as err:
            return Status.as_error(str(err))
        in_use: dict[str, int] = {}
        for unique, driver in attached.items():
            new.pop(unique, None)  # a volume already attached for another pod costs nothing more
            in_use[driver] = in_use.get(driver, 0) + 1
        adding: dict[str, int] = {}
        for driver in new.values():
            adding[driver] = adding.get(driver, 0) + 1
        for driver, count in adding.items():
            limit = limits.get(driver)
            if limit is not None and in_use.get(driver, 0) + count > limit:
                return Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT)
        return None

    # -- requeueing
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As v1.37.2: a new CSINode; an updated one that raised a driver's limit; a deleted bound
        pod that may have held CSI volumes; a missing claim appearing. (Upstream also listens for
        VolumeAttachment deletes, which kubesched does not model: see the module docstring.)"""
        return [
            ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, ActionType.UPDATE), _after_csi_node_updated),
            ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE), _after_pod_deleted),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD), _after_claim_added
            ),
        ]


def driver_not_installed(driver: str) -> str:
    return f"{driver} CSI driver is not installed on the node"


def _prevents_if_missing(objects: VolumeObjects, driver: str) -> bool:
    """A driver without a CSIDriver object may not be a CSI driver at all: upstream lets it pass."""
    found = objects.csi_driver(driver)
    return found is not None and bool(found.spec.prevent_pod_scheduling_if_missing)


def _status(err: _LookupError) -> Status:
    if err.code == Code.ERROR:
        return Status.as_error(str(err))
    return Status(err.code, str(err))


def _after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Only a bound (or nominated) pod that may have held CSI volumes frees anything."""
    if not isinstance(old, Pod):
        return QueueingHint.QUEUE
    held = bool(old.spec.node_name or old.status.nominated_node_name)
    return QueueingHint.QUEUE if held and _may_use_csi(old) else QueueingHint.SKIP


def _after_csi_node_updated(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when some driver's attach limit grew (a driver without a count has limit 0)."""
    if not isinstance(old, CSINode) or not isinstance(new, CSINode):
        return QueueingHint.QUEUE

    def count(d: CSINodeDriver) -> int:
        return d.allocatable.count if d.allocatable is not None and d.allocatable.count is not None else 0

    before = {d.name: count(d) for d in old.spec.drivers}
    grew = any(count(d) > before.get(d.name, 0) for d in new.spec.drivers)
    return QueueingHint.QUEUE if grew else QueueingHint.SKIP


def _after_claim_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    meta = getattr(new, "metadata", None)
    if meta is None:
        return QueueingHint.QUEUE
    if meta.namespace != pod.metadata.namespace:
        return QueueingHint.SKIP
    names = {name for _, name, _ in pod_claims(pod)}
    return QueueingHint.QUEUE if meta.name in names else QueueingHint.SKIP
