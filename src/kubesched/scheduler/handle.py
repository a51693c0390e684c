"""The Handle each profile's plugins get (upstream's framework.Handle): the cluster as the
scheduler sees it, the waiting pods, nominations, and the writes plugins may make through the port.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from kubesched.api.objects import Pod, PodExtendedResourceClaimStatus
from kubesched.api.resource import AllocationResult, ResourceClaim, ResourceClaimConsumerReference
from kubesched.api.storage import PersistentVolumeClaim
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.group_forest import GroupForest
from kubesched.framework.interfaces import BackgroundEvictionPort
from kubesched.framework.node_info import NodeInfo, PodInfo, pod_key
from kubesched.framework.node_table import NodeTable
from kubesched.framework.pod_groups import PodGroupState
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Status
from kubesched.framework.waiting_pods import WaitingPod, WaitingPods
from kubesched.plugins.dynamic_resources import ResourceClaimWriter
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.clock import Clock
from kubesched.scheduler.nominator import Nominator, filter_with_nominated_pods
from kubesched.scheduler.options import SchedulerOptions
from kubesched.scheduler.ports import ClusterPort, VolumeBinderPort
from kubesched.scheduler.queue import SchedulingQueue

if TYPE_CHECKING:
    from kubesched.scheduler.extenders import Extenders

__all__ = ["HandleHost", "ProfileHandle", "VolumeBinderHandle", "profile_handle"]

T = TypeVar("T")


class HandleHost(Protocol):
    """What a Handle reads of its scheduler (the Scheduler facade has all of it)."""

    @property
    def cache(self) -> Cache: ...
    @property
    def options(self) -> SchedulerOptions: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def waiting(self) -> WaitingPods: ...
    @property
    def queue(self) -> SchedulingQueue: ...
    @property
    def port(self) -> ClusterPort: ...
    @property
    def nominator(self) -> Nominator: ...
    @property
    def extenders(self) -> Extenders | None: ...
    @property
    def frameworks(self) -> dict[str, Framework]: ...
    @property
    def shared(self) -> dict[str, Any]: ...
    def pod_group_state(self, namespace: str, name: str) -> PodGroupState | None: ...
    def group_forest(self) -> GroupForest | None: ...


class ProfileHandle:
    """The Handle plugins of one profile get."""

    def __init__(self, host: HandleHost, profile: str) -> None:
        self._s = host
        self._profile = profile
        #: the port last found to store claims (a Protocol isinstance check is slow: once per port)
        self._claims_checked: object = None
        #: The PodInfo of the pod last filtered through `run_filter_plugins_with_nominated_pods`.
        self._pod_info: PodInfo | None = None

    @property
    def profile_name(self) -> str:
        return self._profile

    @property
    def snapshot(self) -> NodeTable:
        return self._s.cache.snapshot()

    @property
    def seed(self) -> int:
        """The run's seed, for plugins that draw random numbers of their own (preemption offset)."""
        return self._s.options.seed

    def now(self) -> float:
        return self._s.clock.now()

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self._s.waiting.get(uid)

    def iterate_waiting_pods(self) -> Sequence[WaitingPod]:
        return list(self._s.waiting)

    def reject_waiting_pod(self, uid: str, plugin: str, message: str) -> bool:
        wp = self._s.waiting.get(uid)
        if wp is None:
            return False
        wp.reject(plugin, message)
        return True

    def activate(self, pods: Sequence[Pod]) -> None:
        self._s.queue.activate([pod_key(p) for p in pods])

    def pod_group_state(self, namespace: str, name: str) -> PodGroupState | None:
        """The PodGroup and its pods (framework.pod_groups.PodGroupLookup); None with GenericWorkload off."""
        return self._s.pod_group_state(namespace, name)

    def assumed_node(self, pod_key: str) -> str | None:
        """The node the cache holds pod `pod_key` on (framework.pod_groups.AssumedNodeLookup)."""
        return self._s.cache.pod_node(pod_key)

    def group_forest(self) -> GroupForest | None:
        """The CompositePodGroup hierarchies (framework.group_forest.ForestLookup); None with the
        gate off."""
        return self._s.group_forest()

    def bind(self, pod: Pod, node_name: str) -> None:
        self._s.port.bind(pod, node_name)

    def lister(self, kind: str) -> Sequence[Any]:
        return self._s.port.lister(kind)

    def shared_state(self, key: str, factory: Callable[[], T]) -> T:
        """One object per key for every profile of this scheduler (upstream's shared listers and
        DRA manager): e.g. the devices in use, which no two profiles may hand out twice."""
        shared = self._s.shared
        found = shared.get(key)
        if found is None:
            found = shared[key] = factory()
        return cast(T, found)

    # -- ResourceClaim writes (DynamicResources' PreBind, Unreserve, PostFilter)
    def _claims_port(self) -> ResourceClaimWriter:
        """The port, when it stores ResourceClaim allocations (the in-memory cluster, the live API):
        the same contract the Handle offers DynamicResources, so these methods only forward."""
        port = self._s.port
        if port is not self._claims_checked:
            if not isinstance(port, ResourceClaimWriter):
                raise RuntimeError("this cluster does not store ResourceClaim allocations")
            self._claims_checked = port
        return cast(ResourceClaimWriter, port)

    def write_claim_allocation(
        self,
        claim: ResourceClaim,
        allocation: AllocationResult | None,
        pod: Pod,
        consumer: ResourceClaimConsumerReference | None = None,
    ) -> ResourceClaim:
        return self._claims_port().write_claim_allocation(claim, allocation, pod, consumer)

    def remove_claim_reservation(self, claim: ResourceClaim, uid: str) -> None:
        self._claims_port().remove_claim_reservation(claim, uid)

    def deallocate_claim(self, claim: ResourceClaim) -> None:
        self._claims_port().deallocate_claim(claim)

    def create_claim(self, claim: ResourceClaim) -> ResourceClaim:
        return self._claims_port().create_claim(claim)

    def delete_claim(self, claim: ResourceClaim) -> None:
        self._claims_port().delete_claim(claim)

    def write_extended_resource_claim_status(self, pod: Pod, status: PodExtendedResourceClaimStatus) -> None:
        self._claims_port().write_extended_resource_claim_status(pod, status)

    def pause(self, seconds: float) -> None:
        self._claims_port().pause(seconds)

    def _framework(self) -> Framework:
        return self._s.frameworks[self._profile]

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None:
        # Preemption's dry run asks this many times for one pod: its PodInfo is made once.
        cached = self._pod_info
        if cached is None or cached.pod is not pod:
            cached = self._pod_info = PodInfo(pod)
        return filter_with_nominated_pods(self._s.nominator, self._framework(), state, cached, node_info)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._framework().run_pre_filter_extension_add_pod(state, pod, pod_info_to_add, node_info)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        return self._framework().run_pre_filter_extension_remove_pod(
            state, pod, pod_info_to_remove, node_info
        )

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return self._s.nominator.nominated_pods_for_node(node_name)

    def set_nominated_node(self, pod: Pod, node_name: str) -> None:
        self._s.nominator.add(PodInfo(pod), node_name)
        self._s.port.set_nominated_node_name(pod, node_name)

    def delete_pod(self, pod: Pod, *, reason: str, message: str) -> None:
        self._s.port.delete_pod(pod, reason=reason, message=message)

    def background_eviction(self) -> BackgroundEvictionPort | None:
        """The port's asynchronous eviction (live mode), or None: evict synchronously (simulator)."""
        port = self._s.port
        return port if isinstance(port, BackgroundEvictionPort) else None

    def process_preemption_with_extenders(
        self, pod: Pod, candidates: dict[str, tuple[list[Pod], int]]
    ) -> dict[str, tuple[list[Pod], int]]:
        """The candidates the preempt-verb extenders keep (all of them when there are none)."""
        extenders = self._s.extenders
        if extenders is None:
            return candidates
        return extenders.process_preemption(pod, candidates, self._s.cache.snapshot())

    def record_event(self, pod: Pod, *, type: str, reason: str, action: str, note: str) -> None:
        self._s.port.record_event(
            pod, type=type, reason=reason, action=action, note=note, reporter=self._profile
        )


class VolumeBinderHandle(ProfileHandle):
    """The Handle when the port writes volume bindings (live mode): VolumeBinding's PreBind uses it."""

    def __init__(self, host: HandleHost, profile: str, binder: VolumeBinderPort) -> None:
        super().__init__(host, profile)
        self._binder = binder

    def bind_pvc(self, pvc: PersistentVolumeClaim, pv_name: str, *, timeout: float) -> None:
        self._binder.bind_pvc(pvc, pv_name, timeout=timeout)

    def provision_pvc(self, pvc: PersistentVolumeClaim, node_name: str, *, timeout: float) -> None:
        self._binder.provision_pvc(pvc, node_name, timeout=timeout)


def profile_handle(host: HandleHost, profile: str) -> ProfileHandle:
    """The Handle for `profile`: one that binds volumes when the port can."""
    port = host.port
    if isinstance(port, VolumeBinderPort):
        return VolumeBinderHandle(host, profile, port)
    return ProfileHandle(host, profile)
