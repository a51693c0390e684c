"""Pod status writes: the `PodScheduled=False` condition, `status.nominatedNodeName`, and evictions.

Cluster autoscalers and Karpenter read `PodScheduled=False/Unschedulable` to decide to add nodes,
so a scheduler must keep it current. Patches are strategic-merge patches of `pods/{name}/status`
(conditions merge by `type`) carrying the pod's UID, so a patch never lands on a recreated pod of
the same name. A patch that would change nothing (same reason and message, same nomination) is not
sent, as upstream's `updatePod` skips it; the full message goes into the condition (the Event note is
the truncated one).

All writes run on `AsyncCalls` workers; a write that fails for a passing reason (the API server
restarting) is tried again, off the workers, for about 45 s. The scheduling loop never waits for them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import msgspec

from kubesched.api.objects import Pod
from kubesched.api.resource import Condition
from kubesched.api.scheduling_groups import PodGroup
from kubesched.cluster.kube.client import STRATEGIC_MERGE_PATCH, ApiError, KubeClient
from kubesched.cluster.kube.events import micro_time
from kubesched.cluster.kube.workers import AsyncCalls, submit_retrying

__all__ = ["PodStatusWriter", "pod_scheduled_patch"]

log = logging.getLogger(__name__)


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
    ) -> None:
        self.client = client
        self.calls = calls
        self._clock = clock

    def set_pod_scheduled_condition(
        self, pod: Pod, *, reason: str, message: str, nominated_node_name: str | None
    ) -> None:
        patch = pod_scheduled_patch(
            pod, reason=reason, message=message, nominated_node_name=nominated_node_name, now=self._clock()
        )
        if patch is not None:
            self._submit(f"status of {pod.key}", lambda: self._patch(pod, patch))

    def set_nominated_node_name(self, pod: Pod, node_name: str) -> None:
        if node_name == pod.status.nominated_node_name:
            return
        patch: dict[str, Any] = {"status": {"nominatedNodeName": node_name or None}}
        if pod.metadata.uid:
            patch["metadata"] = {"uid": pod.metadata.uid}
        self._submit(f"status of {pod.key}", lambda: self._patch(pod, patch))

    def expect_binding(self, pod: Pod, node_name: str) -> None:
        """Patch `status.nominatedNodeName` at once, on the calling thread. A failure is logged and
        the binding goes on: the nomination only tells other components (autoscalers) what is
        coming, and the bind itself reports a pod that is gone."""
        patch: dict[str, Any] = {"status": {"nominatedNodeName": node_name}}
        if pod.metadata.uid:
            patch["metadata"] = {"uid": pod.metadata.uid}
        try:
            self._patch(pod, patch)
        except ApiError as exc:
            self._failed(f"nominatedNodeName of {pod.key}", exc)
        except OSError as exc:
            log.warning("nominatedNodeName of %s not written: %s", pod.key, exc)

    def set_pod_group_condition(self, pod_group: PodGroup, condition: Condition) -> None:
        """Patch one condition of a PodGroup's status, UID-guarded, as upstream's PatchPodGroupStatus
        (a strategic merge of `status.conditions` by type)."""
        meta = pod_group.metadata
        written: dict[str, Any] = msgspec.to_builtins(condition)
        # An empty message is sent, not left out: merged by type, a left-out message would keep the
        # one an earlier cycle wrote (a True condition with a failed cycle's text). Upstream's patch
        # carries metav1.Condition's message, which is never omitted.
        written.setdefault("message", "")
        patch: dict[str, Any] = {"status": {"conditions": [written]}}
        if meta.uid:
            patch["metadata"] = {"uid": meta.uid}
        namespace = meta.namespace or "default"
        path = f"/apis/scheduling.k8s.io/v1beta1/namespaces/{namespace}/podgroups/{meta.name}/status"

        def write() -> None:
            self.client.patch(path, patch, content_type=STRATEGIC_MERGE_PATCH)

        self._submit(f"status of PodGroup {namespace}/{meta.name}", write)

    def delete_pod(self, pod: Pod, *, reason: str, message: str) -> None:
        """Evict a preemption victim: mark it `DisruptionTarget` (why), then delete it (UID-guarded)."""
        now = self._clock()
        self._submit(f"eviction of {pod.key}", lambda: self._evict(pod, reason, message, now))

    # ------------------------------------------------------------------ workers

    def _submit(self, what: str, write: Callable[[], None]) -> None:
        submit_retrying(self.calls, write, lambda exc: self._failed(what, exc))

    @staticmethod
    def _failed(what: str, exc: ApiError) -> None:
        if exc.code in (404, 409, 422):  # gone, recreated, or invalid: nothing to write to
            log.info("%s not written: %s", what, exc)
        else:
            log.warning("%s not written: %s", what, exc)

    def _patch(self, pod: Pod, patch: dict[str, Any]) -> None:
        self.client.patch(_status_path(pod), patch, content_type=STRATEGIC_MERGE_PATCH)

    def evict_now(self, pod: Pod, *, reason: str, message: str) -> bool:
        """Evict a preemption victim on the calling thread, as v1.37's async preemption does: the
        DisruptionTarget condition, then the deletion. False when the victim was already gone (404 on
        either step, or 409: the UID precondition found a different pod of that name); any other
        error is raised (the caller abandons the rest of the preemption)."""
        try:
            self._patch(pod, self._disruption_patch(pod, reason, message, self._clock()))
            self.client.delete(_pod_path(pod), _delete_options(pod))
        except ApiError as exc:
            if exc.code in (404, 409):
                log.info("preemption victim %s already gone: %s", pod.key, exc)
                return False
            raise
        return True

    @staticmethod
    def _disruption_patch(pod: Pod, reason: str, message: str, now: float) -> dict[str, Any]:
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": reason or "PreemptionByScheduler",
            "message": message,
            "lastTransitionTime": _rfc3339(now),
        }
        patch: dict[str, Any] = {"status": {"conditions": [condition]}}
        if pod.metadata.uid:
            patch["metadata"] = {"uid": pod.metadata.uid}
        return patch

    def _evict(self, pod: Pod, reason: str, message: str, now: float) -> None:
        """Both steps are safe to repeat: a retry after a lost answer to the deletion finds the pod
        gone (404, final) or, if it was recreated, refused by the UID precondition."""
        try:
            self._patch(pod, self._disruption_patch(pod, reason, message, now))
        except ApiError as exc:
            if exc.code != 422:  # an invalid condition must not save the victim; anything else stops
                raise
            log.info("disruption condition of %s not written: %s", pod.key, exc)
        self.client.delete(_pod_path(pod), _delete_options(pod))


def _pod_path(pod: Pod) -> str:
    return f"/api/v1/namespaces/{pod.metadata.namespace}/pods/{pod.metadata.name}"


def _delete_options(pod: Pod) -> dict[str, Any]:
    """DeleteOptions guarded by the pod's UID: a pod recreated under the same name is not evicted."""
    options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
    if pod.metadata.uid:
        options["preconditions"] = {"uid": pod.metadata.uid}
    return options
