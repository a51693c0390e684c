"""MemoryCluster: an in-process cluster that holds objects and applies the scheduler's decisions.

It is the simulator's API server: binds set `spec.nodeName` (and refuse a second bind), status
patches and Events are recorded, victims are deleted, and every change is delivered to the
scheduler through the same handlers the live informers use.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from kubesched.api.cluster_objects import PriorityClass
from kubesched.api.label_keys import merge_label_keys
from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod, PodCondition, PodExtendedResourceClaimStatus
from kubesched.api.priority_admission import SYSTEM_PRIORITY_CLASSES
from kubesched.api.resource import AllocationResult, Condition, ResourceClaim, ResourceClaimConsumerReference
from kubesched.api.resources import default_requests_from_limits
from kubesched.api.scheduling_groups import CompositePodGroup, Workload
from kubesched.api.scheduling_groups import PodGroup as SchedulingPodGroup
from kubesched.cluster.claims import (
    ClaimConflict,
    ClaimStore,
    instantiate_group_claims,
    instantiate_template_claims,
)
from kubesched.framework.events import ActionType, Resource
from kubesched.framework.node_info import pod_key
from kubesched.framework.pod_groups import SchedulingGroups, pod_group_of, with_condition

_UID_NAMESPACE = uuid.UUID("6f1c4b52-9d7a-4a55-bf11-0d6c2f1b7e10")
_UID_NAMESPACE_BYTES = _UID_NAMESPACE.bytes


def name_uid(name: str) -> str:
    """`str(uuid.uuid5(_UID_NAMESPACE, name))` without building a UUID object: a replay names
    every pod it creates this way, and the UUID constructor's checks cost more than the hash."""
    digest = bytearray(hashlib.sha1(_UID_NAMESPACE_BYTES + name.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class ClusterError(Exception):
    """A request the cluster refuses (binding an already bound pod, an unknown node, ...)."""


class EventHandler(Protocol):
    """The informer callbacks a scheduler exposes."""

    def on_node_add(self, node: Node) -> None: ...

    def on_node_update(self, old: Node, new: Node) -> None: ...

    def on_node_delete(self, node: Node) -> None: ...

    def on_pod_add(self, pod: Pod) -> None: ...

    def on_pod_update(self, old: Pod, new: Pod) -> None: ...

    def on_pod_delete(self, pod: Pod) -> None: ...


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """An events.k8s.io/v1 Event as the simulator keeps it."""

    time: float
    type: str
    reason: str
    action: str
    note: str
    reporting_controller: str
    regarding: str  # namespace/name


class MemoryCluster:
    def __init__(
        self,
        objects: LoadedObjects,
        now: Any = lambda: 0.0,
        *,
        keep_events: bool = True,
        group_claims: bool = False,
    ) -> None:
        """`keep_events=False` records no Event: a long replay would keep one or more per pod for
        nobody (its report reads the scheduler's attempts, not Events). `group_claims`
        (DRAWorkloadResourceClaims): the resourceclaim controller makes PodGroups' claims and points
        their pods' matching entries at them."""
        self._now = now
        self._group_claims = group_claims
        self._keep_events = keep_events
        self.priority_classes: dict[str, PriorityClass] = {
            pc.metadata.name: pc for pc in objects.priority_classes
        }
        self.nodes: dict[str, Node] = {n.metadata.name: n for n in objects.nodes}
        self.claims = ClaimStore(objects.resource_claims)
        self._templates = templates = {
            f"{t.metadata.namespace or 'default'}/{t.metadata.name}": t
            for t in objects.resource_claim_templates
        }
        groups: list[SchedulingPodGroup | CompositePodGroup] = [
            *(self._with_group_claims(self.admit_group(g)) for g in objects.scheduling_pod_groups),
            *(self.admit_group(g) for g in objects.composite_pod_groups),
        ]
        by_name = {
            (g.metadata.namespace or "default", g.metadata.name): g
            for g in groups
            if isinstance(g, SchedulingPodGroup)
        }
        self.pods: dict[str, Pod] = {}
        #: Per node, its bound pods' keys -> their place in `pods` (a creation count), and the same
        #: for pods not bound: `pods_on_node` without a scan of every pod (`_index` keeps them).
        self._bound_on: dict[str, dict[str, int]] = {}
        self._unbound: dict[str, int] = {}
        self._created = 0
        #: Pods whose phase is Succeeded or Failed: kept out of `pods`, as the live scheduler's informer
        #: keeps them out of its cache (snapshots of real clusters are full of completed Job pods).
        self.finished_pods: list[Pod] = []
        for pod in objects.pods:
            prepared = self.admit(pod)
            if prepared.finished:
                self.finished_pods.append(prepared)
                continue
            if templates and not prepared.spec.node_name:
                # kube-controller-manager's resourceclaim controller, before the scheduler sees the pod
                group = by_name.get(found) if (found := pod_group_of(prepared)) and group_claims else None
                prepared, created = instantiate_template_claims(prepared, templates, group)
                for claim in created:
                    self.claims.put(claim)
            key = pod_key(prepared)
            self._index(key, self.pods.get(key), prepared)  # a repeated key keeps its place
            self.pods[key] = prepared
        #: (namespace, name) of every pod, finished ones too, so that a created pod cannot take a name in use.
        self._names = {
            (p.metadata.namespace, p.metadata.name) for p in [*self.pods.values(), *self.finished_pods]
        }
        self.objects = objects
        self.events: list[RecordedEvent] = []
        #: Per PodGroup, every condition its pod-group cycles wrote, in order (a differential harness
        #: compares the binary's with the one of the cycle the binary stopped at).
        self.condition_history: dict[tuple[str, str], list[Condition]] = {}
        self.bind_count: dict[str, int] = {}
        #: Workloads, PodGroups, CompositePodGroups and the pods of each group, kept current as the
        #: first watcher of every pod change.
        self.groups = SchedulingGroups([*objects.workloads, *groups], self.pods.values())
        self._handlers: list[EventHandler] = [self.groups]

    # ------------------------------------------------------------------ admission
    def admit(self, pod: Pod) -> Pod:
        """What the API server would have filled in: namespace, uid, priority from its class,
        requests from limits, and (for a pod it never saw: no uid) label keys merged into selectors."""
        if not pod.metadata.uid:
            pod = merge_label_keys(pod)  # a pod read back from an API server has them merged already
        meta = pod.metadata
        namespace = meta.namespace or "default"
        uid = meta.uid or name_uid(f"{namespace}/{meta.name}")
        spec = pod.spec
        if spec.priority is None:
            pc = self._priority_class(spec.priority_class_name)
            if pc is not None:
                spec = msgspec.structs.replace(
                    spec,
                    priority=pc.value,
                    preemption_policy=spec.preemption_policy or pc.preemption_policy,
                )
        if namespace != meta.namespace or uid != meta.uid:
            meta = msgspec.structs.replace(meta, namespace=namespace, uid=uid)
        spec = default_requests_from_limits(spec)
        return msgspec.structs.replace(pod, metadata=meta, spec=spec)

    def admit_group(
        self, group: SchedulingPodGroup | CompositePodGroup
    ) -> SchedulingPodGroup | CompositePodGroup:
        """What the API server's Priority admission fills in on a (composite) pod group written without
        `spec.priority`: the value of its class, or of the global default class (then named in
        `priorityClassName`). A hand-written group then carries the priority its pods get from the
        same class, which the pod-group cycle requires of every member."""
        if not group.metadata.uid:
            namespace = group.metadata.namespace or "default"
            uid = name_uid(f"{group.kind}:{namespace}/{group.metadata.name}")
            group = msgspec.structs.replace(group, metadata=msgspec.structs.replace(group.metadata, uid=uid))
        spec = group.spec
        if spec.priority is not None:
            return group
        pc = self._priority_class(spec.priority_class_name)
        if pc is None:
            return group
        filled = msgspec.structs.replace(spec, priority=pc.value, priority_class_name=pc.metadata.name)
        return msgspec.structs.replace(group, spec=filled)

    def _with_group_claims(self, group: SchedulingPodGroup | CompositePodGroup) -> SchedulingPodGroup:
        """The PodGroup as the resourceclaim controller leaves it: its template claims made."""
        assert isinstance(group, SchedulingPodGroup)
        if not self._group_claims or not group.spec.resource_claims:
            return group
        made, created = instantiate_group_claims(group, self._templates)
        for claim in created:
            self.claims.put(claim)
        return made

    def _priority_class(self, name: str) -> PriorityClass | None:
        """The class `name` names (the API server's system classes exist in every cluster); for no
        name, the global default (the lowest, should there be several, as admission picks it); None
        for a class the cluster does not hold (the CLI refuses such input before it gets here)."""
        if name:
            return self.priority_classes.get(name) or SYSTEM_PRIORITY_CLASSES.get(name)
        defaults = [p for p in self.priority_classes.values() if p.global_default]
        return min(defaults, key=lambda p: p.value) if defaults else None

    # ------------------------------------------------------------------ watchers
    def subscribe(self, handler: EventHandler, *, on_error: Any = None) -> None:
        """Deliver the current objects (nodes first, then pods) and every later change.

        `on_error(pod, exc)` receives pods the handler refused (e.g. an invalid quantity), so one
        bad pod never stops the others.
        """
        self._handlers.append(handler)
        for node in self.nodes.values():
            handler.on_node_add(node)
        for pod in self._ordered_pods():
            try:
                handler.on_pod_add(pod)
            except Exception as exc:
                if on_error is None:
                    raise
                on_error(pod, exc)

    # ------------------------------------------------------------------ changes from outside
    # What users and controllers do to a cluster over time (a scenario replay drives these).

    def add_node(self, node: Node) -> None:
        """A node joins (or, when one of that name exists, is replaced)."""
        name = node.metadata.name
        old = self.nodes.get(name)
        self.nodes[name] = node
        for h in self._handlers:
            if old is None:
                h.on_node_add(node)
            else:
                h.on_node_update(old, node)

    def remove_node(self, name: str) -> Node | None:
        """A node leaves; the pods bound to it are the caller's to delete (as PodGC would)."""
        node = self.nodes.pop(name, None)
        if node is not None:
            for h in self._handlers:
                h.on_node_delete(node)
        return node

    def update_pod(self, pod: Pod, *, on_error: Any = None) -> Pod:
        """Replace a pod that is not bound yet (labels, gates, ...); ClusterError if unknown or bound."""
        prepared = self.admit(pod)
        key = pod_key(prepared)
        old = self.pods.get(key)
        if old is None:
            raise ClusterError(f'pods "{prepared.metadata.name}" not found')
        if old.spec.node_name:
            raise ClusterError(f"pod {prepared.key} is already bound to node {old.spec.node_name!r}")
        self.pods[key] = prepared
        self._index(key, old, prepared)
        self._deliver(lambda h: h.on_pod_update(old, prepared), prepared, on_error)
        return prepared

    def _deliver(self, call: Any, pod: Pod, on_error: Any) -> None:
        for h in self._handlers:
            try:
                call(h)
            except Exception as exc:
                if on_error is None:
                    raise
                on_error(pod, exc)

    def _index(self, key: str, old: Pod | None, new: Pod | None) -> None:
        """Keep `_bound_on` and `_unbound` in step with `pods[key]` going from `old` to `new` (None:
        absent); a pod keeps its place from creation to deletion, as in `pods`."""
        old_node = old.spec.node_name if old is not None else None
        new_node = new.spec.node_name if new is not None else None
        if old is None:
            place = self._created
            self._created += 1
        elif old_node == new_node:
            return
        elif old_node:
            keys = self._bound_on[old_node]
            place = keys.pop(key)
            if not keys:
                del self._bound_on[old_node]
        else:
            place = self._unbound.pop(key)
        if new_node:
            self._bound_on.setdefault(new_node, {})[key] = place
        elif new is not None:
            self._unbound[key] = place

    def pods_on_node(self, name: str) -> list[Pod]:
        """The pods bound to node `name`, in `pods`' order (what a scan of `pods` would find)."""
        keys = self._bound_on.get(name)
        if not keys:
            return []
        return [self.pods[key] for key in sorted(keys, key=keys.__getitem__)]

    def _ordered_pods(self) -> Iterable[Pod]:
        """Running pods before pending ones, so pending pods see the capacity already used."""
        pods = list(self.pods.values())
        return [p for p in pods if p.spec.node_name] + [p for p in pods if not p.spec.node_name]

    # ------------------------------------------------------------------ ClusterPort
    def bind(self, pod: Pod, node_name: str) -> None:
        key = pod_key(pod)
        current = self.pods.get(key)
        if current is None:
            raise ClusterError(f'pods "{pod.metadata.name}" not found')
        if current.spec.node_name:
            raise ClusterError(f"pod {pod.key} is already assigned to node {current.spec.node_name!r}")
        if node_name not in self.nodes:
            raise ClusterError(f'nodes "{node_name}" not found')
        bound = msgspec.structs.replace(
            current,
            spec=msgspec.structs.replace(current.spec, node_name=node_name),
            status=msgspec.structs.replace(
                current.status,
                conditions=[c for c in current.status.conditions if c.type != "PodScheduled"]
                + [PodCondition(type="PodScheduled", status="True")],
                # The API server clears it when it binds (ClearingNominatedNodeNameAfterBinding).
                nominated_node_name=None,
            ),
        )
        self.pods[key] = bound
        self._index(key, current, bound)
        self.bind_count[key] = self.bind_count.get(key, 0) + 1
        for h in self._handlers:
            h.on_pod_update(current, bound)

    def set_pod_group_condition(self, pod_group: SchedulingPodGroup, condition: Condition) -> None:
        """A PodGroup status patch (the pod-group cycle's condition): stored; like the binary's own
        status write it moves no pod (GangScheduling's hint skips an unchanged minCount)."""
        key = (pod_group.metadata.namespace or "default", pod_group.metadata.name)
        current = self.groups.pod_group(*key)
        if current is not None:
            self.groups.put(with_condition(current, condition))
            self.condition_history.setdefault(key, []).append(condition)

    def write_group(self, obj: Workload | SchedulingPodGroup) -> None:
        """A controller's create or update of a Workload or PodGroup (admitted as the API server
        admits a PodGroup, its template claims made as the resourceclaim controller makes them, before
        any of its pods); a PodGroup keeps the status written since."""
        if isinstance(obj, SchedulingPodGroup):
            current = self.groups.pod_group(obj.metadata.namespace or "default", obj.metadata.name)
            admitted = self.admit_group(obj)
            assert isinstance(admitted, SchedulingPodGroup)
            if current is None:
                obj = self._with_group_claims(admitted)
            else:
                obj = msgspec.structs.replace(admitted, status=current.status)
        self.groups.put(obj)

    def delete_group(self, obj: Workload | SchedulingPodGroup) -> None:
        self.groups.remove(obj)

    def record_event(
        self, pod: Pod, *, type: str, reason: str, action: str, note: str, reporter: str
    ) -> None:
        if self._keep_events:
            self.events.append(RecordedEvent(self._now(), type, reason, action, note, reporter, pod.key))

    def set_pod_scheduled_condition(
        self, pod: Pod, *, reason: str, message: str, nominated_node_name: str | None
    ) -> None:
        """Status-only patch: stored, not delivered (status changes do not requeue a pod)."""
        key = pod_key(pod)
        current = self.pods.get(key)
        if current is None:
            return
        wanted = PodCondition(type="PodScheduled", status="False", reason=reason, message=message)
        unchanged_nomination = nominated_node_name in (None, current.status.nominated_node_name)
        if unchanged_nomination and wanted in current.status.conditions:
            return  # nothing to patch (kube-scheduler sends no patch either)
        conditions = [c for c in current.status.conditions if c.type != "PodScheduled"]
        conditions.append(wanted)
        status = msgspec.structs.replace(current.status, conditions=conditions)
        if nominated_node_name is not None:
            status = msgspec.structs.replace(status, nominated_node_name=nominated_node_name)
        self.pods[key] = msgspec.structs.replace(current, status=status)

    def set_nominated_node_name(self, pod: Pod, node_name: str) -> None:
        key = pod_key(pod)
        current = self.pods.get(key)
        if current is not None:
            status = msgspec.structs.replace(current.status, nominated_node_name=node_name)
            self.pods[key] = msgspec.structs.replace(current, status=status)

    def expect_binding(self, pod: Pod, node_name: str) -> None:
        self.set_nominated_node_name(pod, node_name)

    def create_pod(self, pod: Pod, *, on_error: Any = None) -> Pod:
        """Admit and store a new pod (what a controller's POST does), and deliver it to the watchers.

        Returns the pod as stored. Refuses a name already taken in its namespace. `on_error(pod, exc)`
        receives a watcher's refusal (e.g. an invalid quantity), so the other watchers still see it.
        """
        admitted = self.admit(pod)
        key = pod_key(admitted)
        name = (admitted.metadata.namespace, admitted.metadata.name)
        if key in self.pods or name in self._names:
            raise ClusterError(f'pods "{admitted.metadata.name}" already exists')
        if self._templates and not admitted.spec.node_name:
            group = None
            if self._group_claims and (found := pod_group_of(admitted)) is not None:
                group = self.groups.pod_group(*found)
            admitted, created = instantiate_template_claims(admitted, self._templates, group)
            for claim in created:
                self.claims.put(claim)
                self._claim_event(None, claim)
        self.pods[key] = admitted
        self._index(key, None, admitted)
        self._names.add(name)
        self._deliver(lambda h: h.on_pod_add(admitted), admitted, on_error)
        return admitted

    def delete_pod(self, pod: Pod, *, reason: str, message: str) -> None:
        key = pod_key(pod)
        current = self.pods.pop(key, None)
        if current is None:
            return
        self._index(key, current, None)
        self._names.discard((current.metadata.namespace, current.metadata.name))
        for h in self._handlers:
            h.on_pod_delete(current)
        # The resourceclaim controller frees what the pod held (preemption victims give up devices).
        for old, new in self.claims.pod_gone(current):
            self._claim_event(old, new)

    # ------------------------------------------------------------------ ResourceClaimWriter
    def write_claim_allocation(
        self,
        claim: ResourceClaim,
        allocation: AllocationResult | None,
        pod: Pod,
        consumer: ResourceClaimConsumerReference | None = None,
    ) -> ResourceClaim:
        old = self.claims.get(claim.key)
        try:
            stored = self.claims.write_allocation(claim, allocation, pod, consumer)
        except ClaimConflict as err:
            raise ClusterError(str(err)) from None
        self._claim_event(old, stored)
        return stored

    def remove_claim_reservation(self, claim: ResourceClaim, uid: str) -> None:
        old = self.claims.get(claim.key)
        new = self.claims.remove_reservation(claim, uid)
        if old is not None and new is not old:
            self._claim_event(old, new)

    def deallocate_claim(self, claim: ResourceClaim) -> None:
        old = self.claims.get(claim.key)
        new = self.claims.deallocate(claim)
        if old is not None and new is not old:
            self._claim_event(old, new)

    def create_claim(self, claim: ResourceClaim) -> ResourceClaim:
        stored = self.claims.create(claim)
        self._claim_event(None, stored)
        return stored

    def delete_claim(self, claim: ResourceClaim) -> None:
        old = self.claims.delete(claim.key)
        if old is not None:
            self._claim_event(old, None)

    def write_extended_resource_claim_status(self, pod: Pod, status: PodExtendedResourceClaimStatus) -> None:
        """Status-only patch: stored, not delivered (like the PodScheduled condition)."""
        key = pod_key(pod)
        current = self.pods.get(key)
        if current is not None:
            new_status = msgspec.structs.replace(current.status, extended_resource_claim_status=status)
            self.pods[key] = msgspec.structs.replace(current, status=new_status)

    def pause(self, seconds: float) -> None:
        """Nothing moves on its own in the simulator (its driver meets binding conditions at once)."""

    def _claim_event(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        action = ActionType.ADD if old is None else ActionType.DELETE if new is None else ActionType.UPDATE
        for h in self._handlers:
            on_object_event = getattr(h, "on_object_event", None)
            if on_object_event is not None:
                on_object_event(Resource.RESOURCE_CLAIM, action, old, new)

    def has_pod_named(self, namespace: str, name: str) -> bool:
        return (namespace, name) in self._names

    def lister(self, kind: str) -> Sequence[Any]:
        """Objects of `kind`; only the requested kind is materialised (plugins call this every cycle)."""
        if kind == "ResourceClaim":
            return self.claims.all()
        groups = self.groups.lister(kind)
        if groups is not None:
            return groups
        live: dict[str, Mapping[str, Any]] = {
            "Pod": self.pods,
            "Node": self.nodes,
            "PriorityClass": self.priority_classes,
        }
        if kind in live:
            return list(live[kind].values())
        attribute = _LOADED_KINDS.get(kind)
        return getattr(self.objects, attribute) if attribute else []


#: Kinds the simulator only reads, by the LoadedObjects attribute holding them.
_LOADED_KINDS = {
    "Namespace": "namespaces",
    "PersistentVolume": "persistent_volumes",
    "PersistentVolumeClaim": "persistent_volume_claims",
    "StorageClass": "storage_classes",
    "CSINode": "csi_nodes",
    "CSIDriver": "csi_drivers",
    "CSIStorageCapacity": "csi_storage_capacities",
    "PodDisruptionBudget": "pod_disruption_budgets",
    "Service": "services",
    "ReplicationController": "replication_controllers",
    "ReplicaSet": "replica_sets",
    "StatefulSet": "stateful_sets",
    "PodGroup": "pod_groups",
    "DeviceClass": "device_classes",
    "ResourceClaimTemplate": "resource_claim_templates",
    "ResourceSlice": "resource_slices",
    "DeviceTaintRule": "device_taint_rules",
}
