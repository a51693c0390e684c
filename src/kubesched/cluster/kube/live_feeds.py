"""The informers that feed the live scheduler's core, and what each kind's changes do there.

Pods and Nodes go to the core's pod and node handlers; the scheduling.k8s.io groups (and the pods in
them) to `SchedulingGroups` first and then, for the kinds GangScheduling waits on, to the queue as an
event; every other kind plugins list raises the queueing event it is tied to, if any (a kind with
none is only listed). Kinds the server does not serve are skipped (`discovery`). Each informer hands
its batches of changes to `dispatch`, which runs them on the scheduling loop under the state lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import COMPOSITE_POD_GROUP_KEY, POD_GROUP_KEY
from kubesched.cluster.kube.bad_pods import BadPods, pod_identity
from kubesched.cluster.kube.client import KubeClient
from kubesched.cluster.kube.discovery import GROUP_KINDS, served_kinds
from kubesched.cluster.kube.informer import KINDS, CallbackHandlers, Informer, ListWatch, ResourceKind
from kubesched.config.features import FeatureGates
from kubesched.errors import InputError
from kubesched.framework.events import ActionType, Resource
from kubesched.framework.pod_groups import SchedulingGroups
from kubesched.scheduler.scheduler import Scheduler

__all__ = ["EVENT_RESOURCES", "InformerFeeds"]

log = logging.getLogger(__name__)

#: Kinds whose changes may make an unschedulable pod schedulable, and the event resource they raise.
EVENT_RESOURCES: dict[str, Resource] = {
    "PersistentVolume": Resource.PERSISTENT_VOLUME,
    "PersistentVolumeClaim": Resource.PERSISTENT_VOLUME_CLAIM,
    "StorageClass": Resource.STORAGE_CLASS,
    "CSINode": Resource.CSI_NODE,
    "CSIDriver": Resource.CSI_DRIVER,
    "CSIStorageCapacity": Resource.CSI_STORAGE_CAPACITY,
    # scheduler-plugins' PodGroup: a new or resized group can complete a gang Coscheduling turned away.
    "PodGroup": Resource.POD_GROUP,
    # DynamicResources: a claim created or freed, a new class or new devices.
    "ResourceClaim": Resource.RESOURCE_CLAIM,
    "ResourceSlice": Resource.RESOURCE_SLICE,
    "DeviceClass": Resource.DEVICE_CLASS,
    "DeviceTaintRule": Resource.DEVICE_TAINT_RULE,
}


class InformerFeeds:
    """The informers (`informers`, by kind) wired to one `Scheduler` (see module docstring)."""

    def __init__(
        self,
        scheduler: Scheduler,
        client: KubeClient,
        source: ListWatch,
        *,
        informers: dict[str, Informer],
        groups: SchedulingGroups,
        bad_pods: BadPods,
        dispatch: Callable[[Callable[[], None]], None],
        features: FeatureGates,
        kinds: tuple[str, ...] | None,
        stopping: threading.Event,
        served_resources: Callable[[str], set[str] | None] | None = None,
    ) -> None:
        self.scheduler = scheduler
        self._client = client
        self._source = source
        self.informers = informers
        self.groups = groups
        self._bad_pods = bad_pods
        self._dispatch = dispatch
        self._features = features
        self._kinds = kinds
        self._stopping = stopping
        self._served_resources = served_resources

    def discover(self) -> list[ResourceKind]:
        """The kinds to watch that this server serves (Pods and Nodes are required; see `discovery`)."""
        wanted = self._kinds if self._kinds is not None else tuple(KINDS)
        return served_kinds(self._client, wanted, self._features, served_resources=self._served_resources)

    def create(self, kinds: list[ResourceKind]) -> None:
        """An informer for each kind, not started yet."""
        for rk in kinds:
            self.informers[rk.key] = Informer(
                rk,
                self._source,
                self.handlers_for(rk.key),
                dispatch=self._dispatch,
                on_decode_error=self._pod_decode_error if rk.key == "Pod" else None,
            )

    def start(self) -> None:
        for informer in self.informers.values():
            informer.start()

    def stop(self) -> None:
        for informer in self.informers.values():
            informer.stop()

    def has_synced(self) -> bool:
        return bool(self.informers) and all(i.has_synced for i in self.informers.values())

    def unsynced(self) -> list[str]:
        return [kind for kind, i in self.informers.items() if not i.has_synced]

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        for informer in self.informers.values():
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            while not informer.wait_for_sync(0.2 if remaining is None else min(0.2, remaining)):
                if self._stopping.is_set():
                    return False
                if deadline is not None and time.monotonic() >= deadline:
                    return False
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        return True

    def handlers_for(self, kind: str) -> CallbackHandlers | None:
        s = self.scheduler
        groups = self.groups
        if kind == "Node":
            return CallbackHandlers(s.on_node_add, s.on_node_update, s.on_node_delete)
        if kind == "Pod":
            return CallbackHandlers(self._on_pod_add, self._on_pod_update, self._on_pod_delete)
        if kind == POD_GROUP_KEY:  # the groups first, then the event for pods GangScheduling holds
            return CallbackHandlers(self._on_group_add, self._on_group_update, groups.remove)
        if kind == COMPOSITE_POD_GROUP_KEY:
            return CallbackHandlers(self._on_composite_add, groups.update, groups.remove)
        if kind in GROUP_KINDS:
            return CallbackHandlers(groups.put, groups.update, groups.remove)
        resource = EVENT_RESOURCES.get(kind)
        if resource is None:
            return None  # listed by plugins, but no queueing event is tied to it

        def moved(action: ActionType) -> Callable[[Any, Any], None]:
            def handle(old: Any, new: Any) -> None:
                s.on_object_event(resource, action, old, new)

            return handle

        add, update, delete = moved(ActionType.ADD), moved(ActionType.UPDATE), moved(ActionType.DELETE)
        return CallbackHandlers(lambda o: add(None, o), update, lambda o: delete(o, None))

    def _on_group_add(self, pg: Any) -> None:
        self.groups.put(pg)
        self.scheduler.on_object_event(Resource.SCHEDULING_POD_GROUP, ActionType.ADD, None, pg)

    def _on_composite_add(self, cpg: Any) -> None:
        self.groups.put(cpg)
        self.scheduler.on_object_event(Resource.SCHEDULING_COMPOSITE_POD_GROUP, ActionType.ADD, None, cpg)

    def _on_group_update(self, old: Any, new: Any) -> None:
        self.groups.update(old, new)
        self.scheduler.on_object_event(Resource.SCHEDULING_POD_GROUP, ActionType.UPDATE, old, new)

    def _on_pod_add(self, pod: Pod) -> None:
        self.groups.on_pod_add(pod)
        try:
            self.scheduler.on_pod_add(pod)
        except InputError as exc:
            self._bad_pods.report(pod, str(exc))

    def _on_pod_update(self, old: Pod, new: Pod) -> None:
        self.groups.on_pod_update(old, new)
        try:
            self.scheduler.on_pod_update(old, new)
        except InputError as exc:
            self._bad_pods.report(new, str(exc))

    def _on_pod_delete(self, pod: Pod) -> None:
        self.groups.on_pod_delete(pod)
        self.scheduler.on_pod_delete(pod)

    def _pod_decode_error(self, raw: bytes, exc: Exception) -> None:
        pod = pod_identity(raw)
        if pod is None:
            log.warning("skipping an undecodable pod: %s", exc)
            return
        self._dispatch(lambda: self._bad_pods.report(pod, f"cannot decode the pod: {exc}"))
