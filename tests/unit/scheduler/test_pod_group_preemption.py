"""Pod-group preemption with GenericWorkload on: a gang of higher priority evicts what stands in
its way, for the whole group at once, then binds (upstream's PodGroupPostFilter in DefaultPreemption).
"""

from __future__ import annotations

import msgspec
from tests.unit.scheduler.test_pod_group_cycle import Bed, gang, member

from kubesched.api.scheduling_groups import DisruptionMode, Marker, PodGroup
from kubesched.config import FeatureGates
from kubesched.framework.node_info import PodInfo
from kubesched.plugins.default_preemption.pod_group import GroupVictim, more_important
from kubesched.simulate.virtual_time import drain
from kubesched.testing.builders import make_pod

LOW, HIGH = 10, 1000


def settle(bed: Bed) -> None:
    """Let the members' backoff expire a few times (they come back from backoffQ)."""
    for _ in range(5):
        bed.clock.advance(30)
        bed.scheduler.queue.flush_backoff_completed()
        drain(bed.scheduler)


def whole(pod_group: PodGroup) -> PodGroup:
    spec = msgspec.structs.replace(pod_group.spec, disruption_mode=DisruptionMode(all=Marker()))
    return msgspec.structs.replace(pod_group, spec=spec)


def low_then_high(*, low: PodGroup | None = None, high_size: int = 2) -> Bed:
    """Two 4-CPU nodes full of a low-priority gang (2 x 3 CPU), then a high gang of 3-CPU pods."""
    bed = Bed(nodes=2, groups=[low or gang("low", 2, priority=LOW), gang("high", high_size, priority=HIGH)])
    bed.create(*(member(f"l{i}", "low", "3", priority=LOW) for i in range(2)))
    assert sorted(bed.bound("l").values()) == ["n0", "n1"]
    bed.create(*(member(f"h{i}", "high", "3", priority=HIGH) for i in range(high_size)))
    settle(bed)
    return bed


def test_a_higher_gang_evicts_the_lower_one_and_binds() -> None:
    bed = low_then_high()
    assert sorted(bed.bound("h").values()) == ["n0", "n1"]
    assert bed.bound("l") == {}
    assert bed.condition("high") == ("True", "Scheduled", "")
    # The attempt that preempted: the member tried failed on cpu, the one never reached got the
    # group's status from before PodGroupPostFilter (upstream's texts); the condition has it all.
    assert sorted(bed.messages("h")) == [
        "0/2 nodes are available: 2 Insufficient cpu.",
        "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining",
    ]
    assert next(o.message for o in bed.outcomes if o.name == "high") == (
        "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, "
        "pod group preemption: found a placement for podgroup, preempting 2 victims"
    )


def test_victims_are_told_a_pod_group_preempted_them_on_the_cluster() -> None:
    bed = low_then_high()
    pod_group = bed.cluster.groups.pod_group("default", "high")
    assert pod_group is not None
    notes = sorted(e.note for e in bed.cluster.events if e.reason == "Preempted")
    assert notes == [f"Preempted by podgroup {pod_group.metadata.uid} on node cluster"] * 2


def test_only_the_victims_the_group_needs_are_evicted() -> None:
    # One 3-CPU member needs one node: one low pod is reprieved.
    bed = Bed(nodes=2, groups=[gang("low", 2, priority=LOW), gang("high", 1, priority=HIGH)])
    bed.create(*(member(f"l{i}", "low", "3", priority=LOW) for i in range(2)))
    bed.create(member("h0", "high", "3", priority=HIGH))
    settle(bed)
    assert len(bed.bound("h")) == 1
    assert len(bed.bound("l")) == 1


def test_a_group_disrupted_whole_loses_every_pod() -> None:
    bed = Bed(nodes=2, groups=[whole(gang("low", 2, priority=LOW)), gang("high", 1, priority=HIGH)])
    bed.create(*(member(f"l{i}", "low", "3", priority=LOW) for i in range(2)))
    bed.create(member("h0", "high", "3", priority=HIGH))
    settle(bed)
    assert len(bed.bound("h")) == 1
    assert bed.bound("l") == {}


def test_a_group_that_may_not_preempt_says_so() -> None:
    bed = Bed(nodes=2, groups=[gang("low", 2, priority=LOW), gang("high", 2, priority=HIGH)])
    bed.create(*(member(f"l{i}", "low", "3", priority=LOW) for i in range(2)))
    never = {"schedulingGroup": {"podGroupName": "high"}, "preemptionPolicy": "Never"}
    bed.create(*(make_pod(f"h{i}", cpu="3", priority=HIGH, spec=never) for i in range(2)))
    assert bed.bound("h") == {}
    status, reason, message = bed.condition("high")
    assert (status, reason) == ("False", "Unschedulable")
    assert message.endswith(", pod group preemption: not eligible due to preemptionPolicy=Never.")


def test_without_room_even_after_evicting_everyone_the_algorithms_text_is_kept() -> None:
    bed = Bed(nodes=2, groups=[gang("low", 1, priority=LOW), gang("high", 3, priority=HIGH)])
    bed.create(member("l0", "low", "3", priority=LOW))
    bed.create(*(member(f"h{i}", "high", "3", priority=HIGH) for i in range(3)))
    assert bed.bound("h") == {}
    assert list(bed.bound("l")) == ["l0"]
    # DynamicResources' PodGroupPostFilter runs first and answers Unschedulable with its text even
    # without claims; the preemption's Unschedulable does not end the run, so both texts are kept.
    assert bed.condition("high")[2] == (
        "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining, "
        "deallocation and deletion of ResourceClaims completed, "
        "pod group preemption: minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"
    )


def _victim(priority: int, rank: int, pods: int, start: float) -> GroupVictim:
    infos = [PodInfo(make_pod(f"p{i}")) for i in range(pods)]
    return GroupVictim(infos, priority, rank, start)


def test_victims_order_priority_then_groups_then_size_then_age() -> None:
    inf = float("inf")
    assert more_important(_victim(5, 1, 1, 0), _victim(4, 2, 3, 0)) < 0
    assert more_important(_victim(5, 2, 1, 9), _victim(5, 1, 1, 0)) < 0
    assert more_important(_victim(5, 2, 3, 9), _victim(5, 2, 2, 0)) < 0
    assert more_important(_victim(5, 1, 1, 1), _victim(5, 1, 1, 2)) < 0
    # a pod that never started ties with any (upstream compares nil start times as not before)
    assert more_important(_victim(5, 1, 1, inf), _victim(5, 1, 1, 2)) == 0


def test_one_pods_preemption_spares_a_pod_of_a_group_over_a_pod_on_its_own() -> None:
    # One 4-CPU node: a pod on its own first, then a pod of a group, both of priority 0; a pod of
    # priority 10 needs half the node. Upstream ranks the group's pod above the other (NewPodVictim).
    bed = Bed(nodes=1, groups=[gang("g", 1, priority=0)])
    bed.create(make_pod("plain", cpu="2", priority=0))
    bed.create(member("m0", "g", "2", priority=0))
    bed.create(make_pod("urgent", cpu="2", priority=10))
    settle(bed)
    assert bed.bound("urgent") == {"urgent": "n0"}
    assert bed.bound("m0") == {"m0": "n0"}
    assert bed.bound("plain") == {}


POLICY_GATES = FeatureGates(explicit={"GenericWorkload": True, "PodGroupPreemptionPolicy": True})


def with_policy(pod_group: PodGroup, policy: str) -> PodGroup:
    spec = msgspec.structs.replace(pod_group.spec, preemption_policy=policy)
    return msgspec.structs.replace(pod_group, spec=spec)


def test_with_pod_group_preemption_policy_the_pod_groups_never_holds_the_group_back() -> None:
    high = with_policy(gang("high", 2, priority=HIGH), "Never")
    bed = Bed(nodes=2, features=POLICY_GATES, groups=[gang("low", 2, priority=LOW), high])
    bed.create(*(member(f"l{i}", "low", "3", priority=LOW) for i in range(2)))
    never = {"schedulingGroup": {"podGroupName": "high"}, "preemptionPolicy": "Never"}
    bed.create(*(make_pod(f"h{i}", cpu="3", priority=HIGH, spec=never) for i in range(2)))
    settle(bed)
    assert bed.bound("h") == {}
    assert bed.condition("high")[2].endswith(
        "pod group preemption: not eligible due to preemptionPolicy=Never."
    )


def test_with_pod_group_preemption_policy_pods_must_agree_with_their_pod_group() -> None:
    high = with_policy(gang("high", 2, priority=HIGH), "Never")
    bed = Bed(nodes=2, features=POLICY_GATES, groups=[high])
    bed.create(*(member(f"h{i}", "high", "1", priority=HIGH) for i in range(2)))
    assert bed.condition("high") == (
        "False",
        "SchedulerError",
        "all pods in a single pod group should have the same preemption policy as the pod group's "
        "preemption policy, got PreemptLowerPriority and Never",
    )


def test_without_the_gate_the_pod_groups_policy_is_not_read() -> None:
    high = with_policy(gang("high", 2, priority=HIGH), "Never")
    bed = Bed(nodes=2, groups=[gang("low", 2, priority=LOW), high])
    bed.create(*(member(f"l{i}", "low", "3", priority=LOW) for i in range(2)))
    bed.create(*(member(f"h{i}", "high", "3", priority=HIGH) for i in range(2)))
    settle(bed)
    assert sorted(bed.bound("h").values()) == ["n0", "n1"]
