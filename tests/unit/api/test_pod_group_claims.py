"""A PodGroup's shared claims: which pod entry stands for one, to whom a claim is reserved, and what
the simulated resourceclaim controller makes for a group and its pods."""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.group_claims import (
    group_claim_name,
    is_reserved_for_pod,
    matching_group_claim,
    owned_by_pods_group,
)
from kubesched.api.objects import Pod, PodResourceClaim
from kubesched.api.resource import ResourceClaim, ResourceClaimTemplate
from kubesched.api.scheduling_groups import PodGroup
from kubesched.cluster.claims import instantiate_group_claims, instantiate_template_claims
from kubesched.plugins.dynamic_resources.claims import resolve_pod_claims


def _group(**status: Any) -> PodGroup:
    spec = {
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "resourceClaims": [
            {"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
            {"name": "net", "resourceClaimName": "fabric"},
        ],
    }
    meta = {"name": "g", "namespace": "default", "uid": "uid-g"}
    return msgspec.convert({"metadata": meta, "spec": spec, "status": status}, PodGroup)


def _pod(*entries: dict[str, str], group: str = "g") -> Pod:
    spec = {"schedulingGroup": {"podGroupName": group}, "resourceClaims": list(entries)}
    return msgspec.convert(
        {"metadata": {"name": "w0", "namespace": "default", "uid": "uid-w0"}, "spec": spec}, Pod
    )


def _claim(
    name: str, owner: dict[str, Any] | None = None, reserved: list[dict[str, str]] | None = None
) -> ResourceClaim:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if owner is not None:
        meta["ownerReferences"] = [{"controller": True, **owner}]
    return msgspec.convert({"metadata": meta, "status": {"reservedFor": reserved or []}}, ResourceClaim)


def _template() -> ResourceClaimTemplate:
    return msgspec.convert({"metadata": {"name": "one-gpu", "namespace": "default"}}, ResourceClaimTemplate)


def test_an_entry_stands_for_the_groups_claim_only_when_name_and_source_match() -> None:
    group = _group()
    same = PodResourceClaim(name="gpu", resource_claim_template_name="one-gpu")
    other_template = PodResourceClaim(name="gpu", resource_claim_template_name="two-gpus")
    other_name = PodResourceClaim(name="gpu2", resource_claim_template_name="one-gpu")
    assert matching_group_claim(same, group) == group.spec.resource_claims[0]
    assert matching_group_claim(other_template, group) is None
    assert matching_group_claim(other_name, group) is None


def test_the_name_of_a_groups_claim_comes_from_its_status_once_made() -> None:
    assert group_claim_name(_group(), _group().spec.resource_claims[1]) == ("fabric", False)
    assert group_claim_name(_group(), _group().spec.resource_claims[0]) == (
        "PodGroup default/g: ResourceClaim not created yet"
    )
    made = _group(resourceClaimStatuses=[{"name": "gpu", "resourceClaimName": "g-gpu-abcde"}])
    assert group_claim_name(made, made.spec.resource_claims[0]) == ("g-gpu-abcde", True)


def test_a_reservation_for_the_group_counts_for_its_pods_only_when_accepted() -> None:
    pod = _pod()
    for_group = _claim(
        "c", reserved=[{"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "g"}]
    )
    for_other = _claim(
        "c", reserved=[{"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "h"}]
    )
    assert is_reserved_for_pod(pod, for_group, accept_group=True)
    assert not is_reserved_for_pod(pod, for_group, accept_group=False)
    assert not is_reserved_for_pod(pod, for_other, accept_group=True)
    assert is_reserved_for_pod(pod, _claim("c", reserved=[{"resource": "pods", "uid": "uid-w0"}]), False)


def test_the_controller_makes_a_groups_claim_and_points_the_matching_entry_at_it() -> None:
    group, [made] = instantiate_group_claims(_group(), {"default/one-gpu": _template()})
    assert [(s.name, s.resource_claim_name) for s in group.status.resource_claim_statuses] == [
        ("gpu", made.metadata.name)
    ]
    owner = made.metadata.owner_references[0]
    assert (owner.kind, owner.uid, owner.controller) == ("PodGroup", "uid-g", True)
    assert made.metadata.annotations["resource.kubernetes.io/pod-claim-name"] == "gpu"
    pod = _pod(
        {"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
        {"name": "own", "resourceClaimTemplateName": "one-gpu"},
    )
    placed, created = instantiate_template_claims(pod, {"default/one-gpu": _template()}, group)
    statuses = {s.name: s.resource_claim_name for s in placed.status.resource_claim_statuses}
    assert statuses["gpu"] == made.metadata.name  # the group's, not a new one
    assert [c.metadata.owner_references[0].kind for c in created] == ["Pod"]  # `own` only
    # Before the group's claim is made, the matching entry waits (no status, no claim of its own).
    waiting, none = instantiate_template_claims(
        _pod({"name": "gpu", "resourceClaimTemplateName": "one-gpu"}),
        {"default/one-gpu": _template()},
        _group(),
    )
    assert (waiting.status.resource_claim_statuses, none) == ([], [])


def test_a_pod_resolves_its_groups_claim_only_with_the_gate() -> None:
    pod = msgspec.structs.replace(
        _pod({"name": "gpu", "resourceClaimTemplateName": "one-gpu"}),
        status=msgspec.convert(
            {"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "g-gpu"}]}}, Pod
        ).status,
    )
    owner = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "name": "g", "uid": "uid-g"}
    claims = {"default/g-gpu": _claim("g-gpu", owner)}
    assert owned_by_pods_group(pod, claims["default/g-gpu"])
    resolved = resolve_pod_claims(pod, claims, accept_group=True)
    assert not isinstance(resolved, str) and [r.claim.metadata.name for r in resolved] == ["g-gpu"]
    assert resolve_pod_claims(pod, claims) == (
        "ResourceClaim default/g-gpu was not created for Pod default/w0 (Pod is not owner)"
    )
    stranger = {"default/g-gpu": _claim("g-gpu", {**owner, "name": "h"})}
    assert resolve_pod_claims(pod, stranger, accept_group=True) == (
        "ResourceClaim default/g-gpu was not created for Pod default/w0 "
        "(neither Pod nor PodGroup g is the owner)"
    )
