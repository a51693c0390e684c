"""Random pod-group scenarios, reproducible per seed: gangs and basic groups among ordinary pods.

A scenario is a handful of nodes (each with a zone and a rack label, racks nested in zones), a few
pods already running on them, and *waves* to schedule one after the other. A wave is what a Job
controller creates at once: the pods of one group, or one ordinary pod. Gangs have 2-8 pods, a
minCount equal to their size or below it, pods of one size each, and sizes chosen so that gangs fit
whole, fit only in part, or do not fit at all. Groups compete across waves: a later group of a
higher priority may preempt an earlier one. With `topology`, groups may ask for one rack or one zone
(TopologyAwareWorkloadScheduling). With `composite` (CompositePodGroup), a group wave may instead be
a CompositePodGroup tree: a composite (a gang of child groups, `minGroupCount` all of them or
fewer, or basic; maybe confined to one rack or zone) over two or three child PodGroups drawn as
above, sometimes with a nested composite between. With `dra`, nodes publish 0-4 GPUs in a
ResourceSlice and a group's pods may share one ResourceClaim named in its PodGroup's
`spec.resourceClaims` (DRAWorkloadResourceClaims: allocated once, reserved for the PodGroup) or each
have a claim of their own. Claims are named, not made from templates: no resourceclaim controller
runs in the harness. Every feature used is named in `Scenario.features`.

Why one group per wave: the binary's outcome for things created together must not depend on the
timing of the harness's requests. The harness releases one group atomically (its PodGroup is
created once the scheduler saw all its pods, see waves), but two groups, or two ordinary pods,
created one request after the other could be scheduled before or after each other's arrival.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from kubesched.harness.differential.scenario import HOSTNAME, PRIORITY_CLASSES, ZONE, Dice, Scenario

__all__ = [
    "COMPOSITE_API",
    "DRIVER",
    "RACK",
    "RACKS",
    "GroupScenario",
    "Wave",
    "generate_groups",
    "rack_node",
]

Obj = dict[str, Any]

RACK = "example.com/rack"
POD_GROUP_API = "scheduling.k8s.io/v1beta1"
COMPOSITE_API = "scheduling.k8s.io/v1alpha3"
#: Rack -> its zone.
RACKS = {"r0": "za", "r1": "za", "r2": "zb", "r3": "zb"}
_CPUS = ("500m", "1", "1500m", "2", "3")
_MILLIS = {"500m": 500, "1": 1000, "1500m": 1500, "2": 2000, "3": 3000}
#: The DRA driver of the generated ResourceSlices.
DRIVER = "gpu.kubesched.test"
_RESOURCE_API = "resource.k8s.io/v1"


@dataclass
class Wave:
    """Pods created together, then the PodGroups they name (none for an ordinary pod), then the
    CompositePodGroups over them, inner ones first."""

    pods: list[Obj] = field(default_factory=list)
    groups: list[Obj] = field(default_factory=list)
    composites: list[Obj] = field(default_factory=list)


@dataclass
class GroupScenario(Scenario):
    """Nodes, running pods and waves of pods to schedule (`pending` stays empty)."""

    waves: list[Wave] = field(default_factory=list)
    #: Whether the scenario needs TopologyAwareWorkloadScheduling.
    topology: bool = False
    #: Whether its waves may be CompositePodGroup trees (CompositePodGroup).
    composite: bool = False

    @property
    def pods_to_schedule(self) -> list[Obj]:
        return [p for w in self.waves for p in w.pods]

    @property
    def groups(self) -> list[Obj]:
        return [g for w in self.waves for g in w.groups]


def rack_node(name: str, rack: str, cpu: str) -> Obj:
    """A Ready node of `cpu` CPUs labelled with its hostname, `rack` and the rack's zone."""
    allocatable = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name, ZONE: RACKS[rack], RACK: rack}},
        "spec": {},
        "status": {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


class _Gen(Dice):
    def __init__(
        self, seed: int, topology: bool, priorities: bool, composite: bool = False, dra: bool = False
    ) -> None:
        super().__init__(seed)
        self.with_priorities = priorities
        #: DRA draws come from their own generator, so a seed's scenario without DRA is unchanged.
        self.dra = random.Random(seed * 7919 + 17) if dra else None
        label = f"c{seed}" if composite else f"g{seed}"
        self.s = GroupScenario(seed, label=label, topology=topology or composite, composite=composite)
        #: CPU millis of the nodes, and asked for by the pods made so far (as if all were bound).
        self.capacity = 0
        self.asked = 0
        #: Priorities of the groups made so far.
        self.priorities: list[int] = []

    def node(self, i: int) -> Obj:
        rack = self.pick(RACKS)
        cpu = self.pick(("2", "3", "4", "4"))
        self.capacity += 1000 * int(cpu)
        return rack_node(f"{self.s.name}-n{i}", rack, cpu)

    def pod(self, name: str, cpu: str, priority: str | None, group: str | None) -> Obj:
        priority = priority if self.with_priorities else None
        self.asked += _MILLIS[cpu]
        spec: Obj = {
            "containers": [{"name": "main", "image": "img-a:1", "resources": {"requests": {"cpu": cpu}}}],
            "terminationGracePeriodSeconds": 0,
        }
        if priority is not None:
            spec["priorityClassName"] = priority
        if group is not None:
            spec["schedulingGroup"] = {"podGroupName": group}
        labels = {"app": group or "plain"}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": spec,
        }

    def group(self, wave: Wave, name: str, priority: str | None, parent: str | None = None) -> None:
        """One PodGroup and its pods, appended to `wave` (under composite `parent`, if given)."""
        priority = priority if self.with_priorities else None
        spec: Obj = {}
        if parent is not None:
            spec["parentCompositePodGroupName"] = parent
            spec["workloadRef"] = {"workloadName": parent, "templateName": name}
        cpu = self.pick(_CPUS)
        size = self.rng.randint(2, 6)
        if self.chance(0.5):
            # Sized against the room left (as if every earlier pod were bound): a gang that fits
            # just, fits in part, or is a little too big, more often than sizes at random give.
            room = max(self.capacity - self.asked, 0) * self.rng.uniform(0.6, 1.6)
            size = min(max(round(room / _MILLIS[cpu]), 2), 8)
            self.s.features.add("gang-sized-to-room")
        if self.chance(0.15):
            spec["schedulingPolicy"] = {"basic": {}}
            self.s.features.add("basic-policy")
        else:
            min_count = size if self.chance(0.65) else self.rng.randint(1, size - 1)
            spec["schedulingPolicy"] = {"gang": {"minCount": min_count}}
            self.s.features.add("gang" if min_count == size else "gang-minCount-below-size")
        if priority is not None:
            spec["priorityClassName"] = priority
            self.s.features.add("group-priority")
        if self.s.topology and self.chance(0.6):
            key = self.pick((RACK, ZONE))
            spec["schedulingConstraints"] = {"topology": [{"key": key}]}
            self.s.features.add("topology-rack" if key == RACK else "topology-zone")
        wave.groups.append(
            {
                "apiVersion": POD_GROUP_API,
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "default"},
                "spec": spec,
            }
        )
        pods = [self.pod(f"{name}-p{j}", cpu, priority, name) for j in range(size)]
        if self.dra is not None:
            self.claims(name, spec, pods)
        wave.pods += pods

    # ------------------------------------------------------------------ DRA
    def device_class(self) -> Obj:
        return {
            "apiVersion": _RESOURCE_API,
            "kind": "DeviceClass",
            "metadata": {"name": f"{self.s.name}-gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        }

    def devices(self, node: Obj) -> Obj | None:
        """The node's ResourceSlice of 0-4 GPUs (None: no devices)."""
        assert self.dra is not None
        count = self.dra.choice((0, 1, 2, 2, 4))
        if not count:
            return None
        name = node["metadata"]["name"]
        return {
            "apiVersion": _RESOURCE_API,
            "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-gpus"},
            "spec": {
                "driver": DRIVER,
                "nodeName": name,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": f"gpu-{i}"} for i in range(count)],
            },
        }

    def claim(self, name: str, count: int) -> Obj:
        request = {"name": "gpu", "exactly": {"deviceClassName": f"{self.s.name}-gpu", "count": count}}
        return {
            "apiVersion": _RESOURCE_API,
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [request]}},
        }

    def claims(self, group: str, spec: Obj, pods: list[Obj]) -> None:
        """A claim the group's pods share (half the groups), one per pod (a quarter), or none."""
        assert self.dra is not None
        draw = self.dra.random()
        if draw < 0.5:
            claim = self.claim(f"{group}-shared", self.dra.choice((1, 1, 2)))
            self.s.volumes.append(claim)
            entry = {"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}
            spec["resourceClaims"] = [dict(entry)]
            for pod in pods:
                pod["spec"]["resourceClaims"] = [dict(entry)]
            self.s.features.add("dra-group-claim")
        elif draw < 0.75:
            for pod in pods:
                claim = self.claim(f"{pod['metadata']['name']}-gpu", 1)
                self.s.volumes.append(claim)
                pod["spec"]["resourceClaims"] = [
                    {"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}
                ]
            self.s.features.add("dra-pod-claims")

    def composite(self, wave: Wave, name: str, priority: str | None, parent: str | None = None) -> None:
        """A CompositePodGroup `name` over two or three children (a nested composite among them
        at most once per tree), appended to `wave` after its children."""
        priority = priority if self.with_priorities else None
        children = self.rng.randint(2, 3)
        nested = parent is None and self.chance(0.2)
        for j in range(children):
            child = f"{name}-c{j}"
            if nested and j == children - 1:
                self.composite(wave, child, priority, parent=name)
                self.s.features.add("composite-nested")
            else:
                self.group(wave, child, priority, parent=name)
        # The API server wants every composite's workloadRef (the Workload itself need not exist).
        spec: Obj = {"workloadRef": {"workloadName": parent or name, "templateName": name}}
        if parent is not None:
            spec["parentCompositePodGroupName"] = parent
        if self.chance(0.15):
            spec["schedulingPolicy"] = {"basic": {}}
            self.s.features.add("composite-basic")
        else:
            least = children if self.chance(0.6) else self.rng.randint(1, children - 1)
            spec["schedulingPolicy"] = {"gang": {"minGroupCount": least}}
            self.s.features.add("composite-gang" if least == children else "composite-minGroupCount-below")
        if priority is not None:
            spec["priorityClassName"] = priority
        if self.chance(0.5):
            key = self.pick((RACK, ZONE))
            spec["schedulingConstraints"] = {"topology": [{"key": key}]}
            self.s.features.add("composite-topology-rack" if key == RACK else "composite-topology-zone")
        wave.composites.append(
            {
                "apiVersion": COMPOSITE_API,
                "kind": "CompositePodGroup",
                "metadata": {"name": name, "namespace": "default"},
                "spec": spec,
            }
        )

    def wave(self, i: int) -> Wave:
        wave = Wave()
        name = f"{self.s.name}-w{i}"
        if self.s.composite and self.chance(0.6):
            priority = self.pick((None, None, *PRIORITY_CLASSES))
            priority = priority if self.with_priorities else None
            self.priorities.append(PRIORITY_CLASSES.get(priority or "", 0))
            self.composite(wave, name, priority)
            self.s.features.add("composite")
        elif self.chance(0.2):
            priority = self.pick((None, *PRIORITY_CLASSES))
            wave.pods.append(self.pod(f"{name}-o0", self.pick(_CPUS), priority, None))
            self.s.features.add("ordinary-pods")
        else:
            priority = self.pick((None, None, *PRIORITY_CLASSES))
            priority = priority if self.with_priorities else None
            if any(PRIORITY_CLASSES.get(priority or "", 0) > p for p in self.priorities):
                self.s.features.add("competing-groups")  # it may take an earlier group's room
            self.priorities.append(PRIORITY_CLASSES.get(priority or "", 0))
            self.group(wave, name, priority)
        return wave


def generate_groups(
    seed: int,
    *,
    topology: bool = False,
    priorities: bool = True,
    composite: bool = False,
    dra: bool = False,
) -> GroupScenario:
    """The scenario of `seed`: 2-6 nodes, 0-6 running pods, 2-5 waves of gangs of 2-8 pods.
    Without `priorities` every pod has priority 0, so nothing preempts (the same draws are made:
    the scenario is the seed's, its priorities left out). With `composite`, waves may be
    CompositePodGroup trees (and topology is on); its scenarios are named `c<seed>`. With `dra`,
    devices and claims too (the same scenario otherwise)."""
    g = _Gen(seed, topology, priorities, composite, dra)
    s = g.s
    s.nodes = [g.node(i) for i in range(g.rng.randint(2, 6))]
    if dra:
        s.volumes.append(g.device_class())
        s.volumes += [found for node in s.nodes if (found := g.devices(node)) is not None]
        s.features.add("dra-devices")
    names = [n["metadata"]["name"] for n in s.nodes]
    for i in range(g.rng.randint(0, 6)):
        pod = g.pod(f"{s.name}-r{i}", g.pick(_CPUS), g.pick((None, "low", "mid")), None)
        pod["spec"]["nodeName"] = g.pick(names)
        pod["status"] = {"phase": "Running"}
        s.running.append(pod)
        s.features.add("running-pods")
    s.waves = [g.wave(i) for i in range(g.rng.randint(2, 5))]
    return s
