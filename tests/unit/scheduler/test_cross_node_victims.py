"""One pod's preemption with GenericWorkload on: a running PodGroup whose `disruptionMode` is `all`
is one victim spanning nodes (upstream's getCrossNodesVictims, framework/preemption/types.go).

Four 4-CPU nodes. The gang `a` (three 3-CPU pods, priority LOW) takes n0-n2, one pod each; two
ordinary 2-CPU pods of priority LOW fill n3. A 3-CPU pod of priority HIGH arrives. On n0-n2 one
gang pod is in its way; on n3 both ordinary pods are. Disrupted one by one, a gang pod is the
cheapest victim; disrupted whole, evicting the gang costs its three pods, more than n3's two.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
import pytest
from tests.unit.scheduler.test_pod_group_cycle import ZONE, Bed, gang, member

from kubesched.api.scheduling_groups import DisruptionMode, Marker, PodGroup
from kubesched.simulate.virtual_time import drain
from kubesched.testing.builders import make_pod

LOW, MID, HIGH = 10, 100, 1000


def with_mode(group: PodGroup, mode: DisruptionMode | None) -> PodGroup:
    return msgspec.structs.replace(group, spec=msgspec.structs.replace(group.spec, disruption_mode=mode))


ALL = DisruptionMode(all=Marker())
SINGLE = DisruptionMode(single=Marker())


@dataclass(frozen=True)
class Case:
    name: str
    mode: DisruptionMode | None
    #: Priority of the ordinary pods on n3.
    others: int
    #: Pods left running afterwards (the gang's, then the ordinary ones).
    gang_left: int
    others_left: int
    #: The node the preemptor is bound to ("gang": one of the gang's nodes).
    node: str


CASES = [
    # Disrupted whole: three victims on any gang node, two on n3 -> n3.
    Case("all", ALL, LOW, gang_left=3, others_left=0, node="n3"),
    # One by one (said, or the default): one gang pod is the cheapest.
    Case("single", SINGLE, LOW, gang_left=2, others_left=2, node="gang"),
    Case("unset", None, LOW, gang_left=2, others_left=2, node="gang"),
    # n3's pods rank above the gang (MID): the lowest highest-victim priority wins before the count,
    # so the whole gang goes.
    Case("all, others above", ALL, MID, gang_left=0, others_left=2, node="gang"),
]


def play(case: Case) -> Bed:
    bed = Bed(nodes=4, groups=[with_mode(gang("a", 3, priority=LOW), case.mode)])
    bed.create(*(make_pod(f"o{i}", cpu="2", priority=case.others, node_name="n3") for i in range(2)))
    bed.create(*(member(f"a{i}", "a", "3", priority=LOW) for i in range(3)))
    assert sorted(bed.bound("a").values()) == ["n0", "n1", "n2"]
    bed.create(make_pod("hi", cpu="3", priority=HIGH))
    for _ in range(3):
        bed.clock.advance(30)
        bed.scheduler.queue.flush_backoff_completed()
        drain(bed.scheduler)
    return bed


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_group_disrupted_whole_is_one_victim_across_nodes(case: Case) -> None:
    bed = play(case)
    assert len(bed.bound("a")) == case.gang_left
    assert len(bed.bound("o")) == case.others_left
    node = bed.bound("hi")["hi"]
    assert node == case.node or (case.node == "gang" and node in {"n0", "n1", "n2"})


def test_the_preemption_message_counts_every_pod_of_the_group() -> None:
    bed = play(CASES[3])
    (note,) = [e.note for e in bed.cluster.events if e.reason == "FailedScheduling" and "hi" in e.regarding]
    assert note.endswith("preempting 3 victims")
    # Every victim, on whichever node, is told the node the preemptor was nominated to.
    preempted = [e.note for e in bed.cluster.events if e.reason == "Preempted"]
    assert len(preempted) == 3
    assert len({n.rsplit(" ", 1)[1] for n in preempted}) == 1


@pytest.mark.parametrize(("mode", "fits"), [(ALL, True), (SINGLE, False)], ids=["all", "single"])
def test_members_on_other_nodes_leave_through_the_prefilter_extensions(
    mode: DisruptionMode, fits: bool
) -> None:
    # n0 and n1 in zone za hold the gang; n2 is full with a pod above the preemptor. The preemptor
    # keeps away from the gang's zone: on n0 it fits only if the gang's pod on n1 is gone too,
    # which only InterPodAffinity's RemovePod extension, given n1 and its zone, can tell.
    bed = Bed(nodes=3, groups=[with_mode(gang("a", 2, priority=LOW), mode)], zones=("za", "za", "zb"))
    bed.create(make_pod("top", cpu="4", priority=HIGH + 1, node_name="n2"))
    bed.create(*(member(f"a{i}", "a", "3", priority=LOW, labels={"app": "a"}) for i in range(2)))
    assert sorted(bed.bound("a").values()) == ["n0", "n1"]
    away = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": ZONE}
    spec = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [away]}}}
    bed.create(make_pod("hi", cpu="3", priority=HIGH, spec=spec))
    for _ in range(3):
        bed.clock.advance(30)
        bed.scheduler.queue.flush_backoff_completed()
        drain(bed.scheduler)
    assert ("hi" in bed.bound("hi")) is fits
    assert len(bed.bound("a")) == (0 if fits else 2)
