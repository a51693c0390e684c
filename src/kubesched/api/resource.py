"""Dynamic Resource Allocation objects of `resource.k8s.io/v1`, as the scheduler reads them.

DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice and DeviceTaintRule, with every
`spec` field of the v1 API (so a manifest that the API server accepts decodes, and a misspelt field
can be named by the loader), and the `status` fields the scheduler reads or writes. Opaque driver
parameters and device status data are kept as raw JSON: the scheduler passes them through.

Field names are the JSON names; quantities stay strings until the allocator parses them.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.meta import KubeStruct, NodeSelector, ObjectMeta

__all__ = [
    "ALLOCATION_MODE_ALL",
    "ALLOCATION_MODE_EXACT_COUNT",
    "DELETE_PROTECTION_FINALIZER",
    "EXTENDED_RESOURCE_CLAIM_ANNOTATION",
    "IMPLICIT_EXTENDED_RESOURCE_PREFIX",
    "RESOURCE_API_VERSION",
    "RESOURCE_KINDS",
    "AllocationResult",
    "CounterSet",
    "Device",
    "DeviceAllocationResult",
    "DeviceAttribute",
    "DeviceCapacity",
    "DeviceClass",
    "DeviceConstraint",
    "DeviceRequest",
    "DeviceRequestAllocationResult",
    "DeviceSubRequest",
    "DeviceTaint",
    "DeviceTaintRule",
    "DeviceToleration",
    "ExactDeviceRequest",
    "ResourceClaim",
    "ResourceClaimSpec",
    "ResourceClaimStatus",
    "ResourceClaimTemplate",
    "ResourceSlice",
]

RESOURCE_API_VERSION = "resource.k8s.io/v1"
#: Added by the scheduler before it writes an allocation; the resourceclaim controller removes it.
DELETE_PROTECTION_FINALIZER = "resource.kubernetes.io/delete-protection"
#: Marks the claim the scheduler creates for DRA-backed extended resources.
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
#: A DeviceClass without `extendedResourceName` still backs `deviceclass.resource.kubernetes.io/<class>`.
IMPLICIT_EXTENDED_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"
ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"

#: The builtins, for DeviceAttribute's fields named `int` and `bool`.
_Int = int
_Bool = bool


# --------------------------------------------------------------------------- shared pieces


class CELDeviceSelector(KubeStruct, frozen=True):
    expression: str = ""


class DeviceSelector(KubeStruct, frozen=True):
    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(KubeStruct, frozen=True):
    driver: str = ""
    parameters: Any = None


class DeviceClassConfiguration(KubeStruct, frozen=True):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceToleration(KubeStruct, frozen=True):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class DeviceTaint(KubeStruct, frozen=True):
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: str | None = None


# --------------------------------------------------------------------------- DeviceClass


class DeviceClassSpec(KubeStruct, frozen=True):
    selectors: list[DeviceSelector] = []
    config: list[DeviceClassConfiguration] = []
    extended_resource_name: str | None = None


class DeviceClass(KubeStruct, frozen=True):
    api_version: str = RESOURCE_API_VERSION
    kind: str = "DeviceClass"
    metadata: ObjectMeta = ObjectMeta()
    spec: DeviceClassSpec = DeviceClassSpec()


# --------------------------------------------------------------------------- ResourceClaim


class CapacityRequirements(KubeStruct, frozen=True):
    requests: dict[str, str | int | float] = {}


class ExactDeviceRequest(KubeStruct, frozen=True):
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = ""
    count: int | None = None
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(KubeStruct, frozen=True):
    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = ""
    count: int | None = None
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None


class DeviceRequest(KubeStruct, frozen=True):
    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = []


class DeviceConstraint(KubeStruct, frozen=True):
    requests: list[str] = []
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(KubeStruct, frozen=True):
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(KubeStruct, frozen=True):
    requests: list[DeviceRequest] = []
    constraints: list[DeviceConstraint] = []
    config: list[DeviceClaimConfiguration] = []


class ResourceClaimSpec(KubeStruct, frozen=True):
    devices: DeviceClaim = DeviceClaim()


class DeviceRequestAllocationResult(KubeStruct, frozen=True):
    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    share_id: str | None = msgspec.field(default=None, name="shareID")
    consumed_capacity: dict[str, str | int | float] = {}


class DeviceAllocationConfiguration(KubeStruct, frozen=True):
    source: str = ""
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(KubeStruct, frozen=True):
    results: list[DeviceRequestAllocationResult] = []
    config: list[DeviceAllocationConfiguration] = []


class AllocationResult(KubeStruct, frozen=True):
    devices: DeviceAllocationResult = DeviceAllocationResult()
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimConsumerReference(KubeStruct, frozen=True):
    api_group: str = ""
    resource: str = ""
    name: str = ""
    uid: str = ""


class Condition(KubeStruct, frozen=True):
    """A metav1.Condition (binding conditions of allocated devices)."""

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    observed_generation: int | None = None


class AllocatedDeviceStatus(KubeStruct, frozen=True):
    driver: str = ""
    pool: str = ""
    device: str = ""
    share_id: str | None = msgspec.field(default=None, name="shareID")
    conditions: list[Condition] = []
    data: Any = None
    network_data: Any = None


class ResourceClaimStatus(KubeStruct, frozen=True):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = []
    devices: list[AllocatedDeviceStatus] = []


class ResourceClaim(KubeStruct, frozen=True):
    api_version: str = RESOURCE_API_VERSION
    kind: str = "ResourceClaim"
    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceClaimSpec = ResourceClaimSpec()
    status: ResourceClaimStatus = ResourceClaimStatus()

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


class ResourceClaimTemplateSpec(KubeStruct, frozen=True):
    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceClaimSpec = ResourceClaimSpec()


class ResourceClaimTemplate(KubeStruct, frozen=True):
    api_version: str = RESOURCE_API_VERSION
    kind: str = "ResourceClaimTemplate"
    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceClaimTemplateSpec = ResourceClaimTemplateSpec()


# --------------------------------------------------------------------------- ResourceSlice


class ResourcePool(KubeStruct, frozen=True):
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


class DeviceAttribute(KubeStruct, frozen=True):
    """Exactly one of the four is set."""

    int: _Int | None = None
    bool: _Bool | None = None
    string: str | None = None
    version: str | None = None


class CapacityRequestPolicyRange(KubeStruct, frozen=True):
    min: str | int | float | None = None
    max: str | int | float | None = None
    step: str | int | float | None = None


class CapacityRequestPolicy(KubeStruct, frozen=True):
    default: str | int | float | None = None
    valid_values: list[str | int | float] = []
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(KubeStruct, frozen=True):
    value: str | int | float = "0"
    request_policy: CapacityRequestPolicy | None = None


class Counter(KubeStruct, frozen=True):
    value: str | int | float = "0"


class CounterSet(KubeStruct, frozen=True):
    name: str = ""
    counters: dict[str, Counter] = {}


class DeviceCounterConsumption(KubeStruct, frozen=True):
    counter_set: str = ""
    counters: dict[str, Counter] = {}


class Device(KubeStruct, frozen=True):
    name: str = ""
    attributes: dict[str, DeviceAttribute] = {}
    capacity: dict[str, DeviceCapacity] = {}
    consumes_counters: list[DeviceCounterConsumption] = []
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] = []
    binds_to_node: bool | None = None
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    allow_multiple_allocations: bool | None = None


class ResourceSliceSpec(KubeStruct, frozen=True):
    driver: str = ""
    pool: ResourcePool = ResourcePool()
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] = []
    shared_counters: list[CounterSet] = []


class ResourceSlice(KubeStruct, frozen=True):
    api_version: str = RESOURCE_API_VERSION
    kind: str = "ResourceSlice"
    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceSliceSpec = ResourceSliceSpec()


# --------------------------------------------------------------------------- DeviceTaintRule


class DeviceTaintSelector(KubeStruct, frozen=True):
    device_class_name: str | None = None
    driver: str | None = None
    pool: str | None = None
    device: str | None = None
    selectors: list[DeviceSelector] = []


class DeviceTaintRuleSpec(KubeStruct, frozen=True):
    device_selector: DeviceTaintSelector | None = None
    taint: DeviceTaint = DeviceTaint()


class DeviceTaintRuleStatus(KubeStruct, frozen=True):
    conditions: list[Condition] = []


class DeviceTaintRule(KubeStruct, frozen=True):
    api_version: str = RESOURCE_API_VERSION
    kind: str = "DeviceTaintRule"
    metadata: ObjectMeta = ObjectMeta()
    spec: DeviceTaintRuleSpec = DeviceTaintRuleSpec()
    status: DeviceTaintRuleStatus = DeviceTaintRuleStatus()


#: The DRA kinds, by `kind`.
RESOURCE_KINDS: dict[str, type[msgspec.Struct]] = {
    "DeviceClass": DeviceClass,
    "ResourceClaim": ResourceClaim,
    "ResourceClaimTemplate": ResourceClaimTemplate,
    "ResourceSlice": ResourceSlice,
    "DeviceTaintRule": DeviceTaintRule,
}
