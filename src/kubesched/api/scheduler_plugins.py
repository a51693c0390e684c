"""Kinds of the kubernetes-sigs scheduler-plugins API group (`scheduling.x-k8s.io`): its PodGroup."""

from __future__ import annotations

from kubesched.api.meta import Int32, KubeStruct, ObjectMeta


class PodGroupSpec(KubeStruct, frozen=True):
    """What a gang needs before any member may bind (scheduler-plugins' PodGroup spec).

    `minMember`: members that must be placed together; `minResources`: resources the cluster must have
    free for the group; `scheduleTimeoutSeconds`: how long placed members wait at Permit for the rest.
    """

    min_member: Int32 = 0
    min_resources: dict[str, str | int | float] = {}
    schedule_timeout_seconds: Int32 | None = None


class PodGroup(KubeStruct, frozen=True):
    """A `scheduling.x-k8s.io/v1alpha1` PodGroup; pods join it with the label `scheduling.x-k8s.io/pod-group`.

    The kind name is shared with Kubernetes' native `scheduling.k8s.io` PodGroup, so `apiVersion` is
    kept: the Coscheduling plugin reads only objects of the scheduler-plugins group.
    """

    api_version: str = "scheduling.x-k8s.io/v1alpha1"
    kind: str = "PodGroup"
    metadata: ObjectMeta = ObjectMeta()
    spec: PodGroupSpec = PodGroupSpec()
