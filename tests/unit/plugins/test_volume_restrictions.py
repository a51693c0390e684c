"""VolumeRestrictions (upstream `pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go`):
disk conflicts of GCE PD / AWS EBS / RBD / iSCSI, the ReadWriteOncePod claim rule, PreFilter Skip, PreFilter
extensions, both Filter forms, events, and a run through `kubesched simulate`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from volume_fixtures import FakeHandle, simulate

from kubesched.api.objects import Pod
from kubesched.api.storage import PersistentVolumeClaim
from kubesched.config.defaults import UPSTREAM_DEFAULT_PLUGINS
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, QueueingHint, Resource
from kubesched.framework.node_info import PodInfo
from kubesched.framework.status import Code, Status
from kubesched.plugins import IN_TREE_PLUGINS
from kubesched.plugins.volume_restrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_RWOP_CONFLICT,
    VolumeRestrictions,
)
from kubesched.testing.builders import make_node, make_pod, make_table

DISK = "node(s) had no available disk"
RWOP = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"


def claim(name: str, *modes: str, namespace: str = "default") -> PersistentVolumeClaim:
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": namespace}, "spec": {"accessModes": list(modes)}},
        PersistentVolumeClaim,
    )


def pod_with(name: str, *volumes: dict[str, Any], node: str = "", namespace: str = "default") -> Pod:
    vols = [{"name": f"v{i}", **v} for i, v in enumerate(volumes)]
    return make_pod(name, node_name=node, namespace=namespace, spec={"volumes": vols})


def gce(pd: str, ro: bool = False) -> dict[str, Any]:
    return {"gcePersistentDisk": {"pdName": pd, "readOnly": ro}}


def ebs(vid: str, ro: bool = False) -> dict[str, Any]:
    return {"awsElasticBlockStore": {"volumeID": vid, "readOnly": ro}}


def rbd(monitors: Sequence[str], image: str, pool: str | None = None, ro: bool = False) -> dict[str, Any]:
    src: dict[str, Any] = {"monitors": list(monitors), "image": image, "readOnly": ro}
    if pool is not None:
        src["pool"] = pool
    return {"rbd": src}


def iscsi(iqn: str, ro: bool = False, lun: int = 0) -> dict[str, Any]:
    return {"iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": iqn, "lun": lun, "readOnly": ro}}


def pvc_vol(name: str) -> dict[str, Any]:
    return {"persistentVolumeClaim": {"claimName": name}}


def run(
    pod: Pod, running: Sequence[Pod], objects: Sequence[Any] = (), nodes: Sequence[str] = ("n1", "n2")
) -> tuple[Status | None, dict[str, Status | None]]:
    """PreFilter, then both Filter forms (which must agree); per-node verdicts keyed by node name."""
    table = make_table([make_node(n) for n in nodes], running)
    plugin = VolumeRestrictions(handle=FakeHandle(objects, table))
    state = CycleState()
    pre = plugin.pre_filter(state, pod, table.all())
    if pre is not None and (pre.is_skip() or pre.is_rejected()):
        return pre, {}
    per_node = {ni.name: plugin.filter(state, pod, ni) for ni in table.infos}
    batch = plugin.filter_nodes(state, pod, table.all())
    assert {
        name: None if code < 0 else batch.statuses[code]
        for name, code in zip(table.names, batch.codes, strict=True)
    } == per_node
    return pre, per_node


# --------------------------------------------------------------------------- disk conflicts

CONFLICTS: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    ("gce same disk rw/rw", gce("d1"), gce("d1"), True),
    ("gce same disk ro/rw", gce("d1", ro=True), gce("d1"), True),
    ("gce same disk rw/ro", gce("d1"), gce("d1", ro=True), True),
    ("gce same disk ro/ro", gce("d1", ro=True), gce("d1", ro=True), False),
    ("gce other disk", gce("d1"), gce("d2"), False),
    ("ebs same volume", ebs("vol-1"), ebs("vol-1"), True),
    ("ebs same volume even read-only", ebs("vol-1", ro=True), ebs("vol-1", ro=True), True),
    ("ebs other volume", ebs("vol-1"), ebs("vol-2"), False),
    ("rbd same image", rbd(["m1", "m2"], "img", "p"), rbd(["m2", "m3"], "img", "p"), True),
    ("rbd default pool is rbd", rbd(["m1"], "img"), rbd(["m1"], "img", "rbd"), True),
    ("rbd disjoint monitors", rbd(["m1"], "img", "p"), rbd(["m2"], "img", "p"), False),
    ("rbd other pool", rbd(["m1"], "img", "p"), rbd(["m1"], "img", "q"), False),
    ("rbd other image", rbd(["m1"], "a", "p"), rbd(["m1"], "b", "p"), False),
    ("rbd both read-only", rbd(["m1"], "img", ro=True), rbd(["m1"], "img", ro=True), False),
    ("iscsi same iqn", iscsi("iqn.a"), iscsi("iqn.a"), True),
    ("iscsi same iqn, other lun", iscsi("iqn.a", lun=1), iscsi("iqn.a", lun=2), True),
    ("iscsi both read-only", iscsi("iqn.a", ro=True), iscsi("iqn.a", ro=True), False),
    ("iscsi one read-only", iscsi("iqn.a", ro=True), iscsi("iqn.a"), True),
    ("iscsi other iqn", iscsi("iqn.a"), iscsi("iqn.b"), False),
    ("different types never conflict", gce("x"), ebs("x"), False),
]


@pytest.mark.parametrize(
    ("wanted", "existing", "conflict"), [c[1:] for c in CONFLICTS], ids=[c[0] for c in CONFLICTS]
)
def test_disk_conflicts(wanted: dict[str, Any], existing: dict[str, Any], conflict: bool) -> None:
    running = [pod_with("old", existing, node="n1")]
    pre, verdicts = run(pod_with("new", wanted), running)
    assert pre is None  # the pod has a conflict-prone volume: Filter must run
    assert verdicts["n2"] is None
    if conflict:
        assert verdicts["n1"] == Status(Code.UNSCHEDULABLE, DISK)
    else:
        assert verdicts["n1"] is None


def test_any_conflicting_pod_or_volume_on_the_node_rejects_it() -> None:
    running = [pod_with("a", gce("other"), node="n1"), pod_with("b", pvc_vol("x"), ebs("vol-9"), node="n1")]
    _, verdicts = run(pod_with("new", gce("d1"), ebs("vol-9")), running)
    assert verdicts == {"n1": Status.unschedulable(DISK), "n2": None}


def test_reason_constants() -> None:
    assert ERR_REASON_DISK_CONFLICT == DISK
    assert ERR_REASON_RWOP_CONFLICT == RWOP


# --------------------------------------------------------------------------- PreFilter


def test_pre_filter_skips_pods_without_restricted_volumes_or_claims() -> None:
    pre, _ = run(make_pod("p"), [])
    assert pre == Status.skip()
    pre, _ = run(pod_with("p", {"emptyDir": {}}, {"csi": {"driver": "d"}}), [])
    assert pre is not None and pre.code == Code.SKIP


def test_pre_filter_skips_when_rwop_claim_is_unused_and_other_claims_are_not_rwop() -> None:
    objects = [claim("rwop", "ReadWriteOncePod"), claim("rwo", "ReadWriteOnce")]
    running = [pod_with("other", pvc_vol("rwo"), node="n1")]  # uses only the RWO claim
    pre, _ = run(pod_with("p", pvc_vol("rwop"), pvc_vol("rwo")), running, objects)
    assert pre == Status.skip()


def test_missing_claim_is_unresolvable_at_pre_filter() -> None:
    pre, verdicts = run(pod_with("p", pvc_vol("ghost")), [])
    assert pre == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 'persistentvolumeclaim "ghost" not found')
    assert verdicts == {}


def test_claim_lookup_is_per_namespace() -> None:
    objects = [claim("data", "ReadWriteOncePod", namespace="other")]
    pre, _ = run(pod_with("p", pvc_vol("data")), [], objects)
    assert pre is not None and pre.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# --------------------------------------------------------------------------- ReadWriteOncePod


def test_rwop_claim_in_use_anywhere_rejects_every_node() -> None:
    objects = [claim("data", "ReadWriteOncePod")]
    running = [pod_with("holder", pvc_vol("data"), node="n2")]
    pre, verdicts = run(pod_with("p", pvc_vol("data")), running, objects, nodes=("n1", "n2", "n3"))
    assert pre is None
    assert verdicts == {n: Status(Code.UNSCHEDULABLE, RWOP) for n in ("n1", "n2", "n3")}


def test_rwop_same_name_in_another_namespace_does_not_count() -> None:
    objects = [claim("data", "ReadWriteOncePod"), claim("data", "ReadWriteOncePod", namespace="other")]
    running = [pod_with("holder", pvc_vol("data"), node="n1", namespace="other")]
    pre, _ = run(pod_with("p", pvc_vol("data")), running, objects)
    assert pre == Status.skip()


def test_disk_conflict_is_reported_before_rwop() -> None:
    objects = [claim("data", "ReadWriteOncePod")]
    running = [pod_with("holder", pvc_vol("data"), gce("d1"), node="n1")]
    _, verdicts = run(pod_with("p", pvc_vol("data"), gce("d1")), running, objects)
    assert verdicts == {"n1": Status.unschedulable(DISK), "n2": Status.unschedulable(RWOP)}


def test_pre_filter_extensions_track_the_claim_holders() -> None:
    """Preemption removes the holder: the claim is free; adding it back (or a nominated holder) is not."""
    objects = [claim("data", "ReadWriteOncePod")]
    holder = pod_with("holder", pvc_vol("data"), node="n1")
    table = make_table([make_node("n1")], [holder])
    plugin = VolumeRestrictions(handle=FakeHandle(objects, table))
    state = CycleState()
    pod = pod_with("p", pvc_vol("data"))
    assert plugin.pre_filter(state, pod, table.all()) is None
    info = table.infos[0]
    assert plugin.filter(state, pod, info) == Status.unschedulable(RWOP)
    clone = state.clone()
    assert plugin.remove_pod(clone, pod, PodInfo(holder), info) is None
    assert plugin.filter(clone, pod, info) is None
    assert plugin.filter(state, pod, info) == Status.unschedulable(RWOP)  # the original is untouched
    assert plugin.add_pod(clone, pod, PodInfo(holder), info) is None
    assert plugin.filter(clone, pod, info) == Status.unschedulable(RWOP)
    # A pod that does not use the claim changes nothing.
    assert plugin.remove_pod(state, pod, PodInfo(make_pod("x", node_name="n1")), info) is None
    assert plugin.filter(state, pod, info) == Status.unschedulable(RWOP)


def test_filter_without_pre_filter_state_is_an_error_after_the_disk_check() -> None:
    """PreFilter disabled: as upstream, a node with a disk conflict still says so (that check needs no
    state); every other node, and AddPod/RemovePod, get an error."""
    objects = [claim("data", "ReadWriteOncePod")]
    holder = pod_with("holder", pvc_vol("data"), gce("d1"), node="n2")
    table = make_table([make_node("n1"), make_node("n2")], [holder])
    plugin = VolumeRestrictions(handle=FakeHandle(objects, table))
    pod = pod_with("p", pvc_vol("data"), gce("d1"))
    missing = Status.as_error('cannot read "PreFilterVolumeRestrictions" from cycleState')
    assert [plugin.filter(CycleState(), pod, info) for info in table.infos] == [
        missing,
        Status.unschedulable(DISK),
    ]
    result = plugin.filter_nodes(CycleState(), pod, table.all())
    assert [result.statuses[c] for c in result.codes] == [missing, Status.unschedulable(DISK)]
    info = table.infos[0]
    assert plugin.add_pod(CycleState(), pod, PodInfo(holder), info) == missing
    assert plugin.remove_pod(CycleState(), pod, PodInfo(holder), info) == missing


def test_batch_filter_sees_pods_added_after_the_first_cycle() -> None:
    """The cache of rows with conflict-prone volumes follows the table's generation."""
    table = make_table([make_node("n1"), make_node("n2")])
    plugin = VolumeRestrictions(handle=FakeHandle((), table))
    pod = pod_with("p", gce("d1"))
    state = CycleState()
    assert plugin.pre_filter(state, pod, table.all()) is None
    assert plugin.filter_nodes(state, pod, table.all()).passed.all()
    table.add_pod(1, PodInfo(pod_with("holder", gce("d1"), node="n2")))
    result = plugin.filter_nodes(state, pod, table.all())
    assert list(result.passed) == [True, False]


# --------------------------------------------------------------------------- events


def test_events_to_register() -> None:
    events = {(e.event.resource, e.event.action): e.hint for e in VolumeRestrictions().events_to_register()}
    assert set(events) == {
        (Resource.ASSIGNED_POD, ActionType.DELETE),
        (Resource.NODE, ActionType.ADD),
        (Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
    }
    assert events[(Resource.NODE, ActionType.ADD)] is None
    pod = pod_with("p", gce("d1"), pvc_vol("data"))
    on_delete = events[(Resource.ASSIGNED_POD, ActionType.DELETE)]
    assert on_delete is not None
    assert on_delete(pod, pod_with("o", gce("d1"), node="n1"), None) is QueueingHint.QUEUE
    assert on_delete(pod, pod_with("o", pvc_vol("data"), node="n1"), None) is QueueingHint.QUEUE
    assert on_delete(pod, pod_with("o", gce("d2"), node="n1"), None) is QueueingHint.SKIP
    assert on_delete(pod, pod_with("o", pvc_vol("data"), node="n1", namespace="x"), None) is QueueingHint.SKIP
    # v1.37.2 looks at the namespace first: a disk freed by another namespace's pod is skipped.
    assert on_delete(pod, pod_with("o", gce("d1"), node="n1", namespace="x"), None) is QueueingHint.SKIP
    assert on_delete(pod, "not-a-pod", None) is QueueingHint.QUEUE
    on_claim = events[(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)]
    assert on_claim is not None
    assert on_claim(pod, None, claim("data")) is QueueingHint.QUEUE
    assert on_claim(pod, None, claim("other")) is QueueingHint.SKIP
    assert on_claim(pod, None, claim("data", namespace="x")) is QueueingHint.SKIP


# --------------------------------------------------------------------------- registration


def test_volume_plugins_are_builtin_in_upstream_default_order() -> None:
    """The four volume plugins sit between NodeResourcesFit and PodTopologySpread, as upstream."""
    names = [getattr(cls, "name", "") for cls in IN_TREE_PLUGINS]
    volume = ["VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone"]
    assert names[names.index("NodeResourcesFit") + 1 : names.index("NodeResourcesFit") + 5] == volume
    upstream = [n for n, _ in UPSTREAM_DEFAULT_PLUGINS]
    assert [n for n in upstream if n in volume] == volume


# --------------------------------------------------------------------------- through the CLI


def test_cli_disk_conflict_and_rwop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = """\
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: solo, namespace: default}
    spec: {accessModes: [ReadWriteOncePod], resources: {requests: {storage: 1Gi}}}
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: running, namespace: default}
    spec:
      nodeName: n1
      containers: [{name: c, image: x}]
      volumes:
      - {name: d, gcePersistentDisk: {pdName: disk-1}}
      - {name: s, persistentVolumeClaim: {claimName: solo}}
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: wants-disk, namespace: default}
    spec:
      containers: [{name: c, image: x}]
      volumes: [{name: d, gcePersistentDisk: {pdName: disk-1}}]
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: wants-claim, namespace: default}
    spec:
      containers: [{name: c, image: x}]
      volumes: [{name: s, persistentVolumeClaim: {claimName: solo}}]
    """
    report = simulate(tmp_path, capsys, cluster, "VolumeRestrictions")
    pods = {p["name"]: p for p in report["pods"]}
    disk = pods["wants-disk"]
    assert disk["result"] == "Scheduled" and disk["node"] == "n2"
    assert disk["filter"] == {
        "n1": {"plugin": "VolumeRestrictions", "code": "Unschedulable", "reasons": [DISK]}
    }
    solo = pods["wants-claim"]
    assert solo["result"] == "Unschedulable"
    expected = {"plugin": "VolumeRestrictions", "code": "Unschedulable", "reasons": [RWOP]}
    assert solo["filter"] == {"n1": expected, "n2": expected}
    assert solo["message"] == f"0/2 nodes are available: 2 {RWOP}."
