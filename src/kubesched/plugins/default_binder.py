"""DefaultBinder: bind the pod to the chosen node through the cluster (the `pods/binding` call)."""

from __future__ import annotations

from typing import ClassVar

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import BindPlugin, Handle
from kubesched.framework.status import Status

__all__ = ["DefaultBinder"]


class DefaultBinder(BindPlugin):
    """Bind: ask the cluster (`handle.bind`) to bind the pod; a failure becomes an Error status.

    In live mode this POSTs a Binding to the API server; in the simulator it places the pod in the
    in-memory cluster. An Error sends the pod back through backoff, as upstream.
    """

    name: ClassVar[str] = "DefaultBinder"
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if self.handle is None:
            return Status.as_error(f"{self.name}: no framework handle to bind pod {pod.key} with")
        try:
            self.handle.bind(pod, node_name)
        except Exception as exc:  # any failure of the cluster call is this pod's binding error
            if str(exc):
                return Status.as_error(exc)
            named = RuntimeError(f"binding pod {pod.key} to node {node_name}: {type(exc).__name__}")
            named.__cause__ = exc
            return Status.as_error(named)
        return None
