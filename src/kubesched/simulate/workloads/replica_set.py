"""ReplicaSets and ReplicationControllers: keep `replicas` pods, named `<owner>-<random>`.

Missing pods are created from the template; extra pods are deleted in the controller's preference
order (`ranking.deletion_order`: pods not yet on a node first, ..., then the newest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubesched.api.controllers import PodTemplateSpec
from kubesched.api.meta import OwnerReference
from kubesched.api.objects import Pod
from kubesched.simulate.workloads.context import ControllerContext, OwnerKey, WorkloadStatus, is_available
from kubesched.simulate.workloads.ranking import deletion_order

__all__ = ["ReplicaSetController"]


@dataclass
class ReplicaSetController:
    """A ReplicaSet (or ReplicationController) with its replica count, which a Deployment may change."""

    key: OwnerKey
    reference: OwnerReference
    template: PodTemplateSpec
    replicas: int
    #: The Deployment that owns this ReplicaSet, if any (its rollout decides `replicas`).
    deployment: str | None = None
    #: Position among the Deployment's ReplicaSets, oldest first (input order, then creation).
    age: int = 0

    def reconcile(self, ctx: ControllerContext, related: Sequence[Pod] | None = None) -> None:
        """Create or delete pods towards `replicas`; `related` are the Deployment's pods, for ranking."""
        pods = ctx.pods_of(self.key)
        missing = self.replicas - len(pods)
        for _ in range(missing):
            ctx.create_pod(self.key, self.reference, self.template, generate_name=f"{self.key[2]}-")
        if missing < 0:
            ranked = deletion_order(pods, pods if related is None else related, ctx.times, ctx.now())
            for pod in ranked[:-missing]:
                why = f"{self.key[0]} {self.key[2]} scaled down to {self.replicas}"
                ctx.delete_pod(self.key, pod, why)

    def scale(self, replicas: int) -> None:
        self.replicas = replicas

    def available(self, ctx: ControllerContext) -> int:
        return sum(1 for p in ctx.pods_of(self.key) if is_available(p))

    def status(self, ctx: ControllerContext) -> WorkloadStatus:
        kind, namespace, name = self.key
        return WorkloadStatus(kind, namespace, name, self.replicas, ctx.pods_of(self.key))
