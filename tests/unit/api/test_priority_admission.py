"""Which objects name a PriorityClass the cluster lacks: what the API server's Priority admission
refuses (pods, PodGroups, CompositePodGroups) and what every pod of a workload's template would be."""

from __future__ import annotations

import pytest

from kubesched.api.loader import LoadedObjects, decode_object
from kubesched.api.priority_admission import SYSTEM_PRIORITY_CLASSES, unknown_priority_classes

POD_SPEC = {"priorityClassName": "high", "containers": [{"name": "c", "image": "i"}]}
TEMPLATE = {"metadata": {"labels": {"app": "a"}}, "spec": POD_SPEC}
SELECTOR = {"matchLabels": {"app": "a"}}
V1BETA1 = "scheduling.k8s.io/v1beta1"
GROUP_SPEC = {
    "workloadRef": {"workloadName": "w", "templateName": "t"},
    "schedulingPolicy": {"gang": {"minCount": 1}},
    "priorityClassName": "high",
}


def meta(name: str) -> dict[str, str]:
    return {"name": name, "namespace": "ns"}


CASES = [
    ({"apiVersion": "v1", "kind": "Pod", "metadata": meta("p"), "spec": POD_SPEC}, "pods/ns/p", "spec"),
    (
        {
            "apiVersion": V1BETA1,
            "kind": "PodGroup",
            "metadata": meta("g"),
            "spec": GROUP_SPEC,
        },
        "podgroups/ns/g",
        "spec",
    ),
    (
        {
            "apiVersion": "scheduling.k8s.io/v1alpha3",
            "kind": "CompositePodGroup",
            "metadata": meta("c"),
            "spec": {**GROUP_SPEC, "schedulingPolicy": {"gang": {"minGroupCount": 1}}},
        },
        "compositepodgroups/ns/c",
        "spec",
    ),
    (
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta("j"), "spec": {"template": TEMPLATE}},
        "jobs/ns/j",
        "spec.template.spec",
    ),
    (
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": meta("cj"),
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": TEMPLATE}}},
        },
        "cronjobs/ns/cj",
        "spec.jobTemplate.spec.template.spec",
    ),
    (
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": meta("s"),
            "spec": {"selector": SELECTOR, "serviceName": "s", "template": TEMPLATE},
        },
        "statefulsets/ns/s",
        "spec.template.spec",
    ),
]


def loaded(*docs: dict[str, object]) -> LoadedObjects:
    objects = LoadedObjects()
    for doc in docs:
        obj = decode_object(doc)
        assert obj is not None
        objects.add(obj)
    return objects


@pytest.mark.parametrize(("doc", "where", "spec_path"), CASES, ids=[c[1] for c in CASES])
def test_a_missing_class_is_named_with_its_object_and_field(
    doc: dict[str, object], where: str, spec_path: str
) -> None:
    (error,) = unknown_priority_classes(loaded(doc))
    assert (error.source, error.path) == (where, f"{spec_path}.priorityClassName")
    assert error.message.startswith("no PriorityClass with name high was found")


@pytest.mark.parametrize(("doc", "where", "spec_path"), CASES, ids=[c[1] for c in CASES])
def test_a_class_given_or_known_is_no_problem(doc: dict[str, object], where: str, spec_path: str) -> None:
    high = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 5,
    }
    assert unknown_priority_classes(loaded(doc, high)) == []
    assert unknown_priority_classes(loaded(doc), known=["high"]) == []


def test_a_pod_with_its_priority_set_was_admitted_already() -> None:
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": meta("p"), "spec": {**POD_SPEC, "priority": 7}}
    assert unknown_priority_classes(loaded(doc)) == []


def test_the_system_classes_have_the_api_servers_values() -> None:
    values = {name: pc.value for name, pc in SYSTEM_PRIORITY_CLASSES.items()}
    assert values == {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}
