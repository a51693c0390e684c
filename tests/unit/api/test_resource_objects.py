"""resource.k8s.io/v1 objects load like the other kinds; a misspelt spec field names its path."""

from __future__ import annotations

import pytest

from kubesched.api.loader import load_documents
from kubesched.api.objects import Pod
from kubesched.api.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kubesched.errors import InputError

SLICE = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpus}
spec:
  driver: gpu.nvidia.com
  pool: {name: node-1, generation: 3, resourceSliceCount: 1}
  nodeName: node-1
  sharedCounters:
  - name: gpu-0-counters
    counters: {memory: {value: 80Gi}, multiprocessors: {value: "98"}}
  devices:
  - name: gpu-0
    attributes:
      productName: {string: NVIDIA A100}
      driverVersion: {version: 550.54.15}
      index: {int: 0}
    capacity:
      memory: {value: 80Gi}
  - name: gpu-0-mig-1g
    consumesCounters:
    - counterSet: gpu-0-counters
      counters: {memory: {value: 10Gi}}
    taints: [{key: maintenance, effect: NoSchedule}]
    allowMultipleAllocations: false
"""

CLAIM = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - {name: big, deviceClassName: gpu.nvidia.com, selectors: [{cel: {expression: "true"}}]}
      - {name: small, deviceClassName: mig.nvidia.com, count: 2}
    constraints: [{requests: [gpu], matchAttribute: gpu.nvidia.com/productName}]
status:
  allocation:
    devices:
      results: [{request: gpu/big, driver: gpu.nvidia.com, pool: node-1, device: gpu-0, shareID: abc}]
    nodeSelector:
      nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [node-1]}]}]
  reservedFor: [{resource: pods, name: p, uid: u1}]
"""


def test_slice_fields_decode() -> None:
    (obj,) = load_documents(SLICE, "s.yaml")
    assert isinstance(obj, ResourceSlice)
    gpu, mig = obj.spec.devices
    assert obj.spec.pool.resource_slice_count == 1 and obj.spec.node_name == "node-1"
    assert gpu.attributes["driverVersion"].version == "550.54.15"
    assert gpu.attributes["index"].int == 0
    assert gpu.capacity["memory"].value == "80Gi"
    assert mig.consumes_counters[0].counters["memory"].value == "10Gi"
    assert mig.taints[0].effect == "NoSchedule"
    assert obj.spec.shared_counters[0].counters["multiprocessors"].value == "98"


def test_claim_spec_and_status_decode() -> None:
    (obj,) = load_documents(CLAIM, "c.yaml")
    assert isinstance(obj, ResourceClaim)
    request = obj.spec.devices.requests[0]
    assert [s.name for s in request.first_available] == ["big", "small"]
    assert request.first_available[1].count == 2
    assert obj.spec.devices.constraints[0].match_attribute == "gpu.nvidia.com/productName"
    result = obj.status.allocation.devices.results[0] if obj.status.allocation else None
    assert result is not None and result.share_id == "abc" and result.request == "gpu/big"
    assert obj.status.reserved_for[0].uid == "u1"


def test_class_template_and_pod_fields_decode() -> None:
    docs = load_documents(
        """
apiVersion: v1
kind: List
items:
- apiVersion: resource.k8s.io/v1
  kind: DeviceClass
  metadata: {name: gpu.nvidia.com}
  spec:
    selectors: [{cel: {expression: 'device.driver == "gpu.nvidia.com"'}}]
    extendedResourceName: nvidia.com/gpu
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaimTemplate
  metadata: {name: one-gpu, namespace: ml}
  spec:
    spec:
      devices:
        requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]
- apiVersion: v1
  kind: Pod
  metadata: {name: p, namespace: ml}
  spec:
    resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
    containers: [{name: c, resources: {claims: [{name: gpu}]}}]
  status:
    resourceClaimStatuses: [{name: gpu, resourceClaimName: p-gpu-x7k2}]
""",
        "list.yaml",
    )
    cls, template, pod = docs
    assert isinstance(cls, DeviceClass) and cls.spec.extended_resource_name == "nvidia.com/gpu"
    assert isinstance(template, ResourceClaimTemplate)
    assert template.spec.spec.devices.requests[0].exactly is not None
    assert isinstance(pod, Pod)
    assert pod.spec.resource_claims[0].resource_claim_template_name == "one-gpu"
    assert pod.spec.containers[0].resources.claims[0].name == "gpu"
    assert pod.status.resource_claim_statuses[0].resource_claim_name == "p-gpu-x7k2"


@pytest.mark.parametrize(
    ("text", "path"),
    [
        (SLICE.replace("consumesCounters:", "consumeCounters:"), "spec.devices[1].consumeCounters"),
        (SLICE.replace("resourceSliceCount", "sliceCount"), "spec.pool.sliceCount"),
        (
            SLICE.replace("productName: {string", "productName: {str"),
            "spec.devices[0].attributes[productName].str",
        ),
        (CLAIM.replace("matchAttribute", "matchAttributes"), "spec.devices.constraints[0].matchAttributes"),
    ],
)
def test_unknown_spec_field_names_file_and_path(text: str, path: str) -> None:
    with pytest.raises(InputError) as err:
        load_documents(text, "dra.yaml")
    assert str(err.value).startswith(f"dra.yaml: {path}: unknown field")


def test_wrong_type_names_the_path() -> None:
    with pytest.raises(InputError) as err:
        load_documents(SLICE.replace("generation: 3", "generation: three"), "s.yaml")
    assert str(err.value) == "s.yaml: spec.pool.generation: expected int, got str"


def test_metadata_and_status_fields_the_scheduler_does_not_read_are_accepted() -> None:
    text = CLAIM.replace(
        "metadata: {name: c, namespace: ml}",
        "metadata: {name: c, namespace: ml, managedFields: [{manager: kubectl, fieldsV1: {f:spec: {}}}]}",
    )
    text = text.replace(
        "reservedFor:", "devices: [{driver: d, pool: p, device: g, data: {any: [1]}}]\n  reservedFor:"
    )
    (obj,) = load_documents(text, "c.yaml")
    assert isinstance(obj, ResourceClaim)


def test_a_status_field_of_a_newer_api_is_refused_unless_lenient() -> None:
    text = CLAIM.replace("reservedFor:", "futureField: 1\n  reservedFor:")
    with pytest.raises(InputError, match=r"^c.yaml: status.futureField: unknown field$"):
        load_documents(text, "c.yaml")
    lenient: list[InputError] = []
    (obj,) = load_documents(text, "c.yaml", lenient=lenient)
    assert isinstance(obj, ResourceClaim)
    assert [str(e) for e in lenient] == ["c.yaml: status.futureField: unknown field"]
