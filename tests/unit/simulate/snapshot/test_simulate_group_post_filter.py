"""DynamicResources' PodGroupPostFilter in simulate: after a failed group cycle it releases claims
that kept members off nodes, and its text joins the group's message before the preemption's.

The scene: one GPU, on n2; two members of 3 CPU each on two 4-CPU nodes, minCount 2. The first
member goes to n2, where the claim can be allocated; the second needs the same claim, usable on n2
only, where no CPU is left: on n1 the claim is "not available", and the group fails. The members
say `preemptionPolicy: Never`, so pod-group preemption answers Unschedulable and both texts stay.
"""

from __future__ import annotations

from typing import Any

import msgspec
from tests.unit.plugins.dra_fixtures import DRIVER, device_class, exactly, gpu, slice_

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod
from kubesched.api.resource import ResourceClaim, ResourceClaimTemplate
from kubesched.api.scheduling_groups import PodGroup
from kubesched.config import default_config
from kubesched.config.features import parse_feature_gates
from kubesched.plugins import default_registry
from kubesched.scheduler.attempt import Attempt
from kubesched.simulate.snapshot.run import simulate_cluster

GATES = "GenericWorkload=true,DRAWorkloadResourceClaims=true"
MIN_COUNT = "pod group is unschedulable, minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"
NEVER = "pod group preemption: not eligible due to preemptionPolicy=Never."
ON_N2 = {
    "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "g0"}]},
    "nodeSelector": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]
    },
}
GROUP_REF = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "g", "uid": "uid-g"}


def _node(name: str) -> Node:
    return msgspec.convert(
        {"metadata": {"name": name}, "status": {"allocatable": {"cpu": "4", "pods": "10"}}}, Node
    )


def _member(name: str, entry: dict[str, str]) -> Pod:
    spec = {
        "schedulingGroup": {"podGroupName": "g"},
        "preemptionPolicy": "Never",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}],
        "resourceClaims": [{"name": "gpu", **entry}],
    }
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec}, Pod
    )


def _group(entry: dict[str, str] | None) -> PodGroup:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    if entry is not None:
        spec["resourceClaims"] = [{"name": "gpu", **entry}]
    meta = {"name": "g", "namespace": "default", "uid": "uid-g"}
    return msgspec.convert({"metadata": meta, "spec": spec}, PodGroup)


def _shared(status: dict[str, Any] | None = None) -> ResourceClaim:
    body: dict[str, Any] = {
        "metadata": {"name": "shared", "namespace": "default", "uid": "uid-shared"},
        "spec": {"devices": {"requests": [exactly()]}},
    }
    if status is not None:
        body["status"] = status
    return msgspec.convert(body, ResourceClaim)


def _run(
    entry: dict[str, str],
    *,
    group_entry: bool = True,
    claims: list[ResourceClaim] | None = None,
    gates: str = GATES,
) -> tuple[str, list[ResourceClaim]]:
    """The group's message after its first cycle (what its first member got), and the claims once
    the run settled."""
    template = msgspec.convert(
        {
            "metadata": {"name": "one-gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [exactly()]}}},
        },
        ResourceClaimTemplate,
    )
    objects = LoadedObjects(
        nodes=[_node("n1"), _node("n2")],
        pods=[_member("w0", entry), _member("w1", entry)],
        scheduling_pod_groups=[_group(entry if group_entry else None)],
        device_classes=[device_class()],
        resource_claim_templates=[template],
        resource_slices=[slice_("n2-gpus", [gpu("g0")], node="n2")],
        resource_claims=claims or [],
    )
    features = parse_feature_gates([gates])
    registry = default_registry(features=features)
    first: list[str] = []

    def seen(attempt: Attempt) -> None:
        if attempt.pod.metadata.name == "w0" and not first:
            first.append(attempt.message or "")

    _, cluster = simulate_cluster(objects, default_config(registry, features), registry, on_attempt=seen)
    assert not any(p.spec.node_name for p in cluster.pods.values())
    return first[0], cluster.claims.all()


def test_a_group_claim_this_cycle_allocated_is_released_with_the_podgroup_text() -> None:
    message, [claim] = _run({"resourceClaimTemplateName": "one-gpu"})
    assert message == f"{MIN_COUNT}, deallocation of PodGroup ResourceClaim completed, {NEVER}"
    # The allocation was pending only: nothing was ever written, nothing is left.
    assert claim.status.allocation is None and not claim.status.reserved_for


def test_a_group_claim_allocated_earlier_for_the_group_alone_is_deallocated() -> None:
    earlier = _shared({"allocation": ON_N2, "reservedFor": [GROUP_REF]})
    message, [claim] = _run({"resourceClaimName": "shared"}, claims=[earlier])
    assert message == f"{MIN_COUNT}, deallocation of PodGroup ResourceClaim completed, {NEVER}"
    assert claim.status.allocation is None and not claim.status.reserved_for


def test_a_group_claim_reserved_for_another_consumer_too_is_only_unreserved_for_the_group() -> None:
    other = {"resource": "pods", "name": "elsewhere", "uid": "uid-elsewhere"}
    earlier = _shared({"allocation": ON_N2, "reservedFor": [GROUP_REF, other]})
    message, [claim] = _run({"resourceClaimName": "shared"}, claims=[earlier])
    assert message == f"{MIN_COUNT}, ResourceClaim unreserved for PodGroup, {NEVER}"
    assert claim.status.allocation is not None
    assert [r.uid for r in claim.status.reserved_for] == ["uid-elsewhere"]


def test_without_group_claims_nothing_is_released_and_the_plugin_says_it_is_done() -> None:
    """Gate off: each member's own claim from the template; the second finds no device left, none
    is unavailable anywhere, and the group's claims are not looked at."""
    message, claims = _run({"resourceClaimTemplateName": "one-gpu"}, gates="GenericWorkload=true")
    assert message == f"{MIN_COUNT}, deallocation and deletion of ResourceClaims completed, {NEVER}"
    assert all(c.status.allocation is None for c in claims)


def test_a_shared_claim_that_is_not_the_groups_is_written_twice_and_the_second_write_is_stale() -> None:
    """A claim the members share outside the PodGroup's list, allocated earlier and reserved for
    nobody: the member that found it unavailable deallocates it; then, one member having had
    nothing to release, the group's clean-up tries the same claim again from PreFilter's copy,
    which the API server refuses as modified (upstream's plugin does the same)."""
    earlier = _shared({"allocation": ON_N2})
    message, [claim] = _run({"resourceClaimName": "shared"}, group_entry=False, claims=[earlier])
    assert message == (
        'error in "DynamicResources" PodGroupPostFilter plugins: Operation cannot be fulfilled on '
        'resourceclaims.resource.k8s.io "shared": the object has been modified; please apply your '
        "changes to the latest version and try again"
    )
    assert claim.status.allocation is None
