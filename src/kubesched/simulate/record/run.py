"""Record a live cluster's node and pod changes as a Scenario timeline (what `kubesched record` writes).

The cluster is watched with the live scheduler's informers (`cluster.kube.informer`): what exists
when the recording starts is created at 0s (bound pods with their `nodeName`, pending pods
without), and every later change is stamped with the seconds since the start:

- a node added, changed in what scheduling reads (labels, taints, `unschedulable`, allocatable,
  conditions), or deleted: `create` / `update` / `delete`;
- a pod created: `create` without `nodeName` (the replay decides where it goes), unless it was
  created bound (static and DaemonSet-style pods), which keeps its node;
- a pending pod whose labels or scheduling gates change: `update`;
- a pod that finished (phase Succeeded or Failed): `runFor` on its `create`, from its bind to the end;
- a pod deleted (the moment its deletion was asked for): `delete`, except pods the scheduler preempted
  (condition DisruptionTarget, reason PreemptionByScheduler) and pods of a node deleted before,
  which the replay removes by itself.

Nothing secret is written: objects are the scheduler's lean structs (no env, no commands, no
Secrets or ConfigMaps are ever read), and `kubectl.kubernetes.io/last-applied-configuration`, which
holds a whole manifest, is dropped. PriorityClasses are copied at 0s; other kinds are not recorded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import msgspec

from kubesched.api.cluster_objects import PriorityClass
from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import Node, Pod
from kubesched.cluster.kube.client import ApiError, KubeClient
from kubesched.cluster.kube.informer import (
    KINDS,
    ApiListWatch,
    CallbackHandlers,
    Informer,
    ListWatch,
    ObjectDecoder,
    list_objects,
)
from kubesched.errors import InputError
from kubesched.simulate.scenario import ObjectRef, TimelineEvent

__all__ = ["PodObservation", "Recorder", "record_cluster"]

#: Annotations never written: kubectl's copy of the whole applied manifest (env values included).
PRIVATE_ANNOTATIONS = frozenset({"kubectl.kubernetes.io/last-applied-configuration"})
#: Pods of every phase: without the scheduler's `status.phase!=Succeeded` selector, a pod finishing
#: arrives as a change to phase Succeeded; with it, the server would send the pod's previous state
#: as a deletion and the recording could not tell a finished pod from a deleted one.
ALL_PODS = replace(KINDS["Pod"], field_selector="")
#: Seconds to wait for the first list of nodes and pods before giving up.
SYNC_TIMEOUT = 60.0


@dataclass(slots=True)
class PodObservation:
    """What the recorder saw of one pod instance, in seconds since the start of the recording."""

    key: str
    created_at: float
    bound_at: float | None = None
    node: str = ""
    ended_at: float | None = None
    #: "Completed", "Deleted", "Preempted" or "NodeDeleted"; None while it runs.
    ended: str | None = None
    #: The index of its `create` entry in the timeline.
    entry: int = -1


@dataclass(slots=True)
class _Entry:
    at: float
    action: str
    ref: ObjectRef
    obj: Node | Pod | None = None
    run_for: float | None = None


class Recorder:
    """Turns node and pod changes, as informers report them, into timeline entries.

    Thread-safe: the node and pod informers call it from their own threads (through `dispatch`).
    Until `start()` every change is stamped 0s (it is the state the recording starts from).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._started: float | None = None
        self._stopped = False
        self._entries: list[_Entry] = []
        #: How many entries were made before `start()`: the state at 0s.
        self._initial_entries = 0
        self._nodes: dict[str, Node] = {}  # name -> what the timeline last said about it
        self._deleted_nodes: set[str] = set()
        self._pods: dict[str, PodObservation] = {}  # uid -> the pod's life
        self._pending_specs: dict[str, Pod] = {}  # uid -> last written form of a pending pod
        self.observations: list[PodObservation] = []
        self.priority_classes: list[PriorityClass] = []
        #: Set by `start()`: the state at 0s is complete and later changes carry their time.
        self.started = threading.Event()

    # ------------------------------------------------------------------ time

    def start(self) -> None:
        """From now on changes are stamped with the seconds since this call."""
        with self._lock:
            self._started = self._clock()
            self._initial_entries = len(self._entries)
        self.started.set()

    def now(self) -> float:
        return 0.0 if self._started is None else max(0.0, self._clock() - self._started)

    def stop(self) -> float:
        """End the recording: later changes are ignored. Returns the seconds recorded."""
        with self._lock:
            elapsed = self.now()
            self._stopped = True
        return elapsed

    def dispatch(self, batch: Callable[[], None]) -> None:
        """The informers' dispatch: one batch of changes at a time, none after `stop()`."""
        with self._lock:
            if not self._stopped:
                batch()

    # ------------------------------------------------------------------ nodes

    def node_added(self, node: Node) -> None:
        clean = _public_node(node)
        self._deleted_nodes.discard(clean.name)
        self._nodes[clean.name] = clean
        self._entries.append(_Entry(self.now(), "create", ObjectRef("Node", clean.name), clean))

    def node_updated(self, old: Node, new: Node) -> None:
        clean = _public_node(new)
        if self._nodes.get(clean.name) == clean:
            return  # a heartbeat or a field the scheduler does not read
        self._nodes[clean.name] = clean
        self._entries.append(_Entry(self.now(), "update", ObjectRef("Node", clean.name), clean))

    def node_deleted(self, node: Node) -> None:
        name = node.metadata.name
        self._nodes.pop(name, None)
        self._deleted_nodes.add(name)
        self._entries.append(_Entry(self.now(), "delete", ObjectRef("Node", name)))

    # ------------------------------------------------------------------ pods

    def pod_added(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        if pod.finished or pod.metadata.deletion_timestamp is not None or uid in self._pods:
            return
        now = self.now()
        bound = bool(pod.spec.node_name)
        clean = _public_pod(pod, keep_node=bound)
        ref = ObjectRef("Pod", pod.metadata.name, pod.metadata.namespace or "default")
        life = PodObservation(f"{ref.namespace}/{ref.name}", now, entry=len(self._entries))
        if bound:
            life.bound_at, life.node = now, pod.spec.node_name
        else:
            self._pending_specs[uid] = clean
        self._pods[uid] = life
        self.observations.append(life)
        self._entries.append(_Entry(now, "create", ref, clean))

    def pod_updated(self, old: Pod, new: Pod) -> None:
        life = self._pods.get(new.metadata.uid)
        if life is None:
            self.pod_added(new)
            return
        if life.ended is not None:
            return
        if life.bound_at is None and new.spec.node_name:
            life.bound_at, life.node = self.now(), new.spec.node_name
            self._pending_specs.pop(new.metadata.uid, None)
        if new.metadata.deletion_timestamp is not None or new.finished:
            self._end(life, new)
        elif life.bound_at is None:
            clean = _public_pod(new, keep_node=False)
            if self._pending_specs.get(new.metadata.uid) != clean:
                self._pending_specs[new.metadata.uid] = clean
                ref = ObjectRef("Pod", new.metadata.name, new.metadata.namespace or "default")
                self._entries.append(_Entry(self.now(), "update", ref, clean))

    def pod_deleted(self, pod: Pod) -> None:
        life = self._pods.get(pod.metadata.uid)
        if life is not None and life.ended is None:
            self._end(life, pod)

    def _end(self, life: PodObservation, pod: Pod) -> None:
        now = self.now()
        life.ended_at = now
        self._pending_specs.pop(pod.metadata.uid, None)
        if pod.finished and life.bound_at is not None:
            life.ended = "Completed"
            self._entries[life.entry].run_for = max(now - life.bound_at, 0.001)
            return
        if _preempted(pod):
            life.ended = "Preempted"  # the replay's own preemption decides whom to evict
            return
        if life.node and life.node in self._deleted_nodes:
            life.ended = "NodeDeleted"  # the replay deletes a deleted node's pods itself
            return
        life.ended = "Deleted"
        ref = ObjectRef("Pod", pod.metadata.name, pod.metadata.namespace or "default")
        self._entries.append(_Entry(now, "delete", ref))

    # ------------------------------------------------------------------ result

    def timeline(self) -> list[TimelineEvent]:
        """The recorded timeline: PriorityClasses at 0s, the state at 0s with its nodes before its
        pods (the node and pod informers list concurrently; which finishes first is chance), then
        every later entry in the order seen."""
        with self._lock:
            static = [
                TimelineEvent(0.0, "create", ObjectRef("PriorityClass", pc.metadata.name), obj=pc)
                for pc in self.priority_classes
            ]
            initial = self._entries[: self._initial_entries]
            entries = [
                *sorted(initial, key=lambda e: e.ref.kind != "Node"),
                *self._entries[self._initial_entries :],
            ]
            return static + [
                TimelineEvent(e.at, e.action, e.ref, obj=e.obj, run_for=e.run_for, index=i)
                for i, e in enumerate(entries)
            ]


def _public_meta(meta: ObjectMeta) -> ObjectMeta:
    """Name, namespace, labels, owners and the annotations that are not private; no server fields."""
    annotations = {k: v for k, v in meta.annotations.items() if k not in PRIVATE_ANNOTATIONS}
    return ObjectMeta(
        name=meta.name,
        namespace=meta.namespace,
        labels=meta.labels,
        annotations=annotations,
        owner_references=meta.owner_references,
    )


def _public_node(node: Node) -> Node:
    return Node(metadata=_public_meta(node.metadata), spec=node.spec, status=node.status)


def _public_pod(pod: Pod, *, keep_node: bool) -> Pod:
    spec = pod.spec if keep_node else msgspec.structs.replace(pod.spec, node_name="")
    return Pod(metadata=_public_meta(pod.metadata), spec=spec)


def _preempted(pod: Pod) -> bool:
    return any(
        c.type == "DisruptionTarget" and c.reason == "PreemptionByScheduler" for c in pod.status.conditions
    )


# --------------------------------------------------------------------------- watching a server


def record_cluster(
    client: KubeClient,
    recorder: Recorder,
    *,
    duration: float | None,
    stop: threading.Event,
    source: ListWatch | None = None,
    sync_timeout: float = SYNC_TIMEOUT,
) -> float:
    """Watch nodes and pods into `recorder` for `duration` seconds (None: until `stop` is set).

    Returns the seconds recorded. Access problems (a missing permission, no server) are an
    InputError naming the server, raised before anything is recorded.
    """
    source = source or ApiListWatch(client)
    for kind in ("Node", "Pod", "PriorityClass"):
        _check_access(client, kind)
    try:
        pcs, _ = list_objects(source, KINDS["PriorityClass"], _lenient(KINDS["PriorityClass"].type))
    except ApiError as err:
        raise InputError(f"cannot list priorityclasses: {err}", source=client.server) from None
    recorder.priority_classes = [
        PriorityClass(
            metadata=ObjectMeta(name=pc.metadata.name, labels=pc.metadata.labels),
            value=pc.value,
            global_default=pc.global_default,
            preemption_policy=pc.preemption_policy,
        )
        for pc in pcs
    ]
    informers = [
        Informer(
            KINDS["Node"],
            source,
            CallbackHandlers(recorder.node_added, recorder.node_updated, recorder.node_deleted),
            dispatch=recorder.dispatch,
        ),
        Informer(
            ALL_PODS,
            source,
            CallbackHandlers(recorder.pod_added, recorder.pod_updated, recorder.pod_deleted),
            dispatch=recorder.dispatch,
        ),
    ]
    try:
        for informer in informers:
            informer.start()
        for informer in informers:
            if not informer.wait_for_sync(sync_timeout):
                raise InputError(
                    f"could not list {informer.kind.plural} within {sync_timeout:.0f} s", source=client.server
                )
        recorder.start()
        stop.wait(duration)
        return recorder.stop()
    finally:
        recorder.stop()
        for informer in informers:
            informer.stop()
        for informer in informers:  # daemon threads: one stuck in a socket read is left behind
            informer.join(0.5)


def _check_access(client: KubeClient, kind: str) -> None:
    """One small LIST, so that a 401/403 is one line now rather than an informer retrying for ever."""
    try:
        client.get(KINDS[kind].path, {"limit": 1})
    except ApiError as err:
        raise InputError(f"cannot list {KINDS[kind].plural}: {err}", source=client.server) from None


def _lenient(type_: type[msgspec.Struct]) -> Callable[[msgspec.Raw], Any | None]:
    """Decode one listed object; one that does not fit the struct is left out, not fatal."""
    decoder = ObjectDecoder(type_)

    def decode(raw: msgspec.Raw) -> Any | None:
        try:
            return decoder.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None

    return decode
