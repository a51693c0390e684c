"""Give kubesched what the binary's first cycle of a PodGroup held, when that was part of the group.

The binary moves a group's pods to the active queue one at a time when its PodGroup arrives, and its
scheduling loop may pop the group while the move goes on (waves.py): its first cycle then holds part
of the group, and the other pods wait for the group's next cycle. The first cycle's size can decide
where the group goes: a basic group asking for one zone, given five of its eight pods, may take a
zone that holds five where the whole group would have taken one that holds seven (seed 1222 wave 0).

kubesched's cycle takes every queued pod of the group at once. To be given the binary's split, the
pods its first cycle did not hold start behind a scheduling gate of the harness's own
(`HELD_GATE`); once the scheduler has nothing left to do at the start (the group's first cycle ran),
the gate is lifted and they join the group for its next cycle (`JoinAfterFirstCycle`). Which of the
alike pods were held is not in the binary's log, only how many its first cycle held; the last ones
created are held.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.objects import Pod
from kubesched.cluster.memory import MemoryCluster
from kubesched.harness.differential.waves import WaveOutcome
from kubesched.scheduler.scheduler import Scheduler
from kubesched.simulate.virtual_time import drain

__all__ = ["HELD_GATE", "JoinAfterFirstCycle", "held_back", "holding"]

#: The scheduling gate that keeps a pod out of its group's first cycle.
HELD_GATE = "differential.kubesched.io/after-first-cycle"


def held_back(outcome: WaveOutcome, *, skip: frozenset[str] = frozenset()) -> set[str]:
    """The wave's pods (names) the binary's first cycle of their PodGroup did not hold: beyond the
    count its log gives, the last created. Groups in `skip` are left whole."""
    members: dict[str, list[str]] = {}
    for pod in outcome.pods:
        group = (pod["spec"].get("schedulingGroup") or {}).get("podGroupName")
        if group and group not in skip:
            members.setdefault(group, []).append(pod["metadata"]["name"])
    held: set[str] = set()
    for group, names in members.items():
        first = outcome.first_cycle_pods.get(group, len(names))
        held.update(names[first:])
    return held


def holding(objects: list[dict[str, Any]], held: set[str]) -> list[dict[str, Any]]:
    """`objects` with the pods named in `held` behind `HELD_GATE`."""
    out = []
    for obj in objects:
        if obj["kind"] == "Pod" and obj["metadata"]["name"] in held:
            spec = obj["spec"]
            gates = [*spec.get("schedulingGates", []), {"name": HELD_GATE}]
            obj = {**obj, "spec": {**spec, "schedulingGates": gates}}
        out.append(obj)
    return out


class JoinAfterFirstCycle:
    """A simulate timeline: schedule until the active queue is empty, then lift `HELD_GATE` from
    every pod that carries it, then go on as a plain simulate does (until nothing moves)."""

    def __init__(self, scheduler: Scheduler, cluster: MemoryCluster) -> None:
        self.scheduler = scheduler
        self.cluster = cluster
        self.binds = 0
        self.joined = False

    def step(self, now: float) -> bool:
        drain(self.scheduler)
        joined = not self.joined
        if joined:
            self.joined = True
            for pod in list(self.cluster.pods.values()):
                if any(g.name == HELD_GATE for g in pod.spec.scheduling_gates):
                    self.cluster.update_pod(_ungated(pod))
            drain(self.scheduler)
        binds = sum(self.cluster.bind_count.values())
        moved, self.binds = joined or binds != self.binds, binds
        return moved

    def next_at(self) -> float | None:
        return None

    def over(self) -> bool:
        return self.joined

    def advancing(self, to: float, *, last: bool) -> None:
        pass


def _ungated(pod: Pod) -> Pod:
    gates = [g for g in pod.spec.scheduling_gates if g.name != HELD_GATE]
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, scheduling_gates=gates))
