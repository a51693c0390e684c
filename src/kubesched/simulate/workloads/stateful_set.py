"""StatefulSets: pods `<set>-<ordinal>` with their identity labels and per-pod claims.

Each pod carries `controller-revision-hash: <set>-<hash>`, `statefulset.kubernetes.io/pod-name` and
`apps.kubernetes.io/pod-index`; each volumeClaimTemplate becomes a PersistentVolumeClaim
`<template>-<set>-<ordinal>` (labelled with the set's selector) mounted under the template's name,
so VolumeBinding sees what it would see in a cluster. With `OrderedReady` (the default) ordinal N
is created only once every lower ordinal is available, so an unschedulable pod holds back the
rest, as in a cluster; `Parallel` creates them all at once. A template change is rolled out as
`RollingUpdate` does it: the highest ordinal (at or above `partition`) of an old revision is deleted
and created again from the new template, one pod at a time, each once those above it are ready;
`OnDelete` leaves existing pods as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from kubesched.api.controllers import StatefulSet
from kubesched.api.meta import ObjectMeta, OwnerReference
from kubesched.api.objects import PersistentVolumeClaimVolumeSource, Pod, PodSpec, Volume
from kubesched.api.storage import PersistentVolumeClaim
from kubesched.simulate.workloads.context import ControllerContext, OwnerKey, WorkloadStatus, is_available
from kubesched.simulate.workloads.naming import template_hash

__all__ = ["POD_INDEX_LABEL", "POD_NAME_LABEL", "REVISION_LABEL", "StatefulSetController"]

REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


@dataclass
class StatefulSetController:
    key: OwnerKey
    stateful_set: StatefulSet
    reference: OwnerReference
    #: Revisions this controller has made pods of, first as given (see `_revision_of`).
    _revisions: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._revision()

    @property
    def replicas(self) -> int:
        replicas = self.stateful_set.spec.replicas
        return 1 if replicas is None else replicas

    @property
    def _start(self) -> int:
        ordinals = self.stateful_set.spec.ordinals
        return ordinals.start if ordinals is not None else 0

    def scale(self, replicas: int) -> None:
        """Set `replicas`; pods are then created at once (Parallel), since only placement is asked."""
        spec = msgspec.structs.replace(
            self.stateful_set.spec, replicas=replicas, pod_management_policy="Parallel"
        )
        self.stateful_set = msgspec.structs.replace(self.stateful_set, spec=spec)

    def _ordinal(self, pod: Pod) -> int | None:
        prefix = f"{self.key[2]}-"
        tail = pod.metadata.name.removeprefix(prefix)
        return int(tail) if pod.metadata.name.startswith(prefix) and tail.isdigit() else None

    def reconcile(self, ctx: ControllerContext) -> None:
        ordered = self.stateful_set.spec.pod_management_policy != "Parallel"
        existing: dict[int, Pod] = {}
        for pod in ctx.pods_of(self.key):
            ordinal = self._ordinal(pod)
            if ordinal is not None:  # a pod not named like the set's is left alone
                existing[ordinal] = pod
        wanted = range(self._start, self._start + self.replicas)
        for ordinal in wanted:
            current = existing.get(ordinal)
            if current is None:
                self._create(ctx, ordinal)
                if ordered:
                    return  # wait for it to be running and ready
            elif ordered and not is_available(current):
                return
        surplus = sorted((o for o in existing if o not in wanted), reverse=True)
        for ordinal in surplus[:1] if ordered else surplus:  # highest ordinal first
            why = f"StatefulSet {self.key[2]} scaled down to {self.replicas}"
            ctx.delete_pod(self.key, existing[ordinal], why)
        if not surplus:
            self._roll(ctx, [existing[o] for o in reversed(wanted) if o in existing and o >= self._partition])

    @property
    def _partition(self) -> int:
        rolling = self.stateful_set.spec.update_strategy.rolling_update
        return self._start + (rolling.partition if rolling is not None else 0)

    def _roll(self, ctx: ControllerContext, highest_first: list[Pod]) -> None:
        """RollingUpdate: replace the highest ordinal of an old revision, once those above are ready.

        The pod is deleted; the next round creates its ordinal again from the current template.
        """
        if self.stateful_set.spec.update_strategy.type == "OnDelete":
            return
        revision = self._revision()
        for pod in highest_first:
            if self._revision_of(pod) != revision:
                ctx.delete_pod(self.key, pod, f"StatefulSet {self.key[2]} rolling update to {revision}")
                return
            if not is_available(pod):
                return

    def _revision(self) -> str:
        template = self.stateful_set.spec.template
        assert template is not None  # checked when the object was loaded
        revision = f"{self.key[2]}-{template_hash(template)}"
        if revision not in self._revisions:
            self._revisions.append(revision)
        return revision

    def _revision_of(self, pod: Pod) -> str:
        """The pod's revision; a label the simulation never made (a real cluster's hash, which
        cannot be reproduced) is taken as the revision of the StatefulSet as first given."""
        label = pod.metadata.labels.get(REVISION_LABEL, "")
        return label if label in self._revisions else self._revisions[0]

    def _create(self, ctx: ControllerContext, ordinal: int) -> None:
        template = self.stateful_set.spec.template
        assert template is not None  # checked when the object was loaded
        name = self.key[2]
        pod_name = f"{name}-{ordinal}"
        labels = {
            REVISION_LABEL: self._revision(),
            POD_NAME_LABEL: pod_name,
            POD_INDEX_LABEL: str(ordinal),
        }
        spec = self._with_claims(ctx, template.spec, ordinal)
        ctx.create_pod(self.key, self.reference, template, name=pod_name, labels=labels, spec=spec)

    def _with_claims(self, ctx: ControllerContext, spec: PodSpec, ordinal: int) -> PodSpec:
        """Volumes for the claim templates (replacing same-named template volumes); claims created."""
        templates = self.stateful_set.spec.volume_claim_templates
        if not templates:
            return spec
        _, namespace, name = self.key
        claims = ctx.cluster.objects.persistent_volume_claims
        present = {(c.metadata.namespace or "default", c.metadata.name) for c in claims}
        selector = self.stateful_set.spec.selector
        labels = dict(selector.match_labels) if selector is not None else {}
        volumes: list[Volume] = []
        for claim in templates:
            claim_name = f"{claim.metadata.name}-{name}-{ordinal}"
            if (namespace, claim_name) not in present:
                meta = ObjectMeta(name=claim_name, namespace=namespace, labels=labels)
                claims.append(PersistentVolumeClaim(metadata=meta, spec=claim.spec))
            source = PersistentVolumeClaimVolumeSource(claim_name=claim_name)
            volumes.append(Volume(name=claim.metadata.name, persistent_volume_claim=source))
        mounted = {v.name for v in volumes}
        volumes += [v for v in spec.volumes if v.name not in mounted]
        return msgspec.structs.replace(spec, volumes=volumes)

    def status(self, ctx: ControllerContext) -> WorkloadStatus:
        kind, namespace, name = self.key
        pods = ctx.pods_of(self.key)
        waiting = None
        if len(pods) < self.replicas and all(is_available(p) for p in pods):
            waiting = f"{len(pods)}/{self.replicas} pods created"
        return WorkloadStatus(kind, namespace, name, self.replicas, pods, waiting_for=waiting)
