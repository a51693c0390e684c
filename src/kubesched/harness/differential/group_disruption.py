"""Random scenarios where one pod preempts through running gangs, disrupted whole or pod by pod.

Upstream's single-pod preemption, with GenericWorkload on, weighs a PodGroup whose `disruptionMode`
is `all` as one victim spanning nodes: choosing a node where one of its pods is in the way costs
every scheduled pod of the group, and evicts them all. A scenario `d<seed>` is a few nodes of 4 CPU
(zone and rack labels as the other group scenarios), ordinary pods already running on some of
them, then one or two gangs, each its own wave, that bind across several nodes, then one or two
ordinary pods of a higher priority, each its own wave, that find no room without evicting. A gang
is disrupted whole (`all`, half of them), pod by pod (`single`) or says nothing (the API's default,
`single`): the last two are the control. Sometimes a PodDisruptionBudget covers a gang's pods, so
the budgets are spent over a group victim's pods. Every draw is named in `Scenario.features`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kubesched.harness.differential.group_scenario import POD_GROUP_API, RACKS, GroupScenario, Wave, rack_node
from kubesched.harness.differential.scenario import Dice
from kubesched.harness.differential.waves import WaveOutcome

__all__ = ["evictions", "generate_disruption"]

Obj = dict[str, Any]

_NODE_CPU = 4
#: A gang pod's CPU: three fit a node, two, or one.
_GANG_CPUS = (1, 2, 3)
_MODES = ("all", "all", "single", None)


class _Gen(Dice):
    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.s = GroupScenario(seed, label=f"d{seed}")
        #: CPU left on each node (as if every pod made so far were bound where it could go).
        self.free: list[int] = []

    def node(self, i: int) -> Obj:
        self.free.append(_NODE_CPU)
        return rack_node(f"{self.s.name}-n{i}", self.pick(RACKS), str(_NODE_CPU))

    def pod(self, name: str, cpu: int, priority: str | None, app: str, group: str | None = None) -> Obj:
        requests = {"cpu": str(cpu)}
        spec: Obj = {
            "containers": [{"name": "main", "image": "img-a:1", "resources": {"requests": requests}}],
            "terminationGracePeriodSeconds": 0,
        }
        if priority is not None:
            spec["priorityClassName"] = priority
        if group is not None:
            spec["schedulingGroup"] = {"podGroupName": group}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
            "spec": spec,
        }

    def running(self, i: int) -> None:
        """An ordinary pod running where it fits (none if no node has room)."""
        cpu = self.pick((1, 2))
        room = [j for j, free in enumerate(self.free) if free >= cpu]
        if not room:
            return
        j = self.pick(room)
        self.free[j] -= cpu
        pod = self.pod(f"{self.s.name}-r{i}", cpu, self.pick((None, "low", "mid")), "plain")
        pod["spec"]["nodeName"] = self.s.nodes[j]["metadata"]["name"]
        pod["status"] = {"phase": "Running"}
        self.s.running.append(pod)
        self.s.features.add("running-pods")

    def gang(self, i: int) -> Wave:
        """A gang of 2-4 pods that fits (one pod per node at 3 CPU), disrupted as drawn."""
        name = f"{self.s.name}-w{i}"
        cpu = self.pick(_GANG_CPUS)
        fits = sum(free // cpu for free in self.free)
        size = max(2, min(self.rng.randint(2, 4), fits))
        self._take(cpu, size)
        priority = self.pick(("low", "low", None, "mid"))
        spec: Obj = {"schedulingPolicy": {"gang": {"minCount": size}}}
        if priority is not None:
            spec["priorityClassName"] = priority
        mode = self.pick(_MODES)
        if mode is not None:
            spec["disruptionMode"] = {mode: {}}
        self.s.features.add(f"disruption-{mode or 'unset'}")
        if self.chance(0.25):
            allowed = self.pick((0, 1))
            self.s.pdbs.append(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": f"{name}-pdb", "namespace": "default"},
                    "spec": {"selector": {"matchLabels": {"app": name}}, "maxUnavailable": allowed},
                    "status": {"disruptionsAllowed": allowed},
                }
            )
            self.s.features.add("gang-pdb")
        pods = [self.pod(f"{name}-p{j}", cpu, priority, name, name) for j in range(size)]
        group = {
            "apiVersion": POD_GROUP_API,
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": spec,
        }
        return Wave(pods, [group])

    def preemptor(self, i: int) -> Wave:
        """An ordinary pod above the gangs that finds no node with room as it is."""
        most = max(self.free)
        cpu = min(most + self.pick((1, 1, 2)), _NODE_CPU)
        priority = self.pick(("high", "high", "mid"))
        self.s.features.add(f"preemptor-{priority}")
        self._take(cpu, 1)
        return Wave([self.pod(f"{self.s.name}-w{i}-o0", cpu, priority, "plain")])

    def _take(self, cpu: int, count: int) -> None:
        """Spend `count` x `cpu` of room, most free nodes first (as spreading would)."""
        for _ in range(count):
            j = max(range(len(self.free)), key=lambda k: self.free[k])
            self.free[j] = max(self.free[j] - cpu, 0)


def generate_disruption(seed: int) -> GroupScenario:
    """The scenario of `seed`: 3-5 nodes of 4 CPU, 0-5 running ordinary pods, one or two gangs
    (2-4 pods each), then one or two ordinary pods that must preempt to fit."""
    g = _Gen(seed)
    s = g.s
    s.nodes = [g.node(i) for i in range(g.rng.randint(3, 5))]
    for i in range(g.rng.randint(0, 5)):
        g.running(i)
    gangs = g.rng.randint(1, 2)
    if gangs == 2:
        s.features.add("two-gangs")
    s.waves = [g.gang(i) for i in range(gangs)]
    s.waves += [g.preemptor(gangs + i) for i in range(g.rng.randint(1, 2))]
    return s


def evictions(waves: list[WaveOutcome]) -> Counter[str]:
    """What the binary's preemptions took of each gang (so a run shows it exercised the rule):
    `evicted-whole-<mode>` when every pod the gang had bound went at once (two or more),
    `evicted-part-<mode>` when only some did; `<mode>` is `all`, `single` or `unset`."""
    kinds: Counter[str] = Counter()
    bound: dict[str, tuple[int, str]] = {}
    for wave in waves:
        for group in wave.groups:
            name = group["metadata"]["name"]
            mode = next(iter(group["spec"].get("disruptionMode") or {"unset": {}}))
            count = sum(1 for pod, node in wave.nodes.items() if node and pod.startswith(f"{name}-p"))
            bound[name] = (count, mode)
        for name, (count, mode) in bound.items():
            taken = sum(1 for v in wave.victims if v.startswith(f"default/{name}-p"))
            if taken:
                kinds[f"evicted-{'whole' if taken == count > 1 else 'part'}-{mode}"] += 1
    return kinds
