"""VolumeZone (upstream `pkg/scheduler/framework/plugins/volumezone/volume_zone.go`): PV zone/region labels
(GA and beta, `__` multi-zone sets) against node labels, the PreFilter errors, Skip for unbound
WaitForFirstConsumer claims, both Filter forms, events, and a run through `kubesched simulate`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from volume_fixtures import FakeHandle, simulate

from kubesched.api.objects import Pod
from kubesched.api.storage import PersistentVolume, PersistentVolumeClaim, StorageClass
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, QueueingHint, Resource
from kubesched.framework.status import Code, Status
from kubesched.plugins.volume_zone import ERR_REASON_CONFLICT, PVTopology, VolumeZone, pv_topologies
from kubesched.testing.builders import make_node, make_pod, make_table

CONFLICT = "node(s) had no available volume zone"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"


def pv(name: str, labels: dict[str, str] | None = None) -> PersistentVolume:
    return msgspec.convert({"metadata": {"name": name, "labels": labels or {}}}, PersistentVolume)


def claim(
    name: str, volume: str = "", cls: str | None = None, namespace: str = "default"
) -> PersistentVolumeClaim:
    spec: dict[str, Any] = {"volumeName": volume}
    if cls is not None:
        spec["storageClassName"] = cls
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": namespace}, "spec": spec}, PersistentVolumeClaim
    )


def storage_class(name: str, mode: str | None) -> StorageClass:
    body: dict[str, Any] = {"metadata": {"name": name}, "provisioner": "p"}
    if mode is not None:
        body["volumeBindingMode"] = mode
    return msgspec.convert(body, StorageClass)


def pod(*claims: str, ephemeral: bool = False) -> Pod:
    vols: list[dict[str, Any]] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    if ephemeral:
        vols.append({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}})
    return make_pod("p", spec={"volumes": vols})


def run(
    incoming: Pod, objects: Sequence[Any], node_labels: Sequence[dict[str, str]]
) -> tuple[Status | None, list[Status | None]]:
    """PreFilter, then both Filter forms (which must agree), on nodes n0, n1, ... with these labels."""
    table = make_table([make_node(f"n{i}", labels=labels) for i, labels in enumerate(node_labels)])
    plugin = VolumeZone(handle=FakeHandle(objects, table))
    state = CycleState()
    pre = plugin.pre_filter(state, incoming, table.all())
    if pre is not None and not pre.is_success():
        return pre, []
    per_node = [plugin.filter(state, incoming, ni) for ni in table.infos]
    batch = plugin.filter_nodes(state, incoming, table.all())
    assert [None if c < 0 else batch.statuses[c] for c in batch.codes] == per_node
    return pre, per_node


def test_reason_constant() -> None:
    assert ERR_REASON_CONFLICT == CONFLICT


def test_pv_topologies_parse_multi_zone_values_and_ignore_broken_ones() -> None:
    volume = pv("v", {ZONE: "a__b", REGION: "r1", BETA_ZONE: "a__", "other": "x"})
    assert pv_topologies(volume) == [
        PVTopology("v", ZONE, frozenset({"a", "b"})),
        PVTopology("v", REGION, frozenset({"r1"})),
    ]
    assert pv_topologies(pv("v", {BETA_REGION: " r1 __ r2 "})) == [
        PVTopology("v", BETA_REGION, frozenset({"r1", "r2"}))
    ]


BOUND = [claim("data", "pv1")]

FILTER_CASES: list[tuple[str, dict[str, str], dict[str, str], bool]] = [
    ("zone matches", {ZONE: "a"}, {ZONE: "a"}, True),
    ("zone differs", {ZONE: "a"}, {ZONE: "b"}, False),
    ("node without any topology label passes", {ZONE: "a"}, {"disk": "ssd"}, True),
    ("node lacks the volume's key but has another topology label", {ZONE: "a"}, {REGION: "r"}, False),
    ("multi-zone volume", {ZONE: "a__b"}, {ZONE: "b"}, True),
    ("multi-zone volume, other zone", {ZONE: "a__b"}, {ZONE: "c"}, False),
    ("region matches", {REGION: "r1"}, {REGION: "r1", ZONE: "x"}, True),
    ("zone and region must both match", {ZONE: "a", REGION: "r1"}, {ZONE: "a", REGION: "r2"}, False),
    ("beta volume label, beta node label", {BETA_ZONE: "a"}, {BETA_ZONE: "a"}, True),
    ("beta volume label, GA node label", {BETA_ZONE: "a"}, {ZONE: "a"}, True),
    ("beta volume label, GA node label differs", {BETA_REGION: "r"}, {REGION: "s"}, False),
    ("beta node label wins over GA when present", {BETA_ZONE: "a"}, {BETA_ZONE: "b", ZONE: "a"}, False),
    ("GA volume label is not matched by a beta node label", {ZONE: "a"}, {BETA_ZONE: "a"}, False),
    ("broken volume label is ignored", {ZONE: "__"}, {ZONE: "b"}, True),
]


@pytest.mark.parametrize(
    ("pv_labels", "node_labels", "fits"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(pv_labels: dict[str, str], node_labels: dict[str, str], fits: bool) -> None:
    pre, verdicts = run(pod("data"), [*BOUND, pv("pv1", pv_labels)], [node_labels])
    if pre == Status.skip():
        assert fits  # nothing to check: the volume states no usable topology
        return
    assert verdicts == [None if fits else Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, CONFLICT)]


def test_every_bound_volume_must_fit() -> None:
    objects = [claim("a", "pv-a"), claim("b", "pv-b"), pv("pv-a", {ZONE: "z1"}), pv("pv-b", {ZONE: "z1__z2"})]
    _, verdicts = run(pod("a", "b"), objects, [{ZONE: "z1"}, {ZONE: "z2"}, {}])
    assert verdicts == [None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, CONFLICT), None]


def test_pre_filter_skips_when_no_volume_has_topology() -> None:
    assert run(make_pod("p"), [], [{}])[0] == Status.skip()
    assert run(pod("data"), [*BOUND, pv("pv1", {"app": "x"})], [{}])[0] == Status.skip()


def test_unbound_wait_for_first_consumer_claims_are_skipped() -> None:
    objects = [
        claim("later", cls="wffc"),
        storage_class("wffc", "WaitForFirstConsumer"),
        *BOUND,
        pv("pv1", {ZONE: "a"}),
    ]
    assert run(pod("later"), objects, [{ZONE: "b"}])[0] == Status.skip()
    _, verdicts = run(pod("later", "data"), objects, [{ZONE: "b"}, {ZONE: "a"}])
    assert verdicts == [Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, CONFLICT), None]


PRE_FILTER_ERRORS: list[tuple[str, Pod, list[Any], str]] = [
    ("claim without a name", pod(""), [], "PersistentVolumeClaim had no name"),
    ("claim not found", pod("ghost"), [], 'persistentvolumeclaim "ghost" not found'),
    (
        "claim in another namespace",
        pod("data"),
        [claim("data", "pv1", namespace="other"), pv("pv1")],
        'persistentvolumeclaim "data" not found',
    ),
    (
        "ephemeral claim not created yet",
        pod(ephemeral=True),
        [],
        'persistentvolumeclaim "p-scratch" not found',
    ),
    (
        "unbound claim without class",
        pod("c"),
        [claim("c")],
        "PersistentVolumeClaim had no pv name and storageClass name",
    ),
    (
        "unbound claim, class not found",
        pod("c"),
        [claim("c", cls="gold")],
        'storageclass.storage.k8s.io "gold" not found',
    ),
    (
        "unbound claim, class with empty binding mode",
        pod("c"),
        [claim("c", cls="gold"), storage_class("gold", "")],
        'VolumeBindingMode not set for StorageClass "gold"',
    ),
    (
        "unbound claim, immediate class",
        pod("c"),
        [claim("c", cls="gold"), storage_class("gold", "Immediate")],
        "PersistentVolume had no name",
    ),
    (
        "unbound claim, class without binding mode is Immediate (API default)",
        pod("c"),
        [claim("c", cls="gold"), storage_class("gold", None)],
        "PersistentVolume had no name",
    ),
    ("bound to a missing volume", pod("c"), [claim("c", "gone")], 'persistentvolume "gone" not found'),
]


@pytest.mark.parametrize(
    ("incoming", "objects", "reason"),
    [c[1:] for c in PRE_FILTER_ERRORS],
    ids=[c[0] for c in PRE_FILTER_ERRORS],
)
def test_pre_filter_errors(incoming: Pod, objects: list[Any], reason: str) -> None:
    pre, _ = run(incoming, objects, [{ZONE: "a"}])
    assert pre == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)
    # Without PreFilter (disabled in the profile) Filter reports the same.
    table = make_table([make_node("n", labels={ZONE: "a"})])
    plugin = VolumeZone(handle=FakeHandle(objects, table))
    assert plugin.filter(CycleState(), incoming, table.infos[0]) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason
    )
    batch = plugin.filter_nodes(CycleState(), incoming, table.all())
    assert batch.statuses[batch.codes[0]] == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)


def test_ephemeral_volume_claim_is_looked_up_by_its_generated_name() -> None:
    objects = [claim("p-scratch", "pv1"), pv("pv1", {ZONE: "a"})]
    _, verdicts = run(pod(ephemeral=True), objects, [{ZONE: "a"}, {ZONE: "b"}])
    assert verdicts == [None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, CONFLICT)]


def test_pod_without_volumes_passes_filter_directly() -> None:
    table = make_table([make_node("n", labels={ZONE: "a"})])
    plugin = VolumeZone()
    assert plugin.filter(CycleState(), make_pod("p"), table.infos[0]) is None
    assert plugin.filter_nodes(CycleState(), make_pod("p"), table.all()).passed.all()


LABELS = st.dictionaries(
    st.sampled_from([ZONE, REGION, BETA_ZONE, BETA_REGION, "other"]),
    st.sampled_from(["a", "b", "c"]),
    max_size=4,
)
PV_LABELS = st.dictionaries(
    st.sampled_from([ZONE, REGION, BETA_ZONE, BETA_REGION]),
    st.sampled_from(["a", "b", "a__b", "c", "__"]),
    max_size=3,
)


@settings(max_examples=150, deadline=None)
@given(
    pv_labels=st.lists(PV_LABELS, min_size=1, max_size=3),
    node_labels=st.lists(LABELS, min_size=1, max_size=6),
)
def test_batch_filter_agrees_with_per_node(
    pv_labels: list[dict[str, str]], node_labels: list[dict[str, str]]
) -> None:
    objects: list[Any] = []
    for i, labels in enumerate(pv_labels):
        objects += [claim(f"c{i}", f"pv{i}"), pv(f"pv{i}", labels)]
    run(pod(*(f"c{i}" for i in range(len(pv_labels)))), objects, node_labels)  # run() compares the two forms


def test_events_to_register() -> None:
    events = {(e.event.resource, e.event.action): e.hint for e in VolumeZone().events_to_register()}
    assert set(events) == {
        (Resource.STORAGE_CLASS, ActionType.ADD),
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        (Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
        (Resource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
    }
    incoming = pod("data")
    on_class = events[(Resource.STORAGE_CLASS, ActionType.ADD)]
    assert on_class is not None
    assert on_class(incoming, None, storage_class("s", "WaitForFirstConsumer")) is QueueingHint.QUEUE
    assert on_class(incoming, None, storage_class("s", "Immediate")) is QueueingHint.SKIP
    on_claim = events[(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE)]
    assert on_claim is not None
    assert on_claim(incoming, None, claim("data", "pv1")) is QueueingHint.QUEUE
    assert on_claim(incoming, None, claim("other", "pv1")) is QueueingHint.SKIP
    on_pv = events[(Resource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE)]
    assert on_pv is not None
    assert on_pv(incoming, None, pv("new")) is QueueingHint.QUEUE
    assert on_pv(incoming, pv("v", {ZONE: "a"}), pv("v", {ZONE: "a", "x": "y"})) is QueueingHint.SKIP
    assert on_pv(incoming, pv("v", {ZONE: "a"}), pv("v", {ZONE: "b"})) is QueueingHint.QUEUE


def test_cli_volume_zone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = """\
    apiVersion: v1
    kind: Node
    metadata: {name: n1, labels: {topology.kubernetes.io/zone: zone-a, topology.kubernetes.io/region: r}}
    status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
    ---
    apiVersion: v1
    kind: Node
    metadata: {name: n2, labels: {topology.kubernetes.io/zone: zone-b, topology.kubernetes.io/region: r}}
    status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
    ---
    apiVersion: v1
    kind: PersistentVolume
    metadata:
      name: disk-b
      labels: {failure-domain.beta.kubernetes.io/zone: zone-b}
    spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce]}
    ---
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: data, namespace: default}
    spec: {accessModes: [ReadWriteOnce], volumeName: disk-b, resources: {requests: {storage: 1Gi}}}
    status: {phase: Bound}
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: db, namespace: default}
    spec:
      containers: [{name: c, image: x}]
      volumes: [{name: v, persistentVolumeClaim: {claimName: data}}]
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: orphan, namespace: default}
    spec:
      containers: [{name: c, image: x}]
      volumes: [{name: v, persistentVolumeClaim: {claimName: missing}}]
    """
    report = simulate(tmp_path, capsys, cluster, "VolumeZone", two_nodes=False)
    pods = {p["name"]: p for p in report["pods"]}
    assert pods["db"]["result"] == "Scheduled" and pods["db"]["node"] == "n2"
    rejected = {"plugin": "VolumeZone", "code": "UnschedulableAndUnresolvable", "reasons": [CONFLICT]}
    assert pods["db"]["filter"] == {"n1": rejected}
    assert pods["orphan"]["result"] == "Unschedulable"
    assert pods["orphan"]["message"] == '0/2 nodes are available: persistentvolumeclaim "missing" not found.'
