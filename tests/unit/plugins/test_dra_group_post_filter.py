"""DynamicResources' PodGroupPostFilter on its own: when it declines, when it cannot read the
cycle's state, and the stale second write (the scenes with claims are in
tests/unit/simulate/snapshot/test_simulate_group_post_filter.py)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.objects import Pod
from kubesched.api.resource import ResourceClaim
from kubesched.api.scheduling_groups import CompositePodGroup, PodGroup
from kubesched.config.features import parse_feature_gates
from kubesched.framework.cycle_state import PodGroupCycleState
from kubesched.framework.pod_group_preemption import GroupPreemptor
from kubesched.framework.status import Code
from kubesched.plugins.dynamic_resources import DynamicResources
from kubesched.plugins.dynamic_resources.group import GroupClaimState
from kubesched.plugins.dynamic_resources.group_post_filter import CLAIMS_RELEASED, ClaimWrites

MEMBER = msgspec.convert(
    {"metadata": {"name": "w0", "namespace": "default"}, "spec": {"schedulingGroup": {"podGroupName": "g"}}},
    Pod,
)


def _group(**spec: Any) -> PodGroup:
    return msgspec.convert({"metadata": {"name": "g", "namespace": "default"}, "spec": spec}, PodGroup)


def _run(
    plugin: DynamicResources, group: PodGroup | CompositePodGroup, cycle: PodGroupCycleState | None
) -> Any:
    preemptor = GroupPreemptor(group, [MEMBER], cycle=cycle)
    return plugin.pod_group_post_filter(preemptor, lambda: ([], None), None)  # type: ignore[arg-type]


def _cycle(with_state: bool) -> PodGroupCycleState:
    cycle = PodGroupCycleState()
    if with_state:
        cycle.data["DynamicResources"] = GroupClaimState()
    return cycle


def test_without_any_members_prefilter_the_state_is_not_found() -> None:
    _, status = _run(DynamicResources(), _group(), _cycle(False))
    assert (status.code, status.message()) == (Code.ERROR, "not found")


def test_with_the_state_it_answers_unschedulable_with_its_text() -> None:
    _, status = _run(DynamicResources(), _group(), _cycle(True))
    assert (status.code, status.message()) == (Code.UNSCHEDULABLE, CLAIMS_RELEASED)


def test_a_composite_tree_is_declined_without_a_text() -> None:
    composite = msgspec.convert({"metadata": {"name": "c", "namespace": "default"}}, CompositePodGroup)
    _, status = _run(DynamicResources(), composite, _cycle(False))
    assert (status.code, status.message()) == (Code.UNSCHEDULABLE, "")


@pytest.mark.parametrize(("topology", "declined"), [(True, True), (False, False)])
def test_a_constrained_group_is_declined_only_with_topology_aware_scheduling(
    topology: bool, declined: bool
) -> None:
    gates = "GenericWorkload=true" + (",TopologyAwareWorkloadScheduling=true" if topology else "")
    plugin = DynamicResources(features=parse_feature_gates([gates]))
    constrained = _group(schedulingConstraints={"topology": [{"key": "rack"}]})
    _, status = _run(plugin, constrained, _cycle(True))
    assert status.message() == ("" if declined else CLAIMS_RELEASED)


class _Writer:
    def __init__(self) -> None:
        self.deallocated: list[str] = []

    def deallocate_claim(self, claim: ResourceClaim) -> None:
        self.deallocated.append(claim.key)


def _claim(**status: Any) -> ResourceClaim:
    return msgspec.convert(
        {"metadata": {"name": "c", "namespace": "default"}, "status": status}, ResourceClaim
    )


def test_a_claim_changed_once_is_refused_the_second_time_an_unchanged_one_is_not() -> None:
    writer = _Writer()
    writes = ClaimWrites(writer)  # type: ignore[arg-type]
    empty = _claim()
    assert writes.deallocate(empty) is None
    assert writes.deallocate(empty) is None  # nothing changed: the version stays, no conflict
    allocated = _claim(allocation={"devices": {"results": []}})
    assert writes.deallocate(allocated) is None
    refused = writes.deallocate(allocated)
    assert refused is not None and refused.code == Code.ERROR
    assert "the object has been modified" in refused.message()
    assert writer.deallocated == ["default/c"] * 3
