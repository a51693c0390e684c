"""NodeDeclaredFeatures: a pod that needs a node feature goes only to nodes whose kubelet declares it.

Upstream v1.37 (KEP-5328, GA): kubelets publish `node.status.declaredFeatures`; the scheduler infers
from the pod spec which of the features in its registry the pod requires and filters nodes that do
not declare all of them. Features a pod can require at scheduling time in v1.37:

* `RestartAllContainersOnContainerExits` — a container or init container has a restart-policy rule
  with action `RestartAllContainers`;
* `UserNamespacesHostNetworkSupport` — `hostNetwork: true` together with `hostUsers: false`;
* `VolumeBindMountOptions` — a volume mount asks for bind-mount options.

PreFilter returns Skip when the pod requires nothing (nearly every pod). Filter rejects with
UnschedulableAndUnresolvable `node declared features check failed - unsatisfied requirements: A, B`
(names sorted). Node Add and declared-feature updates requeue the pods it rejected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from kubesched.api.objects import Node, Pod
from kubesched.framework.cycle_state import CycleState, pre_filter_state
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interfaces import (
    BatchFilterPlugin,
    EnqueueExtensions,
    FilterPlugin,
    PreFilterPlugin,
    RepeatsFailures,
)
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import BatchFilterResult, NodeSet, NodeTable
from kubesched.framework.signature import REQUIRED_FEATURES, SignFragment
from kubesched.framework.status import Code, Status

__all__ = ["NodeDeclaredFeatures", "required_features"]

STATE_KEY = "PreFilterNodeDeclaredFeatures"
RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
VOLUME_BIND_MOUNT_OPTIONS = "VolumeBindMountOptions"


def required_features(pod: Pod) -> list[str]:
    """The registry's features `pod` needs from its node, sorted by name."""
    spec = pod.spec
    containers = [*spec.init_containers, *spec.containers]
    needed: set[str] = set()
    if any(rule.action == "RestartAllContainers" for c in containers for rule in c.restart_policy_rules):
        needed.add(RESTART_ALL_CONTAINERS)
    if spec.host_network and spec.host_users is False:
        needed.add(USER_NAMESPACES_HOST_NETWORK)
    if any(m.bind_mount_options is not None for c in containers for m in c.volume_mounts):
        needed.add(VOLUME_BIND_MOUNT_OPTIONS)
    return sorted(needed)


@dataclass(frozen=True, slots=True)
class _Required:
    features: tuple[str, ...]

    def clone(self) -> _Required:
        return self


class NodeDeclaredFeatures(
    PreFilterPlugin, FilterPlugin, BatchFilterPlugin, EnqueueExtensions, RepeatsFailures
):
    """Filter nodes that do not declare every feature the pod requires."""

    name: ClassVar[str] = "NodeDeclaredFeatures"
    #: Its Filter verdict on a node reads only the pod and that node (`NodeLocalFilterPlugin`).
    filter_reads_only_the_node: ClassVar[Literal[True]] = True
    #: What it reads through `handle.lister` (what `kubesched explain` snapshots for it).
    listed_kinds: ClassVar[tuple[str, ...]] = ()

    def sign_pod(self, pod: Pod) -> list[SignFragment] | Status:
        """KEP-5598: the parts of the pod this plugin's answers depend on."""
        return [(REQUIRED_FEATURES, required_features(pod))]

    def pre_filter(self, state: CycleState, pod: Pod, nodes: NodeSet) -> Status | None:
        needed = required_features(pod)
        if not needed:
            return Status.skip()
        state.write(STATE_KEY, _Required(tuple(needed)))
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        result = self.filter_nodes(state, pod, NodeTable([node_info]).all())
        return None if result.codes[0] < 0 else result.statuses[int(result.codes[0])]

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: NodeSet) -> BatchFilterResult:
        needed = pre_filter_state(
            state, STATE_KEY, _Required, lambda: _Required(tuple(required_features(pod))), keep=False
        ).features
        n = len(nodes)
        if not needed:
            return BatchFilterResult.all_pass(n)
        codes = np.full(n, -1, dtype=np.int32)
        statuses: dict[tuple[str, ...], int] = {}
        for i, info in enumerate(nodes.infos):
            declared = info.node.status.declared_features
            missing = tuple(f for f in needed if f not in declared)
            if missing:
                codes[i] = statuses.setdefault(missing, len(statuses))
        return BatchFilterResult(
            codes,
            [
                Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    "node declared features check failed - unsatisfied requirements: " + ", ".join(missing),
                )
                for missing in statuses
            ],
        )

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As v1.37.2: a node added, or declaring other features; the pending pod updated so
        that it requires other features."""
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
                _after_node_change,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.TARGET_POD, ActionType.UPDATE), _after_pod_update),
        ]


def _after_node_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """Skip only an update that leaves the node's declared features (in order) as they were."""
    if not isinstance(new, Node) or not isinstance(old, Node | None):
        return QueueingHint.QUEUE
    if old is not None and old.status.declared_features == new.status.declared_features:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def _after_pod_update(pod: Pod, old: object, new: object) -> QueueingHint:
    """Queue when the update changed which features the pod requires."""
    if not isinstance(old, Pod) or not isinstance(new, Pod):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP if required_features(old) == required_features(new) else QueueingHint.QUEUE
