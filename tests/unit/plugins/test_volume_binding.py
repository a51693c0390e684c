"""VolumeBinding (upstream `pkg/scheduler/framework/plugins/volumebinding/`): args, PreFilter rejections and
node narrowing, Filter over bound and WaitForFirstConsumer claims (static PVs and dynamic provisioning), the
assume cache through Reserve / Unreserve / PreBind, the live-mode VolumeBinder, events, and runs through
`kubesched simulate` (two pods competing for one static PV)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from volume_fixtures import FakeHandle, simulate

from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import Pod
from kubesched.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from kubesched.config import parse_feature_gates
from kubesched.config.args import default_args
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, QueueingHint, Resource
from kubesched.framework.node_table import NodeTable
from kubesched.framework.registry import Registry, decode_args
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PreFilterResult
from kubesched.plugins.volume_binding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    ERR_UNBOUND_IMMEDIATE,
    VolumeBinder,
    VolumeBinding,
    VolumeBindingArgs,
)
from kubesched.testing.builders import make_node, make_pod, make_table

NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"  # v1.37.2
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
WFFC = "WaitForFirstConsumer"
NO_PROVISIONER = "kubernetes.io/no-provisioner"


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)


# --------------------------------------------------------------------------- object builders


def hostname_affinity(*hosts: str) -> dict[str, Any]:
    return {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": list(hosts)}]}
            ]
        }
    }


def pv(
    name: str,
    size: str = "10Gi",
    *,
    cls: str = "local",
    modes: Sequence[str] = ("ReadWriteOnce",),
    hosts: Sequence[str] = (),
    affinity: dict[str, Any] | None = None,
    claim_ref: str | None = None,
    claim_uid: str = "",
    phase: str | None = None,
    labels: dict[str, str] | None = None,
    volume_mode: str | None = None,
) -> PersistentVolume:
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": cls,
    }
    if hosts:
        spec["nodeAffinity"] = hostname_affinity(*hosts)
    if affinity is not None:
        spec["nodeAffinity"] = affinity
    if claim_ref is not None:
        spec["claimRef"] = {
            "namespace": "default",
            "name": claim_ref,
            **({"uid": claim_uid} if claim_uid else {}),
        }
    if volume_mode is not None:
        spec["volumeMode"] = volume_mode
    body: dict[str, Any] = {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}
    if phase is not None:
        body["status"] = {"phase": phase}
    return msgspec.convert(body, PersistentVolume)


def claim(
    name: str,
    size: str = "5Gi",
    *,
    cls: str | None = "local",
    modes: Sequence[str] = ("ReadWriteOnce",),
    volume: str = "",
    phase: str | None = None,
    annotations: dict[str, str] | None = None,
    deleting: bool = False,
    uid: str = "",
    selector: dict[str, Any] | None = None,
    owner_uid: str = "",
    volume_mode: str | None = None,
) -> PersistentVolumeClaim:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "annotations": annotations or {},
        "uid": uid,
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if owner_uid:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "x", "uid": owner_uid, "controller": True}]
    spec: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
        "volumeName": volume,
    }
    if cls is not None:
        spec["storageClassName"] = cls
    if selector is not None:
        spec["selector"] = selector
    if volume_mode is not None:
        spec["volumeMode"] = volume_mode
    body: dict[str, Any] = {"metadata": meta, "spec": spec}
    if phase is not None:
        body["status"] = {"phase": phase}
    return msgspec.convert(body, PersistentVolumeClaim)


def storage_class(
    name: str = "local",
    mode: str | None = WFFC,
    provisioner: str = NO_PROVISIONER,
    topologies: list[dict[str, Any]] | None = None,
) -> StorageClass:
    body: dict[str, Any] = {"metadata": {"name": name}, "provisioner": provisioner}
    if mode is not None:
        body["volumeBindingMode"] = mode
    if topologies is not None:
        body["allowedTopologies"] = topologies
    return msgspec.convert(body, StorageClass)


def pod(*claims: str, name: str = "p", ephemeral: bool = False) -> Pod:
    vols: list[dict[str, Any]] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    if ephemeral:
        vols.append({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}})
    return make_pod(name, spec={"volumes": vols})


def nodes(*names: str, labels: dict[str, dict[str, str]] | None = None) -> NodeTable:
    labels = labels or {}
    table: NodeTable = make_table([make_node(n, labels=labels.get(n, {})) for n in names])
    return table


class Binder(FakeHandle):
    """A live-mode Handle: records the bindings PreBind asks for, or fails them."""

    def __init__(self, objects: Sequence[Any], snapshot: NodeTable, fail: bool = False) -> None:
        super().__init__(objects, snapshot)
        self.calls: list[tuple[str, str, str, float]] = []
        self.fail = fail

    def bind_pvc(self, pvc: PersistentVolumeClaim, pv_name: str, *, timeout: float) -> None:
        if self.fail:
            raise RuntimeError("conflict")
        self.calls.append(("bind", pvc.metadata.name, pv_name, timeout))

    def provision_pvc(self, pvc: PersistentVolumeClaim, node_name: str, *, timeout: float) -> None:
        self.calls.append(("provision", pvc.metadata.name, node_name, timeout))


class Run:
    """One plugin over one cluster; `cycle` runs PreFilter and both Filter forms (which must agree)."""

    def __init__(self, objects: Sequence[Any], table: NodeTable, handle: FakeHandle | None = None) -> None:
        self.table = table
        self.plugin = VolumeBinding(handle=handle if handle is not None else FakeHandle(objects, table))

    def cycle(
        self, incoming: Pod
    ) -> tuple[CycleState, PreFilterResult | None, Status | None, dict[str, Status | None]]:
        state = CycleState()
        result, pre = self.plugin.pre_filter(state, incoming, self.table.all())
        if pre is not None and not pre.is_success():
            return state, result, pre, {}
        per_node = {ni.name: self.plugin.filter(state, incoming, ni) for ni in self.table.infos}
        batch = self.plugin.filter_nodes(state, incoming, self.table.all())
        assert {
            n: None if c < 0 else batch.statuses[c]
            for n, c in zip(self.table.names, batch.codes, strict=True)
        } == per_node
        return state, result, pre, per_node

    def verdicts(self, incoming: Pod) -> dict[str, Status | None]:
        return self.cycle(incoming)[3]

    def schedule(self, incoming: Pod, node: str) -> CycleState:
        """PreFilter, Filter, Reserve and PreBind on `node`, as a successful attempt would."""
        state, _, pre, verdicts = self.cycle(incoming)
        assert pre is None or pre.is_success()
        assert verdicts[node] is None
        assert self.plugin.reserve(state, incoming, node) is None
        assert self.plugin.pre_bind(state, incoming, node) is None
        return state


def run(incoming: Pod, objects: Sequence[Any], table: NodeTable | None = None) -> dict[str, Status | None]:
    return Run(objects, table if table is not None else nodes("n1", "n2")).verdicts(incoming)


# --------------------------------------------------------------------------- args


def test_reason_constants() -> None:
    assert (ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT, ERR_REASON_PV_NOT_EXIST) == (
        NODE_CONFLICT,
        BIND_CONFLICT,
        PV_NOT_EXIST,
    )
    assert ERR_REASON_NOT_ENOUGH_SPACE == "node(s) did not have enough free storage"
    assert ERR_UNBOUND_IMMEDIATE == UNBOUND_IMMEDIATE


def test_default_args() -> None:
    assert VolumeBindingArgs().bind_timeout_seconds == 600
    assert VolumeBinding().args == VolumeBindingArgs()
    assert default_args("VolumeBinding", Registry([VolumeBinding])) == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "VolumeBindingArgs",
        "bindTimeoutSeconds": 600,
        # v1.37.2 --write-config-to prints the StorageCapacityScoring default shape
        "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}],
    }


def test_args_decode_and_validate() -> None:
    assert decode_args(VolumeBinding, {"bindTimeoutSeconds": 30}).bind_timeout_seconds == 30
    assert decode_args(VolumeBinding, {"bindTimeoutSeconds": 0}).bind_timeout_seconds == 0
    with pytest.raises(InputError) as info:
        decode_args(VolumeBinding, {"bindTimeoutSeconds": -1})
    assert (
        str(info.value)
        == "args.bindTimeoutSeconds: invalid BindTimeoutSeconds, should not be a negative value"
    )
    # StorageCapacityScoring is on in v1.37: a shape is accepted, validated like RequestedToCapacityRatio's.
    shape = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    assert [(p.utilization, p.score) for p in decode_args(VolumeBinding, {"shape": shape}).shape] == [
        (0, 0),
        (100, 10),
    ]
    assert [(p.utilization, p.score) for p in decode_args(VolumeBinding, {}).shape] == [(0, 10), (100, 0)]
    with pytest.raises(InputError) as info:
        decode_args(VolumeBinding, {"shape": [{"utilization": 50, "score": 11}]})
    assert str(info.value) == "args.shape[0].score: must be in the range [0, 10]"
    with pytest.raises(InputError, match="bindTimeout"):
        decode_args(VolumeBinding, {"bindTimeout": 5})
    with pytest.raises(InputError, match="should not be a negative value"):
        VolumeBinding(args=VolumeBindingArgs(bind_timeout_seconds=-5))


# --------------------------------------------------------------------------- PreFilter


def test_pre_filter_skips_pods_without_claims() -> None:
    table = nodes("n1")
    for incoming in (make_pod("p"), make_pod("p", spec={"volumes": [{"name": "e", "emptyDir": {}}]})):
        _, result, pre, _ = Run([], table).cycle(incoming)
        assert (result, pre) == (None, Status.skip())


WFFC_CLASS = storage_class()

PRE_FILTER_REJECTIONS: list[tuple[str, Pod, list[Any], Status]] = [
    ("claim not found", pod("ghost"), [], unresolvable('persistentvolumeclaim "ghost" not found')),
    (
        "ephemeral claim not created yet",
        pod(ephemeral=True),
        [],
        unresolvable(
            'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"'
        ),
    ),
    (
        "ephemeral claim of another pod",
        pod(ephemeral=True),
        [claim("p-scratch", owner_uid="other-uid"), WFFC_CLASS],
        unresolvable("PVC default/p-scratch was not created for pod default/p (pod is not owner)"),
    ),
    (
        "claim being deleted",
        pod("c"),
        [claim("c", deleting=True), WFFC_CLASS],
        unresolvable('persistentvolumeclaim "c" is being deleted'),
    ),
    (
        "claim lost",
        pod("c"),
        [claim("c", volume="pv-x", phase="Lost")],
        unresolvable('persistentvolumeclaim "c" bound to non-existent persistentvolume "pv-x"'),
    ),
    ("unbound claim without class", pod("c"), [claim("c", cls=None)], unresolvable(UNBOUND_IMMEDIATE)),
    (
        "unbound claim of an Immediate class",
        pod("c"),
        [claim("c"), storage_class(mode="Immediate")],
        unresolvable(UNBOUND_IMMEDIATE),
    ),
    (
        "unbound claim, class defaults to Immediate",
        pod("c"),
        [claim("c"), storage_class(mode=None)],
        unresolvable(UNBOUND_IMMEDIATE),
    ),
    ("unbound claim of a missing class", pod("c"), [claim("c", cls="gone")], unresolvable(UNBOUND_IMMEDIATE)),
    (
        "pre-bound claim the PV controller has not bound yet",
        pod("c"),
        [claim("c", volume="pv1", phase="Pending"), WFFC_CLASS, pv("pv1")],
        unresolvable(UNBOUND_IMMEDIATE),
    ),
    (
        "one immediate claim among bindable ones",
        pod("ok", "c"),
        [claim("ok"), claim("c", cls="fast"), WFFC_CLASS, storage_class("fast", mode="Immediate")],
        unresolvable(UNBOUND_IMMEDIATE),
    ),
]


@pytest.mark.parametrize(
    ("incoming", "objects", "expected"),
    [c[1:] for c in PRE_FILTER_REJECTIONS],
    ids=[c[0] for c in PRE_FILTER_REJECTIONS],
)
def test_pre_filter_rejections(incoming: Pod, objects: list[Any], expected: Status) -> None:
    _, result, pre, _ = Run(objects, nodes("n1")).cycle(incoming)
    assert result is None
    assert pre == expected
    assert pre is not None and pre.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    # PreFilter disabled: Filter reports the same for every node.
    table = nodes("n1", "n2")
    plugin = VolumeBinding(handle=FakeHandle(objects, table))
    batch = plugin.filter_nodes(CycleState(), incoming, table.all())
    assert [batch.statuses[c] for c in batch.codes] == [expected, expected]


def test_class_with_empty_binding_mode_is_an_error() -> None:
    _, _, pre, _ = Run([claim("c"), storage_class(mode="")], nodes("n1")).cycle(pod("c"))
    assert pre is not None and pre.code == Code.ERROR
    assert pre.message() == 'VolumeBindingMode not set for StorageClass "local"'


@pytest.mark.parametrize(
    ("annotations", "phase"),
    [({"pv.kubernetes.io/bind-completed": "yes"}, "Pending"), ({}, "Bound"), ({}, None)],
    ids=["bind-completed annotation", "phase Bound", "hand-written, no status"],
)
def test_claims_with_a_completed_binding_are_bound(annotations: dict[str, str], phase: str | None) -> None:
    objects = [
        claim("c", volume="pv1", annotations=annotations, phase=phase),
        pv("pv1", hosts=["n2"]),
        WFFC_CLASS,
    ]
    assert run(pod("c"), objects, nodes("n1", "n2", "n3")) == {
        "n1": unresolvable(NODE_CONFLICT),
        "n2": None,
        "n3": unresolvable(NODE_CONFLICT),
    }


def test_pre_filter_narrows_nothing_for_bound_local_volumes() -> None:
    """v1.37.2 runs Filter on every node; each node outside a local volume's hosts says why."""
    table = nodes("n1", "n2", "n3")
    objects = [
        claim("a", volume="pv-a", phase="Bound"),
        claim("b", volume="pv-b", phase="Bound"),
        pv("pv-a", hosts=["n1", "n2"]),
        pv("pv-b", hosts=["n2", "n3"]),
    ]
    _, result, pre, verdicts = Run(objects, table).cycle(pod("a", "b"))
    assert (result, pre) == (None, None)
    assert verdicts == {"n1": unresolvable(NODE_CONFLICT), "n2": None, "n3": unresolvable(NODE_CONFLICT)}


# --------------------------------------------------------------------------- Filter: bound claims


def test_bound_volume_missing_fails_every_node() -> None:
    objects = [claim("c", volume="gone", phase="Bound")]
    assert run(pod("c"), objects) == {"n1": unresolvable(PV_NOT_EXIST), "n2": unresolvable(PV_NOT_EXIST)}


def test_first_failing_bound_claim_decides() -> None:
    """Bound claims are checked in order: a missing PV after a conflict is not reported, and vice versa."""
    objects = [
        claim("a", volume="pv-a", phase="Bound"),
        pv("pv-a", hosts=["n1"]),
        claim("b", volume="gone", phase="Bound"),
    ]
    assert run(pod("a", "b"), objects) == {
        "n1": unresolvable(PV_NOT_EXIST),
        "n2": unresolvable(NODE_CONFLICT),
    }
    assert run(pod("b", "a"), objects) == {"n1": unresolvable(PV_NOT_EXIST), "n2": unresolvable(PV_NOT_EXIST)}


def test_bound_and_unbound_reasons_are_reported_together() -> None:
    objects = [
        claim("bound", volume="pv-a", phase="Bound"),
        pv("pv-a", hosts=["n1"], cls="other"),
        claim("later"),
        pv("pv-b", hosts=["n2"]),
        WFFC_CLASS,
    ]
    assert run(pod("bound", "later"), objects, nodes("n1", "n2", "n3")) == {
        "n1": unresolvable(BIND_CONFLICT),
        "n2": unresolvable(NODE_CONFLICT),
        "n3": unresolvable(NODE_CONFLICT, BIND_CONFLICT),
    }


# --------------------------------------------------------------------------- Filter: static binding


def chosen_volume(
    objects: Sequence[Any], incoming: Pod, node: str, table: NodeTable | None = None
) -> str | None:
    """The PV Reserve assumes for the pod's first claim on `node` (None: provisioning or nothing)."""
    run_ = Run(objects, table if table is not None else nodes(node))
    state, _, _, verdicts = run_.cycle(incoming)
    assert verdicts[node] is None
    assert run_.plugin.reserve(state, incoming, node) is None
    picked = [
        name
        for name in (o.metadata.name for o in objects if isinstance(o, PersistentVolume))
        if run_.plugin.assume_cache.claim_of(name)
    ]
    return picked[0] if picked else None


def test_the_smallest_fitting_volume_is_chosen() -> None:
    objects = [
        claim("c", "5Gi"),
        WFFC_CLASS,
        pv("big", "100Gi"),
        pv("small", "4Gi"),
        pv("fit", "5Gi"),
        pv("mid", "8Gi"),
    ]
    assert chosen_volume(objects, pod("c"), "n1") == "fit"


def test_equal_sizes_are_chosen_by_name() -> None:
    objects = [claim("c", "5Gi"), WFFC_CLASS, pv("pv-b", "5Gi"), pv("pv-a", "5120Mi")]
    assert chosen_volume(objects, pod("c"), "n1") == "pv-a"


STATIC_MISMATCHES: list[tuple[str, PersistentVolume, PersistentVolumeClaim]] = [
    ("too small", pv("v", "4Gi"), claim("c", "5Gi")),
    ("other class", pv("v", cls="gold"), claim("c")),
    (
        "missing access mode",
        pv("v", modes=["ReadWriteOnce"]),
        claim("c", modes=["ReadWriteOnce", "ReadOnlyMany"]),
    ),
    ("block volume for a filesystem claim", pv("v", volume_mode="Block"), claim("c")),
    ("filesystem volume for a block claim", pv("v"), claim("c", volume_mode="Block")),
    ("claimed by another claim", pv("v", claim_ref="other"), claim("c")),
    ("released", pv("v", phase="Released"), claim("c")),
    ("bound", pv("v", phase="Bound"), claim("c")),
    (
        "selector does not match",
        pv("v", labels={"tier": "slow"}),
        claim("c", selector={"matchLabels": {"tier": "fast"}}),
    ),
    ("pre-bound to a claim with another uid", pv("v", claim_ref="c", claim_uid="old"), claim("c", uid="new")),
]


@pytest.mark.parametrize(
    ("volume", "pvc"), [c[1:] for c in STATIC_MISMATCHES], ids=[c[0] for c in STATIC_MISMATCHES]
)
def test_static_volumes_that_do_not_fit_the_claim(
    volume: PersistentVolume, pvc: PersistentVolumeClaim
) -> None:
    assert run(pod("c"), [pvc, volume, WFFC_CLASS], nodes("n1")) == {"n1": unresolvable(BIND_CONFLICT)}


STATIC_MATCHES: list[tuple[str, PersistentVolume, PersistentVolumeClaim]] = [
    ("exact size", pv("v", "5Gi"), claim("c", "5Gi")),
    ("no request", pv("v", "1Mi"), claim("c", "0")),
    (
        "superset of access modes",
        pv("v", modes=["ReadWriteOnce", "ReadOnlyMany"]),
        claim("c", modes=["ReadOnlyMany"]),
    ),
    ("block for block", pv("v", volume_mode="Block"), claim("c", volume_mode="Block")),
    ("phase Available", pv("v", phase="Available"), claim("c")),
    (
        "selector matches",
        pv("v", labels={"tier": "fast"}),
        claim("c", selector={"matchLabels": {"tier": "fast"}}),
    ),
    (
        "class given by the beta annotation",
        pv("v"),
        claim("c", cls=None, annotations={"volume.beta.kubernetes.io/storage-class": "local"}),
    ),
]


@pytest.mark.parametrize(
    ("volume", "pvc"), [c[1:] for c in STATIC_MATCHES], ids=[c[0] for c in STATIC_MATCHES]
)
def test_static_volumes_that_fit_the_claim(volume: PersistentVolume, pvc: PersistentVolumeClaim) -> None:
    assert chosen_volume([pvc, volume, WFFC_CLASS], pod("c"), "n1") == "v"


def test_volume_node_affinity_decides_per_node() -> None:
    objects = [claim("c"), WFFC_CLASS, pv("on-n2", hosts=["n2"])]
    assert run(pod("c"), objects) == {"n1": unresolvable(BIND_CONFLICT), "n2": None}


def test_a_pre_bound_volume_wins_and_is_the_only_option() -> None:
    objects = [
        claim("c", "5Gi", uid="u1"),
        WFFC_CLASS,
        pv("small", "5Gi"),
        pv("mine", "50Gi", claim_ref="c", claim_uid="u1", hosts=["n2"]),
    ]
    assert chosen_volume(objects, pod("c"), "n2", nodes("n1", "n2")) == "mine"
    # On n1 the pre-bound volume does not fit: no fallback to another volume.
    assert run(pod("c"), objects) == {"n1": unresolvable(BIND_CONFLICT), "n2": None}
    # A pre-bound volume that is too small is no option at all.
    objects = [claim("c", "5Gi"), WFFC_CLASS, pv("small", "5Gi"), pv("mine", "1Gi", claim_ref="c")]
    assert chosen_volume(objects, pod("c"), "n1") == "small"


def test_two_claims_cannot_take_the_same_volume() -> None:
    objects = [claim("a"), claim("b"), WFFC_CLASS, pv("only", hosts=["n1", "n2"]), pv("second", hosts=["n2"])]
    assert run(pod("a", "b"), objects) == {"n1": unresolvable(BIND_CONFLICT), "n2": None}


def test_the_same_claim_mounted_twice_needs_one_volume() -> None:
    assert run(pod("a", "a"), [claim("a"), WFFC_CLASS, pv("only")], nodes("n1")) == {"n1": None}


# --------------------------------------------------------------------------- Filter: provisioning


def test_dynamic_provisioning_when_no_static_volume_fits() -> None:
    objects = [
        claim("c", cls="csi"),
        storage_class("csi", provisioner="csi.example.com"),
        pv("tiny", "1Gi", cls="csi"),
    ]
    assert run(pod("c"), objects) == {"n1": None, "n2": None}
    run_ = Run(objects, nodes("n1", "n2"))
    state, _, _, _ = run_.cycle(pod("c"))
    assert run_.plugin.reserve(state, pod("c"), "n2") is None
    assert run_.plugin.assume_cache.selected_node("default/c", "") == "n2"
    assert run_.plugin.assume_cache.claim_of("tiny") is None


@pytest.mark.parametrize("provisioner", [NO_PROVISIONER, ""])
def test_no_provisioner_means_static_volumes_only(provisioner: str) -> None:
    objects = [claim("c", cls="s"), storage_class("s", provisioner=provisioner)]
    assert run(pod("c"), objects) == {"n1": unresolvable(BIND_CONFLICT), "n2": unresolvable(BIND_CONFLICT)}


def test_allowed_topologies_restrict_provisioning() -> None:
    topologies: list[dict[str, Any]] = [
        {"matchLabelExpressions": [{"key": ZONE, "values": ["a", "b"]}, {"key": "disk", "values": ["ssd"]}]},
        {"matchLabelExpressions": [{"key": ZONE, "values": ["c"]}]},
        {"matchLabelExpressions": []},  # an empty term selects nothing
    ]
    table = nodes(
        "n1",
        "n2",
        "n3",
        "n4",
        labels={"n1": {ZONE: "a", "disk": "ssd"}, "n2": {ZONE: "b"}, "n3": {ZONE: "c"}, "n4": {}},
    )
    objects = [
        claim("c", cls="csi"),
        storage_class("csi", provisioner="csi.example.com", topologies=topologies),
    ]
    assert run(pod("c"), objects, table) == {
        "n1": None,
        "n2": unresolvable(BIND_CONFLICT),
        "n3": None,
        "n4": unresolvable(BIND_CONFLICT),
    }


def test_selected_node_annotation_pins_the_claim() -> None:
    annotations = {"volume.kubernetes.io/selected-node": "n2"}
    objects = [
        claim("c", cls="csi", annotations=annotations),
        storage_class("csi", provisioner="csi.example.com"),
        pv("fits", cls="csi"),
    ]
    assert run(pod("c"), objects, nodes("n1", "n2", "n3")) == {
        "n1": unresolvable(BIND_CONFLICT),
        "n2": None,
        "n3": unresolvable(BIND_CONFLICT),
    }


# --------------------------------------------------------------------------- Reserve / Unreserve / PreBind


def test_reserve_takes_the_volume_from_later_pods_and_unreserve_gives_it_back() -> None:
    objects = [claim("a"), claim("b"), WFFC_CLASS, pv("only")]
    run_ = Run(objects, nodes("n1"))
    state_a, _, _, verdicts = run_.cycle(pod("a", name="pa"))
    assert verdicts == {"n1": None}
    assert run_.plugin.reserve(state_a, pod("a", name="pa"), "n1") is None
    assert run_.verdicts(pod("b", name="pb")) == {"n1": unresolvable(BIND_CONFLICT)}
    # The same claim in another pod still finds its (now assumed) volume.
    assert run_.verdicts(pod("a", name="pa2")) == {"n1": None}
    run_.plugin.unreserve(state_a, pod("a", name="pa"), "n1")
    run_.plugin.unreserve(state_a, pod("a", name="pa"), "n1")  # idempotent
    assert len(run_.plugin.assume_cache) == 0
    assert run_.verdicts(pod("b", name="pb")) == {"n1": None}


def test_pre_bind_in_the_simulator_commits_the_binding() -> None:
    objects = [claim("a"), claim("b"), WFFC_CLASS, pv("only", hosts=["n2"])]
    run_ = Run(objects, nodes("n1", "n2"))
    state = run_.schedule(pod("a", name="first"), "n2")
    run_.plugin.unreserve(state, pod("a", name="first"), "n2")  # a later failure does not undo a done binding
    # Claim "a" now counts as bound to "only": a second pod with it goes where the volume is.
    _, _, pre, verdicts = run_.cycle(pod("a", name="second"))
    assert pre is None
    assert verdicts == {"n1": unresolvable(NODE_CONFLICT), "n2": None}
    assert run_.verdicts(pod("b", name="third")) == {
        "n1": unresolvable(BIND_CONFLICT),
        "n2": unresolvable(BIND_CONFLICT),
    }


def test_provisioned_claim_stays_on_its_node() -> None:
    objects = [claim("c", cls="csi"), storage_class("csi", provisioner="csi.example.com")]
    run_ = Run(objects, nodes("n1", "n2"))
    run_.schedule(pod("c", name="first"), "n1")
    assert run_.verdicts(pod("c", name="second")) == {"n1": None, "n2": unresolvable(BIND_CONFLICT)}


def test_pre_bind_asks_a_live_binder() -> None:
    table = nodes("n1", "n2")
    objects = [
        claim("a"),
        claim("dyn", cls="csi"),
        WFFC_CLASS,
        storage_class("csi", provisioner="x.csi"),
        pv("only"),
    ]
    handle = Binder(objects, table)
    assert isinstance(handle, VolumeBinder)
    run_ = Run(objects, table, handle)
    run_.plugin = VolumeBinding(args=VolumeBindingArgs(bind_timeout_seconds=42), handle=handle)
    run_.schedule(pod("a", "dyn"), "n2")
    assert handle.calls == [("bind", "a", "only", 42.0), ("provision", "dyn", "n2", 42.0)]


def test_failed_live_binding_is_an_error_and_unreserve_reverts() -> None:
    table = nodes("n1")
    objects = [claim("a"), WFFC_CLASS, pv("only")]
    handle = Binder(objects, table, fail=True)
    run_ = Run(objects, table, handle)
    incoming = pod("a")
    state, _, _, _ = run_.cycle(incoming)
    assert run_.plugin.reserve(state, incoming, "n1") is None
    status = run_.plugin.pre_bind(state, incoming, "n1")
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "binding volumes: conflict"
    run_.plugin.unreserve(state, incoming, "n1")
    assert run_.plugin.assume_cache.claim_of("only") is None


def test_nothing_to_do_for_bound_claims_or_pods_without_claims() -> None:
    table = nodes("n1")
    objects = [claim("c", volume="pv1", phase="Bound"), pv("pv1")]
    handle = Binder(objects, table)
    run_ = Run(objects, table, handle)
    run_.schedule(pod("c"), "n1")
    state = CycleState()
    assert run_.plugin.reserve(state, make_pod("x"), "n1") is None
    assert run_.plugin.pre_bind(state, make_pod("x"), "n1") is None
    assert handle.calls == []
    assert len(run_.plugin.assume_cache) == 0


def test_reserve_fails_when_the_choice_no_longer_holds() -> None:
    objects = [claim("c"), WFFC_CLASS, pv("only", hosts=["n1"])]
    run_ = Run(objects, nodes("n1", "n2"))
    state, _, _, _ = run_.cycle(pod("c"))
    status = run_.plugin.reserve(state, pod("c"), "n2")  # n2 was filtered out
    assert status is not None and status.code == Code.ERROR
    status = run_.plugin.reserve(state, pod("c"), "ghost-node")
    assert status is not None and status.code == Code.ERROR


def test_reserve_without_pre_filter_resolves_the_claims_itself() -> None:
    """With PreFilter disabled in the profile, Reserve must still assume (and refuse what Filter refused)."""
    table = nodes("n1")
    plugin = VolumeBinding(handle=FakeHandle([claim("a"), WFFC_CLASS, pv("only")], table))
    assert plugin.reserve(CycleState(), pod("a"), "n1") is None
    assert plugin.assume_cache.claim_of("only") is not None
    assert plugin.reserve(CycleState(), pod("ghost"), "n1") == unresolvable(
        'persistentvolumeclaim "ghost" not found'
    )


# --------------------------------------------------------------------------- events


def test_events_to_register() -> None:
    events = {(e.event.resource, e.event.action): e.hint for e in VolumeBinding().events_to_register()}
    assert set(events) == {
        (Resource.STORAGE_CLASS, ActionType.ADD | ActionType.UPDATE),
        (Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
        (Resource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        (Resource.CSI_NODE, ActionType.ADD | ActionType.UPDATE),
        (Resource.CSI_DRIVER, ActionType.UPDATE),
        (Resource.CSI_STORAGE_CAPACITY, ActionType.ADD | ActionType.UPDATE),
    }
    incoming = pod("c")
    on_claim = events[(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE)]
    assert on_claim is not None
    assert on_claim(incoming, None, claim("c")) is QueueingHint.QUEUE
    assert on_claim(incoming, None, claim("d")) is QueueingHint.SKIP
    on_class = events[(Resource.STORAGE_CLASS, ActionType.ADD | ActionType.UPDATE)]
    assert on_class is not None
    assert on_class(incoming, None, storage_class()) is QueueingHint.QUEUE
    assert on_class(incoming, storage_class(), storage_class()) is QueueingHint.SKIP
    wider = storage_class(topologies=[{"matchLabelExpressions": [{"key": ZONE, "values": ["a"]}]}])
    assert on_class(incoming, storage_class(), wider) is QueueingHint.QUEUE


def _hint(resource: Resource) -> Any:
    (hint,) = [r.hint for r in VolumeBinding().events_to_register() if r.event.resource == resource]
    assert hint is not None
    return hint


def _csi_node(migrated: str | None = None) -> CSINode:
    annotations = {} if migrated is None else {"storage.alpha.kubernetes.io/migrated-plugins": migrated}
    return msgspec.convert({"metadata": {"name": "n1", "annotations": annotations}}, CSINode)


# The cases of v1.37.2's TestIsSchedulableAfterCSINodeChange.
@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (object(), object(), QueueingHint.QUEUE),
        (None, _csi_node(), QueueingHint.QUEUE),
        (_csi_node(), _csi_node("kubernetes.io/gce-pd"), QueueingHint.QUEUE),
        (
            _csi_node("kubernetes.io/gce-pd"),
            _csi_node("kubernetes.io/gce-pd,kubernetes.io/aws-ebs"),
            QueueingHint.QUEUE,
        ),
        (_csi_node("kubernetes.io/gce-pd"), _csi_node("kubernetes.io/gce-pd"), QueueingHint.SKIP),
    ],
)
def test_csi_node_hint(old: Any, new: Any, expected: QueueingHint) -> None:
    assert _hint(Resource.CSI_NODE)(pod("c"), old, new) is expected


def _capacity(capacity: str | None = None, maximum: str | None = None) -> CSIStorageCapacity:
    return CSIStorageCapacity(
        metadata=msgspec.convert({"name": "cap"}, ObjectMeta), capacity=capacity, maximum_volume_size=maximum
    )


# The cases of v1.37.2's TestIsSchedulableAfterCSIStorageCapacityChange.
@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (None, _capacity(), QueueingHint.QUEUE),
        (object(), _capacity(), QueueingHint.QUEUE),
        (_capacity(), _capacity("10Gi"), QueueingHint.QUEUE),  # capacity appeared
        (_capacity("10Gi"), _capacity("20Gi"), QueueingHint.QUEUE),
        (_capacity("20Gi"), _capacity("10Gi"), QueueingHint.SKIP),
        (_capacity("10Gi"), _capacity("10Gi"), QueueingHint.SKIP),
        (_capacity("10Gi", "5Gi"), _capacity("10Gi", "8Gi"), QueueingHint.QUEUE),  # maximum size wins
        (_capacity("10Gi", "8Gi"), _capacity("20Gi", "8Gi"), QueueingHint.SKIP),
        (_capacity(maximum="8Gi"), _capacity("20Gi"), QueueingHint.QUEUE),
        (_capacity("10Gi"), _capacity(), QueueingHint.SKIP),  # capacity gone
    ],
)
def test_capacity_hint(old: Any, new: Any, expected: QueueingHint) -> None:
    assert _hint(Resource.CSI_STORAGE_CAPACITY)(pod("c"), old, new) is expected


def _driver(capacity: bool | None) -> CSIDriver:
    return msgspec.convert(
        {"metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": capacity}}, CSIDriver
    )


# The cases of v1.37.2's TestIsSchedulableAfterCSIDriverChange.
@pytest.mark.parametrize(
    ("uses_driver", "old", "new", "expected"),
    [
        (True, object(), object(), QueueingHint.QUEUE),
        (False, _driver(True), _driver(False), QueueingHint.SKIP),  # not the pod's driver
        (True, _driver(True), _driver(False), QueueingHint.QUEUE),
        (True, _driver(True), _driver(None), QueueingHint.QUEUE),
        (True, _driver(False), _driver(True), QueueingHint.SKIP),
        (True, _driver(True), _driver(True), QueueingHint.SKIP),
    ],
)
def test_csi_driver_hint(uses_driver: bool, old: Any, new: Any, expected: QueueingHint) -> None:
    driver = "csi.example.com" if uses_driver else "other.example.com"
    inline = make_pod("c", spec={"volumes": [{"name": "v", "csi": {"driver": driver}}]})
    assert _hint(Resource.CSI_DRIVER)(inline, old, new) is expected


# --------------------------------------------------------------------------- through the CLI


def test_cli_two_pods_compete_for_one_static_volume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = """\
    apiVersion: storage.k8s.io/v1
    kind: StorageClass
    metadata: {name: local}
    provisioner: kubernetes.io/no-provisioner
    volumeBindingMode: WaitForFirstConsumer
    ---
    apiVersion: v1
    kind: PersistentVolume
    metadata: {name: local-n2}
    spec:
      capacity: {storage: 10Gi}
      accessModes: [ReadWriteOnce]
      storageClassName: local
      local: {path: /mnt/disks/1}
      nodeAffinity:
        required:
          nodeSelectorTerms:
          - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [n2]}]
    ---
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: data-a, namespace: default}
    spec: {accessModes: [ReadWriteOnce], storageClassName: local, resources: {requests: {storage: 5Gi}}}
    ---
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: data-b, namespace: default}
    spec: {accessModes: [ReadWriteOnce], storageClassName: local, resources: {requests: {storage: 5Gi}}}
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: a, namespace: default}
    spec:
      containers: [{name: c, image: x}]
      volumes: [{name: v, persistentVolumeClaim: {claimName: data-a}}]
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: b, namespace: default}
    spec:
      containers: [{name: c, image: x}]
      volumes: [{name: v, persistentVolumeClaim: {claimName: data-b}}]
    """
    report = simulate(tmp_path, capsys, cluster, "VolumeBinding")
    pods = {p["name"]: p for p in report["pods"]}
    results = sorted(p["result"] for p in pods.values())
    assert results == ["Scheduled", "Unschedulable"]
    (winner,) = [p for p in pods.values() if p["result"] == "Scheduled"]
    (loser,) = [p for p in pods.values() if p["result"] == "Unschedulable"]
    assert winner["node"] == "n2"
    no_volume = {
        "plugin": "VolumeBinding",
        "code": "UnschedulableAndUnresolvable",
        "reasons": [BIND_CONFLICT],
    }
    assert winner["filter"] == {"n1": no_volume}
    assert loser["filter"] == {"n1": no_volume, "n2": no_volume}
    assert loser["message"] == f"0/2 nodes are available: 2 {BIND_CONFLICT}."
    assert report["summary"]["scheduled"] == 1


def test_cli_bound_volume_node_affinity_and_immediate_claims(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = """\
    apiVersion: v1
    kind: PersistentVolume
    metadata: {name: pv-n1}
    spec:
      capacity: {storage: 1Gi}
      accessModes: [ReadWriteOnce]
      claimRef: {namespace: default, name: bound}
      nodeAffinity:
        required:
          nodeSelectorTerms:
          - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [n1]}]
    status: {phase: Bound}
    ---
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: bound, namespace: default, annotations: {pv.kubernetes.io/bind-completed: "yes"}}
    spec: {accessModes: [ReadWriteOnce], volumeName: pv-n1, resources: {requests: {storage: 1Gi}}}
    status: {phase: Bound}
    ---
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: waiting, namespace: default}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
    status: {phase: Pending}
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: with-bound, namespace: default}
    spec:
      containers: [{name: c, image: x}]
      volumes: [{name: v, persistentVolumeClaim: {claimName: bound}}]
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: with-pending, namespace: default}
    spec:
      containers: [{name: c, image: x}]
      volumes: [{name: v, persistentVolumeClaim: {claimName: waiting}}]
    """
    report = simulate(tmp_path, capsys, cluster, "VolumeBinding")
    pods = {p["name"]: p for p in report["pods"]}
    # PreFilter narrowed the local volume's pod to n1; n2 is reported as excluded by the plugin.
    assert pods["with-bound"]["result"] == "Scheduled" and pods["with-bound"]["node"] == "n1"
    pending = pods["with-pending"]
    assert pending["result"] == "Unschedulable"
    assert pending["message"] == f"0/2 nodes are available: {UNBOUND_IMMEDIATE}."


# --------------------------------------------------------------------------- Score (StorageCapacityScoring)


def _scores(r: Run, incoming: Pod) -> list[int]:
    state, _, pre, _ = r.cycle(incoming)
    assert pre is None or pre.is_success() or pre.is_skip()
    assert r.plugin.pre_score(state, incoming, r.table.all()) is None  # never Skip in v1.37
    per_node = [r.plugin.score(state, incoming, ni) for ni in r.table.infos]
    assert r.plugin.score_nodes(state, incoming, r.table.all()).tolist() == per_node
    return per_node


@pytest.mark.parametrize(
    ("objects", "incoming", "expected"),
    [
        # A pod without claims scores 0 everywhere (upstream runs Score for it all the same).
        pytest.param([], make_pod("p"), [0, 0], id="no claims"),
        # 5Gi claim: n1's 10Gi PV -> u 50 -> 50; n2's 50Gi PV -> u 10 -> 90 (most room wins).
        pytest.param(
            [claim("c"), storage_class(), pv("small", "10Gi", hosts=["n1"]), pv("big", "50Gi", hosts=["n2"])],
            pod("c"),
            [50, 90],
            id="static PVs by utilization",
        ),
        # Bound claims are no choice: 0.
        pytest.param(
            [claim("c", volume="v", phase="Bound"), storage_class(), pv("v", claim_ref="c", phase="Bound")],
            pod("c"),
            [0, 0],
            id="bound claim",
        ),
        # Two classes average, rounded half up: n1 (u 50 -> 50, u 25 -> 75) = 62.5 -> 63.
        pytest.param(
            [
                claim("a"),
                claim("b", cls="other"),
                storage_class(),
                storage_class("other"),
                pv("a1", "10Gi", hosts=["n1"]),
                pv("b1", "20Gi", cls="other", hosts=["n1"]),
            ],
            pod("a", "b"),
            [63, 0],
            id="classes averaged",
        ),
    ],
)
def test_score(objects: list[Any], incoming: Pod, expected: list[int]) -> None:
    assert _scores(Run(objects, nodes("n1", "n2")), incoming) == expected


# --------------------------------------------------------------------------- CSIStorageCapacity (v1.37)

CSI = "csi.example.com"
NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"


def csi_driver(name: str = CSI, *, storage_capacity: bool = True) -> CSIDriver:
    return msgspec.convert(
        {"metadata": {"name": name}, "spec": {"storageCapacity": storage_capacity}}, CSIDriver
    )


def capacity(
    name: str,
    capacity: str | None,
    *,
    cls: str = "csi",
    zone: str | None = None,
    maximum: str | None = None,
    topology: bool = True,
) -> CSIStorageCapacity:
    body: dict[str, Any] = {"metadata": {"name": name, "namespace": "kube-system"}, "storageClassName": cls}
    if topology:
        body["nodeTopology"] = {"matchLabels": {ZONE: zone}} if zone is not None else {}
    if capacity is not None:
        body["capacity"] = capacity
    if maximum is not None:
        body["maximumVolumeSize"] = maximum
    return msgspec.convert(body, CSIStorageCapacity)


ZONED = {"n1": {ZONE: "a"}, "n2": {ZONE: "b"}, "n3": {ZONE: "c"}}
CSI_CLASS = storage_class("csi", provisioner=CSI)


def test_capacity_decides_where_a_claim_can_be_provisioned() -> None:
    objects = [
        claim("c", "5Gi", cls="csi"),
        CSI_CLASS,
        csi_driver(),
        capacity("a", "10Gi", zone="a"),
        capacity("b", "4Gi", zone="b"),  # too small
        # zone c has no capacity object at all
    ]
    verdicts = run(pod("c"), objects, nodes("n1", "n2", "n3", labels=ZONED))
    assert verdicts == {
        "n1": None,
        "n2": unresolvable(NOT_ENOUGH_SPACE),
        "n3": unresolvable(NOT_ENOUGH_SPACE),
    }


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        # maximumVolumeSize wins over capacity when set
        pytest.param([capacity("a", "100Gi", zone="a", maximum="1Gi")], False, id="maximumVolumeSize"),
        pytest.param([capacity("a", None, zone="a", maximum="10Gi")], True, id="maximumVolumeSize only"),
        # no nodeTopology: the capacity is "unavailable"
        pytest.param([capacity("a", "10Gi", topology=False)], False, id="no nodeTopology"),
        # an empty nodeTopology selects every node
        pytest.param([capacity("a", "10Gi")], True, id="empty nodeTopology"),
        pytest.param([capacity("a", "10Gi", zone="a", cls="other")], False, id="another class"),
    ],
)
def test_which_capacity_serves_a_node(objects: list[Any], expected: bool) -> None:
    verdicts = run(
        pod("c"), [claim("c", "5Gi", cls="csi"), CSI_CLASS, csi_driver(), *objects], nodes("n1", labels=ZONED)
    )
    assert (verdicts["n1"] is None) is expected


@pytest.mark.parametrize(
    "driver", [None, csi_driver(storage_capacity=False)], ids=["no CSIDriver", "not tracked"]
)
def test_capacity_is_checked_only_for_drivers_that_ask(driver: CSIDriver | None) -> None:
    objects = [claim("c", "5Gi", cls="csi"), CSI_CLASS, capacity("a", "1Gi", zone="a")]
    if driver is not None:
        objects.append(driver)
    assert run(pod("c"), objects, nodes("n1", labels=ZONED)) == {"n1": None}


def test_the_first_claim_to_provision_that_fails_decides_the_reason() -> None:
    # "small" (1Gi) is checked before "big" (5Gi) whatever the pod's volume order; "small" cannot be
    # provisioned (no-provisioner class) so the node's reason is a bind conflict, not capacity.
    objects = [
        claim("big", "5Gi", cls="csi"),
        claim("small", "1Gi", cls="static"),
        CSI_CLASS,
        storage_class("static"),
        csi_driver(),
    ]
    assert run(pod("big", "small"), objects, nodes("n1", labels=ZONED)) == {"n1": unresolvable(BIND_CONFLICT)}


def test_claims_are_matched_smallest_first() -> None:
    # Pod order says "big" first, which would take the 3Gi PV; upstream sorts by request, so "small"
    # (1Gi) takes the 3Gi PV (the smallest that fits it) and "big" the 5Gi one.
    objects = [claim("big", "3Gi"), claim("small", "1Gi"), storage_class(), pv("x3", "3Gi"), pv("y5", "5Gi")]
    r = Run(objects, nodes("n1"))
    incoming = pod("big", "small")
    state, _, _, verdicts = r.cycle(incoming)
    assert verdicts == {"n1": None}
    assert r.plugin.reserve(state, incoming, "n1") is None
    owners = {name: r.plugin.assume_cache.claim_of(name) for name in ("x3", "y5")}
    assert {name: owner.key if owner else None for name, owner in owners.items()} == {
        "x3": "default/small",
        "y5": "default/big",
    }


@pytest.mark.parametrize(
    ("objects", "incoming", "expected"),
    [
        # 5Gi of zone a's 10Gi -> u 50 -> 50; zone b's 50Gi -> u 10 -> 90; zone c's 5Gi -> u 100 -> 0.
        pytest.param(
            [
                claim("c", "5Gi", cls="csi"),
                capacity("a", "10Gi", zone="a"),
                capacity("b", "50Gi", zone="b"),
                capacity("c", "5Gi", zone="c"),
            ],
            pod("c"),
            [50, 90, 0],
            id="capacity by utilization",
        ),
        # two claims of one class: requests summed (2+3 = 5 of 10 -> 50), the capacity is not summed
        pytest.param(
            [claim("c", "2Gi", cls="csi"), claim("d", "3Gi", cls="csi"), capacity("all", "10Gi")],
            pod("c", "d"),
            [50, 50, 50],
            id="requests summed, capacity not",
        ),
        # the score reads `capacity`, not maximumVolumeSize (which only decides the fit)
        pytest.param(
            [claim("c", "5Gi", cls="csi"), capacity("all", "50Gi", maximum="5Gi")],
            pod("c"),
            [90, 90, 90],
            id="capacity not maximumVolumeSize",
        ),
        # a static PV chosen on the node: the static classes only
        pytest.param(
            [
                claim("c", "5Gi", cls="csi"),
                claim("s", "5Gi"),
                storage_class(),
                pv("v", "10Gi", hosts=["n1"]),
                capacity("all", "50Gi"),
            ],
            pod("c", "s"),
            [50, 0, 0],
            id="static bindings win",
        ),
    ],
)
def test_score_with_storage_capacity(objects: list[Any], incoming: Pod, expected: list[int]) -> None:
    table = nodes("n1", "n2", "n3", labels=ZONED)
    scored = _scores(Run([CSI_CLASS, csi_driver(), *objects], table), incoming)
    verdicts = Run([CSI_CLASS, csi_driver(), *objects], table).verdicts(incoming)
    assert [s if verdicts[n] is None else None for n, s in zip(table.names, scored, strict=True)] == [
        s if verdicts[n] is None else None for n, s in zip(table.names, expected, strict=True)
    ]


def test_with_storage_capacity_scoring_off_pre_score_skips_every_pod() -> None:
    """Upstream builds no scorer with the gate off: PreScore skips, whatever the pod's volumes."""
    off = VolumeBinding(features=parse_feature_gates(["StorageCapacityScoring=false"]))
    pod = make_pod("p")
    status = off.pre_score(CycleState(), pod, make_table([make_node("n1")]).all())
    assert status is not None and status.is_skip()
    assert VolumeBinding().pre_score(CycleState(), pod, make_table([make_node("n1")]).all()) is None
