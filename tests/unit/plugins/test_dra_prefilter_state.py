"""DynamicResources without its PreFilter state (another PreFilter plugin rejected the pod first, or
the profile disables this one) and with it: every extension point reads it one way."""

from __future__ import annotations

import msgspec
from dra_fixtures import node

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import NodeTable
from kubesched.framework.status import Code
from kubesched.plugins.dynamic_resources import DynamicResources

POD = msgspec.convert(
    {
        "metadata": {"name": "p", "namespace": "default", "uid": "uid-p"},
        "spec": {
            "containers": [{"name": "c"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "gone"}],
        },
    },
    Pod,
)
TABLE = NodeTable([NodeInfo(node("n1")), NodeInfo(node("n2"))])


def test_missing_state_passes_filter_and_post_filter_answers_not_found() -> None:
    plugin, state = DynamicResources(), CycleState()
    result = plugin.filter_nodes(state, POD, TABLE.all())
    assert (result.codes < 0).all()
    assert plugin.filter(state, POD, TABLE.infos[0]) is None
    _, status = plugin.post_filter(state, POD, {})
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "not found"
    assert not plugin.score_nodes(state, POD, TABLE.all()).any()
    assert plugin.reserve(state, POD, "n1") is None
    assert plugin.pre_bind(state, POD, "n1") is None
    flight = plugin.pre_bind_pre_flight(state, POD, "n1")
    assert flight is not None and flight.is_skip()
    assert plugin.failure_repeats(state, POD)


def test_state_written_by_a_rejecting_pre_filter_is_read_afterwards() -> None:
    """PreFilter writes its (empty) state before rejecting: PostFilter then finds it and says only
    Unschedulable, which is how upstream tells "rejected here" from "never got here"."""
    plugin, state = DynamicResources(), CycleState()
    rejected = plugin.pre_filter(state, POD, TABLE.all())
    assert rejected is not None and rejected.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    _, status = plugin.post_filter(state, POD, {})
    assert status is not None and status.code == Code.UNSCHEDULABLE and status.message() == ""
    assert not plugin.failure_repeats(state, POD)
