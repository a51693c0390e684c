"""The checks the v1.37.2 API server makes on a PodGroup, CompositePodGroup or Workload before the
scheduler ever sees it, for the fields the pod-group cycle reads.

A group the API server would refuse must be refused here too, with the field path and the server's
words, rather than scheduled by odd rules: a policy that is both `basic` and `gang` (or neither), a
`minCount` below 1, more than one topology constraint or a constraint key that is no label key, a
`parentCompositePodGroupName` without the `workloadRef` it depends on. Checked on the binary: these
hold with every gate on. Rules that depend on the API server's gates (a field forbidden while its
gate is off) are left out: kubesched cannot know the gates of the server a file came from.
"""

from __future__ import annotations

import json

from kubesched.api.scheduling_groups import (
    CompositePodGroup,
    CompositePodGroupSchedulingPolicy,
    CompositePodGroupTemplate,
    GangSchedulingPolicy,
    PodGroup,
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
