"""The checks the v1.37.2 API server makes on a PodGroup, CompositePodGroup or Workload before the
scheduler ever sees it, for the fields the pod-group cycle reads.

A group the API server would refuse must be refused here too, with the field path and the server's
words, rather than scheduled by odd rules: a policy that is both `basic` and `gang` (or neither), a
`minCount` below 1, more than one topology constraint or a constraint key that is no label key, a
`parentCompositePodGroupName` without the `workloadRef` it depends on, shared `resourceClaims` that
are more than four, named twice, or name neither or both of a claim and a template. Checked on the
binary: these hold with every gate on. Rules that depend on the API server's gates (a field
forbidden while its gate is off) are left out: kubesched cannot know the gates of the server a file
came from.
"""

from __future__ import annotations

import json

from kubesched.api.dns_names import dns1123_label_errors, dns1123_subdomain_errors
from kubesched.api.scheduling_groups import (
    CompositePodGroup,
    CompositePodGroupSchedulingPolicy,
    CompositePodGroupTemplate,
    GangSchedulingPolicy,
    PodGroup,
    PodGroupResourceClaim,
    PodGroupSchedulingConstraints,
    PodGroupSchedulingPolicy,
    PodGroupTemplate,
    Workload,
)
from kubesched.api.selectors import qualified_name_error
from kubesched.errors import InputError

__all__ = ["check_scheduling_group"]

#: The most topology constraints one group may have.
MAX_TOPOLOGY = 1
#: The most claims a PodGroup (or its template) may share.
MAX_CLAIMS = 4


def check_scheduling_group(obj: Workload | PodGroup | CompositePodGroup) -> None:
    """Raise `InputError` (with the field path) for a group object the API server would reject."""
    if isinstance(obj, PodGroup):
        spec = obj.spec
        if spec.parent_composite_pod_group_name is not None and spec.workload_ref is None:
            raise InputError(
                "Required value: must be set when parentCompositePodGroupName is set", path="spec.workloadRef"
            )
        _check_policy(spec.scheduling_policy, "spec.schedulingPolicy")
        _check_constraints(spec.scheduling_constraints, "spec.schedulingConstraints")
        _check_claims(spec.resource_claims, "spec.resourceClaims")
    elif isinstance(obj, CompositePodGroup):
        spec_c = obj.spec
        if spec_c.workload_ref is None:  # checked on the binary: a composite always names its Workload
            raise InputError("Required value", path="spec.workloadRef")
        _check_policy(spec_c.scheduling_policy, "spec.schedulingPolicy")
        _check_constraints(spec_c.scheduling_constraints, "spec.schedulingConstraints")
    else:
        for i, template in enumerate(obj.spec.pod_group_templates):
            _check_template(template, f"spec.podGroupTemplates[{i}]")
        for i, composite in enumerate(obj.spec.composite_pod_group_templates):
            _check_composite_template(composite, f"spec.compositePodGroupTemplates[{i}]")


def _check_template(template: PodGroupTemplate, path: str) -> None:
    _check_policy(template.scheduling_policy, f"{path}.schedulingPolicy")
    _check_constraints(template.scheduling_constraints, f"{path}.schedulingConstraints")
    _check_claims(template.resource_claims, f"{path}.resourceClaims")


def _check_composite_template(template: CompositePodGroupTemplate, path: str) -> None:
    _check_policy(template.scheduling_policy, f"{path}.schedulingPolicy")
    _check_constraints(template.scheduling_constraints, f"{path}.schedulingConstraints")
    for i, child in enumerate(template.pod_group_templates):
        _check_template(child, f"{path}.podGroupTemplates[{i}]")
    for i, composite in enumerate(template.composite_pod_group_templates):
        _check_composite_template(composite, f"{path}.compositePodGroupTemplates[{i}]")


def _check_policy(policy: PodGroupSchedulingPolicy | CompositePodGroupSchedulingPolicy, path: str) -> None:
    """Exactly one of `basic` and `gang`; a gang of at least one (pod, or child group)."""
    if policy.basic is not None and policy.gang is not None:
        raise InputError(
            'Invalid value: "{basic, gang}": must specify exactly one of: `basic`, `gang`', path=path
        )
    if policy.basic is None and policy.gang is None:
        raise InputError('Invalid value: "": must specify one of: `basic`, `gang`', path=path)
    gang = policy.gang
    if gang is None:
        return
    if isinstance(gang, GangSchedulingPolicy):
        count, name = gang.min_count, "minCount"
    else:
        count, name = gang.min_group_count, "minGroupCount"
    where = f"{path}.gang.{name}"
    if count == 0:  # an int32 left at zero is how Go sees a missing required value
        raise InputError("Required value", path=where)
    if count < 1:
        raise InputError(f"Invalid value: {count}: must be greater than or equal to 1", path=where)


def _check_constraints(constraints: PodGroupSchedulingConstraints | None, path: str) -> None:
    if constraints is None:
        return
    topology = constraints.topology
    if len(topology) > MAX_TOPOLOGY:
        raise InputError(
            f"Too many: {len(topology)}: must have at most {MAX_TOPOLOGY} item", path=f"{path}.topology"
        )
    for i, constraint in enumerate(topology):
        where = f"{path}.topology[{i}].key"
        if not constraint.key:
            raise InputError("Required value", path=where)
        problem = qualified_name_error(constraint.key)
        if problem is not None:
            raise InputError(f"Invalid value: {json.dumps(constraint.key)}: {problem}", path=where)


def _check_claims(claims: list[PodGroupResourceClaim], path: str) -> None:
    """The server's order: the count (then nothing else), every repeated name, then each entry:
    exactly one of claim and template, its name a DNS label, the claim's or template's a subdomain."""
    if len(claims) > MAX_CLAIMS:
        raise InputError(f"Too many: {len(claims)}: must have at most {MAX_CLAIMS} items", path=path)
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        if claim.name in seen:
            raise InputError(f"Duplicate value: {_as_json(claim)}", path=f"{path}[{i}]")
        seen.add(claim.name)
    for i, claim in enumerate(claims):
        where = f"{path}[{i}]"
        named, templated = (
            claim.resource_claim_name is not None,
            claim.resource_claim_template_name is not None,
        )
        if named and templated:
            raise InputError(
                'Invalid value: "{resourceClaimName, resourceClaimTemplateName}": must specify exactly one '
                "of: `resourceClaimName`, `resourceClaimTemplateName`",
                path=where,
            )
        if not named and not templated:
            raise InputError(
                'Invalid value: "": must specify one of: `resourceClaimName`, `resourceClaimTemplateName`',
                path=where,
            )
        if not claim.name:
            raise InputError("Required value", path=f"{where}.name")
        for field, value, errors in (
            ("name", claim.name, dns1123_label_errors),
            ("resourceClaimName", claim.resource_claim_name, dns1123_subdomain_errors),
            ("resourceClaimTemplateName", claim.resource_claim_template_name, dns1123_subdomain_errors),
        ):
            found = errors(value) if value is not None else []
            if found:
                raise InputError(f"Invalid value: {json.dumps(value)}: {found[0]}", path=f"{where}.{field}")


def _as_json(claim: PodGroupResourceClaim) -> str:
    """An entry as the server prints a duplicate: its set fields, in the API's order, compact."""
    out: dict[str, str] = {"name": claim.name}
    if claim.resource_claim_name is not None:
        out["resourceClaimName"] = claim.resource_claim_name
    if claim.resource_claim_template_name is not None:
        out["resourceClaimTemplateName"] = claim.resource_claim_template_name
    return json.dumps(out, separators=(",", ":"))
