"""The gated mode of the differential harness: feature gates on, for every process of a run alike.

Workload-aware scheduling is off by default in v1.37.2 and needs three things switched on together:
the API server must serve `scheduling.k8s.io/v1beta1` (and `v1alpha3` for CompositePodGroup) and
know the gates (without GenericWorkload it serves neither version and silently drops a pod's
`spec.schedulingGroup`); kube-scheduler must run with the gates (its default profile then gains
GangScheduling); and kubesched, both `simulate` and `kubesched run`, must run with the same gates, so
the two schedulers compared run the same profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubesched.config import FeatureGates

__all__ = [
    "COMPOSITE_GATES",
    "DRA_GANG_GATES",
    "GANG_GATES",
    "NO_GATES",
    "POLICY_GATES",
    "TOPOLOGY_GATES",
    "Gates",
]

_V1BETA1 = "scheduling.k8s.io/v1beta1=true"
_V1ALPHA3 = "scheduling.k8s.io/v1alpha3=true"


@dataclass(frozen=True)
class Gates:
    """Gates a differential run sets (name -> value); empty: the binary's defaults, no extra API."""

    values: Mapping[str, bool] = field(default_factory=dict)

    @property
    def workloads(self) -> bool:
        """Whether the Workload API and the pod-group cycle are on."""
        return self.values.get("GenericWorkload", False)

    def runtime_config(self) -> tuple[str, ...]:
        """The API server's `--runtime-config` entries the gates need."""
        if not self.workloads:
            return ()
        return (_V1BETA1, _V1ALPHA3) if self.values.get("CompositePodGroup") else (_V1BETA1,)

    def flags(self) -> tuple[str, ...]:
        """`--feature-gates=...` for kube-scheduler and `kubesched` (nothing without gates)."""
        if not self.values:
            return ()
        return ("--feature-gates=" + ",".join(f"{k}={str(v).lower()}" for k, v in self.values.items()),)

    def features(self) -> FeatureGates:
        """The same gates as kubesched's simulator takes them (registry and config defaulting)."""
        return FeatureGates(explicit=dict(self.values), given=tuple(self.values.items()))


NO_GATES = Gates()
#: Gang scheduling: the Workload API, GangScheduling and the pod-group cycle.
GANG_GATES = Gates({"GenericWorkload": True})
#: Gangs placed within one domain of a node label (TopologyPlacementGenerator, PodGroupPodsCount).
TOPOLOGY_GATES = Gates({"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True})
#: CompositePodGroup trees (which need topology-aware scheduling), served as v1alpha3.
COMPOSITE_GATES = Gates(
    {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True, "CompositePodGroup": True}
)
#: Gangs whose pods share a ResourceClaim named in their PodGroup (allocated once, reserved for it).
DRA_GANG_GATES = Gates({"GenericWorkload": True, "DRAWorkloadResourceClaims": True})
#: Gangs whose PodGroup's own `preemptionPolicy` decides whether they preempt.
POLICY_GATES = Gates({"GenericWorkload": True, "PodGroupPreemptionPolicy": True})
