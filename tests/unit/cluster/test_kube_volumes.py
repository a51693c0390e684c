"""VolumeBinding's live writes (cluster/kube/volumes.py) against a fake API server with
resourceVersion conflicts: the PV claimRef, the selected-node annotation, the wait for the PV
controller and its failures; and how LiveCluster offers the binder to the plugin's Handle."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import pytest
from kube_fakes import FakeKube

from kubesched.api.storage import PersistentVolume, PersistentVolumeClaim
from kubesched.cluster.kube.client import ApiError, Response
from kubesched.cluster.kube.live import LiveCluster
from kubesched.cluster.kube.volumes import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    ApiVolumeBinder,
    ApiVolumeReader,
    InformerVolumeReader,
    VolumeBindError,
    VolumeBindTimeout,
)
from kubesched.config import decode_config
from kubesched.plugins import default_registry
from kubesched.plugins.volume_binding import VolumeBinder

PV_PATH = "/api/v1/persistentvolumes/pv-1"
PVC_PATH = "/api/v1/namespaces/ns/persistentvolumeclaims/data"


class FakeApi:
    """GET/PUT of PVs and PVCs with the server's optimistic concurrency: a PUT must carry the stored
    resourceVersion (else 409); every write bumps it."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.rv = 100
        self.puts: list[tuple[str, dict[str, Any]]] = []
        self.gets = 0
        #: PUTs to refuse with 409 after a concurrent write (the PV controller touching status).
        self.concurrent_writes = 0

    def store(self, path: str, doc: dict[str, Any]) -> None:
        self.rv += 1
        doc = copy.deepcopy(doc)
        doc.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        self.objects[path] = doc

    def get(self, path: str, params: Mapping[str, str | int] | None = None) -> Response:
        self.gets += 1
        if path not in self.objects:
            raise ApiError(404, "NotFound", f"{path} not found")
        return Response(200, msgspec.json.encode(self.objects[path]))

    def put(self, path: str, obj: Any) -> Response:
        self.puts.append((path, copy.deepcopy(obj)))
        if self.concurrent_writes:
            self.concurrent_writes -= 1
            self.edit(path, lambda d: d.setdefault("status", {}).update(touched="yes"))
        if obj["metadata"]["resourceVersion"] != self.objects[path]["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified; please apply your changes")
        self.store(path, obj)
        return Response(200, msgspec.json.encode(self.objects[path]))

    def edit(self, path: str, change: Callable[[dict[str, Any]], object]) -> None:
        doc = copy.deepcopy(self.objects[path])
        change(doc)
        self.store(path, doc)

    def pv(self) -> dict[str, Any]:
        return self.objects[PV_PATH]

    def pvc(self) -> dict[str, Any]:
        return self.objects[PVC_PATH]


def pv_doc(claim_ref: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "local",
        "local": {"path": "/mnt/disk"},  # not in the lean struct: must survive the PUT
    }
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"}, "spec": spec}


def pvc_doc() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "ns", "uid": "uid-data", "annotations": {"a": "b"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local"},
        "status": {"phase": "Pending"},
    }


class Clock:
    """Fake time; each sleep runs the fake PV controller once."""

    def __init__(self) -> None:
        self.t = 0.0
        self.sleeps: list[float] = []
        self.controller: Callable[[], None] = lambda: None

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds
        self.controller()


def setup(
    claim_ref: dict[str, str] | None = None,
) -> tuple[FakeApi, Clock, ApiVolumeBinder, PersistentVolumeClaim]:
    api = FakeApi()
    api.store(PV_PATH, pv_doc(claim_ref))
    api.store(PVC_PATH, pvc_doc())
    clock = Clock()
    binder = ApiVolumeBinder(api, clock=clock.now, sleep=clock.sleep)
    pvc = msgspec.convert(api.pvc(), PersistentVolumeClaim)
    return api, clock, binder, pvc


def pv_controller(api: FakeApi, *, after: int = 1) -> Callable[[], None]:
    """Binds the claim named by the PV's claimRef, as kube-controller-manager does, on its `after`-th run."""
    runs = [0]

    def step() -> None:
        runs[0] += 1
        ref = api.pv()["spec"].get("claimRef")
        if runs[0] < after or not ref:
            return

        def bind_claim(doc: dict[str, Any]) -> None:
            doc["spec"]["volumeName"] = "pv-1"
            doc["metadata"].setdefault("annotations", {})[ANN_BIND_COMPLETED] = "yes"
            doc["status"] = {"phase": "Bound"}

        api.edit(PVC_PATH, bind_claim)
        api.edit(PV_PATH, lambda d: d.update(status={"phase": "Bound"}))

    return step


# --------------------------------------------------------------------------- static binding


def test_bind_sets_the_claim_ref_and_waits_for_the_pv_controller() -> None:
    api, clock, binder, pvc = setup()
    clock.controller = pv_controller(api, after=3)
    binder.bind_pvc(pvc, "pv-1", timeout=600)
    (path, body), *rest = api.puts
    assert path == PV_PATH and rest == []
    assert body["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "namespace": "ns",
        "name": "data",
        "uid": "uid-data",
        "apiVersion": "v1",
        "resourceVersion": pvc.metadata.resource_version,
    }
    assert body["metadata"]["annotations"] == {ANN_BOUND_BY_CONTROLLER: "yes"}
    assert body["spec"]["local"] == {"path": "/mnt/disk"}  # the raw object is PUT, unknown fields kept
    assert clock.sleeps == [1.0, 1.0, 1.0]  # upstream polls once a second
    assert api.pvc()["spec"]["volumeName"] == "pv-1"


def test_a_conflict_rereads_and_writes_again() -> None:
    api, clock, binder, pvc = setup()
    api.concurrent_writes = 2
    clock.controller = pv_controller(api)
    binder.bind_pvc(pvc, "pv-1", timeout=600)
    assert len(api.puts) == 3
    assert api.puts[-1][1]["status"]["touched"] == "yes"  # written over the re-read object
    assert api.pv()["spec"]["claimRef"]["uid"] == "uid-data"


def test_endless_conflicts_fail_the_binding() -> None:
    api, _, binder, pvc = setup()
    api.concurrent_writes = 100
    with pytest.raises(VolumeBindError, match="still conflicting"):
        binder.bind_pvc(pvc, "pv-1", timeout=600)


def test_a_pv_claimed_by_another_claim_is_not_taken() -> None:
    api, _, binder, pvc = setup({"namespace": "ns", "name": "other", "uid": "uid-other"})
    with pytest.raises(VolumeBindError, match='already claimed by "ns/other"'):
        binder.bind_pvc(pvc, "pv-1", timeout=600)
    assert api.puts == []


def test_a_claim_ref_of_a_deleted_claim_with_the_same_name_is_not_ours() -> None:
    _, _, binder, pvc = setup({"namespace": "ns", "name": "data", "uid": "uid-old"})
    with pytest.raises(VolumeBindError, match="already claimed"):
        binder.bind_pvc(pvc, "pv-1", timeout=600)


def test_a_pv_pre_bound_by_the_user_gets_the_uid_but_no_bound_by_controller() -> None:
    api, clock, binder, pvc = setup({"namespace": "ns", "name": "data"})
    clock.controller = pv_controller(api)
    binder.bind_pvc(pvc, "pv-1", timeout=600)
    body = api.puts[0][1]
    assert body["spec"]["claimRef"]["uid"] == "uid-data"
    assert ANN_BOUND_BY_CONTROLLER not in body["metadata"].get("annotations", {})


def test_a_pv_already_carrying_our_claim_ref_is_not_written_again() -> None:
    api, clock, binder, pvc = setup({"namespace": "ns", "name": "data", "uid": "uid-data"})
    api.edit(PV_PATH, lambda d: d["metadata"].update(annotations={ANN_BOUND_BY_CONTROLLER: "yes"}))
    clock.controller = pv_controller(api)
    binder.bind_pvc(pvc, "pv-1", timeout=600)  # a retry after a timed-out PreBind
    assert api.puts == []


def test_no_pv_controller_times_out() -> None:
    api, clock, binder, pvc = setup()
    with pytest.raises(VolumeBindTimeout, match=r'timed out after 3s waiting for .*"ns/data" to be bound'):
        binder.bind_pvc(pvc, "pv-1", timeout=3)
    assert clock.t == 3.0 and clock.sleeps == [1.0, 1.0, 1.0]
    assert api.pv()["spec"]["claimRef"]["name"] == "data"  # upstream leaves the claimRef too


def test_a_zero_timeout_checks_once() -> None:
    api, _, binder, pvc = setup()
    with pytest.raises(VolumeBindTimeout):
        binder.bind_pvc(pvc, "pv-1", timeout=0)
    assert len(api.puts) == 1


def test_a_reset_claim_ref_fails_at_once() -> None:
    api, clock, binder, pvc = setup()
    clock.controller = lambda: api.edit(PV_PATH, lambda d: d["spec"].pop("claimRef"))
    with pytest.raises(VolumeBindError, match='ClaimRef got reset for pv "pv-1"'):
        binder.bind_pvc(pvc, "pv-1", timeout=600)
    assert len(clock.sleeps) == 1


def test_a_missing_pv_or_claim_fails() -> None:
    api, _, binder, pvc = setup()
    del api.objects[PV_PATH]
    with pytest.raises(VolumeBindError, match='persistentvolume "pv-1" not found'):
        binder.bind_pvc(pvc, "pv-1", timeout=600)
    api, clock, binder, pvc = setup()

    def delete_claim() -> None:
        api.objects.pop(PVC_PATH, None)

    clock.controller = delete_claim
    with pytest.raises(VolumeBindError, match='persistentvolumeclaim "data" not found'):
        binder.bind_pvc(pvc, "pv-1", timeout=600)


def test_other_api_errors_propagate() -> None:
    api, _, binder, pvc = setup()

    def forbidden(path: str, obj: Any) -> Response:
        raise ApiError(403, "Forbidden", "persistentvolumes is forbidden")

    api.put = forbidden  # type: ignore[method-assign]
    with pytest.raises(ApiError, match="forbidden"):
        binder.bind_pvc(pvc, "pv-1", timeout=600)


# --------------------------------------------------------------------------- provisioning


def provisioner(api: FakeApi, *, give_up: bool = False) -> Callable[[], None]:
    def step() -> None:
        annotations = api.pvc()["metadata"].get("annotations", {})
        if ANN_SELECTED_NODE not in annotations:
            return
        if give_up:
            api.edit(PVC_PATH, lambda d: d["metadata"]["annotations"].pop(ANN_SELECTED_NODE))
            return

        def bound(doc: dict[str, Any]) -> None:
            doc["spec"]["volumeName"] = "pvc-generated"
            doc["metadata"]["annotations"][ANN_BIND_COMPLETED] = "yes"

        api.edit(PVC_PATH, bound)

    return step


def test_provision_annotates_the_selected_node_and_waits() -> None:
    api, clock, binder, pvc = setup()
    clock.controller = provisioner(api)
    binder.provision_pvc(pvc, "node-a", timeout=600)
    (path, body), *rest = api.puts
    assert path == PVC_PATH and rest == []
    assert body["metadata"]["annotations"] == {"a": "b", ANN_SELECTED_NODE: "node-a"}
    assert api.pvc()["spec"]["volumeName"] == "pvc-generated"


def test_a_provisioner_removing_the_selected_node_fails_the_binding() -> None:
    api, clock, binder, pvc = setup()
    clock.controller = provisioner(api, give_up=True)
    with pytest.raises(VolumeBindError, match='provisioning failed for PVC "data"'):
        binder.provision_pvc(pvc, "node-a", timeout=600)


def test_provisioning_a_recreated_claim_fails() -> None:
    api, _, binder, pvc = setup()
    api.edit(PVC_PATH, lambda d: d["metadata"].update(uid="uid-new"))
    with pytest.raises(VolumeBindError, match="recreated"):
        binder.provision_pvc(pvc, "node-a", timeout=600)
    assert api.puts == []


# --------------------------------------------------------------------------- readers


class Store:
    def __init__(self, objects: dict[str, Any], synced: bool = True) -> None:
        self.objects = objects
        self.has_synced = synced

    def get(self, key: str) -> Any | None:
        return self.objects.get(key)


def test_the_informer_reader_reads_the_cache_and_falls_back_when_unsynced() -> None:
    api, _, _, _ = setup()
    cached_pv = msgspec.convert(api.pv(), PersistentVolume)
    cached_pvc = msgspec.convert(api.pvc(), PersistentVolumeClaim)
    informers: dict[str, Store] = {
        "PersistentVolume": Store({"pv-1": cached_pv}),
        "PersistentVolumeClaim": Store({"ns/data": cached_pvc}, synced=False),
    }
    reader = InformerVolumeReader(informers, ApiVolumeReader(api))
    before = api.gets
    assert reader.pv("pv-1") is cached_pv and reader.pv("nope") is None
    assert api.gets == before
    found = reader.pvc("ns", "data")
    assert found == cached_pvc and found is not cached_pvc and api.gets == before + 1
    assert reader.pvc("ns", "nope") is None  # 404 from the API fallback


def test_a_stale_cache_is_not_judged_before_it_has_seen_our_write() -> None:
    """The cached PV still has no claimRef (older resourceVersion): that is not a reset claimRef."""
    api, clock, _, pvc = setup()
    stale = {"pv-1": msgspec.convert(api.pv(), PersistentVolume)}
    pv_store = Store(stale)
    informers = {"PersistentVolume": pv_store, "PersistentVolumeClaim": Store({}, synced=False)}
    binder = ApiVolumeBinder(
        api, InformerVolumeReader(informers, ApiVolumeReader(api)), clock=clock.now, sleep=clock.sleep
    )
    controller = pv_controller(api)

    def catch_up() -> None:
        if len(clock.sleeps) == 2:  # the watch delivers our write (and the controller's) late
            controller()
            stale["pv-1"] = msgspec.convert(api.pv(), PersistentVolume)

    clock.controller = catch_up
    binder.bind_pvc(pvc, "pv-1", timeout=600)
    assert len(clock.sleeps) == 2


# --------------------------------------------------------------------------- LiveCluster wiring


CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: kubesched
"""


def test_the_live_handle_is_a_volume_binder_that_steps_out_of_the_state_lock() -> None:
    registry = default_registry(entry_points=False)
    cluster = LiveCluster(decode_config(CONFIG, "t.yaml", registry), registry, FakeKube())  # type: ignore[arg-type]
    handle = cluster.scheduler.frameworks["kubesched"].handle
    assert isinstance(handle, VolumeBinder)
    calls: list[tuple[str, str, float, bool]] = []

    class Recorder:
        def bind_pvc(self, pvc: PersistentVolumeClaim, pv_name: str, *, timeout: float) -> None:
            calls.append(("bind", pv_name, timeout, cluster._lock.owned()))

        def provision_pvc(self, pvc: PersistentVolumeClaim, node_name: str, *, timeout: float) -> None:
            calls.append(("provision", node_name, timeout, cluster._lock.owned()))

    cluster.volumes = Recorder()  # type: ignore[assignment]
    pvc = msgspec.convert(pvc_doc(), PersistentVolumeClaim)
    with cluster._lock:  # binding cycles run holding it
        handle.bind_pvc(pvc, "pv-1", timeout=5.0)
        handle.provision_pvc(pvc, "node-a", timeout=6.0)
        assert cluster._lock.owned()
    assert calls == [("bind", "pv-1", 5.0, False), ("provision", "node-a", 6.0, False)]


def test_a_port_without_volume_writes_gives_a_plain_handle() -> None:
    """The simulator's port has no bind_pvc: PreBind then commits bindings in its assume cache."""
    from kubesched.scheduler.clock import VirtualClock
    from kubesched.scheduler.profiles import profiles_from_config
    from kubesched.scheduler.scheduler import Scheduler

    class Port:  # the ClusterPort methods are never called here
        def lister(self, kind: str) -> list[Any]:
            return []

    registry = default_registry(entry_points=False)
    profiles = profiles_from_config(decode_config(CONFIG, "t.yaml", registry), registry)
    scheduler = Scheduler(profiles, registry, Port(), VirtualClock())  # type: ignore[arg-type]
    assert not isinstance(scheduler.frameworks["kubesched"].handle, VolumeBinder)
