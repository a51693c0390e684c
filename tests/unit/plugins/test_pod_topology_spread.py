"""PodTopologySpread (upstream `pkg/scheduler/framework/plugins/podtopologyspread/`): table-driven facts,
the PreFilter extensions, batch == per node == a plain reference model, and one run through the CLI."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from explain_harness import simulate_explain, single_plugin_config
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.cluster_objects import Service
from kubesched.api.controllers import ReplicaSet, ReplicationController, StatefulSet
from kubesched.api.meta import LabelSelector, OwnerReference
from kubesched.api.objects import Node, Pod, Taint, Toleration
from kubesched.api.selectors import compile_label_selector
from kubesched.api.taints import find_untolerated_taint
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.registry import decode_args
from kubesched.framework.status import Code, Status
from kubesched.plugins import default_registry
from kubesched.plugins.pod_topology_spread import PodTopologySpread, PodTopologySpreadArgs
from kubesched.plugins.pod_topology_spread import common as pts_common
from kubesched.plugins.pod_topology_spread import filtering as pts_filtering
from kubesched.plugins.pod_topology_spread import scoring as pts_scoring
from kubesched.testing.builders import make_node, make_pod, make_table

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
RACK = "rack"
REASON = "node(s) didn't match pod topology spread constraints"
REASON_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"
WEB = {"matchLabels": {"app": "web"}}
DELETED_AT = "2024-01-01T00:00:00Z"


# --------------------------------------------------------------------------- builders


def node(
    name: str,
    zone: str | None = None,
    *,
    host: bool = True,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
) -> Node:
    """A node in `zone` (no zone label when None); `host=False` drops the hostname label too."""
    all_labels = dict(labels or {})
    if zone is not None:
        all_labels[ZONE] = zone
    n = make_node(name, labels=all_labels, taints=taints)
    if not host:
        meta = msgspec.structs.replace(
            n.metadata, labels={k: v for k, v in n.metadata.labels.items() if k != HOST}
        )
        n = msgspec.structs.replace(n, metadata=meta)
    return n


def pod(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    on: str = "",
    namespace: str = "default",
    constraints: Sequence[dict[str, Any]] = (),
    terminating: bool = False,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Toleration] = (),
    owner: dict[str, Any] | None = None,
    affinity: dict[str, Any] | None = None,
) -> Pod:
    spec: dict[str, Any] = {"topologySpreadConstraints": list(constraints)}
    if affinity is not None:
        spec["affinity"] = affinity
    p = make_pod(
        name,
        namespace=namespace,
        labels=dict(labels or {}),
        node_name=on,
        node_selector=node_selector,
        tolerations=tolerations,
        spec=spec,
    )
    meta = p.metadata
    if terminating:
        meta = msgspec.structs.replace(meta, deletion_timestamp=DELETED_AT)
    if owner is not None:
        meta = msgspec.structs.replace(meta, owner_references=[msgspec.convert(owner, OwnerReference)])
    return msgspec.structs.replace(p, metadata=meta)


def web(name: str, on: str, **kw: Any) -> Pod:
    return pod(name, {"app": "web"}, on=on, **kw)


def tsc(
    key: str = ZONE,
    max_skew: int = 1,
    when: str = "DoNotSchedule",
    selector: dict[str, Any] | None = WEB,
    **extra: Any,
) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}
    if selector is not None:
        c["labelSelector"] = selector
    return c


class FakeHandle:
    """Just the listers the default constraints read."""

    def __init__(self, **objects: Sequence[Any]) -> None:
        self.objects = objects

    def lister(self, kind: str) -> Sequence[Any]:
        return self.objects.get(kind, [])


def plugin_with(args: dict[str, Any] | None = None, handle: Any = None) -> PodTopologySpread:
    return PodTopologySpread(msgspec.convert(args or {}, PodTopologySpreadArgs), handle)


def service(name: str, selector: dict[str, str], namespace: str = "default") -> Service:
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": namespace}, "spec": {"selector": selector}}, Service
    )


def status_of(s: Status | None) -> tuple[str, str] | None:
    return None if s is None else (str(s.code), s.message())


OK = None
UNSCHED = ("Unschedulable", REASON)
MISSING = ("UnschedulableAndUnresolvable", REASON_LABEL)


def run_filter(
    plugin: PodTopologySpread, incoming: Pod, table: NodeTable, state: CycleState | None = None
) -> dict[str, tuple[str, str] | None]:
    """Filter every node in both forms (and through 1-node tables), asserting they agree."""
    if state is None:
        state = CycleState()
        _, st_ = plugin.pre_filter(state, incoming, table.all())
        assert st_ is None, st_
    nodes = table.all()
    per_node = [status_of(plugin.filter(state, incoming, ni)) for ni in nodes]
    res = plugin.filter_nodes(state, incoming, nodes)
    assert [None if c < 0 else status_of(res.statuses[c]) for c in res.codes] == per_node
    for ni, expected in zip(nodes, per_node, strict=True):
        alone = plugin.filter_nodes(state, incoming, NodeTable([ni]).all())
        assert [None if c < 0 else status_of(alone.statuses[c]) for c in alone.codes] == [expected]
    return dict(zip(table.names, per_node, strict=True))


def run_score(
    plugin: PodTopologySpread, incoming: Pod, table: NodeTable, feasible: Sequence[str] | None = None
) -> tuple[dict[str, int], dict[str, int]]:
    """(raw, normalized) scores of the feasible nodes, asserting batch == per node."""
    nodes = table.all() if feasible is None else table.subset(feasible)
    state = CycleState()
    assert plugin.pre_score(state, incoming, nodes) is None
    raw = plugin.score_nodes(state, incoming, nodes)
    per_node = [plugin.score(state, incoming, ni) for ni in nodes]
    assert raw.tolist() == per_node
    normalized = raw.copy()
    assert plugin.normalize_score(state, incoming, nodes, normalized) is None
    return dict(zip(nodes.names, raw.tolist(), strict=True)), dict(
        zip(nodes.names, normalized.tolist(), strict=True)
    )


# --------------------------------------------------------------------------- Filter: facts

ZONES_AAB = [node("n1", "a"), node("n2", "a"), node("n3", "b")]

FILTER_CASES: list[tuple[str, list[Node], list[Pod], Pod, dict[str, tuple[str, str] | None]]] = [
    (
        "skew over maxSkew in the crowded zone",
        ZONES_AAB,
        [web("w1", "n1"), web("w2", "n2"), web("w3", "n3")],
        web("new", "", constraints=[tsc()]),
        {"n1": UNSCHED, "n2": UNSCHED, "n3": OK},  # a=2 b=1: a -> 2+1-1=2 > 1
    ),
    (
        "maxSkew 2 tolerates it",
        ZONES_AAB,
        [web("w1", "n1"), web("w2", "n2"), web("w3", "n3")],
        web("new", "", constraints=[tsc(max_skew=2)]),
        {"n1": OK, "n2": OK, "n3": OK},
    ),
    (
        "incoming pod not matching its own selector adds nothing",
        ZONES_AAB,
        [web("w1", "n1")],
        pod("new", {"app": "db"}, constraints=[tsc()]),
        {"n1": OK, "n2": OK, "n3": OK},  # a=1 b=0: 1+0-0 = 1
    ),
    (
        "node without the topology key",
        [*ZONES_AAB, node("n4")],
        [],
        web("new", "", constraints=[tsc()]),
        {"n1": OK, "n2": OK, "n3": OK, "n4": MISSING},
    ),
    (
        "no node has the key",
        [node("n1"), node("n2")],
        [web("w1", "n1")],
        web("new", "", constraints=[tsc()]),
        {"n1": MISSING, "n2": MISSING},
    ),
    (
        "hostname spreading counts per node",
        [node("n1", "a"), node("n2", "a")],
        [web("w1", "n1")],
        web("new", "", constraints=[tsc(key=HOST)]),
        {"n1": UNSCHED, "n2": OK},
    ),
    (
        "constraints in order: a skew failure comes before a later missing key",
        [node("n1", "a", labels={RACK: "r1"}), node("n2", "a"), node("n3", "b", labels={RACK: "r1"})],
        [web("w1", "n1"), web("w2", "n1")],
        web("new", "", constraints=[tsc(), tsc(key=RACK, max_skew=9)]),
        # Only n1 and n3 carry both keys, so only they count: a=2 b=0.
        {"n1": UNSCHED, "n2": UNSCHED, "n3": OK},
    ),
    (
        "missing key on the first constraint wins over a later skew failure",
        [
            node("n1", "a", labels={RACK: "r1"}),
            node("n2", None, labels={RACK: "r1"}),
            node("n3", "b", labels={RACK: "r2"}),
        ],
        [web("w1", "n1"), web("w2", "n1")],
        web("new", "", constraints=[tsc(), tsc(key=RACK)]),
        # n2 would also break the rack constraint (r1=2, r2=0), but the zone key is checked first.
        {"n1": UNSCHED, "n2": MISSING, "n3": OK},
    ),
    (
        "minDomains above the domain count makes the global minimum 0",
        [node("n1", "a"), node("n2", "b")],
        [web("w1", "n1"), web("w2", "n2")],
        web("new", "", constraints=[tsc(minDomains=3)]),
        {"n1": UNSCHED, "n2": UNSCHED},  # 1+1-0 = 2 > 1
    ),
    (
        "minDomains reached keeps the real minimum",
        [node("n1", "a"), node("n2", "b")],
        [web("w1", "n1"), web("w2", "n2")],
        web("new", "", constraints=[tsc(minDomains=2)]),
        {"n1": OK, "n2": OK},  # 1+1-1 = 1
    ),
    (
        "terminating pods are not counted",
        ZONES_AAB,
        [web("w1", "n1", terminating=True), web("w2", "n2", terminating=True), web("w3", "n3")],
        web("new", "", constraints=[tsc()]),
        {"n1": OK, "n2": OK, "n3": UNSCHED},  # a=0 b=1
    ),
    (
        "pods of other namespaces are not counted",
        ZONES_AAB,
        [web("w1", "n1", namespace="other"), web("w2", "n2", namespace="other"), web("w3", "n3")],
        web("new", "", constraints=[tsc()]),
        {"n1": OK, "n2": OK, "n3": UNSCHED},
    ),
    (
        "pods the selector does not match are not counted",
        ZONES_AAB,
        [pod("d1", {"app": "db"}, on="n1"), pod("d2", {"app": "db"}, on="n1"), web("w3", "n3")],
        web("new", "", constraints=[tsc()]),
        {"n1": OK, "n2": OK, "n3": UNSCHED},
    ),
    (
        "an empty selector counts no existing pod but matches the incoming one",
        ZONES_AAB,
        [web("w1", "n1"), web("w2", "n1"), web("w3", "n1")],
        web("new", "", constraints=[tsc(selector={})]),
        {"n1": OK, "n2": OK, "n3": OK},  # 0+1-0 everywhere
    ),
    (
        "no selector matches nothing",
        ZONES_AAB,
        [web("w1", "n1"), web("w2", "n1"), web("w3", "n1")],
        web("new", "", constraints=[tsc(selector=None)]),
        {"n1": OK, "n2": OK, "n3": OK},
    ),
]


@pytest.mark.parametrize(
    ("nodes", "existing", "incoming", "expected"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(
    nodes: list[Node], existing: list[Pod], incoming: Pod, expected: dict[str, tuple[str, str] | None]
) -> None:
    assert run_filter(PodTopologySpread(), incoming, make_table(nodes, existing)) == expected


# nodeAffinityPolicy: n2 (zone b, disk=hdd) holds no web pod; a and c hold one each.
AFFINITY_NODES = [
    node("n1", "a", labels={"disk": "ssd"}),
    node("n2", "b", labels={"disk": "hdd"}),
    node("n3", "c", labels={"disk": "ssd"}),
]
AFFINITY_PODS = [web("w1", "n1"), web("w3", "n3")]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        # Honor (default): n2 does not match the pod's nodeSelector, so zone b is no domain: min 1.
        (None, {"n1": OK, "n2": OK, "n3": OK}),
        ("Honor", {"n1": OK, "n2": OK, "n3": OK}),
        # Ignore: zone b (0 pods) is a domain: min 0, so a and c are at skew 2.
        ("Ignore", {"n1": UNSCHED, "n2": OK, "n3": UNSCHED}),
    ],
)
def test_node_affinity_policy(policy: str | None, expected: dict[str, Any]) -> None:
    extra: dict[str, Any] = {"nodeAffinityPolicy": policy} if policy else {}
    incoming = web("new", "", constraints=[tsc(**extra)], node_selector={"disk": "ssd"})
    assert run_filter(PodTopologySpread(), incoming, make_table(AFFINITY_NODES, AFFINITY_PODS)) == expected


def test_node_affinity_policy_reads_required_node_affinity_too() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
                ]
            }
        }
    }
    incoming = web("new", "", constraints=[tsc()], affinity=affinity)
    assert run_filter(PodTopologySpread(), incoming, make_table(AFFINITY_NODES, AFFINITY_PODS)) == {
        "n1": OK,
        "n2": OK,
        "n3": OK,
    }


TAINTED = [
    node("n1", "a"),
    node("n2", "b", taints=[Taint(key="dedicated", value="x", effect="NoSchedule")]),
    node("n3", "c"),
]


@pytest.mark.parametrize(
    ("policy", "tolerations", "expected"),
    [
        # Ignore (default): the tainted zone b (0 pods) counts: min 0.
        (None, [], {"n1": UNSCHED, "n2": OK, "n3": UNSCHED}),
        # Honor: the pod does not tolerate n2, so b is no domain: min 1.
        ("Honor", [], {"n1": OK, "n2": OK, "n3": OK}),
        # Honor, but tolerated: b counts again.
        ("Honor", [Toleration(key="dedicated", operator="Exists")], {"n1": UNSCHED, "n2": OK, "n3": UNSCHED}),
    ],
)
def test_node_taints_policy(
    policy: str | None, tolerations: list[Toleration], expected: dict[str, Any]
) -> None:
    extra: dict[str, Any] = {"nodeTaintsPolicy": policy} if policy else {}
    incoming = web("new", "", constraints=[tsc(**extra)], tolerations=tolerations)
    table = make_table(TAINTED, [web("w1", "n1"), web("w3", "n3")])
    assert run_filter(PodTopologySpread(), incoming, table) == expected


def test_prefer_no_schedule_taint_never_excludes_a_node() -> None:
    nodes = [node("n1", "a"), node("n2", "b", taints=[Taint(key="k", effect="PreferNoSchedule")])]
    incoming = web("new", "", constraints=[tsc(nodeTaintsPolicy="Honor")])
    assert run_filter(PodTopologySpread(), incoming, make_table(nodes, [web("w1", "n1")])) == {
        "n1": UNSCHED,
        "n2": OK,
    }


# matchLabelKeys: version v1 twice in zone a, v2 once in zone b.
VERSION_PODS = [
    pod("a1", {"app": "web", "version": "v1"}, on="n1"),
    pod("a2", {"app": "web", "version": "v1"}, on="n2"),
    pod("b1", {"app": "web", "version": "v2"}, on="n3"),
]


@pytest.mark.parametrize(
    ("constraint", "labels", "expected"),
    [
        (tsc(), {"app": "web", "version": "v2"}, {"n1": UNSCHED, "n2": UNSCHED, "n3": OK}),
        # Only v2 pods count: a=0 b=1.
        (
            tsc(matchLabelKeys=["version"]),
            {"app": "web", "version": "v2"},
            {"n1": OK, "n2": OK, "n3": UNSCHED},
        ),
        # A key the pod lacks is ignored.
        (
            tsc(matchLabelKeys=["track"]),
            {"app": "web", "version": "v2"},
            {"n1": UNSCHED, "n2": UNSCHED, "n3": OK},
        ),
        # ANDed, not replacing: app=web AND app=db selects nothing, not even the pod itself.
        (tsc(matchLabelKeys=["app"]), {"app": "db"}, {"n1": OK, "n2": OK, "n3": OK}),
        # No labelSelector selects nothing, matchLabelKeys or not.
        (
            tsc(selector=None, matchLabelKeys=["version"]),
            {"app": "web", "version": "v1"},
            {"n1": OK, "n2": OK, "n3": OK},
        ),
        # An empty selector plus matchLabelKeys is no longer empty: v1 pods count (a=2 b=0).
        (
            tsc(selector={}, matchLabelKeys=["version"]),
            {"version": "v1"},
            {"n1": UNSCHED, "n2": UNSCHED, "n3": OK},
        ),
    ],
)
def test_match_label_keys(
    constraint: dict[str, Any], labels: dict[str, str], expected: dict[str, Any]
) -> None:
    incoming = pod("new", labels, constraints=[constraint])
    assert run_filter(PodTopologySpread(), incoming, make_table(ZONES_AAB, VERSION_PODS)) == expected


def test_filter_uses_all_nodes_not_only_the_feasible_subset() -> None:
    table = make_table(ZONES_AAB, [web("w1", "n1"), web("w2", "n2"), web("w3", "n3")])
    plugin = PodTopologySpread()
    incoming = web("new", "", constraints=[tsc()])
    state = CycleState()
    plugin.pre_filter(state, incoming, table.all())
    subset = table.subset(["n1", "n3"])
    res = plugin.filter_nodes(state, incoming, subset)
    assert [None if c < 0 else status_of(res.statuses[c]) for c in res.codes] == [UNSCHED, OK]


# --------------------------------------------------------------------------- PreFilter


@pytest.mark.parametrize(
    ("incoming", "args", "handle"),
    [
        (pod("p", {"app": "web"}), None, FakeHandle(Service=[service("s", {"app": "web"})])),
        (web("p", "", constraints=[tsc(when="ScheduleAnyway")]), None, None),
        (pod("p", {"app": "web"}), {"defaultingType": "List"}, None),
    ],
    ids=["system defaults only score", "only ScheduleAnyway", "List without defaults"],
)
def test_pre_filter_skips_without_do_not_schedule_constraints(
    incoming: Pod, args: dict[str, Any] | None, handle: Any
) -> None:
    state = CycleState()
    _, status = plugin_with(args, handle).pre_filter(state, incoming, make_table(ZONES_AAB).all())
    assert status is not None and status.code == Code.SKIP
    assert state.get(pts_filtering.PRE_FILTER_STATE_KEY) is None


def test_list_default_constraints_filter_with_the_service_selector() -> None:
    args = {
        "defaultingType": "List",
        "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}],
    }
    plugin = plugin_with(args, FakeHandle(Service=[service("s", {"app": "web"})]))
    table = make_table(ZONES_AAB, [web("w1", "n1"), web("w2", "n2"), web("w3", "n3")])
    assert run_filter(plugin, pod("new", {"app": "web"}), table) == {"n1": UNSCHED, "n2": UNSCHED, "n3": OK}
    # Without a Service or controller selecting the pod there is nothing to spread by.
    state = CycleState()
    _, status = plugin_with(args).pre_filter(state, pod("new", {"app": "web"}), table.all())
    assert status is not None and status.code == Code.SKIP


def test_invalid_selector_is_an_error() -> None:
    bad = {"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]}
    incoming = web("new", "", constraints=[tsc(selector=bad)])
    _, status = PodTopologySpread().pre_filter(CycleState(), incoming, make_table(ZONES_AAB).all())
    assert status is not None and status.code == Code.ERROR
    assert status.message().startswith(
        "get constraints from pod: spec.topologySpreadConstraints[0].labelSelector"
    )


def test_filter_without_pre_filter_state_is_an_error() -> None:
    table = make_table(ZONES_AAB)
    incoming = web("new", "", constraints=[tsc()])
    missing = Status.as_error('reading "PreFilterPodTopologySpread" from cycleState: not found')
    assert PodTopologySpread().filter(CycleState(), incoming, table.infos[0]) == missing
    batch = PodTopologySpread().filter_nodes(CycleState(), incoming, table.all())
    assert [batch.statuses[c] for c in batch.codes] == [missing] * len(table)


# --------------------------------------------------------------------------- AddPod / RemovePod


def _zones_ab() -> tuple[NodeTable, PodTopologySpread, Pod, CycleState]:
    table = make_table([node("n1", "a"), node("n2", "b"), node("n3")], [web("w1", "n1")])
    plugin = PodTopologySpread()
    incoming = web("new", "", constraints=[tsc()])
    state = CycleState()
    plugin.pre_filter(state, incoming, table.all())
    return table, plugin, incoming, state


def test_add_pod_raises_the_domain_count() -> None:
    table, plugin, incoming, state = _zones_ab()
    assert run_filter(plugin, incoming, table, state) == {"n1": UNSCHED, "n2": OK, "n3": MISSING}
    assert plugin.add_pod(state, incoming, PodInfo(web("x", "n2")), table.infos[1]) is None
    # a=1 b=1: both zones fit.
    assert run_filter(plugin, incoming, table, state) == {"n1": OK, "n2": OK, "n3": MISSING}
    assert plugin.add_pod(state, incoming, PodInfo(web("y", "n2")), table.infos[1]) is None
    assert run_filter(plugin, incoming, table, state) == {"n1": OK, "n2": UNSCHED, "n3": MISSING}


def test_remove_pod_lowers_the_domain_count() -> None:
    table, plugin, incoming, state = _zones_ab()
    w1 = table.infos[0].pods["default-w1"]
    assert plugin.remove_pod(state, incoming, w1, table.infos[0]) is None
    assert run_filter(plugin, incoming, table, state) == {"n1": OK, "n2": OK, "n3": MISSING}


@pytest.mark.parametrize(
    ("added", "row"),
    [
        (web("x", "n2", namespace="other"), 1),  # another namespace
        (pod("x", {"app": "db"}, on="n2"), 1),  # not selected
        (web("x", "n3"), 2),  # the node lacks the key
    ],
    ids=["other namespace", "selector does not match", "node without the key"],
)
def test_add_pod_ignores(added: Pod, row: int) -> None:
    table, plugin, incoming, state = _zones_ab()
    plugin.add_pod(state, incoming, PodInfo(added), table.infos[row])
    assert run_filter(plugin, incoming, table, state) == {"n1": UNSCHED, "n2": OK, "n3": MISSING}


def test_add_pod_counts_for_an_empty_selector_as_upstream() -> None:
    """PreFilter never counts existing pods for `labelSelector: {}`, but AddPod matches the selector
    as is and so does count them (upstream's updateWithPod); kept for fidelity."""
    table = make_table([node("n1", "a"), node("n2", "b")], [web("w1", "n1")])
    plugin = PodTopologySpread()
    incoming = web("new", "", constraints=[tsc(selector={})])
    state = CycleState()
    plugin.pre_filter(state, incoming, table.all())
    assert run_filter(plugin, incoming, table, state) == {"n1": OK, "n2": OK}
    plugin.add_pod(state, incoming, PodInfo(web("x", "n1")), table.infos[0])
    assert run_filter(plugin, incoming, table, state) == {"n1": UNSCHED, "n2": OK}


def test_add_pod_honours_the_node_policies() -> None:
    table = make_table([node("n1", "a", labels={"disk": "ssd"}), node("n2", "b")], [web("w1", "n1")])
    plugin = PodTopologySpread()
    incoming = web("new", "", constraints=[tsc(minDomains=1)], node_selector={"disk": "ssd"})
    state = CycleState()
    plugin.pre_filter(state, incoming, table.all())
    # n2 does not match the nodeSelector: zone b is no domain and adding there changes nothing.
    plugin.add_pod(state, incoming, PodInfo(web("x", "n2")), table.infos[1])
    s = state.read_as(pts_filtering.PRE_FILTER_STATE_KEY, pts_filtering.FilterState)
    assert s.domains[0].count_of("b") == 0 and s.domains[0].min_match == 1


def test_add_pod_on_a_node_outside_the_snapshot_makes_a_new_domain() -> None:
    table = make_table([node("n1", "a"), node("n2", "b")], [web("w1", "n1"), web("w2", "n2")])
    plugin = PodTopologySpread()
    incoming = web("new", "", constraints=[tsc(minDomains=3)])
    state = CycleState()
    plugin.pre_filter(state, incoming, table.all())
    assert run_filter(plugin, incoming, table, state) == {"n1": UNSCHED, "n2": UNSCHED}  # 2 domains < 3
    outside = NodeInfo(node("n9", "c"))
    plugin.add_pod(state, incoming, PodInfo(web("x", "n9")), outside)
    assert run_filter(plugin, incoming, table, state) == {"n1": OK, "n2": OK}  # a=b=c=1
    assert status_of(plugin.filter(state, incoming, outside)) is None


def test_cloned_state_is_independent() -> None:
    table, plugin, incoming, state = _zones_ab()
    copy = state.clone()
    plugin.add_pod(copy, incoming, PodInfo(web("x", "n2")), table.infos[1])
    assert run_filter(plugin, incoming, table, copy)["n1"] is None
    assert run_filter(plugin, incoming, table, state)["n1"] == UNSCHED


def test_add_pod_without_pre_filter_state_is_an_error() -> None:
    table = make_table(ZONES_AAB)
    status = PodTopologySpread().add_pod(CycleState(), web("p", ""), PodInfo(web("x", "n1")), table.infos[0])
    assert status is not None and status.code == Code.ERROR


# --------------------------------------------------------------------------- counting once


def test_counts_are_remembered_until_a_node_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    scanned: list[int] = []
    real = pts_common.count_matching

    def spy(pods: Any, namespace: str, matcher: Any) -> int:
        pods = list(pods)
        scanned.append(len(pods))
        return real(pods, namespace, matcher)

    monkeypatch.setattr(pts_common, "count_matching", spy)
    table = make_table(ZONES_AAB, [web("w1", "n1"), web("w2", "n2")])
    plugin = PodTopologySpread()
    incoming = web("new", "", constraints=[tsc(), tsc(key=HOST, max_skew=5)])  # one selector, two keys
    plugin.pre_filter(CycleState(), incoming, table.all())
    assert len(scanned) == 3  # each node once, shared by both constraints
    plugin.pre_filter(CycleState(), incoming, table.all())
    assert len(scanned) == 3  # nothing changed: nothing rescanned
    table.add_pod(2, PodInfo(web("w3", "n3")))
    state = CycleState()
    plugin.pre_filter(state, incoming, table.all())
    assert scanned[3:] == [1]  # only n3
    assert (
        state.read_as(pts_filtering.PRE_FILTER_STATE_KEY, pts_filtering.FilterState).domains[0].count_of("b")
        == 1
    )


def test_nodes_outside_every_domain_are_not_scanned(monkeypatch: pytest.MonkeyPatch) -> None:
    scanned: list[int] = []
    real = pts_common.count_matching

    def spy(pods: Any, namespace: str, matcher: Any) -> int:
        scanned.append(1)
        return real(pods, namespace, matcher)

    monkeypatch.setattr(pts_common, "count_matching", spy)
    table = make_table([*ZONES_AAB, node("n4"), node("n5")], [web("w1", "n4")])
    PodTopologySpread().pre_filter(CycleState(), web("new", "", constraints=[tsc()]), table.all())
    assert len(scanned) == 3  # n4, n5 lack the zone key


# --------------------------------------------------------------------------- Score

LN = math.log


def test_score_hand_computed() -> None:
    table = make_table(ZONES_AAB, [web("w1", "n1"), web("w2", "n1"), web("w3", "n3")])
    incoming = web("new", "", constraints=[tsc(key=HOST, when="ScheduleAnyway"), tsc(when="ScheduleAnyway")])
    raw, normalized = run_score(PodTopologySpread(), incoming, table)
    # hostname: 3 nodes -> ln 5; zone: a, b -> ln 4; zone counts a=2 b=1.
    assert raw == {
        "n1": round(2 * LN(5) + 2 * LN(4)),  # 5.99 -> 6
        "n2": round(0 * LN(5) + 2 * LN(4)),  # 2.77 -> 3
        "n3": round(1 * LN(5) + 1 * LN(4)),  # 3.00 -> 3
    }
    assert raw == {"n1": 6, "n2": 3, "n3": 3}
    assert normalized == {"n1": 100 * (6 + 3 - 6) // 6, "n2": 100, "n3": 100}  # n1: 50


def test_max_skew_adds_its_tolerance() -> None:
    table = make_table(ZONES_AAB, [web("w1", "n1"), web("w2", "n1"), web("w3", "n3")])
    incoming = web(
        "new", "", constraints=[tsc(key=HOST, max_skew=3, when="ScheduleAnyway"), tsc(when="ScheduleAnyway")]
    )
    raw, normalized = run_score(PodTopologySpread(), incoming, table)
    assert raw == {"n1": 8, "n2": 5, "n3": 5}  # each +2
    assert normalized == {"n1": 100 * (8 + 5 - 8) // 8, "n2": 100, "n3": 100}  # n1: 62


def test_weights_count_only_feasible_nodes_but_counts_all_nodes() -> None:
    table = make_table(
        [node("n1", "a"), node("n2", "a"), node("n3", "b"), node("n4", "c")],
        [web("w1", "n1"), web("w2", "n4"), web("w3", "n4")],
    )
    incoming = web("new", "", constraints=[tsc(when="ScheduleAnyway")])
    raw, normalized = run_score(PodTopologySpread(), incoming, table, feasible=["n2", "n3"])
    # Domains among feasible nodes: a, b -> ln 4; zone a counts n1's pod although n1 is not feasible.
    assert raw == {"n2": round(1 * LN(4)), "n3": 0}
    assert normalized == {"n2": 0, "n3": 100}


def test_nodes_without_a_key_are_ignored_in_score_and_normalization() -> None:
    table = make_table([node("n1", "a"), node("n2", "b"), node("n3")], [web("w1", "n1"), web("w2", "n1")])
    incoming = web("new", "", constraints=[tsc(when="ScheduleAnyway")])
    raw, normalized = run_score(PodTopologySpread(), incoming, table)
    assert raw == {"n1": round(2 * LN(4)), "n2": 0, "n3": 0}
    assert normalized == {"n1": 0, "n2": 100, "n3": 0}


def test_hostname_weight_counts_only_scored_nodes() -> None:
    table = make_table([node("n1", "a"), node("n2", "b"), node("n3")], [web(f"w{i}", "n1") for i in range(3)])
    incoming = web("new", "", constraints=[tsc(key=HOST, when="ScheduleAnyway"), tsc(when="ScheduleAnyway")])
    raw, _ = run_score(PodTopologySpread(), incoming, table)
    # n3 lacks the zone and is ignored: 2 hosts -> ln 4 (not ln 5), 2 zones -> ln 4.
    assert raw == {"n1": round(3 * LN(4) + 3 * LN(4)), "n2": 0, "n3": 0}
    assert raw["n1"] == 8


def test_all_zero_scores_normalize_to_100() -> None:
    table = make_table(ZONES_AAB)
    incoming = web("new", "", constraints=[tsc(when="ScheduleAnyway")])
    raw, normalized = run_score(PodTopologySpread(), incoming, table)
    assert set(raw.values()) == {0}
    assert normalized == {"n1": 100, "n2": 100, "n3": 100}


def test_only_ignored_nodes_normalize_to_0() -> None:
    table = make_table([node("n1"), node("n2")])
    _, normalized = run_score(
        PodTopologySpread(), web("new", "", constraints=[tsc(when="ScheduleAnyway")]), table
    )
    assert normalized == {"n1": 0, "n2": 0}


def test_pre_score_skips_without_soft_constraints() -> None:
    table = make_table(ZONES_AAB)
    for incoming in (web("p", "", constraints=[tsc()]), pod("p", {"app": "web"})):
        state = CycleState()
        status = PodTopologySpread().pre_score(state, incoming, table.all())
        assert status is not None and status.code == Code.SKIP
    empty = CycleState()
    status = PodTopologySpread().pre_score(
        empty, web("p", "", constraints=[tsc(when="ScheduleAnyway")]), make_table([]).all()
    )
    assert status is not None and status.code == Code.SKIP


def test_score_without_pre_score_state_is_an_error() -> None:
    table = make_table(ZONES_AAB)
    out = PodTopologySpread().score(CycleState(), web("p", ""), table.infos[0])
    assert isinstance(out, tuple) and out[1] is not None and out[1].code == Code.ERROR


# System defaults: n4 has no zone label; n1 holds one pod of the workload.
DEFAULT_NODES = [node("n1", "a"), node("n2", "a"), node("n3", "b"), node("n4")]
DEFAULT_EXPECTED_RAW = {
    # hostname: 4 nodes -> ln 6, maxSkew 3; zone: a, b and "" (n4, missing) -> ln 5, maxSkew 5.
    "n1": round(1 * LN(6) + 2 + 1 * LN(5) + 4),  # 9.40 -> 9
    "n2": round(0 + 2 + 1 * LN(5) + 4),  # 7.61 -> 8
    "n3": 0 + 2 + 0 + 4,  # 6
    "n4": 0 + 2,  # no zone label: only the hostname constraint
}
DEFAULT_EXPECTED = {"n1": 100 * 2 // 9, "n2": 100 * 3 // 9, "n3": 100 * 5 // 9, "n4": 100}


def test_system_defaults_from_a_service() -> None:
    handle = FakeHandle(
        Service=[
            service("web", {"app": "web"}),
            service("other-ns", {"tier": "x"}, namespace="other"),
            service("not-matching", {"app": "db"}),
        ]
    )
    table = make_table(DEFAULT_NODES, [web("w1", "n1"), pod("d", {"app": "db"}, on="n2")])
    raw, normalized = run_score(plugin_with(None, handle), pod("new", {"app": "web"}), table)
    assert raw == DEFAULT_EXPECTED_RAW == {"n1": 9, "n2": 8, "n3": 6, "n4": 2}
    assert normalized == DEFAULT_EXPECTED == {"n1": 22, "n2": 33, "n3": 55, "n4": 100}


def test_system_defaults_read_a_missing_zone_as_the_empty_zone() -> None:
    """Upstream looks the zone up as "" for nodes without it: they share a domain with zone=""."""
    nodes = [node("n1", "a"), node("n2", ""), node("n3")]
    handle = FakeHandle(Service=[service("web", {"app": "web"})])
    table = make_table(nodes, [web("w1", "n3")])
    raw, _ = run_score(plugin_with(None, handle), pod("new", {"app": "web"}), table)
    # hostname: 3 nodes -> ln 5 (+2); zone domains a and "" (n2, n3) -> ln 4 (+4), ""=1 from n3.
    assert raw == {"n1": 0 + 2 + 0 + 4, "n2": round(2 + LN(4) + 4), "n3": round(LN(5) + 2)}
    assert raw == {"n1": 6, "n2": 7, "n3": 4}


RS_OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs", "uid": "u", "controller": True}


def _replica_set(name: str = "web-rs", namespace: str = "default", selector: Any = WEB) -> ReplicaSet:
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": namespace}, "spec": {"selector": selector}}, ReplicaSet
    )


def test_system_defaults_from_a_replica_set_owner() -> None:
    handle = FakeHandle(ReplicaSet=[_replica_set()])
    table = make_table(DEFAULT_NODES, [web("w1", "n1")])
    incoming = pod("new", {"app": "web", "pod-template-hash": "x"}, owner=RS_OWNER)
    raw, normalized = run_score(plugin_with(None, handle), incoming, table)
    assert raw == DEFAULT_EXPECTED_RAW
    assert normalized == DEFAULT_EXPECTED


@pytest.mark.parametrize(
    "owner",
    [
        {**RS_OWNER, "controller": False},
        {**RS_OWNER, "apiVersion": "extensions/v1beta1"},
        {**RS_OWNER, "name": "gone"},
    ],
    ids=["not the controller", "other API group", "not found"],
)
def test_owner_that_gives_no_selector(owner: dict[str, Any]) -> None:
    handle = FakeHandle(ReplicaSet=[_replica_set(), _replica_set("gone", namespace="other")])
    state = CycleState()
    incoming = pod("new", {"app": "web"}, owner=owner)
    status = plugin_with(None, handle).pre_score(state, incoming, make_table(DEFAULT_NODES).all())
    assert status is not None and status.code == Code.SKIP


@pytest.mark.parametrize(
    ("objects", "owner", "expected"),
    [
        ({"Service": [service("s", {"app": "web"})]}, None, {"matchLabels": {"app": "web"}}),
        (
            {"Service": [service("s", {"app": "web"}), service("t", {"tier": "fe"})]},
            None,
            {"matchLabels": {"app": "web", "tier": "fe"}},
        ),
        ({"Service": [service("s", {})]}, None, None),  # an empty Service selector adds nothing
        (
            {
                "ReplicationController": [
                    msgspec.convert(
                        {
                            "metadata": {"name": "rc", "namespace": "default"},
                            "spec": {"selector": {"tier": "fe"}},
                        },
                        ReplicationController,
                    )
                ]
            },
            {"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "controller": True},
            {"matchLabels": {"tier": "fe"}},
        ),
        (
            {
                "Service": [service("s", {"app": "web"})],
                "StatefulSet": [
                    msgspec.convert(
                        {
                            "metadata": {"name": "ss", "namespace": "default"},
                            "spec": {
                                "selector": {
                                    "matchLabels": {"tier": "fe"},
                                    "matchExpressions": [{"key": "app", "operator": "Exists"}],
                                }
                            },
                        },
                        StatefulSet,
                    )
                ],
            },
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "ss", "controller": True},
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["fe"]},
                    {"key": "app", "operator": "Exists"},
                ],
            },
        ),
        (
            {"ReplicaSet": [_replica_set(selector=None)]},
            RS_OWNER,
            None,  # a ReplicaSet without selector selects nothing and adds nothing
        ),
    ],
    ids=[
        "service",
        "two services",
        "empty service selector",
        "replication controller",
        "stateful set",
        "no rs selector",
    ],
)
def test_default_selector(
    objects: dict[str, Any], owner: dict[str, Any] | None, expected: dict[str, Any] | None
) -> None:
    plugin = plugin_with(None, FakeHandle(**objects))
    incoming = pod("new", {"app": "web", "tier": "fe"}, owner=owner)
    got = plugin._default_selector(incoming)
    assert (msgspec.to_builtins(got) if got is not None else None) == expected


def test_list_defaulting_requires_every_key_and_uses_the_given_constraints() -> None:
    args = {
        "defaultingType": "List",
        "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}],
    }
    plugin = plugin_with(args, FakeHandle(Service=[service("s", {"app": "web"})]))
    table = make_table(DEFAULT_NODES, [web("w1", "n1")])
    raw, normalized = run_score(plugin, pod("new", {"app": "web"}), table)
    # Not System: n4 (no zone) is ignored; domains a, b -> ln 4.
    assert raw == {"n1": round(LN(4)), "n2": round(LN(4)), "n3": 0, "n4": 0}
    assert normalized == {"n1": 0, "n2": 0, "n3": 100, "n4": 0}


def test_round_half_away_from_zero() -> None:
    x = np.array([0.5, 1.5, 2.5, 2.4999999999999996, 7.0], dtype=np.float64)
    assert pts_scoring.round_half_away(x).tolist() == [1, 2, 3, 2, 7]
    assert [pts_scoring.round_one(v) for v in x.tolist()] == [1, 2, 3, 2, 7]


# --------------------------------------------------------------------------- args

ARG_ERRORS: list[tuple[dict[str, Any], str, str]] = [
    (
        {"defaultingType": "Sometimes"},
        "defaultingType",
        'unsupported value "Sometimes": supported values: "System", "List"',
    ),
    (
        {"defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}]},
        "defaultingType",
        'must be "List" when defaultConstraints are not empty ("System" uses the built-in ones)',
    ),
    (
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}],
        },
        "defaultConstraints[0].maxSkew",
        "must be greater than zero",
    ),
    (
        {
            "defaultingType": "List",
            "defaultConstraints": [{"topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}],
        },
        "defaultConstraints[0].maxSkew",
        "must be greater than zero",
    ),
    (
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}],
        },
        "defaultConstraints[0].topologyKey",
        "can not be empty",
    ),
    (
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "bad key", "whenUnsatisfiable": "DoNotSchedule"}
            ],
        },
        "defaultConstraints[0].topologyKey",
        'invalid label key "bad key": name part must consist of alphanumeric characters',
    ),
    (
        {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE}]},
        "defaultConstraints[0].whenUnsatisfiable",
        "can not be empty",
    ),
    (
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "Maybe"}],
        },
        "defaultConstraints[0].whenUnsatisfiable",
        'unsupported value "Maybe": supported values: "DoNotSchedule", "ScheduleAnyway"',
    ),
    (
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": WEB,
                }
            ],
        },
        "defaultConstraints[0].labelSelector",
        "constraint must not define a selector, as they deduced for each pod",
    ),
    (
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
                {"maxSkew": 3, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
            ],
        },
        "defaultConstraints[2]",
        f'duplicate value "{{{ZONE}, DoNotSchedule}}"',
    ),
]


@pytest.mark.parametrize(("raw", "path", "message"), ARG_ERRORS)
def test_args_validation(raw: dict[str, Any], path: str, message: str) -> None:
    errors = msgspec.convert(raw, PodTopologySpreadArgs).validate()
    assert len(errors) == 1
    assert errors[0].path == path
    assert errors[0].message.startswith(message)
    with pytest.raises(InputError) as info:
        decode_args(PodTopologySpread, raw)
    assert str(info.value).startswith(f"args.{path}: {message}")
    with pytest.raises(InputError):
        PodTopologySpread(msgspec.convert(raw, PodTopologySpreadArgs))


def test_args_defaults_and_valid_list() -> None:
    args = decode_args(PodTopologySpread, {})
    assert args == PodTopologySpreadArgs(default_constraints=[], defaulting_type="System")
    assert decode_args(PodTopologySpread, {"defaultingType": ""}).defaulting_type == "System"
    listed = decode_args(
        PodTopologySpread,
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
            ],
        },
    )
    assert [c.when_unsatisfiable for c in listed.default_constraints] == ["DoNotSchedule", "ScheduleAnyway"]


def test_unknown_arg_fields_are_refused() -> None:
    with pytest.raises(InputError, match="defaultConstrains"):
        decode_args(PodTopologySpread, {"defaultConstrains": []})


def test_registered_with_its_extension_points() -> None:
    registry = default_registry(entry_points=False)
    assert registry["PodTopologySpread"] is PodTopologySpread
    from kubesched.framework.interfaces import extension_points_of

    assert extension_points_of(PodTopologySpread) == ["preFilter", "filter", "preScore", "score"]


# --------------------------------------------------------------------------- reference model


def _final_selector(c: dict[str, Any], labels: Mapping[str, str]) -> tuple[Any, bool]:
    """(matcher, counts existing pods) of a pod constraint, straight from upstream's filtering.go."""
    raw = c.get("labelSelector")
    if raw is None:
        return compile_label_selector(None), False
    selector = msgspec.convert(raw, LabelSelector)
    extra = [
        {"key": k, "operator": "In", "values": [labels[k]]}
        for k in c.get("matchLabelKeys", [])
        if k in labels
    ]
    if extra:
        selector = msgspec.convert(
            {**raw, "matchExpressions": [*raw.get("matchExpressions", []), *extra]}, LabelSelector
        )
    empty = not selector.match_labels and not selector.match_expressions
    return compile_label_selector(selector), not empty


def _count(info: NodeInfo, ns: str, matcher: Any) -> int:
    return sum(
        1
        for pi in info.pods.values()
        if pi.pod.metadata.deletion_timestamp is None
        and pi.pod.metadata.namespace == ns
        and matcher.matches(pi.pod.metadata.labels)
    )


def _included(c: dict[str, Any], incoming: Pod, n: Node) -> bool:
    from kubesched.api.selectors import required_node_affinity_matches

    if c.get("nodeAffinityPolicy", "Honor") == "Honor" and not required_node_affinity_matches(
        incoming, n.metadata.name, n.metadata.labels
    ):
        return False
    return not (
        c.get("nodeTaintsPolicy", "Ignore") == "Honor"
        and find_untolerated_taint(n.spec.taints, incoming.spec.tolerations) is not None
    )


def reference_filter(incoming: Pod, infos: list[NodeInfo], constraints: list[dict[str, Any]]) -> list[Any]:
    hard = [c for c in constraints if c["whenUnsatisfiable"] == "DoNotSchedule"]
    ns, labels = incoming.metadata.namespace, incoming.metadata.labels
    keys = [c["topologyKey"] for c in hard]
    tables: list[tuple[dict[str, int], int]] = []
    for c in hard:
        matcher, counts = _final_selector(c, labels)
        domains: dict[str, int] = {}
        for info in infos:
            n = info.node
            if all(k in n.metadata.labels for k in keys) and _included(c, incoming, n):
                v = n.metadata.labels[c["topologyKey"]]
                domains[v] = domains.get(v, 0) + (_count(info, ns, matcher) if counts else 0)
        lowest = min(domains.values()) if domains else 2**31 - 1
        if len(domains) < c.get("minDomains", 1):
            lowest = 0
        tables.append((domains, lowest))
    out: list[Any] = []
    for info in infos:
        verdict = None
        for c, (per_domain, lowest) in zip(hard, tables, strict=True):
            value = info.node.metadata.labels.get(c["topologyKey"])
            if value is None:
                verdict = MISSING
                break
            self_match = _final_selector(c, labels)[0].matches(labels)
            if per_domain.get(value, 0) + self_match - lowest > c["maxSkew"]:
                verdict = UNSCHED
                break
        out.append(verdict)
    return out


def reference_scores(
    incoming: Pod,
    infos: list[NodeInfo],
    feasible: list[NodeInfo],
    constraints: list[dict[str, Any]],
    require_all: bool = True,
) -> tuple[list[int], list[int]]:
    """(raw, normalized) scores from upstream's scoring.go; without `require_all` a missing key reads ""."""
    soft = [c for c in constraints if c["whenUnsatisfiable"] == "ScheduleAnyway"]
    ns, labels = incoming.metadata.namespace, incoming.metadata.labels
    keys = [c["topologyKey"] for c in soft]

    def counted(n: Node) -> bool:
        return not require_all or all(k in n.metadata.labels for k in keys)

    kept = [i for i in feasible if counted(i.node)]
    prepared: list[tuple[Any, bool, float, dict[str, int] | None]] = []
    for c in soft:
        matcher, counts = _final_selector(c, labels)
        key = c["topologyKey"]
        if key == HOST:
            prepared.append((matcher, counts, math.log(len(kept) + 2), None))
            continue
        domains = dict.fromkeys({i.node.metadata.labels.get(key, "") for i in kept}, 0)
        for info in infos:
            n = info.node
            v = n.metadata.labels.get(key, "")
            if counted(n) and _included(c, incoming, n) and v in domains:
                domains[v] += _count(info, ns, matcher) if counts else 0
        prepared.append((matcher, counts, math.log(len(domains) + 2), domains))
    raw: list[int] = []
    for info in feasible:
        if info not in kept:
            raw.append(0)
            continue
        total = 0.0
        for c, (matcher, counts, weight, per_domain) in zip(soft, prepared, strict=True):
            value = info.node.metadata.labels.get(c["topologyKey"])
            if value is None:
                continue
            count = (_count(info, ns, matcher) if counts else 0) if per_domain is None else per_domain[value]
            total += count * weight + (c["maxSkew"] - 1)
        raw.append(math.floor(total + 0.5))
    scored = [r for r, info in zip(raw, feasible, strict=True) if info in kept]
    top, low = max([0, *scored]), min(scored, default=0)
    normalized = [
        0 if info not in kept else 100 if top == 0 else 100 * (top + low - r) // top
        for r, info in zip(raw, feasible, strict=True)
    ]
    return raw, normalized


# --------------------------------------------------------------------------- batch == per node == reference

_zone = st.sampled_from(["a", "b", "c", "", None])
_rack = st.sampled_from(["r1", "r2", None])
_taint = st.sampled_from(
    [
        None,
        Taint(key="dedicated", value="x", effect="NoSchedule"),
        Taint(key="soft", effect="PreferNoSchedule"),
    ]
)
_node_st = st.tuples(_zone, _rack, st.booleans(), _taint, st.sampled_from(["ssd", "hdd"]), st.integers(0, 9))
_pod_labels = st.fixed_dictionaries(
    {},
    optional={"app": st.sampled_from(["web", "db"]), "version": st.sampled_from(["v1", "v2"])},
)
_existing_st = st.tuples(st.integers(0, 5), st.sampled_from(["default", "other"]), _pod_labels, st.booleans())
_selector_st = st.sampled_from(
    [
        None,
        {},
        WEB,
        {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]},
        {"matchExpressions": [{"key": "version", "operator": "DoesNotExist"}]},
    ]
)


@st.composite
def _constraint_st(draw: st.DrawFn) -> dict[str, Any]:
    c = tsc(
        key=draw(st.sampled_from([ZONE, HOST, RACK])),
        max_skew=draw(st.integers(1, 3)),
        when=draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"])),
        selector=draw(_selector_st),
    )
    if draw(st.booleans()):
        c["minDomains"] = draw(st.integers(1, 4))
    for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        choice = draw(st.sampled_from([None, "Honor", "Ignore"]))
        if choice is not None:
            c[policy] = choice
    keys = draw(st.sampled_from([[], ["version"], ["track"]]))
    if keys:
        c["matchLabelKeys"] = keys
    return c


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_node_st, min_size=1, max_size=6),
    st.lists(_existing_st, max_size=12),
    _pod_labels,
    st.booleans(),
    st.booleans(),
    st.lists(_constraint_st(), min_size=1, max_size=3),
    st.data(),
)
def test_batch_agrees_with_per_node_and_reference(
    node_specs: list[Any],
    existing_specs: list[Any],
    labels: dict[str, str],
    with_node_selector: bool,
    tolerant: bool,
    constraints: list[dict[str, Any]],
    data: st.DataObject,
) -> None:
    nodes = []
    for i, (zone, rack, has_host, taint, disk, _) in enumerate(node_specs):
        extra = {"disk": disk, **({RACK: rack} if rack else {})}
        nodes.append(node(f"n{i}", zone, host=has_host, labels=extra, taints=[taint] if taint else []))
    existing = [
        pod(f"e{j}", lab, on=f"n{idx % len(nodes)}", namespace=ns, terminating=term)
        for j, (idx, ns, lab, term) in enumerate(existing_specs)
    ]
    table = make_table(nodes, existing)
    # Now and then the pod has no constraints and a Service gives it the System defaults.
    system_defaults = data.draw(st.integers(0, 3)) == 0
    incoming = pod(
        "new",
        labels,
        constraints=[] if system_defaults else constraints,
        node_selector={"disk": "ssd"} if with_node_selector else None,
        tolerations=[Toleration(key="dedicated", operator="Exists")] if tolerant else [],
    )
    handle: Any = FakeHandle(Service=[service("s", {"app": "web"})])
    plugin = PodTopologySpread(handle=handle)
    if system_defaults:
        selected = labels.get("app") == "web"
        constraints = (
            [tsc(HOST, 3, "ScheduleAnyway", WEB), tsc(ZONE, 5, "ScheduleAnyway", WEB)] if selected else []
        )

    # Filter.
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, table.all())
    if status is None:
        got = run_filter(plugin, incoming, table, state)  # asserts batch == per node (also on 1-node tables)
        assert list(got.values()) == reference_filter(incoming, table.infos, constraints)
        # After a nominated pod is added, both forms still agree.
        extra_pod = PodInfo(pod("nominated", data.draw(_pod_labels), on="n0"))
        copy = state.clone()
        assert plugin.add_pod(copy, incoming, extra_pod, table.infos[0]) is None
        run_filter(plugin, incoming, table, copy)
        assert plugin.remove_pod(copy, incoming, extra_pod, table.infos[0]) is None
        assert run_filter(plugin, incoming, table, copy) == got
    else:
        assert status.code == Code.SKIP
        assert all(c["whenUnsatisfiable"] == "ScheduleAnyway" for c in constraints)
        assert state.get(pts_filtering.PRE_FILTER_STATE_KEY) is None

    # Score, on a random feasible subset.
    rows = sorted(data.draw(st.sets(st.integers(0, len(nodes) - 1))))
    feasible = NodeSet(table, np.array(rows, dtype=np.intp))
    state = CycleState()
    status = plugin.pre_score(state, incoming, feasible)
    if status is not None:
        assert status.code == Code.SKIP
        assert all(c["whenUnsatisfiable"] == "DoNotSchedule" for c in constraints)
        return
    batch = plugin.score_nodes(state, incoming, feasible)
    per_node = [plugin.score(state, incoming, ni) for ni in feasible]
    assert batch.tolist() == per_node
    raw, expected_normalized = reference_scores(
        incoming, table.infos, feasible.infos, constraints, require_all=not system_defaults
    )
    assert per_node == raw
    for ni, expected in zip(feasible, per_node, strict=True):
        assert plugin.score_nodes(state, incoming, NodeTable([ni]).all()).tolist() == [expected]
    normalized = batch.copy()
    assert plugin.normalize_score(state, incoming, feasible, normalized) is None
    assert normalized.tolist() == expected_normalized


# --------------------------------------------------------------------------- through the CLI

CLUSTER_YAML = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1, topology.kubernetes.io/zone: a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2, topology.kubernetes.io/zone: a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n3, labels: {kubernetes.io/hostname: n3, topology.kubernetes.io/zone: b}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n4, labels: {kubernetes.io/hostname: n4}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n5, labels: {kubernetes.io/hostname: n5, topology.kubernetes.io/zone: b}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: default, labels: {app: web}}
spec: {nodeName: n1, containers: [{name: c, image: pause}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-2, namespace: default, labels: {app: web}}
spec: {nodeName: n1, containers: [{name: c, image: pause}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-3, namespace: default, labels: {app: web}}
spec: {nodeName: n3, containers: [{name: c, image: pause}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-elsewhere, namespace: other, labels: {app: web}}
spec: {nodeName: n5, containers: [{name: c, image: pause}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-new, namespace: default, labels: {app: web}}
spec:
  containers: [{name: c, image: pause}]
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {app: web}}
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector: {matchLabels: {app: web}}
"""


def test_simulate_explains_pod_topology_spread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = single_plugin_config("PodTopologySpread")
    expected_args = {"PodTopologySpread": {"kind": "PodTopologySpreadArgs", "defaultingType": "System"}}
    report = simulate_explain(tmp_path, capsys, CLUSTER_YAML, config, expected_args=expected_args)
    (result,) = report["pods"]
    assert (result["name"], result["result"], result["node"]) == ("web-new", "Scheduled", "n5")
    # Zone a holds 2 web pods, zone b 1 (the pod in namespace "other" does not count): a is at
    # skew 2+1-1 = 2 > 1; n4 has no zone label at all.
    skew = {"plugin": "PodTopologySpread", "code": "Unschedulable", "reasons": [REASON]}
    assert result["filter"] == {
        "n1": skew,
        "n2": skew,
        "n4": {
            "plugin": "PodTopologySpread",
            "code": "UnschedulableAndUnresolvable",
            "reasons": [REASON_LABEL],
        },
    }
    # Hostname spreading among n3 (1 web pod) and n5 (0): raw round(1*ln 4) = 1 and 0,
    # normalized 100*(1+0-1)//1 = 0 and 100*(1+0-0)//1 = 100; weight 1.
    assert result["scores"] == {
        "n3": {"plugins": {"PodTopologySpread": 0}, "total": 0},
        "n5": {"plugins": {"PodTopologySpread": 100}, "total": 100},
    }
