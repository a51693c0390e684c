"""Deployments: a ReplicaSet per template revision, and the rollout between them.

The ReplicaSet of the current template is found by comparing templates (ignoring the revision
label), or created as `<deployment>-<pod-template-hash>` with that label added to its selector and
template. A rollout then moves replicas from the old ReplicaSets to the new one round by round, as
the deployment controller does:

* `RollingUpdate`: the new ReplicaSet grows while all pods stay within `replicas + maxSurge`; old
  ReplicaSets shrink while at least `replicas - maxUnavailable` pods stay available (unavailable old
  pods go first). A pod counts as available once it is bound (see `is_available`).
* `Recreate`: every old pod goes first, then the new ReplicaSet is scaled up.

So a snapshot plus an edited Deployment shows whether the rollout fits while the old pods still
hold their room, and where the new pods land; a rollout that cannot progress stops with its status
saying what it waits for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import msgspec

from kubesched.api.controllers import Deployment, PodTemplateSpec, ReplicaSet, WorkloadSpec
from kubesched.api.meta import LabelSelector, ObjectMeta
from kubesched.simulate.workloads.context import ControllerContext, OwnerKey, WorkloadStatus, is_available
from kubesched.simulate.workloads.naming import (
    POD_TEMPLATE_HASH_LABEL,
    canonical_template,
    controller_reference,
    object_uid,
    template_hash,
)
from kubesched.simulate.workloads.replica_set import ReplicaSetController

__all__ = ["DeploymentController", "resolve_int_or_percent"]

_DEFAULT_SURGE = "25%"
_DEFAULT_UNAVAILABLE = "25%"


def resolve_int_or_percent(value: int | str | None, total: int, *, round_up: bool, default: str) -> int:
    """An int-or-percent field against `total`: maxSurge rounds up, maxUnavailable down, as upstream."""
    if value is None:
        value = default
    if isinstance(value, int):
        return value
    percent = int(value.rstrip("%"))
    scaled = percent * total / 100
    return math.ceil(scaled) if round_up else math.floor(scaled)


@dataclass
class DeploymentController:
    key: OwnerKey
    deployment: Deployment
    uid: str
    #: The Deployment's ReplicaSets, oldest first; the one matching the template is `new`.
    replica_sets: list[ReplicaSetController] = field(default_factory=list)
    new: ReplicaSetController | None = None
    #: ReplicaSet objects made for new revisions (the manager lists them for the spreading plugins).
    made: list[ReplicaSet] = field(default_factory=list)

    @property
    def replicas(self) -> int:
        spec = self.deployment.spec
        return 1 if spec.replicas is None else spec.replicas

    def scale(self, replicas: int) -> None:
        spec = msgspec.structs.replace(self.deployment.spec, replicas=replicas)
        self.deployment = msgspec.structs.replace(self.deployment, spec=spec)

    def find_new(self) -> None:
        """Pick the ReplicaSet whose template is the Deployment's, if one exists."""
        template = self._template()
        wanted = canonical_template(template)
        for rs in self.replica_sets:
            if canonical_template(rs.template) == wanted:
                self.new = rs

    def reconcile(self, ctx: ControllerContext) -> None:
        if self.deployment.spec.paused:
            return
        if self.new is None:
            self.new = self._make_new_replica_set(ctx)
        new, old = self.new, [rs for rs in self.replica_sets if rs is not self.new]
        if self.deployment.spec.strategy.type == "Recreate":
            self._recreate(ctx, new, old)
        else:
            self._rolling(ctx, new, old)

    def _recreate(
        self, ctx: ControllerContext, new: ReplicaSetController, old: list[ReplicaSetController]
    ) -> None:
        for rs in old:
            rs.replicas = 0
        if not any(ctx.pods_of(rs.key) for rs in old):
            new.replicas = self.replicas

    def _rolling(
        self, ctx: ControllerContext, new: ReplicaSetController, old: list[ReplicaSetController]
    ) -> None:
        replicas = self.replicas
        rolling = self.deployment.spec.strategy.rolling_update
        surge = resolve_int_or_percent(
            rolling.max_surge if rolling else None, replicas, round_up=True, default=_DEFAULT_SURGE
        )
        unavailable = resolve_int_or_percent(
            rolling.max_unavailable if rolling else None,
            replicas,
            round_up=False,
            default=_DEFAULT_UNAVAILABLE,
        )
        if surge == 0 and unavailable == 0:
            unavailable = 1
        # Scale up the new ReplicaSet within replicas + maxSurge.
        total = sum(rs.replicas for rs in self.replica_sets)
        if new.replicas > replicas:
            new.replicas = replicas
        elif new.replicas < replicas and total < replicas + surge:
            new.replicas = min(replicas, new.replicas + replicas + surge - total)
            return
        # Scale down the old ones while replicas - maxUnavailable stay available.
        min_available = replicas - unavailable
        new_unavailable = new.replicas - new.available(ctx)
        budget = sum(rs.replicas for rs in self.replica_sets) - min_available - new_unavailable
        if budget <= 0:
            return
        for rs in old:  # unhealthy old pods first: removing them costs no availability
            unhealthy = rs.replicas - rs.available(ctx)
            cut = min(max(unhealthy, 0), budget)
            rs.replicas -= cut
            budget -= cut
        available = sum(rs.available(ctx) for rs in self.replica_sets)
        budget = min(budget, available - min_available)
        for rs in old:
            if budget <= 0:
                break
            cut = min(rs.replicas, budget)
            rs.replicas -= cut
            budget -= cut

    def status(self, ctx: ControllerContext) -> WorkloadStatus:
        kind, namespace, name = self.key
        current = ctx.pods_of(self.new.key) if self.new is not None else []
        old = [p for rs in self.replica_sets if rs is not self.new for p in ctx.pods_of(rs.key)]
        waiting = None
        if self.deployment.spec.paused:
            waiting = "the Deployment is paused"
        elif old and all(is_available(p) for p in current):
            waiting = (
                f"rollout stopped: {len(old)} old pod(s) cannot be replaced within maxSurge/maxUnavailable"
            )
        return WorkloadStatus(kind, namespace, name, self.replicas, current, old, waiting)

    # ------------------------------------------------------------------ new revision
    def _template(self) -> PodTemplateSpec:
        template = self.deployment.spec.template
        assert template is not None  # checked when the object was loaded
        return template

    def _make_new_replica_set(self, ctx: ControllerContext) -> ReplicaSetController:
        template = self._template()
        hash_ = template_hash(template)
        _, namespace, name = self.key
        rs_name = f"{name}-{hash_}"
        taken = {rs.key[2] for rs in self.replica_sets}
        collisions = 0
        while rs_name in taken:  # a different template already holds the name: upstream's collisionCount
            collisions += 1
            rs_name = f"{name}-{hash_}{collisions}"
        labels = {**template.metadata.labels, POD_TEMPLATE_HASH_LABEL: hash_}
        rs_template = msgspec.structs.replace(
            template, metadata=msgspec.structs.replace(template.metadata, labels=labels)
        )
        selector = self.deployment.spec.selector or LabelSelector()
        selector = msgspec.structs.replace(
            selector, match_labels={**selector.match_labels, POD_TEMPLATE_HASH_LABEL: hash_}
        )
        uid = object_uid("ReplicaSet", namespace, rs_name)
        owner = controller_reference("apps/v1", "Deployment", name, self.uid)
        self.made.append(
            ReplicaSet(
                metadata=ObjectMeta(
                    name=rs_name, namespace=namespace, uid=uid, labels=labels, owner_references=[owner]
                ),
                spec=WorkloadSpec(selector=selector, replicas=0, template=rs_template),
            )
        )
        rs = ReplicaSetController(
            key=("ReplicaSet", namespace, rs_name),
            reference=controller_reference("apps/v1", "ReplicaSet", rs_name, uid),
            template=rs_template,
            replicas=0,
            deployment=name,
            age=len(self.replica_sets),
        )
        self.replica_sets.append(rs)
        return rs
