"""Workload, PodGroup (scheduling.k8s.io/v1beta1 and v1alpha3), CompositePodGroup (v1alpha3) and
`pod.spec.schedulingGroup` load whole and strictly; scheduler-plugins' PodGroup keeps its own type."""

from __future__ import annotations

import msgspec
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.loader import decode_object, load_documents
from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import Pod, PodSchedulingGroup, PodSpec
from kubesched.api.resource import Condition
from kubesched.api.scheduler_plugins import PodGroup as PluginsPodGroup
from kubesched.api.scheduling_groups import (
    CompositeDisruptionMode,
    CompositeGangSchedulingPolicy,
    CompositePodGroup,
    CompositePodGroupSchedulingPolicy,
    CompositePodGroupSpec,
    CompositePodGroupStatus,
    CompositePodGroupTemplate,
    DisruptionMode,
    GangSchedulingPolicy,
    Marker,
    PodGroup,
    PodGroupResourceClaim,
    PodGroupResourceClaimStatus,
    PodGroupSchedulingConstraints,
    PodGroupSchedulingPolicy,
    PodGroupSpec,
    PodGroupStatus,
    PodGroupTemplate,
    TopologyConstraint,
    TypedLocalObjectReference,
    Workload,
    WorkloadReference,
    WorkloadSpec,
)
from kubesched.errors import InputError

#: What `kubectl get workloads,podgroups,compositepodgroups,pods -o yaml` prints (server-set fields too).
KUBECTL_LIST = """\
apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- apiVersion: scheduling.k8s.io/v1beta1
  kind: Workload
  metadata:
    creationTimestamp: "2026-12-01T10:00:00Z"
    generation: 1
    name: train
    namespace: ml
    resourceVersion: "501"
    uid: 0b7c6a4e-1111-4c1e-9a55-000000000001
  spec:
    controllerRef: {apiGroup: batch, kind: Job, name: train}
    podGroupTemplates:
    - name: workers
      schedulingPolicy:
        gang: {minCount: 4}
      schedulingConstraints:
        topology: [{key: example.com/rack}]
      resourceClaims: [{name: net, resourceClaimTemplateName: rdma}]
      disruptionMode: {all: {}}
      priorityClassName: batch
      priority: 1000
      preemptionPolicy: Never
- apiVersion: scheduling.k8s.io/v1beta1
  kind: PodGroup
  metadata:
    managedFields:
    - apiVersion: scheduling.k8s.io/v1beta1
      fieldsType: FieldsV1
      fieldsV1: {"f:status": {"f:conditions": {}}}
      manager: kube-scheduler
      operation: Update
      subresource: status
      time: "2026-12-01T10:00:02Z"
    name: train-workers
    namespace: ml
    resourceVersion: "507"
    uid: 0b7c6a4e-1111-4c1e-9a55-000000000002
  spec:
    workloadRef: {workloadName: train, templateName: workers}
    parentCompositePodGroupName: train-all
    schedulingPolicy:
      gang: {minCount: 4}
    schedulingConstraints:
      topology: [{key: example.com/rack}]
    resourceClaims: [{name: net, resourceClaimTemplateName: rdma}]
    disruptionMode: {single: {}}
    priority: 1000
  status:
    conditions:
    - lastTransitionTime: "2026-12-01T10:00:02Z"
      message: ""
      observedGeneration: 1
      reason: Scheduled
      status: "True"
      type: PodGroupInitiallyScheduled
    resourceClaimStatuses: [{name: net, resourceClaimName: train-workers-net-x7k2p}]
- apiVersion: scheduling.k8s.io/v1alpha3
  kind: CompositePodGroup
  metadata: {name: train-all, namespace: ml, uid: 0b7c6a4e-1111-4c1e-9a55-000000000003}
  spec:
    workloadRef: {workloadName: train, templateName: all}
    schedulingPolicy:
      gang: {minGroupCount: 2}
    schedulingConstraints:
      topology: [{key: example.com/block}]
    disruptionMode: {all: {}}
  status:
    conditions: []
- apiVersion: v1
  kind: Pod
  metadata: {name: train-0, namespace: ml}
  spec:
    schedulingGroup: {podGroupName: train-workers}
    containers: [{name: main, image: trainer}]
"""


def _error(text: str) -> str:
    with pytest.raises(InputError) as err:
        load_documents(text, "in.yaml")
    return str(err.value)


def test_a_kubectl_list_loads_into_the_native_types_with_every_field() -> None:
    workload, group, composite, pod = load_documents(KUBECTL_LIST, "in.yaml")
    assert isinstance(workload, Workload)
    (template,) = workload.spec.pod_group_templates
    assert workload.spec.controller_ref == TypedLocalObjectReference(
        api_group="batch", kind="Job", name="train"
    )
    assert template.scheduling_policy.gang == GangSchedulingPolicy(min_count=4)
    assert template.disruption_mode == DisruptionMode(all=Marker())
    assert (template.priority, template.preemption_policy, template.priority_class_name) == (
        1000,
        "Never",
        "batch",
    )
    assert isinstance(group, PodGroup)
    assert group.spec.workload_ref == WorkloadReference(workload_name="train", template_name="workers")
    assert group.spec.parent_composite_pod_group_name == "train-all"
    assert group.spec.scheduling_constraints == PodGroupSchedulingConstraints(
        topology=[TopologyConstraint(key="example.com/rack")]
    )
    assert group.spec.resource_claims == [
        PodGroupResourceClaim(name="net", resource_claim_template_name="rdma")
    ]
    (condition,) = group.status.conditions
    assert (condition.type, condition.status, condition.reason) == (
        "PodGroupInitiallyScheduled",
        "True",
        "Scheduled",
    )
    assert group.status.resource_claim_statuses == [
        PodGroupResourceClaimStatus(name="net", resource_claim_name="train-workers-net-x7k2p")
    ]
    assert isinstance(composite, CompositePodGroup)
    assert composite.api_version == "scheduling.k8s.io/v1alpha3"
    assert composite.spec.scheduling_policy.gang == CompositeGangSchedulingPolicy(min_group_count=2)
    assert isinstance(pod, Pod)
    assert pod.spec.scheduling_group == PodSchedulingGroup(pod_group_name="train-workers")


def test_the_pod_group_kind_is_told_apart_by_its_api_group() -> None:
    text = (
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
        "metadata: {name: a}\nspec: {minMember: 2}\n"
        "---\nkind: PodGroup\nmetadata: {name: b}\nspec: {minMember: 3}\n"
        "---\napiVersion: scheduling.k8s.io/v1alpha3\nkind: PodGroup\nmetadata: {name: c}\n"
        "spec: {schedulingPolicy: {basic: {}}}\n"
        "---\napiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroupList\nitems:\n"
        "- metadata: {name: d}\n  spec: {schedulingPolicy: {gang: {minCount: 2}}}\n"
    )
    a, b, c, d = load_documents(text, "in.yaml")
    assert type(a) is PluginsPodGroup and a.spec.min_member == 2
    # without an apiVersion: scheduler-plugins', as before
    assert type(b) is PluginsPodGroup and b.spec.min_member == 3
    assert type(c) is PodGroup and c.spec.scheduling_policy.basic == Marker()
    assert type(d) is PodGroup and d.api_version == "scheduling.k8s.io/v1beta1"
    assert d.spec.scheduling_policy.gang == GangSchedulingPolicy(min_count=2)
    single = yaml.safe_load(text.split("---\n")[2])
    assert type(decode_object(single)) is PodGroup


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "gang: {minCount: 4}\n    schedulingConstraints",
            "gang: {minCont: 4}\n    schedulingConstraints",
            'items[1].spec.schedulingPolicy.gang.minCont: unknown field (did you mean "minCount"?)',
        ),
        (
            "workloadRef: {workloadName: train, templateName: workers}",
            "workloadRef: {workloadName: train, template: workers}",
            'items[1].spec.workloadRef.template: unknown field (did you mean "templateName"?)',
        ),
        (
            "      schedulingConstraints:\n        topology",
            "      schedulingConstraint:\n        topology",
            "items[0].spec.podGroupTemplates[0].schedulingConstraint: unknown field"
            ' (did you mean "schedulingConstraints"?)',
        ),
        (
            "gang: {minGroupCount: 2}",
            "gang: {minGroups: 2}",
            'items[2].spec.schedulingPolicy.gang.minGroups: unknown field (did you mean "minGroupCount"?)',
        ),
        (
            "schedulingGroup: {podGroupName: train-workers}",
            "schedulingGroup: {podGroup: train-workers}",
            'items[3].spec.schedulingGroup.podGroup: unknown field (did you mean "podGroupName"?)',
        ),
        (
            "kind: CompositePodGroup",
            "kind: CompositePodGroups",
            'items[2].kind: unknown kind "CompositePodGroups" in scheduling.k8s.io/v1alpha3'
            ' (did you mean "CompositePodGroup"?)',
        ),
        (
            "apiVersion: scheduling.k8s.io/v1alpha3\n  kind: CompositePodGroup",
            "apiVersion: scheduling.k8s.io/v1beta1\n  kind: CompositePodGroup",
            "items[2].apiVersion: CompositePodGroup is not in scheduling.k8s.io/v1beta1"
            " (it is in scheduling.k8s.io/v1alpha3)",
        ),
        (
            "apiVersion: scheduling.k8s.io/v1beta1\n  kind: Workload",
            "apiVersion: scheduling.k8s.io/v1alpha2\n  kind: Workload",
            "items[0].apiVersion: Kubernetes v1.37 does not serve scheduling.k8s.io/v1alpha2 (served: "
            "scheduling.k8s.io/v1, scheduling.k8s.io/v1alpha3, scheduling.k8s.io/v1beta1)",
        ),
    ],
)
def test_a_misspelt_field_or_kind_is_named_with_its_path(old: str, new: str, message: str) -> None:
    assert old in KUBECTL_LIST
    assert _error(KUBECTL_LIST.replace(old, new, 1)) == f"in.yaml: {message}"


def test_a_value_of_the_wrong_type_is_named_with_its_path() -> None:
    text = KUBECTL_LIST.replace("gang: {minGroupCount: 2}", "gang: {minGroupCount: two}")
    assert _error(text) == "in.yaml: items[2].spec.schedulingPolicy.gang.minGroupCount: expected int, got str"
    text = KUBECTL_LIST.replace(
        "gang: {minCount: 4}\n    schedulingConstraints",
        "gang: {minCount: 4294967296}\n    schedulingConstraints",
    )
    assert _error(text).startswith("in.yaml: items[1].spec.schedulingPolicy.gang.minCount: expected int <=")


# --------------------------------------------------------------------------- round trips

_NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True)
_KEYS = st.from_regex(r"([a-z]+\.)?[a-z]+/[a-z]([a-z0-9-]{0,8}[a-z0-9])?|[a-z][a-z0-9]{0,8}", fullmatch=True)
_INT32 = st.integers(-(2**31), 2**31 - 1)
_MARKER = st.none() | st.just(Marker())
_TOPOLOGY = st.none() | st.builds(
    PodGroupSchedulingConstraints, topology=st.lists(st.builds(TopologyConstraint, key=_KEYS), max_size=1)
)
_DNS_LABELS = st.from_regex(r"[a-z]([a-z0-9-]{0,9}[a-z0-9])?", fullmatch=True)
# As the API server admits them: names unique, each a DNS label, exactly one of claim and template.
_CLAIMS = st.lists(
    st.builds(PodGroupResourceClaim, name=_DNS_LABELS, resource_claim_name=_DNS_LABELS)
    | st.builds(PodGroupResourceClaim, name=_DNS_LABELS, resource_claim_template_name=_DNS_LABELS),
    max_size=2,
    unique_by=lambda claim: claim.name,
)
_PRIORITY = {
    "priority_class_name": st.just("") | _NAMES,
    "priority": st.none() | _INT32,
    "preemption_policy": st.sampled_from([None, "PreemptLowerPriority", "Never"]),
}
_COUNT = st.integers(1, 2**31 - 1)
#: Exactly one of basic and gang, as the API server requires (`test_invalid_groups_are_refused...`).
_POLICY = st.builds(PodGroupSchedulingPolicy, basic=st.just(Marker())) | st.builds(
    PodGroupSchedulingPolicy, gang=st.builds(GangSchedulingPolicy, min_count=_COUNT)
)
_COMPOSITE_POLICY = st.builds(CompositePodGroupSchedulingPolicy, basic=st.just(Marker())) | st.builds(
    CompositePodGroupSchedulingPolicy, gang=st.builds(CompositeGangSchedulingPolicy, min_group_count=_COUNT)
)
_TEMPLATE = st.builds(
    PodGroupTemplate,
    name=_NAMES,
    scheduling_policy=_POLICY,
    scheduling_constraints=_TOPOLOGY,
    resource_claims=_CLAIMS,
    disruption_mode=st.none() | st.builds(DisruptionMode, single=_MARKER, all=_MARKER),
    **_PRIORITY,
)
_COMPOSITE_TEMPLATE = st.recursive(
    st.builds(CompositePodGroupTemplate, name=_NAMES, scheduling_policy=_COMPOSITE_POLICY),
    lambda inner: st.builds(
        CompositePodGroupTemplate,
        name=_NAMES,
        scheduling_policy=_COMPOSITE_POLICY,
        scheduling_constraints=_TOPOLOGY,
        disruption_mode=st.none() | st.builds(CompositeDisruptionMode, single=_MARKER, all=_MARKER),
        pod_group_templates=st.lists(_TEMPLATE, max_size=2),
        composite_pod_group_templates=st.lists(inner, max_size=2),
        **_PRIORITY,
    ),
    max_leaves=3,
)
_META = st.builds(ObjectMeta, name=_NAMES, namespace=_NAMES)
_REF = st.none() | st.builds(WorkloadReference, workload_name=_NAMES, template_name=_NAMES)
_CONDITIONS = st.lists(
    st.builds(
        Condition,
        type=st.just("PodGroupInitiallyScheduled"),
        status=st.sampled_from(["True", "False"]),
        reason=st.sampled_from(["Scheduled", "Unschedulable"]),
        message=st.text(max_size=20),
        observed_generation=st.none() | st.integers(0, 10),
    ),
    max_size=1,
)
_OBJECTS = st.one_of(
    st.builds(
        Workload,
        api_version=st.sampled_from(["scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3"]),
        metadata=_META,
        spec=st.builds(
            WorkloadSpec,
            controller_ref=st.none()
            | st.builds(TypedLocalObjectReference, api_group=_NAMES, kind=_NAMES, name=_NAMES),
            pod_group_templates=st.lists(_TEMPLATE, max_size=3),
            composite_pod_group_templates=st.lists(_COMPOSITE_TEMPLATE, max_size=2),
        ),
    ),
    st.builds(
        PodGroup,
        api_version=st.sampled_from(["scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3"]),
        metadata=_META,
        spec=st.builds(
            PodGroupSpec,
            parent_composite_pod_group_name=st.none() | _NAMES,
            workload_ref=_REF,
            scheduling_policy=_POLICY,
            scheduling_constraints=_TOPOLOGY,
            resource_claims=_CLAIMS,
            disruption_mode=st.none() | st.builds(DisruptionMode, single=_MARKER, all=_MARKER),
            **_PRIORITY,
        ).filter(lambda spec: spec.parent_composite_pod_group_name is None or spec.workload_ref is not None),
        status=st.builds(
            PodGroupStatus,
            conditions=_CONDITIONS,
            resource_claim_statuses=st.lists(
                st.builds(PodGroupResourceClaimStatus, name=_NAMES, resource_claim_name=st.none() | _NAMES),
                max_size=2,
            ),
        ),
    ),
    st.builds(
        CompositePodGroup,
        metadata=_META,
        spec=st.builds(
            CompositePodGroupSpec,
            parent_composite_pod_group_name=st.none() | _NAMES,
            workload_ref=_REF,
            scheduling_policy=_COMPOSITE_POLICY,
            scheduling_constraints=_TOPOLOGY,
            disruption_mode=st.none() | st.builds(CompositeDisruptionMode, single=_MARKER, all=_MARKER),
            **_PRIORITY,
        ).filter(lambda spec: spec.workload_ref is not None),
        status=st.builds(CompositePodGroupStatus, conditions=_CONDITIONS),
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=_OBJECTS, as_json=st.booleans())
def test_every_field_round_trips_through_a_file_and_the_strict_check(
    obj: Workload | PodGroup | CompositePodGroup, as_json: bool
) -> None:
    """Whatever a struct writes (every field set somewhere) is a field the v1.37 API knows, and reads
    back equal: the wire names are the API's."""
    doc = {
        "apiVersion": obj.api_version,
        "kind": obj.kind,
        **msgspec.to_builtins(obj),
    }  # defaults are omitted
    text = msgspec.json.encode(doc).decode() if as_json else yaml.safe_dump(doc)
    (loaded,) = load_documents(text, "in.json" if as_json else "in.yaml")
    assert loaded == obj


def test_the_pod_scheduling_group_round_trips() -> None:
    pod = Pod(
        metadata=ObjectMeta(name="p", namespace="ml"),
        spec=PodSpec(scheduling_group=PodSchedulingGroup(pod_group_name="g")),
    )
    doc = {"apiVersion": "v1", "kind": "Pod", **msgspec.to_builtins(pod)}
    assert doc["spec"]["schedulingGroup"] == {"podGroupName": "g"}
    assert load_documents(yaml.safe_dump(doc), "in.yaml") == [pod]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "schedulingPolicy:\n      gang: {minCount: 4}\n    schedulingConstraints",
            "schedulingPolicy:\n      basic: {}\n      gang: {minCount: 4}\n    schedulingConstraints",
            'items[1].spec.schedulingPolicy: Invalid value: "{basic, gang}": must specify exactly one of: '
            "`basic`, `gang`",
        ),
        (
            "schedulingPolicy:\n      gang: {minGroupCount: 2}",
            "schedulingPolicy: {}",
            'items[2].spec.schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`',
        ),
        (
            "gang: {minCount: 4}\n    schedulingConstraints",
            "gang: {minCount: 0}\n    schedulingConstraints",
            "items[1].spec.schedulingPolicy.gang.minCount: Required value",
        ),
        (
            "gang: {minCount: 4}\n      schedulingConstraints",
            "gang: {minCount: -3}\n      schedulingConstraints",
            "items[0].spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Invalid value: -3: "
            "must be greater than or equal to 1",
        ),
        (
            "gang: {minGroupCount: 2}",
            "gang: {minGroupCount: 0}",
            "items[2].spec.schedulingPolicy.gang.minGroupCount: Required value",
        ),
        (
            "      topology: [{key: example.com/rack}]\n    resourceClaims",
            "      topology: [{key: example.com/rack}, {key: zone}]\n    resourceClaims",
            "items[1].spec.schedulingConstraints.topology: Too many: 2: must have at most 1 item",
        ),
        (
            "topology: [{key: example.com/block}]",
            "topology: [{key: ''}]",
            "items[2].spec.schedulingConstraints.topology[0].key: Required value",
        ),
        (
            "topology: [{key: example.com/block}]",
            "topology: [{key: a b}]",
            'items[2].spec.schedulingConstraints.topology[0].key: Invalid value: "a b": name part must '
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character",
        ),
        (
            "    workloadRef: {workloadName: train, templateName: workers}\n",
            "",
            "items[1].spec.workloadRef: Required value: must be set when parentCompositePodGroupName is set",
        ),
        (
            "    workloadRef: {workloadName: train, templateName: all}\n",
            "",
            "items[2].spec.workloadRef: Required value",
        ),
    ],
)
def test_invalid_groups_are_refused_as_the_api_server_refuses_them(old: str, new: str, message: str) -> None:
    """The texts are the v1.37.2 API server's for the same objects (posted with every gate on)."""
    assert old in KUBECTL_LIST
    assert _error(KUBECTL_LIST.replace(old, new, 1)) == f"in.yaml: {message}"
