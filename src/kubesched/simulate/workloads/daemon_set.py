"""DaemonSets: one pod per node that should run it, pinned by a `matchFields` node affinity.

The controller decides which nodes should run a daemon pod (the template's nodeSelector and
required node affinity match, and every NoSchedule/NoExecute taint is tolerated, counting the
tolerations daemon pods always get), then creates each pod with its required node affinity replaced
by one term, `metadata.name In [<node>]`, and leaves the rest to the scheduler, as upstream does
since ScheduleDaemonSetPods. Pods carry `controller-revision-hash` and `pod-template-generation`.
A template change rolls out (`RollingUpdate`, see `_roll`) unless `updateStrategy` is `OnDelete`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

import msgspec

from kubesched.api.controllers import DaemonSet
from kubesched.api.meta import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, OwnerReference
from kubesched.api.objects import Affinity, Node, NodeAffinity, Pod, PodSpec, Toleration
from kubesched.api.selectors import RequiredNodeAffinity
from kubesched.api.taints import tolerates_all
from kubesched.simulate.workloads.context import ControllerContext, OwnerKey, WorkloadStatus, is_available
from kubesched.simulate.workloads.deployment import resolve_int_or_percent
from kubesched.simulate.workloads.naming import template_hash

__all__ = ["DaemonSetController", "daemon_tolerations", "pin_to_node"]

REVISION_LABEL: Final = "controller-revision-hash"
GENERATION_LABEL: Final = "pod-template-generation"
#: The field a daemon pod's node affinity selects its node by.
NODE_NAME_FIELD: Final = "metadata.name"
_NO_SCHEDULE_OR_EXECUTE: Final = frozenset({"NoSchedule", "NoExecute"})
_NO_EXECUTE: Final = frozenset({"NoExecute"})

#: Tolerations every daemon pod gets, so node problems never evict or block it.
_DAEMON_TOLERATIONS: Final = (
    Toleration(key="node.kubernetes.io/not-ready", operator="Exists", effect="NoExecute"),
    Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect="NoExecute"),
    Toleration(key="node.kubernetes.io/disk-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key="node.kubernetes.io/memory-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key="node.kubernetes.io/pid-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule"),
)
_HOST_NETWORK_TOLERATION: Final = Toleration(
    key="node.kubernetes.io/network-unavailable", operator="Exists", effect="NoSchedule"
)


def daemon_tolerations(spec: PodSpec) -> PodSpec:
    """The spec with the daemon tolerations appended (those it already has are not repeated)."""
    extra = list(_DAEMON_TOLERATIONS)
    if spec.host_network:
        extra.append(_HOST_NETWORK_TOLERATION)
    tolerations = list(spec.tolerations)
    tolerations += [t for t in extra if t not in tolerations]
    return msgspec.structs.replace(spec, tolerations=tolerations)


def pin_to_node(spec: PodSpec, node_name: str) -> PodSpec:
    """The spec whose required node affinity is exactly `metadata.name In [node_name]`.

    Like upstream, other required terms are replaced, not ANDed: the controller has already checked
    them when it chose the node. Preferred terms and pod (anti-)affinity are kept.
    """
    pinned = NodeSelector(
        node_selector_terms=[
            NodeSelectorTerm(
                match_fields=[NodeSelectorRequirement(key=NODE_NAME_FIELD, operator="In", values=[node_name])]
            )
        ]
    )
    affinity = spec.affinity or Affinity()
    node_affinity = affinity.node_affinity or NodeAffinity()
    node_affinity = msgspec.structs.replace(
        node_affinity, required_during_scheduling_ignored_during_execution=pinned
    )
    return msgspec.structs.replace(
        spec, affinity=msgspec.structs.replace(affinity, node_affinity=node_affinity)
    )


def _pinned_node(pod: Pod) -> str | None:
    """The node a daemon pod is bound to or pinned to by its matchFields term."""
    if pod.spec.node_name:
        return pod.spec.node_name
    affinity = pod.spec.affinity
    required = (
        affinity.node_affinity.required_during_scheduling_ignored_during_execution
        if affinity is not None and affinity.node_affinity is not None
        else None
    )
    for term in required.node_selector_terms if required is not None else ():
        for requirement in term.match_fields:
            if (
                requirement.key == NODE_NAME_FIELD
                and requirement.operator == "In"
                and len(requirement.values) == 1
            ):
                return requirement.values[0]
    return None


@dataclass
class DaemonSetController:
    key: OwnerKey
    daemon_set: DaemonSet
    reference: OwnerReference
    #: Revisions this controller has made pods of, first as given (see `_revision_of`).
    _revisions: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.derive()

    def derive(self) -> None:
        """What every pod of the DaemonSet shares, from `daemon_set` (again after it changed)."""
        template = self.daemon_set.spec.template
        assert template is not None  # checked when the object was loaded
        self._spec = daemon_tolerations(template.spec)
        generation = self.daemon_set.metadata.generation or 1
        self._labels = {REVISION_LABEL: template_hash(template), GENERATION_LABEL: str(generation)}
        if self._labels[REVISION_LABEL] not in self._revisions:
            self._revisions.append(self._labels[REVISION_LABEL])
        self._fits = RequiredNodeAffinity(Pod(spec=self._spec))
        #: Per node name, the node object last judged and (should run, should continue running):
        #: nodes are immutable, so a verdict holds until the node is replaced.
        self._verdicts: dict[str, tuple[Node, bool, bool]] = {}

    def scale(self, replicas: int) -> None:
        """A DaemonSet has no replica count: one pod per node that should run it."""

    def should_run(self, node: Node) -> bool:
        """Whether the controller puts a daemon pod on `node` (it does not ask the scheduler)."""
        return self._verdict(node)[1]

    def should_continue_running(self, node: Node) -> bool:
        """Whether a daemon pod already there stays: a later NoSchedule taint does not remove it."""
        return self._verdict(node)[2]

    def _verdict(self, node: Node) -> tuple[Node, bool, bool]:
        cached = self._verdicts.get(node.name)
        if cached is not None and cached[0] is node:
            return cached
        spec = self._spec
        stays = (not spec.node_name or spec.node_name == node.name) and bool(
            self._fits(node.name, node.labels)
        )
        stays = stays and tolerates_all(node.spec.taints, spec.tolerations, _NO_EXECUTE)
        runs = stays and tolerates_all(node.spec.taints, spec.tolerations, _NO_SCHEDULE_OR_EXECUTE)
        verdict = self._verdicts[node.name] = (node, runs, stays)
        return verdict

    def reconcile(self, ctx: ControllerContext) -> None:
        template = self.daemon_set.spec.template
        assert template is not None
        nodes = ctx.cluster.nodes
        served: dict[str, Pod] = {}
        for pod in ctx.pods_of(self.key):
            name = _pinned_node(pod)
            node = nodes.get(name) if name is not None else None
            if node is None or not self.should_continue_running(node):
                # The node is gone (a bound pod's is PodGC's to delete) or should not run it any more.
                if node is not None or not pod.spec.node_name:
                    ctx.delete_pod(self.key, pod, f"DaemonSet {self.key[2]}: node {name} no longer runs it")
                continue
            served[node.name] = pod
        self._roll(ctx, served)
        for name in sorted(nodes):
            node = nodes[name]
            if name in served or not self.should_run(node):
                continue
            spec = pin_to_node(self._spec, name)
            ctx.create_pod(
                self.key,
                self.reference,
                template,
                generate_name=f"{self.key[2]}-",
                labels=self._labels,
                spec=spec,
            )

    def _roll(self, ctx: ControllerContext, served: dict[str, Pod]) -> None:
        """RollingUpdate: delete pods of an old revision, at most maxUnavailable nodes without an
        available daemon pod at a time; the next round creates their replacements. Old pods that
        are not available go at once (they cost no availability). maxSurge is not modelled (0)."""
        strategy = self.daemon_set.spec.update_strategy
        current = self._labels[REVISION_LABEL]
        old = {n: p for n, p in served.items() if self._revision_of(p) != current}
        if strategy.type == "OnDelete" or not old:
            return
        wanted = [n for n in ctx.cluster.nodes.values() if self.should_run(n)]
        rolling = strategy.rolling_update
        limit = resolve_int_or_percent(
            rolling.max_unavailable if rolling else None, len(wanted), round_up=True, default="1"
        )
        unavailable = sum(1 for n in wanted if n.name not in served or not is_available(served[n.name]))
        why = f"DaemonSet {self.key[2]} rolling update to revision {current}"
        for name in sorted(old):
            pod = old[name]
            if not is_available(pod):
                ctx.delete_pod(self.key, pod, why)
            elif unavailable < limit:
                ctx.delete_pod(self.key, pod, why)
                unavailable += 1

    def _revision_of(self, pod: Pod) -> str:
        """The pod's revision; a hash the simulation never made (a real cluster's) counts as the
        revision of the DaemonSet as first given."""
        label = pod.metadata.labels.get(REVISION_LABEL, "")
        return label if label in self._revisions else self._revisions[0]

    def status(self, ctx: ControllerContext) -> WorkloadStatus:
        kind, namespace, name = self.key
        desired = sum(1 for n in ctx.cluster.nodes.values() if self.should_run(n))
        return WorkloadStatus(kind, namespace, name, desired, ctx.pods_of(self.key))
