"""Every plugin's `events_to_register`, as a table: resource, action types, and whether a hint is set.

The in-tree rows are v1.37.2's `EventsToRegister` with its default feature gates, read from
`pkg/scheduler/framework/plugins/<dir>/<file>.go` (the comment on each row names the file). What
each hint answers is tested beside each plugin; this table pins what the queue is told to listen for,
so that a registration that drifts from upstream's (a Pod event where upstream has AssignedPod, a
hint dropped) fails here. The contributed plugins have no upstream; their rows pin kubesched's own.
"""

from __future__ import annotations

import pytest

from kubesched.framework.events import ActionType, Resource
from kubesched.framework.registry import instantiate
from kubesched.plugins import default_registry

A, R = ActionType, Resource
HINT, NO_HINT = True, False
Row = tuple[Resource, ActionType, bool]

UPSTREAM: dict[str, list[Row]] = {
    # schedulinggates/scheduling_gates.go
    "SchedulingGates": [(R.TARGET_POD, A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED, HINT)],
    # nodename/node_name.go
    "NodeName": [(R.NODE, A.ADD, NO_HINT)],
    # nodeunschedulable/node_unschedulable.go
    "NodeUnschedulable": [
        (R.NODE, A.ADD | A.UPDATE_NODE_TAINT, HINT),
        (R.TARGET_POD, A.UPDATE_POD_TOLERATION, HINT),
    ],
    # tainttoleration/taint_toleration.go
    "TaintToleration": [
        (R.NODE, A.ADD | A.UPDATE_NODE_TAINT, HINT),
        (R.TARGET_POD, A.UPDATE_POD_TOLERATION, HINT),
    ],
    # nodeaffinity/node_affinity.go
    "NodeAffinity": [(R.NODE, A.ADD | A.UPDATE_NODE_LABEL, HINT)],
    # nodeports/node_ports.go
    "NodePorts": [(R.ASSIGNED_POD, A.DELETE, HINT), (R.NODE, A.ADD, NO_HINT)],
    # noderesources/fit.go: DRAExtendedResource and InPlacePodVerticalScaling are GA; the
    # scale-up rows need InPlacePodVerticalScalingSchedulerPreemption, alpha and off.
    "NodeResourcesFit": [
        (R.ASSIGNED_POD, A.DELETE, HINT),
        (R.NODE, A.ADD | A.UPDATE_NODE_ALLOCATABLE, HINT),
        (R.DEVICE_CLASS, A.ADD | A.UPDATE, HINT),
        (R.ASSIGNED_POD, A.UPDATE_POD_SCALE_DOWN, HINT),
        (R.TARGET_POD, A.UPDATE_POD_SCALE_DOWN, HINT),
    ],
    # volumerestrictions/volume_restrictions.go
    "VolumeRestrictions": [
        (R.ASSIGNED_POD, A.DELETE, HINT),
        (R.NODE, A.ADD, NO_HINT),
        (R.PERSISTENT_VOLUME_CLAIM, A.ADD, HINT),
    ],
    # nodevolumelimits/csi.go; its fifth row (VolumeAttachment Delete, with a hint) is not here:
    # kubesched does not model VolumeAttachments (see plugins/node_volume_limits.py).
    "NodeVolumeLimits": [
        (R.CSI_NODE, A.ADD, NO_HINT),
        (R.CSI_NODE, A.UPDATE, HINT),
        (R.ASSIGNED_POD, A.DELETE, HINT),
        (R.PERSISTENT_VOLUME_CLAIM, A.ADD, HINT),
    ],
    # volumebinding/volume_binding.go
    "VolumeBinding": [
        (R.STORAGE_CLASS, A.ADD | A.UPDATE, HINT),
        (R.PERSISTENT_VOLUME_CLAIM, A.ADD | A.UPDATE, HINT),
        (R.PERSISTENT_VOLUME, A.ADD | A.UPDATE, NO_HINT),
        (R.NODE, A.ADD | A.UPDATE_NODE_LABEL, NO_HINT),
        (R.CSI_NODE, A.ADD | A.UPDATE, HINT),
        (R.CSI_DRIVER, A.UPDATE, HINT),
        (R.CSI_STORAGE_CAPACITY, A.ADD | A.UPDATE, HINT),
    ],
    # volumezone/volume_zone.go
    "VolumeZone": [
        (R.STORAGE_CLASS, A.ADD, HINT),
        (R.NODE, A.ADD | A.UPDATE_NODE_LABEL, NO_HINT),
        (R.PERSISTENT_VOLUME_CLAIM, A.ADD | A.UPDATE, HINT),
        (R.PERSISTENT_VOLUME, A.ADD | A.UPDATE, HINT),
    ],
    # podtopologyspread/plugin.go
    "PodTopologySpread": [
        (R.ASSIGNED_POD, A.ADD | A.UPDATE_POD_LABEL | A.DELETE, HINT),
        (R.TARGET_POD, A.UPDATE_POD_TOLERATION | A.UPDATE_POD_LABEL, HINT),
        (R.NODE, A.ADD | A.DELETE | A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT, HINT),
    ],
    # interpodaffinity/plugin.go
    "InterPodAffinity": [
        (R.ASSIGNED_POD, A.ADD | A.UPDATE_POD_LABEL | A.DELETE, HINT),
        (R.TARGET_POD, A.UPDATE_POD_LABEL, HINT),
        (R.NODE, A.ADD | A.UPDATE_NODE_LABEL, HINT),
    ],
    # dynamicresources/dynamicresources.go (DynamicResourceAllocation is GA, so `enabled` holds)
    "DynamicResources": [
        (R.NODE, A.ADD | A.UPDATE_NODE_LABEL | A.UPDATE_NODE_ALLOCATABLE, NO_HINT),
        (R.RESOURCE_CLAIM, A.ADD | A.UPDATE | A.DELETE, HINT),
        (R.TARGET_POD, A.UPDATE_POD_GENERATED_RESOURCE_CLAIM, HINT),
        (R.DEVICE_CLASS, A.ADD | A.UPDATE, NO_HINT),
        (R.RESOURCE_SLICE, A.ADD | A.UPDATE, NO_HINT),
    ],
    # defaultpreemption/default_preemption.go (SchedulerAsyncPreemption is on by default)
    "DefaultPreemption": [(R.ASSIGNED_POD, A.DELETE, HINT)],
    # nodedeclaredfeatures/nodedeclaredfeatures.go (NodeDeclaredFeatures is GA). kubesched's queue
    # sends no plain TargetPod Update (only the specific kinds), so the second row's hint is asked
    # only through them.
    "NodeDeclaredFeatures": [
        (R.NODE, A.ADD | A.UPDATE_NODE_DECLARED_FEATURE, HINT),
        (R.TARGET_POD, A.UPDATE, HINT),
    ],
}

#: Contributed plugins: no upstream to follow; these pin what they register today.
CONTRIB: dict[str, list[Row]] = {
    "NodeFilterLabel": [(R.NODE, A.ADD | A.UPDATE_NODE_LABEL, NO_HINT)],
    "GPUScheduler": [
        (R.POD, A.DELETE, HINT),
        (R.NODE, A.ADD | A.UPDATE_NODE_ALLOCATABLE | A.UPDATE_NODE_LABEL, NO_HINT),
    ],
    "SpotScheduler": [
        (R.NODE, A.ADD | A.UPDATE_NODE_LABEL, NO_HINT),
        (R.POD, A.ADD | A.DELETE | A.UPDATE_POD_TOLERATION, HINT),
    ],
    "AZScheduler": [],
    "Coscheduling": [
        (R.POD, A.ADD | A.UPDATE_POD_LABEL, HINT),
        (R.ASSIGNED_POD, A.DELETE, NO_HINT),
        (R.NODE, A.ADD | A.UPDATE_NODE_ALLOCATABLE, NO_HINT),
        (R.POD_GROUP, A.ADD | A.UPDATE, HINT),
    ],
}

#: Plugins with no Filter-side extension point register nothing, upstream and here.
NO_EVENTS = ("PrioritySort", "NodeResourcesBalancedAllocation", "ImageLocality", "DefaultBinder")


def _rows(name: str) -> list[Row]:
    plugin = instantiate(default_registry(entry_points=False)[name])
    return [(r.event.resource, r.event.action, r.hint is not None) for r in plugin.events_to_register()]


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_in_tree_plugin_registers_as_upstream(name: str) -> None:
    assert _rows(name) == UPSTREAM[name]


@pytest.mark.parametrize("name", sorted(CONTRIB))
def test_contributed_plugin_registrations(name: str) -> None:
    assert _rows(name) == CONTRIB[name]


@pytest.mark.parametrize("name", NO_EVENTS)
def test_plugins_without_filter_side_points_register_nothing(name: str) -> None:
    assert not hasattr(default_registry(entry_points=False)[name], "events_to_register")
