"""Claims shared by a PodGroup's pods in simulate (DRAWorkloadResourceClaims): the resourceclaim
controller makes the group's claim from its template, the pods' entries resolve to it, the group's
cycle allocates it once and PreBind reserves it for the PodGroup."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from tests.unit.plugins.dra_fixtures import device_class, exactly, gpu, slice_

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod
from kubesched.api.resource import ResourceClaim, ResourceClaimTemplate
from kubesched.api.scheduling_groups import PodGroup
from kubesched.config import default_config
from kubesched.config.features import parse_feature_gates
from kubesched.plugins import default_registry
from kubesched.simulate.snapshot.run import simulate_cluster

GATES = "GenericWorkload=true,DRAWorkloadResourceClaims=true"


def _node(name: str) -> Node:
    return msgspec.convert(
        {"metadata": {"name": name}, "status": {"allocatable": {"cpu": "4", "pods": "10"}}}, Node
    )


def _member(name: str, entry: dict[str, str]) -> Pod:
    spec = {"schedulingGroup": {"podGroupName": "g"}, "resourceClaims": [{"name": "gpu", **entry}]}
    return msgspec.convert({"metadata": {"name": name, "namespace": "default"}, "spec": spec}, Pod)


def _group(entry: dict[str, str]) -> PodGroup:
    spec = {"schedulingPolicy": {"gang": {"minCount": 2}}, "resourceClaims": [{"name": "gpu", **entry}]}
    return msgspec.convert({"metadata": {"name": "g", "namespace": "default"}, "spec": spec}, PodGroup)


def _objects(entry: dict[str, str], claims: list[ResourceClaim] | None = None) -> LoadedObjects:
    template = msgspec.convert(
        {
            "metadata": {"name": "one-gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [exactly()]}}},
        },
        ResourceClaimTemplate,
    )
    return LoadedObjects(
        nodes=[_node("n1"), _node("n2")],
        pods=[_member("w0", entry), _member("w1", entry)],
        scheduling_pod_groups=[_group(entry)],
        device_classes=[device_class()],
        resource_claim_templates=[template],
        resource_slices=[slice_("n2-gpus", [gpu("g0")], node="n2")],
        resource_claims=claims or [],
    )


def _run(objects: LoadedObjects, gates: str) -> tuple[dict[str, str], list[ResourceClaim], dict[str, Any]]:
    features = parse_feature_gates([gates])
    registry = default_registry(features=features)
    report, cluster = simulate_cluster(objects, default_config(registry, features), registry)
    bound = {p.metadata.name: p.spec.node_name for p in cluster.pods.values() if p.spec.node_name}
    outcome = {
        "groups": [(g.result, g.message) for g in report.pod_groups],
        "attempts": sorted(p.attempts for p in report.pods),
    }
    return bound, cluster.claims.all(), outcome


def test_a_groups_template_claim_is_made_once_allocated_once_and_reserved_for_the_group() -> None:
    bound, claims, outcome = _run(_objects({"resourceClaimTemplateName": "one-gpu"}), GATES)
    assert bound == {"w0": "n2", "w1": "n2"}  # one device, shared by both members
    # As the binary: the member whose PreBind comes second finds the claim allocated by the first
    # ("claim ... got allocated elsewhere in the meantime"), fails, and binds on its next attempt.
    assert outcome["attempts"] == [1, 2]
    [claim] = claims
    owner = claim.metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.api_version) == ("PodGroup", "g", "scheduling.k8s.io/v1beta1")
    assert claim.metadata.name.startswith("g-gpu-")
    assert claim.status.allocation is not None
    assert [(r.api_group, r.resource, r.name) for r in claim.status.reserved_for] == [
        ("scheduling.k8s.io", "podgroups", "g")
    ]


def test_without_the_gate_each_pod_gets_its_own_claim_and_the_gang_does_not_fit() -> None:
    bound, claims, outcome = _run(_objects({"resourceClaimTemplateName": "one-gpu"}), "GenericWorkload=true")
    assert bound == {}
    assert sorted(c.metadata.owner_references[0].name for c in claims) == ["w0", "w1"]
    assert outcome["groups"][0][0] == "Unschedulable"


@pytest.mark.parametrize(
    ("gates", "reserved"),
    [(GATES, [("podgroups", "g")]), ("GenericWorkload=true", [("pods", "w0"), ("pods", "w1")])],
)
def test_a_named_claim_is_shared_within_the_groups_cycle(gates: str, reserved: list[tuple[str, str]]) -> None:
    """Both members use the allocation the first one's Reserve made (it is pending, not written
    yet); with the gate on the claim is reserved for the PodGroup, else for each pod."""
    shared = msgspec.convert(
        {
            "metadata": {"name": "shared", "namespace": "default", "uid": "uid-shared"},
            "spec": {"devices": {"requests": [exactly()]}},
        },
        ResourceClaim,
    )
    bound, claims, _ = _run(_objects({"resourceClaimName": "shared"}, [shared]), gates)
    assert bound == {"w0": "n2", "w1": "n2"}
    [claim] = claims
    assert sorted((r.resource, r.name) for r in claim.status.reserved_for) == reserved
