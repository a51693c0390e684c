"""Kinds that shape scheduling without being scheduled: Namespace, PriorityClass,
PodDisruptionBudget and Service."""

from __future__ import annotations

from kubesched.api.meta import Int32, KubeStruct, LabelSelector, ObjectMeta


class Namespace(KubeStruct, frozen=True):
    api_version: str = "v1"
    kind: str = "Namespace"
    metadata: ObjectMeta = ObjectMeta()


class PriorityClass(KubeStruct, frozen=True):
    api_version: str = "scheduling.k8s.io/v1"
    kind: str = "PriorityClass"
    metadata: ObjectMeta = ObjectMeta()
    value: Int32 = 0
    global_default: bool = False
    preemption_policy: str | None = None


class PodDisruptionBudgetSpec(KubeStruct, frozen=True):
    selector: LabelSelector | None = None
    min_available: Int32 | str | None = None
    max_unavailable: Int32 | str | None = None


class PodDisruptionBudgetStatus(KubeStruct, frozen=True):
    disruptions_allowed: Int32 = 0
    current_healthy: Int32 = 0
    desired_healthy: Int32 = 0
    expected_pods: Int32 = 0


class PodDisruptionBudget(KubeStruct, frozen=True):
    api_version: str = "policy/v1"
    kind: str = "PodDisruptionBudget"
    metadata: ObjectMeta = ObjectMeta()
    spec: PodDisruptionBudgetSpec = PodDisruptionBudgetSpec()
    status: PodDisruptionBudgetStatus = PodDisruptionBudgetStatus()


class ServiceSpec(KubeStruct, frozen=True):
    selector: dict[str, str] = {}


class Service(KubeStruct, frozen=True):
    """Only its selector matters: PodTopologySpread's system default constraints spread by it."""

    api_version: str = "v1"
    kind: str = "Service"
    metadata: ObjectMeta = ObjectMeta()
    spec: ServiceSpec = ServiceSpec()
