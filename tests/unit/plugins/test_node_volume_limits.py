"""NodeVolumeLimits / CSILimits (upstream `pkg/scheduler/framework/plugins/nodevolumelimits/csi.go`): unique
CSI volumes per driver against the CSINode's allocatable count, how claims / ephemeral / in-tree volumes are
counted, PreFilter Skip, both Filter forms, events, and a run through `kubesched simulate`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from volume_fixtures import FakeHandle, simulate

from kubesched.api.objects import Pod
from kubesched.api.storage import CSIDriver, CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, QueueingHint, Resource
from kubesched.framework.node_table import NodeTable
from kubesched.framework.status import Code, Status
from kubesched.plugins.node_volume_limits import (
    ERR_REASON_MAX_VOLUME_COUNT,
    NodeVolumeLimits,
    node_volume_limits,
)
from kubesched.testing.builders import make_node, make_pod, make_table

MAX = "node(s) exceed max volume count"
DRIVER = "csi.example.com"


def csi_node(name: str, limits: dict[str, int | None]) -> CSINode:
    drivers = [
        {"name": d, "nodeID": name, **({"allocatable": {"count": c}} if c is not None else {})}
        for d, c in limits.items()
    ]
    return msgspec.convert({"metadata": {"name": name}, "spec": {"drivers": drivers}}, CSINode)


def pv(name: str, driver: str = DRIVER, handle: str | None = None, **spec: Any) -> PersistentVolume:
    body: dict[str, Any] = {"capacity": {"storage": "1Gi"}, **spec}
    if "awsElasticBlockStore" not in spec and "gcePersistentDisk" not in spec:
        body["csi"] = {"driver": driver, "volumeHandle": handle or f"h-{name}"}
    return msgspec.convert({"metadata": {"name": name}, "spec": body}, PersistentVolume)


def claim(name: str, volume: str = "", cls: str | None = None, owner_uid: str = "") -> PersistentVolumeClaim:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner_uid:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "x", "uid": owner_uid, "controller": True}]
    spec: dict[str, Any] = {"volumeName": volume}
    if cls is not None:
        spec["storageClassName"] = cls
    return msgspec.convert({"metadata": meta, "spec": spec}, PersistentVolumeClaim)


def storage_class(name: str, provisioner: str) -> StorageClass:
    return msgspec.convert({"metadata": {"name": name}, "provisioner": provisioner}, StorageClass)


def pod(name: str, *volumes: dict[str, Any], node: str = "") -> Pod:
    vols = [{"name": f"v{i}", **v} for i, v in enumerate(volumes)]
    return make_pod(name, node_name=node, spec={"volumes": vols})


def pvc_vol(name: str) -> dict[str, Any]:
    return {"persistentVolumeClaim": {"claimName": name}}


def run(
    incoming: Pod, running: Sequence[Pod], objects: Sequence[Any], nodes: Sequence[str] = ("n1", "n2")
) -> tuple[Status | None, dict[str, Status | None]]:
    table = make_table([make_node(n) for n in nodes], running)
    plugin = NodeVolumeLimits(handle=FakeHandle(objects, table))
    state = CycleState()
    pre = plugin.pre_filter(state, incoming, table.all())
    if pre is not None and pre.is_skip():
        return pre, {}
    per_node = {ni.name: plugin.filter(state, incoming, ni) for ni in table.infos}
    batch = plugin.filter_nodes(state, incoming, table.all())
    assert {
        n: None if c < 0 else batch.statuses[c] for n, c in zip(table.names, batch.codes, strict=True)
    } == per_node
    return pre, per_node


# Two CSI volumes already on n1; n1 allows 2 of DRIVER, n2 has no CSINode.
BASE: list[Any] = [
    pv("pv-a"),
    pv("pv-b"),
    pv("pv-c"),
    claim("a", "pv-a"),
    claim("b", "pv-b"),
    claim("c", "pv-c"),
    csi_node("n1", {DRIVER: 2}),
]
RUNNING = [pod("holder", pvc_vol("a"), pvc_vol("b"), node="n1")]


def test_reason_constant() -> None:
    assert ERR_REASON_MAX_VOLUME_COUNT == MAX


def test_node_volume_limits_reads_allocatable_counts() -> None:
    assert node_volume_limits(None) == {}
    assert node_volume_limits(csi_node("n", {"a": 3, "b": None, "c": 0})) == {"a": 3, "c": 0}


def test_over_the_limit_is_unschedulable_and_nodes_without_csinode_pass() -> None:
    _, verdicts = run(pod("p", pvc_vol("c")), RUNNING, BASE)
    assert verdicts == {"n1": Status(Code.UNSCHEDULABLE, MAX), "n2": None}


def test_at_the_limit_fits() -> None:
    objects = [*BASE[:-1], csi_node("n1", {DRIVER: 3})]
    _, verdicts = run(pod("p", pvc_vol("c")), RUNNING, objects)
    assert verdicts == {"n1": None, "n2": None}


def test_a_volume_already_attached_costs_nothing() -> None:
    _, verdicts = run(pod("p", pvc_vol("a")), RUNNING, BASE)
    assert verdicts["n1"] is None
    # Two claims bound to PVs with the same handle are one volume.
    objects = [*BASE, pv("pv-a2", handle="h-pv-a"), claim("a2", "pv-a2")]
    _, verdicts = run(pod("p", pvc_vol("a2")), RUNNING, objects)
    assert verdicts["n1"] is None


def test_limits_are_per_driver() -> None:
    objects = [*BASE, pv("pv-o", driver="other.csi"), claim("o", "pv-o")]
    _, verdicts = run(pod("p", pvc_vol("o")), RUNNING, objects)
    assert verdicts["n1"] is None  # other.csi has no limit on n1
    objects = [*objects[:-3], *objects[-2:], csi_node("n1", {DRIVER: 2, "other.csi": 0})]
    _, verdicts = run(pod("p", pvc_vol("o")), RUNNING, objects)
    assert verdicts["n1"] == Status.unschedulable(MAX)


def test_unbound_claim_counts_as_a_volume_of_its_class_provisioner() -> None:
    objects = [*BASE, storage_class("fast", DRIVER), claim("new", cls="fast")]
    _, verdicts = run(pod("p", pvc_vol("new")), RUNNING, objects)
    assert verdicts["n1"] == Status.unschedulable(MAX)
    # A class whose provisioner is another driver, or no class at all: not counted for DRIVER.
    objects = [*BASE, storage_class("slow", "other.csi"), claim("new", cls="slow"), claim("bare")]
    _, verdicts = run(pod("p", pvc_vol("new"), pvc_vol("bare")), RUNNING, objects)
    assert verdicts["n1"] is None


def test_claim_bound_to_missing_pv_falls_back_to_the_class() -> None:
    objects = [*BASE, storage_class("fast", DRIVER), claim("lost", volume="gone", cls="fast")]
    _, verdicts = run(pod("p", pvc_vol("lost")), RUNNING, objects)
    assert verdicts["n1"] == Status.unschedulable(MAX)


def test_generic_ephemeral_volume_counts_like_its_claim() -> None:
    incoming = pod("p", {"ephemeral": {"volumeClaimTemplate": {"spec": {}}}})
    uid = incoming.metadata.uid
    objects = [*BASE, storage_class("fast", DRIVER), claim("p-v0", cls="fast", owner_uid=uid)]
    _, verdicts = run(incoming, RUNNING, objects)
    assert verdicts["n1"] == Status.unschedulable(MAX)


def test_ephemeral_claim_of_another_pod_is_an_error() -> None:
    incoming = pod("p", {"ephemeral": {"volumeClaimTemplate": {"spec": {}}}})
    objects = [*BASE, storage_class("fast", DRIVER), claim("p-v0", cls="fast", owner_uid="someone-else")]
    _, verdicts = run(incoming, RUNNING, objects)
    status = verdicts["n1"]
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "PVC default/p-v0 was not created for pod default/p (pod is not owner)"
    assert verdicts["n2"] == status  # the claim is the pod's problem, not the node's


def test_missing_claim_of_the_pod_is_unresolvable_on_every_node() -> None:
    _, verdicts = run(pod("p", pvc_vol("ghost")), RUNNING, BASE)
    expected = Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        'looking up PVC default/ghost: persistentvolumeclaim "ghost" not found',
    )
    assert verdicts == {"n1": expected, "n2": expected}


def test_missing_claim_of_a_running_pod_is_not_counted() -> None:
    running = [pod("holder", pvc_vol("a"), pvc_vol("gone"), node="n1")]
    objects = [*BASE[:-1], csi_node("n1", {DRIVER: 2})]
    _, verdicts = run(pod("p", pvc_vol("c")), running, objects)
    assert verdicts["n1"] is None  # a + c = 2


def test_inline_csi_volumes_are_not_counted() -> None:
    running = [pod("holder", {"csi": {"driver": DRIVER}}, {"csi": {"driver": DRIVER}}, node="n1")]
    objects = [*BASE[:-1], csi_node("n1", {DRIVER: 1})]
    _, verdicts = run(pod("p", pvc_vol("c")), running, objects)
    assert verdicts["n1"] is None


def test_in_tree_ebs_counts_against_the_ebs_csi_driver_where_csinode_exists() -> None:
    ebs_driver = "ebs.csi.aws.com"
    objects: list[Any] = [
        csi_node("n1", {ebs_driver: 1}),
        pv("pv-ebs", awsElasticBlockStore={"volumeID": "aws://us-east-1a/vol-2"}),
        claim("e", "pv-ebs"),
        storage_class("gp2", "kubernetes.io/aws-ebs"),
        claim("dyn", cls="gp2"),
    ]
    running = [pod("holder", {"awsElasticBlockStore": {"volumeID": "vol-1"}}, node="n1")]
    # inline EBS
    _, verdicts = run(pod("p", {"awsElasticBlockStore": {"volumeID": "vol-3"}}), running, objects)
    assert verdicts["n1"] == Status.unschedulable(MAX)
    # the same EBS volume written two ways is one volume
    _, verdicts = run(pod("p", {"awsElasticBlockStore": {"volumeID": "aws://zone/vol-1"}}), running, objects)
    assert verdicts["n1"] is None
    # in-tree PV, and a claim of an in-tree provisioner class
    for claim_name in ("e", "dyn"):
        _, verdicts = run(pod("p", pvc_vol(claim_name)), running, objects)
        assert verdicts["n1"] == Status.unschedulable(MAX), claim_name


def test_in_tree_gce_pd_counts_against_the_pd_csi_driver() -> None:
    objects = [csi_node("n1", {"pd.csi.storage.gke.io": 1})]
    running = [pod("holder", {"gcePersistentDisk": {"pdName": "d1"}}, node="n1")]
    _, verdicts = run(pod("p", {"gcePersistentDisk": {"pdName": "d2"}}), running, objects)
    assert verdicts["n1"] == Status.unschedulable(MAX)
    _, verdicts = run(pod("p", {"gcePersistentDisk": {"pdName": "d1"}}), running, objects)
    assert verdicts["n1"] is None


def test_pre_filter_skips_pods_that_cannot_use_csi_volumes() -> None:
    for incoming in (make_pod("p"), pod("p", {"emptyDir": {}}, {"csi": {"driver": DRIVER}})):
        pre, _ = run(incoming, RUNNING, BASE)
        assert pre == Status.skip()
    volumes: list[dict[str, Any]] = [pvc_vol("c"), {"ephemeral": {}}, {"gcePersistentDisk": {"pdName": "x"}}]
    for volume in volumes:
        pre, _ = run(pod("p", volume), RUNNING, BASE)
        assert pre is None


def test_batch_only_examines_nodes_with_limits_for_the_pods_drivers() -> None:
    """Rows outside the NodeSet, and nodes whose CSINode limits other drivers, are left alone."""
    objects = [*BASE[:-1], csi_node("n1", {DRIVER: 2}), csi_node("n2", {"other.csi": 0})]
    running = [*RUNNING, pod("h2", pvc_vol("a"), pvc_vol("b"), node="n3")]
    table = make_table([make_node("n1"), make_node("n2"), make_node("n3")], running)
    plugin = NodeVolumeLimits(handle=FakeHandle([*objects, csi_node("n3", {DRIVER: 2})], table))
    subset = table.subset(["n2", "n3"])
    result = plugin.filter_nodes(CycleState(), pod("p", pvc_vol("c")), subset)
    assert [None if c < 0 else result.statuses[c] for c in result.codes] == [None, Status.unschedulable(MAX)]


# --------------------------------------------------------------------------- driver check (v1.37)


def csi_driver(name: str, prevent: bool | None) -> CSIDriver:
    spec = {} if prevent is None else {"preventPodSchedulingIfMissing": prevent}
    return msgspec.convert({"metadata": {"name": name}, "spec": spec}, CSIDriver)


def not_installed(driver: str) -> Status:
    return Status(Code.UNSCHEDULABLE, f"{driver} CSI driver is not installed on the node")


def test_a_driver_that_asks_keeps_pods_off_nodes_without_it() -> None:
    # n1's CSINode lists the driver, n2's lists another one, n3 has no CSINode
    objects = [
        pv("pv-c"),
        claim("c", "pv-c"),
        csi_node("n1", {DRIVER: None}),
        csi_node("n2", {"other.csi": None}),
        csi_driver(DRIVER, True),
    ]
    _, verdicts = run(pod("p", pvc_vol("c")), [], objects, nodes=("n1", "n2", "n3"))
    assert verdicts == {"n1": None, "n2": not_installed(DRIVER), "n3": not_installed(DRIVER)}


@pytest.mark.parametrize("driver", [None, csi_driver(DRIVER, False), csi_driver(DRIVER, None)])
def test_drivers_that_do_not_ask_pass_everywhere(driver: CSIDriver | None) -> None:
    objects: list[Any] = [pv("pv-c"), claim("c", "pv-c"), csi_node("n2", {"other.csi": None})]
    if driver is not None:
        objects.append(driver)
    _, verdicts = run(pod("p", pvc_vol("c")), [], objects)
    assert verdicts == {"n1": None, "n2": None}


def test_the_driver_check_comes_before_the_limits() -> None:
    objects = [*BASE, csi_node("n2", {"other.csi": 5}), csi_driver(DRIVER, True)]
    _, verdicts = run(pod("p", pvc_vol("c")), RUNNING, objects)
    assert verdicts == {"n1": Status(Code.UNSCHEDULABLE, MAX), "n2": not_installed(DRIVER)}
    # the claim of an unbound claim's class counts as the provisioner's volume too
    objects = [storage_class("fast", DRIVER), claim("d", cls="fast"), csi_driver(DRIVER, True)]
    _, verdicts = run(pod("p", pvc_vol("d")), [], objects)
    assert verdicts == {"n1": not_installed(DRIVER), "n2": not_installed(DRIVER)}


def test_in_tree_volumes_are_not_translated_on_nodes_without_csinode() -> None:
    ebs = "ebs.csi.aws.com"
    objects = [csi_node("n1", {"other.csi": None}), csi_driver(ebs, True)]
    _, verdicts = run(pod("p", {"awsElasticBlockStore": {"volumeID": "vol-1"}}), [], objects)
    assert verdicts == {"n1": not_installed(ebs), "n2": None}


def test_pod_without_volumes_passes_even_without_pre_filter() -> None:
    table: NodeTable = make_table([make_node("n1")], RUNNING)
    plugin = NodeVolumeLimits(handle=FakeHandle(BASE, table))
    assert plugin.filter(CycleState(), make_pod("p"), table.infos[0]) is None
    assert plugin.filter_nodes(CycleState(), make_pod("p"), table.all()).passed.all()


def test_events_to_register() -> None:
    events = {(e.event.resource, e.event.action): e.hint for e in NodeVolumeLimits().events_to_register()}
    assert set(events) == {
        (Resource.CSI_NODE, ActionType.ADD),
        (Resource.CSI_NODE, ActionType.UPDATE),
        (Resource.ASSIGNED_POD, ActionType.DELETE),
        (Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
    }
    on_delete = events[(Resource.ASSIGNED_POD, ActionType.DELETE)]
    assert on_delete is not None
    incoming = pod("p", pvc_vol("c"))
    assert on_delete(incoming, pod("o", pvc_vol("a"), node="n1"), None) is QueueingHint.QUEUE
    assert on_delete(incoming, pod("o", pvc_vol("a")), None) is QueueingHint.SKIP  # never scheduled
    nominated = pod("o", pvc_vol("a"))
    nominated = msgspec.structs.replace(
        nominated, status=msgspec.structs.replace(nominated.status, nominated_node_name="n1")
    )
    assert on_delete(incoming, nominated, None) is QueueingHint.QUEUE
    assert on_delete(incoming, pod("o", {"emptyDir": {}}, node="n1"), None) is QueueingHint.SKIP
    assert on_delete(incoming, "not-a-pod", None) is QueueingHint.QUEUE
    on_claim = events[(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)]
    assert on_claim is not None
    assert on_claim(incoming, None, claim("c")) is QueueingHint.QUEUE
    assert on_claim(incoming, None, claim("z")) is QueueingHint.SKIP


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ({"ebs": 1}, {"ebs": 2}, QueueingHint.QUEUE),
        ({"ebs": 2}, {"ebs": 1}, QueueingHint.SKIP),
        ({"ebs": 2}, {"ebs": 2}, QueueingHint.SKIP),
        ({"ebs": 2}, {"ebs": 2, "pd": 1}, QueueingHint.QUEUE),  # a new driver: limit 0 before
        ({"ebs": 2}, {"ebs": 2, "pd": None}, QueueingHint.SKIP),  # no count: limit 0
        ({"ebs": None}, {"ebs": 1}, QueueingHint.QUEUE),
    ],
)
def test_csi_node_update_hint(
    old: dict[str, int | None], new: dict[str, int | None], expected: QueueingHint
) -> None:
    """v1.37.2's isSchedulableAfterCSINodeUpdated: queue when some driver's limit grew."""
    (hint,) = [
        r.hint
        for r in NodeVolumeLimits().events_to_register()
        if r.event == ClusterEvent(Resource.CSI_NODE, ActionType.UPDATE)
    ]
    assert hint is not None
    assert hint(pod("p", pvc_vol("c")), csi_node("n1", old), csi_node("n1", new)) is expected
    assert hint(pod("p", pvc_vol("c")), None, csi_node("n1", new)) is QueueingHint.QUEUE


def test_cli_max_volume_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = """\
    apiVersion: v1
    kind: Node
    metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
    status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
    ---
    apiVersion: v1
    kind: Node
    metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}
    status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
    ---
    apiVersion: storage.k8s.io/v1
    kind: CSINode
    metadata: {name: n1}
    spec: {drivers: [{name: csi.example.com, nodeID: n1, allocatable: {count: 1}}]}
    ---
    apiVersion: storage.k8s.io/v1
    kind: CSINode
    metadata: {name: n2}
    spec: {drivers: [{name: csi.example.com, nodeID: n2, allocatable: {count: 5}}]}
    ---
    apiVersion: v1
    kind: PersistentVolume
    metadata: {name: pv-1}
    spec:
      capacity: {storage: 1Gi}
      accessModes: [ReadWriteOnce]
      csi: {driver: csi.example.com, volumeHandle: h1}
    ---
    apiVersion: v1
    kind: PersistentVolume
    metadata: {name: pv-2}
    spec:
      capacity: {storage: 1Gi}
      accessModes: [ReadWriteOnce]
      csi: {driver: csi.example.com, volumeHandle: h2}
    ---
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: c1, namespace: default}
    spec: {accessModes: [ReadWriteOnce], volumeName: pv-1, resources: {requests: {storage: 1Gi}}}
    status: {phase: Bound}
    ---
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: c2, namespace: default}
    spec: {accessModes: [ReadWriteOnce], volumeName: pv-2, resources: {requests: {storage: 1Gi}}}
    status: {phase: Bound}
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: running, namespace: default}
    spec:
      nodeName: n1
      containers: [{name: c, image: x}]
      volumes: [{name: v, persistentVolumeClaim: {claimName: c1}}]
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: second, namespace: default}
    spec:
      containers: [{name: c, image: x}]
      volumes: [{name: v, persistentVolumeClaim: {claimName: c2}}]
    """
    report = simulate(tmp_path, capsys, cluster, "NodeVolumeLimits", two_nodes=False)  # its own n1, n2
    (second,) = report["pods"]
    assert second["result"] == "Scheduled" and second["node"] == "n2"
    assert second["filter"] == {
        "n1": {"plugin": "NodeVolumeLimits", "code": "Unschedulable", "reasons": [MAX]}
    }
