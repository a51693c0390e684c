"""Pods the live scheduler cannot take, told to their owners instead of skipped in silence.

A pod that does not decode (a bad quantity, a field of the wrong type) still names itself and its
scheduler (`pod_identity`); a pod the core refuses (`InputError`) is whole. Either way only that pod
is affected: it gets a FailedScheduling Event and `PodScheduled=False` with reason SchedulerError,
once per version (`BadPods`), and every other pod is scheduled as usual.
"""

from __future__ import annotations

import logging
from collections.abc import Set

import msgspec

from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import Pod, PodSpec
from kubesched.cluster.kube.events import EventRecorder
from kubesched.cluster.kube.live_reports import LiveMetrics
from kubesched.cluster.kube.status import PodStatusWriter

__all__ = ["BadPods", "pod_identity"]

log = logging.getLogger(__name__)

#: Versions remembered as reported, at most (then forgotten all at once).
_REMEMBERED = 10_000


class _PodIdentitySpec(msgspec.Struct, kw_only=True, rename="camel", frozen=True):
    scheduler_name: str = "default-scheduler"
    node_name: str = ""


class _PodIdentity(msgspec.Struct, kw_only=True, frozen=True):
    """What we can still read of a pod that did not decode: who it is and who should schedule it."""

    metadata: ObjectMeta = ObjectMeta()
    spec: _PodIdentitySpec = _PodIdentitySpec()


def pod_identity(raw: bytes) -> Pod | None:
    """The pod in `raw` with only its metadata, scheduler and node name; None when not even those
    decode."""
    try:
        ident = msgspec.json.decode(raw, type=_PodIdentity)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return Pod(
        metadata=ident.metadata,
        spec=PodSpec(scheduler_name=ident.spec.scheduler_name, node_name=ident.spec.node_name),
    )


class BadPods:
    """Tells each bad pod's owner once per version (see module docstring)."""

    def __init__(
        self,
        profile_names: Set[str],
        events: EventRecorder,
        status: PodStatusWriter,
        metrics: LiveMetrics | None = None,
    ) -> None:
        self._profile_names = profile_names
        self._events = events
        self._status = status
        self._metrics = metrics
        self._reported: set[tuple[str, str]] = set()

    def report(self, pod: Pod, message: str) -> None:
        """Say why `pod` cannot be scheduled, unless it is not ours or this version was reported."""
        if pod.spec.node_name or pod.spec.scheduler_name not in self._profile_names:
            log.warning("ignoring pod %s: %s", pod.key, message)
            return
        mark = (pod.metadata.uid or pod.key, pod.metadata.resource_version)
        if mark in self._reported:
            return
        if len(self._reported) > _REMEMBERED:
            self._reported.clear()
        self._reported.add(mark)
        log.warning("pod %s cannot be scheduled: %s", pod.key, message)
        reporter = pod.spec.scheduler_name
        self._events.record(
            pod,
            type="Warning",
            reason="FailedScheduling",
            action="Scheduling",
            note=message,
            reporter=reporter,
        )
        self._status.set_pod_scheduled_condition(
            pod, reason="SchedulerError", message=message, nominated_node_name=None
        )
        if self._metrics is not None:
            self._metrics.observe_attempt("Error", reporter, 0.0)
