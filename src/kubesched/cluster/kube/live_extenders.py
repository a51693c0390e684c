"""The config's HTTP extenders in live mode, binding outside the state lock."""

from __future__ import annotations

from kubesched.api.objects import Pod
from kubesched.cluster.kube.pipeline import BindPipeline
from kubesched.cluster.kube.state_lock import StateLock
from kubesched.config.types import Extender as ExtenderConfig
from kubesched.framework.status import Status
from kubesched.scheduler.extenders import Extenders, HTTPExtender
from kubesched.scheduler.ports import BindRefused

__all__ = ["LiveExtenders"]


class LiveExtenders(Extenders):
    """The config's extenders, with binding done outside the state lock.

    A `bindVerb` extender's bind is a blocking HTTP call made from the binding cycle, which runs
    holding the state lock; stepping out for it keeps binds in flight in parallel and the loop
    scheduling meanwhile, just as `LiveCluster.bind` does for the API server's POST. Nothing is
    applied after the bind (`after_bind` unset): the pod's watch event reports it.
    """

    def __init__(self, configs: list[ExtenderConfig], lock: StateLock) -> None:
        super().__init__([HTTPExtender(c) for c in configs])
        self._state_lock = lock
        #: Set by LiveCluster: its bind pipeline gates and counts an extender's bind like its own.
        self.pipeline: BindPipeline | None = None

    def bind(self, pod: Pod, node: str) -> Status | None:
        """The extenders' bind; a bind the pipeline's gate refuses is an Error status carrying the
        `BindRefused`, which the core abandons (as DefaultBinder's refused POST) rather than fails."""
        with self._state_lock.released():
            if self.pipeline is None:
                return super().bind(pod, node)
            try:
                with self.pipeline.sending():
                    return super().bind(pod, node)
            except BindRefused as exc:
                return Status.as_error(exc)
