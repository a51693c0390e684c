"""Built-in plugins, and the registry that also finds third-party ones."""

from __future__ import annotations

from kubesched.config.features import DEFAULT_GATES, FeatureGates
from kubesched.framework.registry import Registry
from kubesched.plugins.contrib.az_scheduler import AZScheduler
from kubesched.plugins.contrib.coscheduling import Coscheduling
from kubesched.plugins.contrib.gpu_scheduler import GPUScheduler
from kubesched.plugins.contrib.gpu_share.plugin import (
    FGD,
    BestFit,
    DotProd,
    FragPack,
    GpuClustering,
    GpuPacking,
    RandomScore,
)
from kubesched.plugins.contrib.node_filter_label import NodeFilterLabel
from kubesched.plugins.contrib.spot_scheduler import SpotScheduler
from kubesched.plugins.default_binder import DefaultBinder
from kubesched.plugins.default_preemption import DefaultPreemption
from kubesched.plugins.dynamic_resources import DynamicResources
from kubesched.plugins.gang_scheduling import GangScheduling
from kubesched.plugins.image_locality import ImageLocality
from kubesched.plugins.inter_pod_affinity import InterPodAffinity
from kubesched.plugins.node_affinity import NodeAffinity
from kubesched.plugins.node_declared_features import NodeDeclaredFeatures
from kubesched.plugins.node_name import NodeName
from kubesched.plugins.node_ports import NodePorts
from kubesched.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from kubesched.plugins.node_resources_fit import NodeResourcesFit
from kubesched.plugins.node_unschedulable import NodeUnschedulable
from kubesched.plugins.node_volume_limits import NodeVolumeLimits
from kubesched.plugins.pod_group_pods_count import PodGroupPodsCount
from kubesched.plugins.pod_topology_spread import PodTopologySpread
from kubesched.plugins.priority_sort import PrioritySort
from kubesched.plugins.scheduling_gates import SchedulingGates
from kubesched.plugins.taint_toleration import TaintToleration
from kubesched.plugins.topology_placement import TopologyPlacementGenerator
from kubesched.plugins.volume_binding import VolumeBinding
from kubesched.plugins.volume_restrictions import VolumeRestrictions
from kubesched.plugins.volume_zone import VolumeZone

BUILTIN_PLUGINS: tuple[type, ...] = (
    SchedulingGates,
    PrioritySort,
    NodeUnschedulable,
    NodeName,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    NodeResourcesFit,
    VolumeRestrictions,
    NodeVolumeLimits,
    VolumeBinding,
    VolumeZone,
    PodTopologySpread,
    InterPodAffinity,
    DynamicResources,
    DefaultPreemption,
    NodeResourcesBalancedAllocation,
    ImageLocality,
    DefaultBinder,
    NodeDeclaredFeatures,
    GangScheduling,
    TopologyPlacementGenerator,
    PodGroupPodsCount,
    NodeFilterLabel,
    GPUScheduler,
    SpotScheduler,
    AZScheduler,
    Coscheduling,
    RandomScore,
    DotProd,
    GpuClustering,
    GpuPacking,
    BestFit,
    FGD,
    FragPack,
)


def default_registry(*, entry_points: bool = True, features: FeatureGates = DEFAULT_GATES) -> Registry:
    """Built-in plugins plus those published under the `kubesched.plugins` entry-point group, built
    with the feature gates `features`."""
    registry = Registry(BUILTIN_PLUGINS, features=features)
    if entry_points:
        registry.load_entry_points()
    return registry
