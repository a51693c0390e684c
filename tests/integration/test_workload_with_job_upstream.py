"""WorkloadWithJob: kubesched's simulated Job controller makes the objects the real one makes.

A real kube-controller-manager v1.37.2 (job, garbage-collector and podgroup-protection controllers,
GenericWorkload and WorkloadWithJob on) runs against an API server serving scheduling.k8s.io/v1beta1.
For the same Jobs (same names and uids) kubesched's `WorkloadControllers` must make Workloads and
PodGroups of the same names, owners and specs, and pods that name the same PodGroup with the same
ownerReferences; Jobs it leaves alone (a template naming a PodGroup, a Job with a controller owner)
get nothing from either. Then a scaled gang's minCount and a deleted Job's objects, and the API
server's refusals of a bad gang minCount against the loader's.

The PodGroups the server returns carry what it fills in (`disruptionMode.single`, `priority`) and
the podgroup-protection controller's finalizer; the comparison fills in the same on kubesched's.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest

from kubesched.api.loader import LoadedObjects, load_documents
from kubesched.api.meta import OwnerReference
from kubesched.api.scheduling_groups import DisruptionMode, Marker, PodGroup, Workload
from kubesched.cluster.memory import MemoryCluster
from kubesched.config import parse_feature_gates
from kubesched.errors import InputError
from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import ApiClient, ApiError, create_namespace
from kubesched.simulate.workloads import WorkloadControllers

pytestmark = pytest.mark.xdist_group("workload-with-job")

#: DRAWorkloadResourceClaims stays off: the server drops a Job's claims from its Workload, as kubesched.
GATES = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True, "WorkloadWithJob": True}
FEATURES = parse_feature_gates([",".join(f"{k}={str(v).lower()}" for k, v in GATES.items())])
CONTROLLERS = ("job-controller", "garbage-collector-controller", "podgroup-protection-controller")
V1BETA1 = "/apis/scheduling.k8s.io/v1beta1"

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    with ControlPlane(runtime_config=("scheduling.k8s.io/v1beta1=true",), feature_gates=GATES) as cp:
        cp.start_kube_controller_manager(CONTROLLERS, feature_gates=GATES)
        yield cp


@pytest.fixture
def api(plane: ControlPlane) -> Iterator[ApiClient]:
    with ApiClient.for_control_plane(plane) as client:
        yield client


@pytest.fixture
def namespace(api: ApiClient) -> str:
    name = f"wj-{uuid.uuid4().hex[:8]}"
    create_namespace(api, name)
    return name


def wait_until(cond: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def scale(api: ApiClient, path: str, parallelism: int) -> None:
    """Set a Job's parallelism by read-modify-write, read again on a conflict: the Job controller
    writes the Job too (its status, its tracking finalizers), and under load it did so between the
    read and the write (409 Conflict, CI-shaped run at load 17)."""
    for _ in range(10):
        current = api.get(path)
        current["spec"]["parallelism"] = parallelism
        try:
            api.request("PUT", path, current)
            return
        except ApiError as err:
            if err.reason != "Conflict":
                raise
    raise AssertionError(f"{path}: still in conflict after 10 reads")


def job(name: str, parallelism: int, **spec: Any) -> Obj:
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}
    template: Obj = {"spec": {"restartPolicy": "Never", "containers": [container]}}
    body = {"parallelism": parallelism, "template": template, **spec}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": body}


def gang(min_count: int | None = None, **more: Any) -> Obj:
    return {"schedulingPolicy": {"gang": {} if min_count is None else {"minCount": min_count}}, **more}


def jobs(owner: Obj) -> list[Obj]:
    """Every rule's Job: basic, gangs (parallelism, given minCount, 0), constraints, disruption mode,
    a priority class, suspended, a template naming a PodGroup, a Job with a controller owner."""
    byo = job("byo", 1)
    byo["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": "mine"}
    owned = job("owned", 2, scheduling=gang())
    owned["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "boss",
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
    ]
    prio = job("prio", 2, scheduling=gang())
    prio["spec"]["template"]["spec"]["priorityClassName"] = "wj-training"
    return [
        job("plain", 2),
        job(
            "gang",
            3,
            scheduling=gang(
                schedulingConstraints={"topology": [{"key": "rack"}]},
                disruptionMode={"all": {}},
                resourceClaims=[{"name": "fabric", "resourceClaimTemplateName": "nvlink"}],
            ),
        ),
        job("gang2", 4, scheduling=gang(2)),
        job("zero", 0, scheduling=gang()),
        job("susp", 2, suspend=True, scheduling=gang()),
        prio,
        byo,
        owned,
    ]


PRIORITY_CLASS = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "wj-training"},
    "value": 1000,
}
#: Pods each Job runs once the controller has acted (the suspended one none).
PODS = {"plain": 2, "gang": 3, "gang2": 4, "zero": 0, "susp": 0, "prio": 2, "byo": 1, "owned": 2}
#: The Jobs the controller gives a Workload and a PodGroup.
MANAGED = {"plain", "gang", "gang2", "zero", "susp", "prio"}


def _decode(kind: type[Workload] | type[PodGroup], doc: Obj) -> Any:
    """An item of the server's list (items carry no apiVersion and kind) as kubesched loads it."""
    typed = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": kind.__name__, **doc}
    (obj,) = load_documents(msgspec.json.encode(typed).decode(), "server")
    assert isinstance(obj, kind)
    return obj


def _owners(refs: list[OwnerReference], workload_uids: dict[str, str]) -> list[tuple[Any, ...]]:
    """Owner references with a Workload's uid replaced by its name (each side made its own)."""
    return [
        (
            r.api_version,
            r.kind,
            r.name,
            r.name if r.kind == "Workload" else r.uid,
            r.controller,
            r.block_owner_deletion,
        )
        for r in refs
        if r.kind != "Workload" or workload_uids.get(r.name) is not None
    ]


def _server_filled(pod_group: PodGroup) -> PodGroup:
    """What the API server fills in on a PodGroup it stores: a disruption mode and a priority."""
    spec = pod_group.spec
    if spec.disruption_mode is None:
        spec = msgspec.structs.replace(spec, disruption_mode=DisruptionMode(single=Marker()))
    if spec.priority is None:
        spec = msgspec.structs.replace(spec, priority=0)
    return msgspec.structs.replace(pod_group, spec=spec)


def _as_created(doc: Obj) -> Obj:
    """A Job as the API server returned it at create: its uid, no status (the controller's view of
    a Job it has not synced yet)."""
    meta = {
        k: v
        for k, v in doc["metadata"].items()
        if k in ("name", "namespace", "uid", "ownerReferences", "labels", "annotations")
    }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": doc["spec"]}


def test_our_job_controller_makes_the_objects_and_pods_kube_controller_manager_makes(
    api: ApiClient, namespace: str
) -> None:
    ns = namespace
    try:  # cluster-scoped: made once per control plane
        api.post("/apis/scheduling.k8s.io/v1/priorityclasses", PRIORITY_CLASS)
    except ApiError as err:
        if err.reason != "AlreadyExists":
            raise
    boss = api.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "boss"}})
    created = [api.post(f"/apis/batch/v1/namespaces/{ns}/jobs", j) for j in jobs(boss)]

    def pods_of(name: str) -> list[Obj]:
        items = api.get(f"/api/v1/namespaces/{ns}/pods")["items"]
        return [
            p for p in items if p["metadata"].get("labels", {}).get("batch.kubernetes.io/job-name") == name
        ]

    def settled() -> bool:
        groups = api.get(f"{V1BETA1}/namespaces/{ns}/podgroups")["items"]
        return len(groups) == len(MANAGED) and all(len(pods_of(n)) == c for n, c in PODS.items())

    wait_until(settled, "the Job controller's Workloads, PodGroups and pods")
    real_workloads = {
        w.metadata.name: w
        for w in (_decode(Workload, d) for d in api.get(f"{V1BETA1}/namespaces/{ns}/workloads")["items"])
    }
    real_groups = {
        g.metadata.name: g
        for g in (_decode(PodGroup, d) for d in api.get(f"{V1BETA1}/namespaces/{ns}/podgroups")["items"])
    }

    objects = LoadedObjects()
    docs = [PRIORITY_CLASS, *(_as_created(c) for c in created)]
    for obj in load_documents(msgspec.json.encode({"kind": "List", "items": docs}).decode(), "jobs"):
        objects.add(obj)
    cluster = MemoryCluster(objects)
    ours = WorkloadControllers(cluster, gates=FEATURES).reconcile().created

    ours_workloads = {k[1]: w for k, w in cluster.groups.workloads.items()}
    ours_groups = {k[1]: g for k, g in cluster.groups.pod_groups.items()}
    assert sorted(ours_workloads) == sorted(real_workloads)
    assert sorted(ours_groups) == sorted(real_groups)
    assert {w.spec.controller_ref.name for w in real_workloads.values() if w.spec.controller_ref} == MANAGED
    uids = {name: w.metadata.uid for name, w in real_workloads.items()}
    for name, real in real_workloads.items():
        mine = ours_workloads[name]
        assert msgspec.to_builtins(mine.spec) == msgspec.to_builtins(real.spec), name
        assert _owners(mine.metadata.owner_references, uids) == _owners(real.metadata.owner_references, uids)
    for name, real in real_groups.items():
        mine = _server_filled(ours_groups[name])
        assert msgspec.to_builtins(mine.spec) == msgspec.to_builtins(real.spec), name
        assert _owners(mine.metadata.owner_references, uids) == _owners(real.metadata.owner_references, uids)

    def shape(pod_group: str | None, owners: list[Any]) -> tuple[Any, ...]:
        return (pod_group, tuple((o["kind"], o["name"], o.get("controller")) for o in owners))

    for name, count in PODS.items():
        real_pods = sorted(
            shape(
                (p["spec"].get("schedulingGroup") or {}).get("podGroupName"), p["metadata"]["ownerReferences"]
            )
            for p in pods_of(name)
        )
        mine_pods = sorted(
            shape(
                p.spec.scheduling_group.pod_group_name if p.spec.scheduling_group else None,
                [msgspec.to_builtins(r) for r in p.metadata.owner_references],
            )
            for p in ours
            if p.metadata.labels.get("batch.kubernetes.io/job-name") == name
        )
        assert len(real_pods) == count and mine_pods == real_pods, name


def test_a_scaled_gangs_min_count_and_a_deleted_jobs_objects_go_as_upstream(
    api: ApiClient, namespace: str
) -> None:
    ns = namespace
    created = api.post(f"/apis/batch/v1/namespaces/{ns}/jobs", job("gang", 3, scheduling=gang()))
    groups = f"{V1BETA1}/namespaces/{ns}/podgroups"
    wait_until(lambda: len(api.get(groups)["items"]) == 1, "the gang's PodGroup")

    scale(api, f"/apis/batch/v1/namespaces/{ns}/jobs/gang", 5)

    def min_counts() -> tuple[int, int]:
        (wl,) = api.get(f"{V1BETA1}/namespaces/{ns}/workloads")["items"]
        (pg,) = api.get(groups)["items"]
        return (
            wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"],
            pg["spec"]["schedulingPolicy"]["gang"]["minCount"],
        )

    wait_until(lambda: min_counts() == (5, 5), "minCount 5 on the Workload and the PodGroup")

    objects = LoadedObjects()
    for obj in load_documents(msgspec.json.encode(_as_created(created)).decode(), "job"):
        objects.add(obj)
    cluster = MemoryCluster(objects)
    controllers = WorkloadControllers(cluster, gates=FEATURES)
    controllers.reconcile()
    controller = controllers.find("Job", ns, "gang")
    assert controller is not None
    controller.scale(5)
    controllers.reconcile()
    (workload,) = cluster.groups.workloads.values()
    (pod_group,) = cluster.groups.pod_groups.values()
    ours = (
        workload.spec.pod_group_templates[0].scheduling_policy.gang,
        pod_group.spec.scheduling_policy.gang,
    )
    assert tuple(g.min_count for g in ours if g) == min_counts()

    background = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
    api.request("DELETE", f"/apis/batch/v1/namespaces/{ns}/jobs/gang", background)
    wait_until(
        lambda: not api.get(groups)["items"] and not api.get(f"{V1BETA1}/namespaces/{ns}/workloads")["items"],
        "the garbage collector to delete the Workload and the PodGroup",
    )
    controllers.remove("Job", ns, "gang")
    assert not cluster.groups.workloads and not cluster.groups.pod_groups


@pytest.mark.parametrize(("min_count", "parallelism"), [(3, 2), (0, 2)])
def test_the_loader_refuses_a_gang_min_count_the_api_server_refuses(
    api: ApiClient, namespace: str, min_count: int, parallelism: int
) -> None:
    bad = job("bad", parallelism, scheduling=gang(min_count))
    with pytest.raises(ApiError) as server:
        api.post(f"/apis/batch/v1/namespaces/{namespace}/jobs", bad)
    assert server.value.status == 422
    with pytest.raises(InputError) as ours:
        load_documents(msgspec.json.encode(bad).decode(), "bad.json")
    path, _, detail = str(ours.value).removeprefix("bad.json: ").partition(": ")
    assert f"{path}: Invalid value: {min_count}: {detail}" in str(server.value)
