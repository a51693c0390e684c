"""Built-in plugins, and the registry that also finds third-party ones."""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.config.features import DEFAULT_GATES, FeatureGates
from kubesched.framework.registry import Registry
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

#: kube-scheduler's in-tree plugins, in upstream's registry order.
IN_TREE_PLUGINS: tuple[type, ...] = (
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
)

_CONTRIB = "kubesched.plugins.contrib"
#: The contributed plugins (built in, not kube-scheduler's) by name, as `module:Class`: each is
#: imported when a profile or a lookup names it. They are a tenth of what `kubesched run` imported
#: before its first bind, and the default profile uses none of them.
CONTRIB_PLUGINS: Mapping[str, str] = {
    "NodeFilterLabel": f"{_CONTRIB}.node_filter_label:NodeFilterLabel",
    "GPUScheduler": f"{_CONTRIB}.gpu_scheduler.plugin:GPUScheduler",
    "SpotScheduler": f"{_CONTRIB}.spot_scheduler:SpotScheduler",
    "AZScheduler": f"{_CONTRIB}.az_scheduler:AZScheduler",
    "Coscheduling": f"{_CONTRIB}.coscheduling:Coscheduling",
    "Random": f"{_CONTRIB}.gpu_share.plugin:RandomScore",
    "DotProd": f"{_CONTRIB}.gpu_share.plugin:DotProd",
    "GpuClustering": f"{_CONTRIB}.gpu_share.plugin:GpuClustering",
    "GpuPacking": f"{_CONTRIB}.gpu_share.plugin:GpuPacking",
    "BestFit": f"{_CONTRIB}.gpu_share.plugin:BestFit",
    "FGD": f"{_CONTRIB}.gpu_share.plugin:FGD",
    "FragPack": f"{_CONTRIB}.gpu_share.plugin:FragPack",
}


def builtin_plugin_names() -> tuple[str, ...]:
    """Every built-in plugin's name: the in-tree ones, then the contributed ones."""
    return (*(str(getattr(cls, "name", "")) for cls in IN_TREE_PLUGINS), *CONTRIB_PLUGINS)


def default_registry(*, entry_points: bool = True, features: FeatureGates = DEFAULT_GATES) -> Registry:
    """Built-in plugins plus those published under the `kubesched.plugins` entry-point group, built
    with the feature gates `features`."""
    registry = Registry(IN_TREE_PLUGINS, features=features, lazy=CONTRIB_PLUGINS)
    if entry_points:
        registry.load_entry_points()
    return registry
