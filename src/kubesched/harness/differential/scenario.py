"""Random small scheduling scenarios, as plain Kubernetes manifests (dicts), reproducible per seed.

A scenario is a handful of nodes, pods already running on them, and pods to schedule one after the
other. Every feature the generator uses is recorded in `Scenario.features`, so agreement can be
reported per feature. The manifests are valid for a v1.37 API server: the harness creates them
there as they are.

With `system_classes`, some pods name one of the two PriorityClasses the API server creates itself
(system-node-critical, system-cluster-critical) in place of the class drawn: a pending one preempts
nearly anything, a running one is nearly never a victim. Those draws come from a generator of their
own, so every other draw of a seed is the same with and without them (the scenario `k<seed>` is
`s<seed>` with some classes swapped).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.priority_admission import SYSTEM_PRIORITY_CLASSES

__all__ = [
    "NAMESPACES",
    "PRIORITY_CLASSES",
    "Dice",
    "Scenario",
    "generate",
    "priority_class_manifests",
]

Obj = dict[str, Any]

#: Namespaces every scenario may use (created once per control plane; labels for namespaceSelector).
NAMESPACES: dict[str, dict[str, str]] = {"default": {}, "team-a": {"team": "a"}, "team-b": {"team": "b"}}
#: PriorityClasses every scenario may use (created once per control plane).
PRIORITY_CLASSES: dict[str, int] = {"low": 10, "mid": 100, "high": 1000}


def priority_class_manifests() -> list[Obj]:
    """`PRIORITY_CLASSES` as objects: what a scenario written to a file needs beside its pods, which
    name them (kubesched, as the API server, refuses a pod naming a class the cluster lacks)."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        for name, value in PRIORITY_CLASSES.items()
    ]


ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
GPU = "example.com/gpu"
IMAGES = {"img-a:1": 300 * 2**20, "img-b:1": 800 * 2**20, "img-c:1": 50 * 2**20}
APPS = ("web", "db", "cache")
TAINT_KEYS = ("dedicated", "spot", "gpu")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass
class Scenario:
    """Nodes, running pods and pods to schedule (in order); `features` names what they exercise."""

    seed: int
    nodes: list[Obj] = field(default_factory=list)
    running: list[Obj] = field(default_factory=list)
    pending: list[Obj] = field(default_factory=list)
    pdbs: list[Obj] = field(default_factory=list)
    #: Storage objects (CSIDrivers, StorageClasses, PersistentVolumes, PersistentVolumeClaims,
    #: CSIStorageCapacities, CSINodes), created in this order before the nodes.
    volumes: list[Obj] = field(default_factory=list)
    features: set[str] = field(default_factory=set)
    #: Pending pod name -> labels set when it is released from its `schedulingGates` (a pod without
    #: gates is scheduled as created). Lets a test change labels after the API server's admission.
    relabel: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Overrides the name every object is prefixed with (default `s<seed>`).
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or f"s{self.seed}"


class Dice:
    """The seeded draws every scenario generator makes."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, options: Any) -> Any:
        return self.rng.choice(list(options))


#: Chance that a pod which named a class names a system one instead (pending, running).
_SYSTEM_CHANCE = {False: 0.5, True: 0.25}


class _Gen(Dice):
    def __init__(self, seed: int, system_classes: bool = False) -> None:
        super().__init__(seed)
        self.s = Scenario(seed, label=f"k{seed}" if system_classes else "")
        #: The system-class draws (a generator of their own: the other draws stay as without them).
        self.system = random.Random(seed * 7919 + 31) if system_classes else None

    # ------------------------------------------------------------------ nodes
    def node(self, i: int) -> Obj:
        name = f"{self.s.name}-n{i}"
        labels = {HOSTNAME: name}
        if self.chance(0.9):
            labels[ZONE] = self.pick(("za", "zb", "zc"))
        if self.chance(0.6):
            labels["disk"] = self.pick(("ssd", "hdd"))
        if self.chance(0.5):
            labels["gen"] = str(self.rng.randint(1, 5))
        allocatable: Obj = {
            "cpu": self.pick(("1", "2", "4", "8", "3500m")),
            "memory": self.pick(("2Gi", "4Gi", "8Gi", "16Gi")),
            "pods": str(self.pick((3, 10, 110))),
            "ephemeral-storage": "20Gi",
        }
        if self.chance(0.3):
            allocatable[GPU] = str(self.rng.randint(1, 4))
            self.s.features.add("extended-resources")
        spec: Obj = {}
        if self.chance(0.3):
            taints = []
            for key in self.rng.sample(TAINT_KEYS, self.rng.randint(1, 2)):
                effect = self.pick(EFFECTS)
                taint: Obj = {"key": key, "effect": effect}
                if self.chance(0.6):
                    taint["value"] = self.pick(("x", "y"))
                taints.append(taint)
                self.s.features.add(f"taint-{effect}")
            spec["taints"] = taints
        if self.chance(0.1):
            spec["unschedulable"] = True
            self.s.features.add("unschedulable-node")
        status: Obj = {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        }
        if self.chance(0.4):
            chosen = self.rng.sample(sorted(IMAGES), self.rng.randint(1, 2))
            status["images"] = [{"names": [img], "sizeBytes": IMAGES[img]} for img in chosen]
            self.s.features.add("images")
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
            "status": status,
        }

    # ------------------------------------------------------------------ pods
    def requests(self, extended: bool) -> Obj:
        req: Obj = {}
        cpu = self.pick((None, "100m", "250m", "500m", "1", "2"))
        if cpu:
            req["cpu"] = cpu
        memory = self.pick((None, "128Mi", "512Mi", "1Gi", "3Gi"))
        if memory:
            req["memory"] = memory
        if extended and self.chance(0.3):
            req[GPU] = str(self.rng.randint(1, 2))
            self.s.features.add("extended-resources")
        return req

    def container(self, name: str, *, extended: bool = True) -> Obj:
        c: Obj = {"name": name, "image": self.pick(sorted(IMAGES))}
        req = self.requests(extended)
        if req:
            res: Obj = {"requests": req}
            if GPU in req:
                res["limits"] = {GPU: req[GPU]}  # extended resources need limit == request
            c["resources"] = res
        return c

    def host_port(self, c: Obj) -> None:
        port = self.pick((8080, 9090))
        c["ports"] = [{"containerPort": port, "hostPort": port, "protocol": "TCP"}]
        self.s.features.add("host-ports")

    def pod(self, name: str, *, running: bool) -> Obj:
        namespace = self.pick(NAMESPACES) if self.chance(0.5) else "default"
        labels = {"app": self.pick(APPS)}
        if self.chance(0.5):
            labels["version"] = self.pick(("v1", "v2"))
        containers = [self.container("main")]
        if self.chance(0.2):
            containers.append(self.container("extra"))
        spec: Obj = {"containers": containers, "terminationGracePeriodSeconds": 0}
        if self.chance(0.15):
            self.host_port(containers[0])
        if self.chance(0.2):
            init = self.container("init", extended=False)
            spec["initContainers"] = [init]
            self.s.features.add("init-containers")
        if self.chance(0.2):
            sidecar = self.container("sidecar", extended=False)
            sidecar["restartPolicy"] = "Always"
            if self.chance(0.3):
                self.host_port(sidecar)
            spec.setdefault("initContainers", []).append(sidecar)
            self.s.features.add("sidecars")
        if self.chance(0.5):
            spec["priorityClassName"] = self.pick(PRIORITY_CLASSES)
            self.s.features.add("priority")
            if self.system is not None and self.system.random() < _SYSTEM_CHANCE[running]:
                spec["priorityClassName"] = self.system.choice(sorted(SYSTEM_PRIORITY_CLASSES))
                self.s.features.add(f"{'running' if running else 'pending'}-{spec['priorityClassName']}")
        if self.chance(0.3):
            self.tolerations(spec)
        if not running:
            self.placement(spec, namespace)
        elif self.chance(0.15):
            spec["affinity"] = {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [self.pod_term()]}
            }
            self.s.features.add("existing-anti-affinity")
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": spec,
        }

    def tolerations(self, spec: Obj) -> None:
        tolerations = []
        for key in self.rng.sample(TAINT_KEYS, self.rng.randint(1, 2)):
            tol: Obj = {"key": key}
            if self.chance(0.5):
                tol["operator"] = "Exists"
            else:
                tol["operator"] = "Equal"
                tol["value"] = self.pick(("x", "y"))
            if self.chance(0.6):
                tol["effect"] = self.pick(EFFECTS)
            tolerations.append(tol)
        spec["tolerations"] = tolerations
        self.s.features.add("tolerations")

    def expression(self) -> Obj:
        op = self.pick(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
        self.s.features.add(f"node-affinity-{op}")
        if op in ("Gt", "Lt"):
            return {"key": "gen", "operator": op, "values": [str(self.rng.randint(1, 5))]}
        key = self.pick(("disk", ZONE, "gen"))
        if op in ("Exists", "DoesNotExist"):
            return {"key": key, "operator": op}
        values = {"disk": ("ssd", "hdd"), ZONE: ("za", "zb", "zc"), "gen": ("1", "2", "3")}[key]
        return {"key": key, "operator": op, "values": self.rng.sample(values, self.rng.randint(1, 2))}

    def pod_term(self) -> Obj:
        term: Obj = {
            "labelSelector": {"matchLabels": {"app": self.pick(APPS)}},
            "topologyKey": self.pick((HOSTNAME, ZONE)),
        }
        r = self.rng.random()
        if r < 0.2:
            term["namespaceSelector"] = {"matchLabels": {"team": self.pick(("a", "b"))}}
            self.s.features.add("namespace-selector")
        elif r < 0.3:
            term["namespaceSelector"] = {}
            self.s.features.add("namespace-selector")
        elif r < 0.4:
            term["namespaces"] = self.rng.sample(sorted(NAMESPACES), 2)
        return term

    def placement(self, spec: Obj, namespace: str) -> None:
        affinity: Obj = {}
        if self.chance(0.15):
            spec["nodeSelector"] = {"disk": self.pick(("ssd", "hdd"))}
            self.s.features.add("node-selector")
        if self.chance(0.3):
            node_affinity: Obj = {}
            if self.chance(0.6):
                terms = [
                    {"matchExpressions": [self.expression() for _ in range(self.rng.randint(1, 2))]}
                    for _ in range(self.rng.randint(1, 2))
                ]
                node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
                self.s.features.add("node-affinity-required")
            if self.chance(0.6) or not node_affinity:
                node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {
                        "weight": self.rng.randint(1, 100),
                        "preference": {"matchExpressions": [self.expression()]},
                    }
                    for _ in range(self.rng.randint(1, 2))
                ]
                self.s.features.add("node-affinity-preferred")
            affinity["nodeAffinity"] = node_affinity
        for kind in ("podAffinity", "podAntiAffinity"):
            if not self.chance(0.2):
                continue
            block: Obj = {}
            if self.chance(0.5):
                block["requiredDuringSchedulingIgnoredDuringExecution"] = [self.pod_term()]
                self.s.features.add(f"{kind}-required")
            else:
                block["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": self.rng.randint(1, 100), "podAffinityTerm": self.pod_term()}
                ]
                self.s.features.add(f"{kind}-preferred")
            affinity[kind] = block
        if affinity:
            spec["affinity"] = affinity
        if self.chance(0.25):
            keys = self.rng.sample((ZONE, HOSTNAME), self.rng.randint(1, 2))  # no (key, when) twice
            spec["topologySpreadConstraints"] = [self.spread(key) for key in keys]

    def spread(self, key: str) -> Obj:
        c: Obj = {
            "maxSkew": self.rng.randint(1, 2),
            "topologyKey": key,
            "whenUnsatisfiable": self.pick(("DoNotSchedule", "ScheduleAnyway")),
            "labelSelector": {"matchLabels": {"app": self.pick(APPS)}},
        }
        self.s.features.add(f"spread-{c['whenUnsatisfiable']}")
        if c["whenUnsatisfiable"] == "DoNotSchedule" and self.chance(0.3):
            c["minDomains"] = self.rng.randint(1, 4)
            self.s.features.add("spread-minDomains")
        if self.chance(0.3):
            c["nodeAffinityPolicy"] = self.pick(("Honor", "Ignore"))
            self.s.features.add("spread-policies")
        if self.chance(0.3):
            c["nodeTaintsPolicy"] = self.pick(("Honor", "Ignore"))
            self.s.features.add("spread-policies")
        if self.chance(0.3):
            c["matchLabelKeys"] = ["version"]
            self.s.features.add("spread-matchLabelKeys")
        return c

    def volume(self, pod: Obj, i: int) -> None:
        """One claim for a pending pod, in one of the states VolumeBinding decides on: missing,
        unbound with Immediate binding, WaitForFirstConsumer with no volume to bind, with static
        volumes to choose from (the harness binds the chosen one as the PV controller would), or to
        provision by a CSI driver that may publish CSIStorageCapacity (the harness provisions it),
        or bound to a volume pinned to a zone or node (maybe a CSI volume: NodeVolumeLimits)."""
        ns = pod["metadata"]["namespace"]
        prefix = f"{self.s.name}-v{i}"
        claim = f"{prefix}-claim"
        pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
        kind = self.pick(
            (
                "missing",
                "immediate",
                "wffc-no-pv",
                "bound",
                "wffc-static",
                "wffc-static",
                "wffc-dynamic",
                "wffc-dynamic",
            )
        )
        self.s.features.update(("volumes", f"volume-{kind}"))
        if kind == "missing":
            return
        provisioner = "kubernetes.io/no-provisioner"
        if kind == "immediate":
            provisioner = "example.com/csi"
        elif kind == "wffc-dynamic":
            provisioner = self.csi_driver()
        sc: Obj = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": f"{prefix}-class"},
            "provisioner": provisioner,
            "volumeBindingMode": "Immediate" if kind == "immediate" else "WaitForFirstConsumer",
        }
        if kind == "wffc-dynamic" and self.chance(0.3):
            zones = self.rng.sample(("za", "zb", "zc"), 2)
            sc["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}]
        size = self.pick(("1Gi", "2Gi", "3Gi"))
        pvc: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": ns},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": size}},
                "storageClassName": sc["metadata"]["name"],
            },
        }
        self.s.volumes += [sc, pvc]
        if kind == "wffc-static":
            self.static_volumes(prefix, sc["metadata"]["name"])
        elif kind == "wffc-dynamic":
            self.capacities(prefix, sc["metadata"]["name"])
        if kind != "bound":
            return
        pv: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"{prefix}-pv"},
            "spec": {
                "capacity": {"storage": size},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": sc["metadata"]["name"],
                "claimRef": {"namespace": ns, "name": claim},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [self.pv_term()]}]}},
            },
            "status": {"phase": "Bound"},
        }
        if self.chance(0.5):
            pv["spec"]["csi"] = {"driver": self.csi_driver(), "volumeHandle": f"{prefix}-handle"}
        else:
            pv["spec"]["hostPath"] = {"path": "/tmp/kubesched-differential"}
        pvc["spec"]["volumeName"] = pv["metadata"]["name"]
        pvc["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
        pvc["status"] = {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": size}}
        self.s.volumes.insert(0, pv)

    def pv_term(self) -> Obj:
        """A PV's node affinity: a zone, or one node's hostname."""
        if self.chance(0.5):
            return {"key": ZONE, "operator": "In", "values": [self.pick(("za", "zb"))]}
        node = self.pick(self.s.nodes)["metadata"]["name"]
        return {"key": HOSTNAME, "operator": "In", "values": [node]}

    def static_volumes(self, prefix: str, class_name: str) -> None:
        """1-3 Available volumes of the class, of distinct sizes (upstream's choice between equal
        sizes follows its cache's map order, which nothing can reproduce)."""
        self.s.features.add("volume-static-choice")
        sizes = self.rng.sample(("1Gi", "2Gi", "5Gi", "10Gi", "20Gi"), self.rng.randint(1, 3))
        for j, size in enumerate(sizes):
            self.s.volumes.insert(
                0,
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": f"{prefix}-pv{j}"},
                    "spec": {
                        "capacity": {"storage": size},
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": class_name,
                        "hostPath": {"path": "/tmp/kubesched-differential"},
                        "nodeAffinity": {
                            "required": {"nodeSelectorTerms": [{"matchExpressions": [self.pv_term()]}]}
                        },
                    },
                    "status": {"phase": "Available"},
                },
            )

    def capacities(self, prefix: str, class_name: str) -> None:
        """At most one CSIStorageCapacity per zone for the class (several serving one node would
        make upstream's pick depend on its cache's map order)."""
        for zone in ("za", "zb", "zc"):
            if not self.chance(0.7):
                continue
            cap: Obj = {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSIStorageCapacity",
                "metadata": {"name": f"{prefix}-cap-{zone}", "namespace": "default"},
                "storageClassName": class_name,
                "nodeTopology": {"matchLabels": {ZONE: zone}},
                "capacity": self.pick(("2Gi", "4Gi", "10Gi", "50Gi")),
            }
            if self.chance(0.2):
                cap["maximumVolumeSize"] = self.pick(("1Gi", "2Gi", "3Gi"))
            self.s.volumes.append(cap)
            self.s.features.add("volume-storage-capacity")

    def csi_driver(self) -> str:
        """The scenario's CSI driver (made once, with its CSINodes): it may track storage capacity
        and may keep pods off nodes whose CSINode lacks it; nodes may cap its volumes."""
        name = f"{self.s.name}-csi.example.com"
        if any(o["kind"] == "CSIDriver" for o in self.s.volumes):
            return name
        spec: Obj = {"storageCapacity": self.chance(0.8)}
        if self.chance(0.6):
            spec["preventPodSchedulingIfMissing"] = self.chance(0.7)
        if spec.get("preventPodSchedulingIfMissing"):
            self.s.features.add("csi-driver-required")
        driver_object = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name}}
        self.s.volumes.insert(0, {**driver_object, "spec": spec})
        for node in self.s.nodes:
            if not self.chance(0.7):
                continue
            driver: Obj = {"name": name if self.chance(0.8) else "other.csi.example.com", "nodeID": "id"}
            count = self.pick((None, 0, 1, 2))
            if count is not None:
                driver["allocatable"] = {"count": count}
                self.s.features.add("csi-volume-limits")
            self.s.volumes.append(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSINode",
                    "metadata": {"name": node["metadata"]["name"]},
                    "spec": {"drivers": [driver]},
                }
            )
        return name

    def pdb(self, i: int) -> Obj:
        app = self.pick(APPS)
        namespace = self.pick(NAMESPACES)
        self.s.features.add("pdb")
        return {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": f"{self.s.name}-pdb{i}", "namespace": namespace},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
            # The disruption controller does not run; the harness writes this status itself.
            "status": {"disruptionsAllowed": self.rng.randint(0, 1)},
        }


def generate(seed: int, *, system_classes: bool = False) -> Scenario:
    """The scenario of `seed`: 3-12 nodes, 0-14 running pods, 1-4 pods to schedule, maybe PDBs;
    with `system_classes`, some pods of the system PriorityClasses (see above)."""
    g = _Gen(seed, system_classes)
    s = g.s
    s.nodes = [g.node(i) for i in range(g.rng.randint(3, 12))]
    names = [n["metadata"]["name"] for n in s.nodes]
    for i in range(g.rng.randint(0, 14)):
        pod = g.pod(f"{s.name}-r{i}", running=True)
        pod["spec"]["nodeName"] = g.pick(names)
        pod["status"] = {"phase": "Running"}
        if g.chance(0.08):
            pod["status"] = {"phase": g.pick(("Succeeded", "Failed"))}
            s.features.add("finished-pods")
        s.running.append(pod)
    s.pending = [g.pod(f"{s.name}-p{i}", running=False) for i in range(g.rng.randint(1, 4))]
    for i, pod in enumerate(s.pending):
        if g.chance(0.25):
            g.volume(pod, i)
    if any("priorityClassName" in p["spec"] for p in s.pending) and g.chance(0.5):
        s.pdbs = [g.pdb(i) for i in range(g.rng.randint(1, 2))]
    if not s.features:
        s.features.add("resources-only")
    return s
