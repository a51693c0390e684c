"""What the scheduler needs from a cluster: the decisions it sends out.

Implemented by `cluster.memory.MemoryCluster` (simulator) and the live API-server adapter.
The scheduler core never does I/O itself; `bind` and `delete_pod` may block (live mode runs
binding cycles off the scheduling loop).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from kubesched.api.objects import Pod
from kubesched.api.storage import PersistentVolumeClaim


class ClusterPort(Protocol):
    def bind(self, pod: Pod, node_name: str) -> None:
        """Bind `pod` to `node_name`; raise on failure (the pod is then retried)."""
        ...

    def record_event(
        self, pod: Pod, *, type: str, reason: str, action: str, note: str, reporter: str
    ) -> None:
        """An events.k8s.io/v1 Event about `pod` (Scheduled, FailedScheduling, Preempted)."""
        ...

    def set_pod_scheduled_condition(
        self, pod: Pod, *, reason: str, message: str, nominated_node_name: str | None
    ) -> None:
        """Patch `PodScheduled=False` with reason/message, and `status.nominatedNodeName` when given."""
        ...

    def set_nominated_node_name(self, pod: Pod, node_name: str) -> None:
        """Patch only `status.nominatedNodeName` ("" clears it)."""
        ...

    def expect_binding(self, pod: Pod, node_name: str) -> None:
        """Set `status.nominatedNodeName` to the node a binding cycle is about to bind `pod` to,
        before the bind is sent (the API server clears it when it binds the pod)."""
        ...

    def delete_pod(self, pod: Pod, *, reason: str, message: str) -> None:
        """Evict a preemption victim."""
        ...

    def lister(self, kind: str) -> Sequence[Any]:
        """Objects of `kind` (PersistentVolumeClaim, PodDisruptionBudget, ...) for plugins."""
        ...


@runtime_checkable
class VolumeBinderPort(Protocol):
    """Optional: a port that writes volume bindings (live mode). When the port offers it, the plugins'
    Handle does too, and VolumeBinding's PreBind binds through it (its `VolumeBinder` protocol)."""

    def bind_pvc(self, pvc: PersistentVolumeClaim, pv_name: str, *, timeout: float) -> None:
        """Bind `pvc` to the PersistentVolume `pv_name` and wait (up to `timeout` s) until it is bound."""
        ...

    def provision_pvc(self, pvc: PersistentVolumeClaim, node_name: str, *, timeout: float) -> None:
        """Have `pvc` provisioned for `node_name` and wait (up to `timeout` s) until it is bound."""
        ...


class BindRefused(Exception):
    """Raised by `ClusterPort.bind` when the bind was not sent because this scheduler may no longer
    bind at all (it stopped leading, or it is shutting down): the core abandons the attempt (undo,
    requeue) instead of counting it as a failed bind, and writes no FailedScheduling for it."""
