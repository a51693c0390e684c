"""Pod status writes: the `PodScheduled=False` condition, `status.nominatedNodeName`, and evictions.

Cluster autoscalers and Karpenter read `PodScheduled=False/Unschedulable` to decide to add nodes,
so a scheduler must keep it current. Patches are strategic-merge patches of `pods/{name}/status`
(conditions merge by `type`) carrying the pod's UID, so a patch never lands on a recreated pod of
the same name. A patch that would change nothing (same reason and message, same nomination) is not
sent, as upstream's `updatePod` skips it; the full message goes into the condition (the Event note is
the truncated one).

All writes run on `AsyncCalls` workers and retry transient failures a few times; the scheduling loop
never waits for them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from kubesched.api.objects import Pod
from kubesched.cluster.kube.client import STRATEGIC_MERGE_PATCH, ApiError, KubeClient
from kubesched.cluster.kube.events import micro_time
from kubesched.cluster.kube.workers import AsyncCalls

__all__ = ["PodStatusWriter", "pod_scheduled_patch"]

log = logging.getLogger(__name__)

#: Attempts per write, with these pauses between them (seconds).
RETRY_DELAYS = (0.2, 1.0)


def _rfc3339(t: float) -> str:
    return micro_time(t)[:19] + "Z"


def pod_scheduled_patch(
    pod: Pod, *, reason: str, message: str, nominated_node_name: str | None, now: float
) -> dict[str, Any] | None:
    """The status patch for a failed attempt, or None when the pod already shows exactly that."""
    current = next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)
    condition_same = (
        current is not None
        and current.status == "False"
        and current.reason == reason
        and current.message == message
    )
    nomination_same = nominated_node_name is None or nominated_node_name == pod.status.nominated_node_name
    if condition_same and nomination_same:
        return None
    status: dict[str, Any] = {}
    if not condition_same:
        condition: dict[str, Any] = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastProbeTime": None,
        }
        if current is None or current.status != "False":
            condition["lastTransitionTime"] = _rfc3339(now)  # only when the status flips, as upstream
        status["conditions"] = [condition]
    if not nomination_same:
        status["nominatedNodeName"] = nominated_node_name or None  # null removes it
    return (
        {"metadata": {"uid": pod.metadata.uid}, "status": status} if pod.metadata.uid else {"status": status}
    )


def _status_path(pod: Pod) -> str:
    return f"/api/v1/namespaces/{pod.metadata.namespace}/pods/{pod.metadata.name}/status"


class PodStatusWriter:
    """Sends status patches and victim deletions for the scheduler, asynchronously."""

    def __init__(
        self,
        client: KubeClient,
        calls: AsyncCalls,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.calls = calls
        self._clock = clock
        self._sleep = sleep

    def set_pod_scheduled_condition(
        self, pod: Pod, *, reason: str, message: str, nominated_node_name: str | None
    ) -> None:
        patch = pod_scheduled_patch(
            pod, reason=reason, message=message, nominated_node_name=nominated_node_name, now=self._clock()
        )
        if patch is not None:
            self.calls.submit(lambda: self._patch(pod, patch))

    def set_nominated_node_name(self, pod: Pod, node_name: str) -> None:
        if node_name == pod.status.nominated_node_name:
            return
        patch: dict[str, Any] = {"status": {"nominatedNodeName": node_name or None}}
        if pod.metadata.uid:
            patch["metadata"] = {"uid": pod.metadata.uid}
        self.calls.submit(lambda: self._patch(pod, patch))

    def delete_pod(self, pod: Pod, *, reason: str, message: str) -> None:
        """Evict a preemption victim: mark it `DisruptionTarget` (why), then delete it (UID-guarded)."""
        self.calls.submit(lambda: self._evict(pod, reason, message))

    # ------------------------------------------------------------------ workers

    def _patch(self, pod: Pod, patch: dict[str, Any]) -> None:
        self._retry(
            f"status of {pod.key}",
            lambda: self.client.patch(_status_path(pod), patch, content_type=STRATEGIC_MERGE_PATCH),
        )

    def _evict(self, pod: Pod, reason: str, message: str) -> None:
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": reason or "PreemptionByScheduler",
            "message": message,
            "lastTransitionTime": _rfc3339(self._clock()),
        }
        patch: dict[str, Any] = {"status": {"conditions": [condition]}}
        if pod.metadata.uid:
            patch["metadata"] = {"uid": pod.metadata.uid}
        self._retry(
            f"disruption condition of {pod.key}",
            lambda: self.client.patch(_status_path(pod), patch, content_type=STRATEGIC_MERGE_PATCH),
        )
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if pod.metadata.uid:
            options["preconditions"] = {"uid": pod.metadata.uid}
        path = f"/api/v1/namespaces/{pod.metadata.namespace}/pods/{pod.metadata.name}"
        self._retry(f"deletion of {pod.key}", lambda: self.client.delete(path, options))

    def _retry(self, what: str, call: Callable[[], object]) -> bool:
        for attempt in range(len(RETRY_DELAYS) + 1):
            try:
                call()
                return True
            except ApiError as exc:
                if exc.code in (404, 409, 422):  # gone, recreated, or invalid: retrying cannot help
                    log.info("%s not written: %s", what, exc)
                    return False
                if attempt == len(RETRY_DELAYS):
                    log.warning("%s not written: %s", what, exc)
                    return False
                self._sleep(RETRY_DELAYS[attempt])
        return False  # pragma: no cover
