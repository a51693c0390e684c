"""InterPodAffinity: PreFilter / Filter / AddPod / RemovePod / PreScore / Score / NormalizeScore, args,
queueing hints, and one run through `kubesched simulate` (upstream
`pkg/scheduler/framework/plugins/interpodaffinity/`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import msgspec
import numpy as np
import pytest
from explain_harness import simulate_explain, single_plugin_config
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.cluster_objects import Namespace
from kubesched.api.label_keys import merge_label_keys
from kubesched.api.objects import Node, Pod
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import QueueingHint, QueueingHintFn, Resource
from kubesched.framework.interfaces import Handle
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.registry import decode_args, instantiate
from kubesched.framework.status import Code, Status
from kubesched.plugins import default_registry
from kubesched.plugins.inter_pod_affinity import InterPodAffinity, InterPodAffinityArgs
from kubesched.testing.builders import make_node, make_pod, make_table

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"

#: Expected verdicts, short: "ok" passes, else the reason's short name.
VERDICTS: dict[str, Status | None] = {
    "ok": None,
    "aff": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_AFFINITY),
    "anti": Status(Code.UNSCHEDULABLE, REASON_ANTI),
    "existing": Status(Code.UNSCHEDULABLE, REASON_EXISTING),
}

Term = dict[str, Any]


# --------------------------------------------------------------------------- builders


def term(key: str = ZONE, labels: Mapping[str, str] | None = None, **extra: Any) -> Term:
    """A PodAffinityTerm; `labels` become matchLabels (None: no labelSelector at all)."""
    t: Term = {"topologyKey": key}
    if labels is not None:
        t["labelSelector"] = {"matchLabels": dict(labels)}
    t.update(extra)
    return t


def pod(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    node: str = "",
    ns: str = "default",
    affinity: Sequence[Term] = (),
    anti: Sequence[Term] = (),
    pref: Sequence[tuple[int, Term]] = (),
    pref_anti: Sequence[tuple[int, Term]] = (),
    priority: int | None = None,
) -> Pod:
    spec_affinity: dict[str, Any] = {}
    for key, required, preferred in (("podAffinity", affinity, pref), ("podAntiAffinity", anti, pref_anti)):
        if required or preferred:
            spec_affinity[key] = {
                "requiredDuringSchedulingIgnoredDuringExecution": list(required),
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": w, "podAffinityTerm": t} for w, t in preferred
                ],
            }
    spec = {"affinity": spec_affinity} if spec_affinity else {}
    return make_pod(name, namespace=ns, labels=labels, node_name=node, spec=spec, priority=priority)


def admitted(p: Pod) -> Pod:
    """The pod as the API server stores it: its matchLabelKeys / mismatchLabelKeys merged."""
    return merge_label_keys(p)


def node(name: str, zone: str | None = None, **labels: str) -> Node:
    all_labels = dict(labels)
    if zone is not None:
        all_labels[ZONE] = zone
    return make_node(name, labels=all_labels)


def namespace(name: str, **labels: str) -> Namespace:
    return msgspec.convert({"metadata": {"name": name, "labels": labels}}, Namespace)


class FakeHandle:
    """The two things InterPodAffinity asks of its Handle: the snapshot and the Namespace lister."""

    def __init__(self, table: NodeTable | None = None, namespaces: Iterable[Namespace] = ()) -> None:
        self.table = table
        self.namespaces = list(namespaces)
        self.listed = 0

    @property
    def snapshot(self) -> NodeTable:
        assert self.table is not None
        return self.table

    def lister(self, kind: str) -> Sequence[Any]:
        assert kind == "Namespace"
        self.listed += 1
        return self.namespaces


def plugin_with(
    namespaces: Iterable[Namespace] = (),
    table: NodeTable | None = None,
    *,
    hard: int = 1,
    ignore: bool = False,
) -> InterPodAffinity:
    args = InterPodAffinityArgs(hard_pod_affinity_weight=hard, ignore_preferred_terms_of_existing_pods=ignore)
    return InterPodAffinity(args, cast(Handle, FakeHandle(table, namespaces)))


#: The default cluster: two nodes in zone a, one in zone b, one without a zone label.
NODES = (node("a1", "a"), node("a2", "a"), node("b1", "b"), node("x"))


def run_filter(
    plugin: InterPodAffinity, incoming: Pod, table: NodeTable, nodes: NodeSet | None = None
) -> dict[str, Status | None] | Status:
    """PreFilter, then Filter in both forms (asserted equal): verdict per node, or PreFilter's status."""
    nodes = nodes if nodes is not None else table.all()
    state = CycleState()
    result, status = plugin.pre_filter(state, incoming, nodes)
    assert result is None  # InterPodAffinity never narrows the node list
    if status is not None:
        return status
    per_node = {ni.name: plugin.filter(state, incoming, ni) for ni in nodes}
    batch = plugin.filter_nodes(state, incoming, nodes)
    assert {
        name: None if c < 0 else batch.statuses[c] for name, c in zip(nodes.names, batch.codes, strict=True)
    } == per_node
    return per_node


def verdicts(result: dict[str, Status | None] | Status) -> dict[str, str] | str:
    """`run_filter`'s result in the short form of the tables below ("skip" for a PreFilter Skip)."""
    if isinstance(result, Status):
        assert result.code == Code.SKIP, result
        return "skip"
    short = {repr(v): k for k, v in VERDICTS.items()}
    return {name: short[repr(status)] for name, status in result.items()}


# --------------------------------------------------------------------------- Filter

web_a1 = pod("web-1", {"app": "web"}, node="a1")
guard_a1 = pod("guard", {"app": "guard"}, node="a1", anti=[term(ZONE, {"app": "intruder"})])

FILTER_CASES: list[tuple[str, list[Pod], Pod, list[Namespace], dict[str, str] | str]] = [
    ("no terms anywhere: PreFilter skips", [web_a1], pod("p", {"app": "web"}), [], "skip"),
    (
        "required affinity: the zone holding a match",
        [web_a1],
        pod("p", affinity=[term(ZONE, {"app": "web"})]),
        [],
        {"a1": "ok", "a2": "ok", "b1": "aff", "x": "aff"},
    ),
    (
        "required affinity by hostname",
        [web_a1],
        pod("p", affinity=[term(HOST, {"app": "web"})]),
        [],
        {"a1": "ok", "a2": "aff", "b1": "aff", "x": "aff"},
    ),
    (
        "affinity needs one pod matching all terms, not one per term",
        [web_a1, pod("db", {"app": "db"}, node="a2")],
        pod("p", affinity=[term(ZONE, {"app": "web"}), term(ZONE, {"app": "db"})]),
        [],
        {"a1": "aff", "a2": "aff", "b1": "aff", "x": "aff"},
    ),
    (
        "a pod matching all terms satisfies every term in its own domains",
        [web_a1, pod("both", {"app": "web", "tier": "db"}, node="b1")],
        pod("p", affinity=[term(ZONE, {"app": "web"}), term(HOST, {"tier": "db"})]),
        [],
        {"a1": "aff", "a2": "aff", "b1": "ok", "x": "aff"},
    ),
    (
        "first pod of a self-affine group: allowed wherever the key exists",
        [web_a1],
        pod("p", {"app": "cache"}, affinity=[term(ZONE, {"app": "cache"})]),
        [],
        {"a1": "ok", "a2": "ok", "b1": "ok", "x": "aff"},
    ),
    (
        "no exception when the pod does not match its own terms",
        [web_a1],
        pod("p", {"app": "other"}, affinity=[term(ZONE, {"app": "cache"})]),
        [],
        {"a1": "aff", "a2": "aff", "b1": "aff", "x": "aff"},
    ),
    (
        "no exception once a match exists anywhere",
        [pod("cache-1", {"app": "cache"}, node="b1")],
        pod("p", {"app": "cache"}, affinity=[term(ZONE, {"app": "cache"})]),
        [],
        {"a1": "aff", "a2": "aff", "b1": "ok", "x": "aff"},
    ),
    (
        "topology key on no node: nothing passes, even self-affine",
        [],
        pod("p", {"app": "cache"}, affinity=[term("rack", {"app": "cache"})]),
        [],
        {"a1": "aff", "a2": "aff", "b1": "aff", "x": "aff"},
    ),
    (
        "required anti-affinity: the zone holding a match is refused, a node without the key is not",
        [web_a1],
        pod("p", anti=[term(ZONE, {"app": "web"})]),
        [],
        {"a1": "anti", "a2": "anti", "b1": "ok", "x": "ok"},
    ),
    (
        "required anti-affinity by hostname",
        [web_a1],
        pod("p", anti=[term(HOST, {"app": "web"})]),
        [],
        {"a1": "anti", "a2": "ok", "b1": "ok", "x": "ok"},
    ),
    (
        "a running pod's anti-affinity repels the incoming pod from its zone",
        [guard_a1],
        pod("p", {"app": "intruder"}),
        [],
        {"a1": "existing", "a2": "existing", "b1": "ok", "x": "ok"},
    ),
    (
        "a running pod's anti-affinity that does not select the pod: PreFilter skips",
        [guard_a1],
        pod("p", {"app": "friend"}),
        [],
        "skip",
    ),
    (
        "a running pod's anti-affinity on a node without the key counts nowhere",
        [pod("guard", node="x", anti=[term(ZONE, {"app": "intruder"})])],
        pod("p", {"app": "intruder"}),
        [],
        "skip",
    ),
    (
        "affinity is checked before anti-affinity",
        [web_a1],
        pod("p", affinity=[term(ZONE, {"app": "db"})], anti=[term(ZONE, {"app": "web"})]),
        [],
        {"a1": "aff", "a2": "aff", "b1": "aff", "x": "aff"},
    ),
    (
        "anti-affinity is checked before the running pods' anti-affinity",
        [guard_a1],
        pod("p", {"app": "intruder"}, anti=[term(ZONE, {"app": "guard"})]),
        [],
        {"a1": "anti", "a2": "anti", "b1": "ok", "x": "ok"},
    ),
    (
        "a term selects the pod's own namespace by default",
        [pod("web-1", {"app": "web"}, node="a1", ns="other")],
        pod("p", affinity=[term(ZONE, {"app": "web"})]),
        [],
        {"a1": "aff", "a2": "aff", "b1": "aff", "x": "aff"},
    ),
    (
        "namespaces listed in the term",
        [pod("web-1", {"app": "web"}, node="a1", ns="other")],
        pod("p", affinity=[term(ZONE, {"app": "web"}, namespaces=["other"])]),
        [],
        {"a1": "ok", "a2": "ok", "b1": "aff", "x": "aff"},
    ),
    (
        "listed namespaces replace the pod's own",
        [web_a1],
        pod("p", affinity=[term(ZONE, {"app": "web"}, namespaces=["other"])]),
        [],
        {"a1": "aff", "a2": "aff", "b1": "aff", "x": "aff"},
    ),
    (
        "an empty namespaceSelector selects every namespace",
        [pod("web-1", {"app": "web"}, node="a1", ns="other")],
        pod("p", affinity=[term(ZONE, {"app": "web"}, namespaceSelector={})]),
        [],
        {"a1": "ok", "a2": "ok", "b1": "aff", "x": "aff"},
    ),
    (
        "namespaceSelector matched against the Namespaces' labels",
        [pod("web-1", {"app": "web"}, node="a1", ns="other")],
        pod("p", affinity=[term(ZONE, {"app": "web"}, namespaceSelector={"matchLabels": {"team": "x"}})]),
        [namespace("other", team="x"), namespace("default")],
        {"a1": "ok", "a2": "ok", "b1": "aff", "x": "aff"},
    ),
    (
        "namespaceSelector matching no Namespace",
        [pod("web-1", {"app": "web"}, node="a1", ns="other")],
        pod("p", affinity=[term(ZONE, {"app": "web"}, namespaceSelector={"matchLabels": {"team": "y"}})]),
        [namespace("other", team="x")],
        {"a1": "aff", "a2": "aff", "b1": "aff", "x": "aff"},
    ),
    (
        "namespaces and namespaceSelector are unioned",
        [
            pod("web-1", {"app": "web"}, node="a1", ns="labelled"),
            pod("web-2", {"app": "web"}, node="b1", ns="listed"),
        ],
        pod(
            "p",
            anti=[
                term(
                    ZONE, {"app": "web"}, namespaces=["listed"], namespaceSelector={"matchLabels": {"t": "x"}}
                )
            ],
        ),
        [namespace("labelled", t="x"), namespace("listed")],
        {"a1": "anti", "a2": "anti", "b1": "anti", "x": "ok"},
    ),
    (
        "a running pod's namespaceSelector reads the incoming pod's Namespace labels",
        [
            pod(
                "guard",
                node="a1",
                ns="guards",
                anti=[term(ZONE, {"app": "intruder"}, namespaceSelector={"matchLabels": {"tier": "front"}})],
            )
        ],
        pod("p", {"app": "intruder"}, ns="web"),
        [namespace("web", tier="front")],
        {"a1": "existing", "a2": "existing", "b1": "ok", "x": "ok"},
    ),
    (
        "a running pod's namespaceSelector; the incoming pod's Namespace has other labels",
        [
            pod(
                "guard",
                node="a1",
                ns="guards",
                anti=[term(ZONE, {"app": "intruder"}, namespaceSelector={"matchLabels": {"tier": "front"}})],
            )
        ],
        pod("p", {"app": "intruder"}, ns="web"),
        [namespace("web", tier="back")],
        "skip",
    ),
    (
        "a running pod's term defaults to the running pod's namespace",
        [pod("guard", node="a1", ns="guards", anti=[term(ZONE, {"app": "intruder"})])],
        pod("p", {"app": "intruder"}),
        [],
        "skip",
    ),
    (
        "matchLabelKeys: only pods with the incoming pod's value count",
        [pod("w1", {"app": "web", "v": "1"}, node="a1"), pod("w2", {"app": "web", "v": "2"}, node="b1")],
        admitted(pod("p", {"v": "2"}, affinity=[term(ZONE, {"app": "web"}, matchLabelKeys=["v"])])),
        [],
        {"a1": "aff", "a2": "aff", "b1": "ok", "x": "aff"},
    ),
    (
        "matchLabelKeys are the API server's to merge: the plugin does not read them (v1.37.2)",
        [pod("w1", {"app": "web", "v": "1"}, node="a1"), pod("w2", {"app": "web", "v": "2"}, node="b1")],
        pod("p", {"v": "2"}, affinity=[term(ZONE, {"app": "web"}, matchLabelKeys=["v"])]),
        [],
        {"a1": "ok", "a2": "ok", "b1": "ok", "x": "aff"},
    ),
    (
        "matchLabelKeys naming a label the pod lacks is ignored",
        [pod("w1", {"app": "web", "v": "1"}, node="a1"), pod("w2", {"app": "web", "v": "2"}, node="b1")],
        admitted(pod("p", affinity=[term(ZONE, {"app": "web"}, matchLabelKeys=["v"])])),
        [],
        {"a1": "ok", "a2": "ok", "b1": "ok", "x": "aff"},
    ),
    (
        "mismatchLabelKeys: pods with another value repel",
        [pod("w1", {"app": "web", "v": "1"}, node="a1"), pod("w2", {"app": "web", "v": "2"}, node="b1")],
        admitted(pod("p", {"v": "2"}, anti=[term(ZONE, {"app": "web"}, mismatchLabelKeys=["v"])])),
        [],
        {"a1": "anti", "a2": "anti", "b1": "ok", "x": "ok"},
    ),
    (
        "a running pod's matchLabelKeys take the running pod's label values",
        [
            admitted(
                pod(
                    "guard",
                    {"tenant": "t1"},
                    node="b1",
                    anti=[term(ZONE, {"app": "w"}, matchLabelKeys=["tenant"])],
                )
            )
        ],
        pod("p", {"app": "w", "tenant": "t1"}),
        [],
        {"a1": "ok", "a2": "ok", "b1": "existing", "x": "ok"},
    ),
    (
        "a running pod's matchLabelKeys: another tenant is not repelled",
        [
            admitted(
                pod(
                    "guard",
                    {"tenant": "t1"},
                    node="b1",
                    anti=[term(ZONE, {"app": "w"}, matchLabelKeys=["tenant"])],
                )
            )
        ],
        pod("p", {"app": "w", "tenant": "t2"}),
        [],
        "skip",
    ),
    (
        "the selector the API server merged at creation is kept: a label changed since changes nothing",
        [pod("w1", {"app": "web", "v": "1"}, node="a1")],
        pod(
            "p",
            {"v": "2"},
            affinity=[
                {
                    "topologyKey": ZONE,
                    "labelSelector": {
                        "matchLabels": {"app": "web"},
                        "matchExpressions": [{"key": "v", "operator": "In", "values": ["1"]}],
                    },
                    "matchLabelKeys": ["v"],
                }
            ],
        ),
        [],
        {"a1": "ok", "a2": "ok", "b1": "aff", "x": "aff"},
    ),
    (
        "a term without labelSelector selects no pod",
        [web_a1],
        pod("p", anti=[term(ZONE, None)]),
        [],
        {"a1": "ok", "a2": "ok", "b1": "ok", "x": "ok"},
    ),
    (
        "an empty labelSelector selects every pod",
        [web_a1],
        pod("p", anti=[term(ZONE, {})]),
        [],
        {"a1": "anti", "a2": "anti", "b1": "ok", "x": "ok"},
    ),
    (
        "a running pod with an invalid term contributes nothing",
        [
            pod(
                "bad",
                node="a1",
                anti=[
                    {
                        "topologyKey": ZONE,
                        "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Bogus"}]},
                    }
                ],
            )
        ],
        pod("p", {"app": "intruder"}),
        [],
        "skip",
    ),
]


@pytest.mark.parametrize(
    ("existing", "incoming", "namespaces", "expected"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(
    existing: list[Pod], incoming: Pod, namespaces: list[Namespace], expected: dict[str, str] | str
) -> None:
    table = make_table(NODES, existing)
    plugin = plugin_with(namespaces)
    assert verdicts(run_filter(plugin, incoming, table)) == expected


def test_reasons_and_codes() -> None:
    """Each reason with its code, produced by one scenario per rule."""
    table = make_table(NODES, [web_a1, guard_a1])
    plugin = plugin_with()
    aff = run_filter(plugin, pod("p", affinity=[term(ZONE, {"app": "db"})]), table)
    anti = run_filter(plugin, pod("p", anti=[term(HOST, {"app": "web"})]), table)
    existing = run_filter(plugin, pod("p", {"app": "intruder"}), table)
    assert isinstance(aff, dict) and isinstance(anti, dict) and isinstance(existing, dict)
    for status, code, reason in (
        (aff["a1"], Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_AFFINITY),
        (anti["a1"], Code.UNSCHEDULABLE, REASON_ANTI),
        (existing["a1"], Code.UNSCHEDULABLE, REASON_EXISTING),
    ):
        assert status is not None
        assert (status.code, status.reasons) == (code, (reason,))


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        (
            {
                "affinity": [
                    term(ZONE, None)
                    | {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "X"}]}}
                ]
            },
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
            ".labelSelector.matchExpressions[0].operator",
        ),
        (
            {"anti": [term(ZONE, {"app": "web"}, namespaceSelector={"matchLabels": {"bad key!": "v"}})]},
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
            '.namespaceSelector.matchLabels["bad key!"]',
        ),
        (
            {"pref": [(5, term(ZONE, {"app": "not a valid value!"}))]},
            "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
            ".podAffinityTerm.labelSelector.matchLabels[app]",
        ),
    ],
    ids=["required affinity", "required anti-affinity namespaceSelector", "preferred affinity"],
)
def test_pre_filter_rejects_unparsable_terms(bad: dict[str, Any], where: str) -> None:
    status = run_filter(plugin_with(), pod("p", **bad), make_table(NODES))
    assert isinstance(status, Status)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message().startswith(f"parsing pod: {where}: ")


def test_several_parse_errors_are_bracketed() -> None:
    bad = {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "X"}]}, "topologyKey": ZONE}
    status = run_filter(plugin_with(), pod("p", affinity=[bad], anti=[bad]), make_table(NODES))
    assert isinstance(status, Status)
    message = status.message()
    assert message.startswith("parsing pod: [spec.affinity.podAffinity.")
    assert ", spec.affinity.podAntiAffinity." in message and message.endswith("]")


def test_filter_on_a_subset_and_on_a_one_node_table() -> None:
    """Domains are counted over the whole table; a one-node table (nominated pods, preemption)
    has its own domain ids, which must not confuse the lookup."""
    table = make_table(NODES, [web_a1])
    plugin = plugin_with()
    incoming = pod("p", affinity=[term(ZONE, {"app": "web"})])
    subset = table.subset(["a2", "b1"])
    assert verdicts(run_filter(plugin, incoming, table, subset)) == {"a2": "ok", "b1": "aff"}
    state = CycleState()
    plugin.pre_filter(state, incoming, table.all())
    for name, expected in (("a2", "ok"), ("b1", "aff"), ("x", "aff")):
        alone = NodeTable([table.infos[table.index[name]]])
        result = plugin.filter_nodes(state, incoming, alone.all())
        got = None if result.codes[0] < 0 else result.statuses[int(result.codes[0])]
        assert got == VERDICTS[expected]


def test_filter_without_pre_filter_state_is_an_error_as_upstream() -> None:
    """PreFilter disabled: upstream's Filter and AddPod/RemovePod return an error, never compute."""
    table = make_table(NODES, [web_a1])
    incoming = pod("p", anti=[term(ZONE, {"app": "web"})])
    plugin = plugin_with(table=table)
    missing = 'error reading "PreFilterInterPodAffinity" from cycleState: not found'
    for ni in table.infos:
        status = plugin.filter(CycleState(), incoming, ni)
        assert status is not None and status.code == Code.ERROR and status.message() == missing
    batch = plugin.filter_nodes(CycleState(), incoming, table.all())
    assert batch.passed.tolist() == [False] * 4 and batch.statuses[0].message() == missing
    added = plugin.add_pod(CycleState(), incoming, PodInfo(web_a1), table.infos[0])
    assert added is not None and added.code == Code.ERROR and added.message() == missing


def test_namespaces_are_listed_only_when_a_selector_needs_them() -> None:
    table = make_table(NODES, [web_a1, guard_a1])
    handle = FakeHandle(table, [namespace("default")])
    plugin = InterPodAffinity(handle=cast(Handle, handle))
    run_filter(plugin, pod("p", {"app": "intruder"}, affinity=[term(ZONE, {"app": "web"})]), table)
    assert handle.listed == 0
    run_filter(
        plugin,
        pod("p", affinity=[term(ZONE, {"app": "web"}, namespaceSelector={"matchLabels": {"a": "b"}})]),
        table,
    )
    assert handle.listed == 1


def test_compiled_terms_are_shared_and_do_not_read_the_pods_labels() -> None:
    plugin = InterPodAffinity()
    p = pod("p", {"v": "1"}, affinity=[term(ZONE, {"app": "web"}, matchLabelKeys=["v"])])
    first = plugin.terms_of(p)
    assert plugin.terms_of(p) is first
    relabelled = msgspec.structs.replace(p, metadata=msgspec.structs.replace(p.metadata, labels={"v": "2"}))
    assert plugin.terms_of(relabelled).required_affinity[0] is first.required_affinity[0]
    assert first.required_affinity[0].selector.matches({"app": "web", "v": "3"})


# --------------------------------------------------------------------------- AddPod / RemovePod


def _verdicts_in(
    plugin: InterPodAffinity, state: CycleState, incoming: Pod, table: NodeTable
) -> dict[str, str]:
    out = verdicts({ni.name: plugin.filter(state, incoming, ni) for ni in table.infos})
    batch = plugin.filter_nodes(state, incoming, table.all())
    assert [v == "ok" for v in cast(dict[str, str], out).values()] == batch.passed.tolist()
    return cast(dict[str, str], out)


def test_add_and_remove_pod_update_affinity_counts() -> None:
    table = make_table(NODES)
    plugin = plugin_with()
    incoming = pod("p", affinity=[term(ZONE, {"app": "web"})])
    state = CycleState()
    assert plugin.pre_filter(state, incoming, table.all()) == (None, None)
    assert set(_verdicts_in(plugin, state, incoming, table).values()) == {"aff"}

    web = PodInfo(pod("web", {"app": "web"}, node="b1"))
    b1 = table.infos[table.index["b1"]]
    with_web = state.clone()
    assert plugin.add_pod(with_web, incoming, web, b1) is None
    assert _verdicts_in(plugin, with_web, incoming, table) == {
        "a1": "aff",
        "a2": "aff",
        "b1": "ok",
        "x": "aff",
    }
    assert set(_verdicts_in(plugin, state, incoming, table).values()) == {"aff"}  # the clone was independent

    assert plugin.remove_pod(with_web, incoming, web, b1) is None
    assert set(_verdicts_in(plugin, with_web, incoming, table).values()) == {"aff"}


def test_add_and_remove_pod_toggle_the_self_affinity_exception() -> None:
    table = make_table(NODES)
    plugin = plugin_with()
    incoming = pod("p", {"app": "cache"}, affinity=[term(ZONE, {"app": "cache"})])
    state = CycleState()
    plugin.pre_filter(state, incoming, table.all())
    everywhere = {"a1": "ok", "a2": "ok", "b1": "ok", "x": "aff"}
    assert _verdicts_in(plugin, state, incoming, table) == everywhere
    other = PodInfo(pod("cache-1", {"app": "cache"}, node="b1"))
    b1 = table.infos[table.index["b1"]]
    plugin.add_pod(state, incoming, other, b1)
    assert _verdicts_in(plugin, state, incoming, table) == {"a1": "aff", "a2": "aff", "b1": "ok", "x": "aff"}
    plugin.remove_pod(state, incoming, other, b1)
    assert _verdicts_in(plugin, state, incoming, table) == everywhere


def test_add_and_remove_pod_update_anti_affinity_counts_both_ways() -> None:
    table = make_table(NODES, [web_a1])
    plugin = plugin_with()
    incoming = pod("p", {"app": "intruder"}, anti=[term(HOST, {"app": "db"})])
    state = CycleState()
    plugin.pre_filter(state, incoming, table.all())
    assert set(_verdicts_in(plugin, state, incoming, table).values()) == {"ok"}
    a2, b1 = (table.infos[table.index[n]] for n in ("a2", "b1"))
    db = PodInfo(pod("db", {"app": "db"}, node="a2"))
    guard = PodInfo(pod("guard", node="b1", anti=[term(ZONE, {"app": "intruder"})]))
    plugin.add_pod(state, incoming, db, a2)
    plugin.add_pod(state, incoming, guard, b1)
    assert _verdicts_in(plugin, state, incoming, table) == {
        "a1": "ok",
        "a2": "anti",
        "b1": "existing",
        "x": "ok",
    }
    plugin.remove_pod(state, incoming, db, a2)
    plugin.remove_pod(state, incoming, guard, b1)
    assert set(_verdicts_in(plugin, state, incoming, table).values()) == {"ok"}


def test_remove_pod_of_a_running_pod_frees_its_domain() -> None:
    """Preemption's view: removing the running pod that repels the incoming one."""
    table = make_table(NODES, [guard_a1])
    plugin = plugin_with()
    incoming = pod("p", {"app": "intruder"})
    state = CycleState()
    plugin.pre_filter(state, incoming, table.all())
    a1 = table.infos[table.index["a1"]]
    victim = a1.pods[PodInfo(guard_a1).key]
    assert _verdicts_in(plugin, state, incoming, table)["a1"] == "existing"
    plugin.remove_pod(state, incoming, victim, a1)
    assert set(_verdicts_in(plugin, state, incoming, table).values()) == {"ok"}


def test_add_pod_without_pre_filter_state_is_an_error() -> None:
    plugin = plugin_with()
    ni = NodeInfo(node("a1", "a"))
    status = plugin.add_pod(CycleState(), pod("p"), PodInfo(pod("q", node="a1")), ni)
    assert status is not None and status.code == Code.ERROR


# --------------------------------------------------------------------------- Score


def run_score(
    plugin: InterPodAffinity, incoming: Pod, table: NodeTable, nodes: NodeSet | None = None
) -> tuple[dict[str, int], dict[str, int]] | Status:
    """PreScore then Score in both forms (asserted equal) and NormalizeScore: (raw, normalized)."""
    nodes = nodes if nodes is not None else table.all()
    state = CycleState()
    status = plugin.pre_score(state, incoming, nodes)
    if status is not None:
        return status
    per_node = [plugin.score(state, incoming, ni) for ni in nodes]
    batch = plugin.score_nodes(state, incoming, nodes)
    assert batch.tolist() == per_node
    normalized = batch.copy()
    assert plugin.normalize_score(state, incoming, nodes, normalized) is None
    names = nodes.names
    return dict(zip(names, cast(list[int], per_node), strict=True)), dict(
        zip(names, normalized.tolist(), strict=True)
    )


def existing_for_scoring() -> list[Pod]:
    return [
        pod("web-1", {"app": "web"}, node="a1"),
        pod("db-1", {"app": "db"}, node="b1"),
        pod("cache-1", {"app": "cache"}, node="x"),
    ]


SCORE_CASES: list[tuple[str, dict[str, Any], list[Pod], Pod, dict[str, int] | str, dict[str, int] | None]] = [
    (
        "preferred affinity: weight per matching domain",
        {},
        existing_for_scoring(),
        pod("p", pref=[(30, term(ZONE, {"app": "web"})), (10, term(HOST, {"app": "db"}))]),
        {"a1": 30, "a2": 30, "b1": 10, "x": 0},
        # 10/30 = 0.333 -> 33
        {"a1": 100, "a2": 100, "b1": 33, "x": 0},
    ),
    (
        "preferred anti-affinity subtracts; min-max normalization",
        {},
        existing_for_scoring(),
        pod("p", pref=[(5, term(HOST, {"app": "db"}))], pref_anti=[(20, term(ZONE, {"app": "web"}))]),
        {"a1": -20, "a2": -20, "b1": 5, "x": 0},
        # min -20, max 5: x = 20/25 -> 80
        {"a1": 0, "a2": 0, "b1": 100, "x": 80},
    ),
    (
        "a running pod on a node without the term's key adds nothing",
        {},
        existing_for_scoring(),
        pod("p", pref=[(7, term(ZONE, {"app": "cache"})), (3, term(ZONE, {"app": "web"}))]),
        {"a1": 3, "a2": 3, "b1": 0, "x": 0},
        {"a1": 100, "a2": 100, "b1": 0, "x": 0},
    ),
    (
        "hardPodAffinityWeight for a running pod's required affinity matching the incoming pod",
        {"hard": 7},
        [
            pod("e", node="a1", affinity=[term(ZONE, {"app": "in"})]),
            pod("f", node="b1", affinity=[term(ZONE, {})]),
        ],
        pod("p", {"app": "in"}),
        {"a1": 7, "a2": 7, "b1": 7, "x": 0},
        {"a1": 100, "a2": 100, "b1": 100, "x": 0},
    ),
    (
        "hardPodAffinityWeight adds per matching term",
        {"hard": 2},
        [pod("e", node="a1", affinity=[term(ZONE, {"app": "in"}), term(HOST, {})])],
        pod("p", {"app": "in"}),
        {"a1": 4, "a2": 2, "b1": 0, "x": 0},
        {"a1": 100, "a2": 50, "b1": 0, "x": 0},
    ),
    (
        "hardPodAffinityWeight 0 turns required terms of running pods off",
        {"hard": 0},
        [pod("e", node="a1", affinity=[term(ZONE, {"app": "in"})])],
        pod("p", {"app": "in"}),
        "skip",
        None,
    ),
    (
        "running pods' preferred affinity and anti-affinity",
        {},
        [
            pod("e1", node="a1", pref=[(4, term(ZONE, {"app": "in"}))]),
            pod("e2", node="b1", pref_anti=[(6, term(HOST, {"app": "in"}))]),
        ],
        pod("p", {"app": "in"}),
        {"a1": 4, "a2": 4, "b1": -6, "x": 0},
        # min -6, max 4: x = 6/10 -> 60
        {"a1": 100, "a2": 100, "b1": 0, "x": 60},
    ),
    (
        "running pods' terms select by namespace: their own by default",
        {},
        [pod("e1", node="a1", ns="other", pref=[(4, term(ZONE, {"app": "in"}))])],
        pod("p", {"app": "in"}),
        "skip",
        None,
    ),
    (
        "ignorePreferredTermsOfExistingPods: Skip when the pod has no preferred terms, hard terms too",
        {"ignore": True},
        [pod("e1", node="a1", affinity=[term(ZONE, {"app": "in"})], pref=[(4, term(ZONE, {"app": "in"}))])],
        pod("p", {"app": "in"}),
        "skip",
        None,
    ),
    (
        "ignorePreferredTermsOfExistingPods: the pod's own and running pods' required terms still score",
        {"ignore": True},
        [
            pod(
                "e1",
                {"app": "e"},
                node="a1",
                affinity=[term(ZONE, {"app": "in"})],
                pref=[(40, term(ZONE, {"app": "in"}))],
            )
        ],
        pod("p", {"app": "in"}, pref=[(2, term(HOST, {"app": "e"}))]),
        {"a1": 3, "a2": 1, "b1": 0, "x": 0},
        # 1/3 -> 33
        {"a1": 100, "a2": 33, "b1": 0, "x": 0},
    ),
    (
        "the same case without the option counts the running pod's preferred term",
        {},
        [
            pod(
                "e1",
                {"app": "e"},
                node="a1",
                affinity=[term(ZONE, {"app": "in"})],
                pref=[(40, term(ZONE, {"app": "in"}))],
            )
        ],
        pod("p", {"app": "in"}, pref=[(2, term(HOST, {"app": "e"}))]),
        {"a1": 43, "a2": 41, "b1": 0, "x": 0},
        # 41/43 = 0.953 -> 95
        {"a1": 100, "a2": 95, "b1": 0, "x": 0},
    ),
    ("no term matches anything: Skip", {}, existing_for_scoring(), pod("p"), "skip", None),
    (
        "matched terms that cancel out: scored, all 0",
        {},
        existing_for_scoring(),
        pod("p", pref=[(5, term(ZONE, {"app": "web"}))], pref_anti=[(5, term(ZONE, {"app": "web"}))]),
        {"a1": 0, "a2": 0, "b1": 0, "x": 0},
        {"a1": 0, "a2": 0, "b1": 0, "x": 0},
    ),
]


@pytest.mark.parametrize(
    ("options", "existing", "incoming", "raw", "normalized"),
    [c[1:] for c in SCORE_CASES],
    ids=[c[0] for c in SCORE_CASES],
)
def test_score(
    options: dict[str, Any],
    existing: list[Pod],
    incoming: Pod,
    raw: dict[str, int] | str,
    normalized: dict[str, int] | None,
) -> None:
    result = run_score(plugin_with(**options), incoming, make_table(NODES, existing))
    if raw == "skip":
        assert isinstance(result, Status) and result.code == Code.SKIP
        return
    assert result == (raw, normalized)


def test_pre_score_counts_every_node_but_normalizes_over_the_scored_ones() -> None:
    """The pod on a1 scores its zone; min and max come from the nodes being scored (a2, b1, x)."""
    table = make_table(NODES, existing_for_scoring())
    incoming = pod("p", pref=[(30, term(ZONE, {"app": "web"})), (10, term(HOST, {"app": "db"}))])
    result = run_score(plugin_with(), incoming, table, table.subset(["a2", "b1", "x"]))
    assert result == ({"a2": 30, "b1": 10, "x": 0}, {"a2": 100, "b1": 33, "x": 0})


def test_pre_score_with_no_nodes_skips() -> None:
    table = make_table(NODES, existing_for_scoring())
    incoming = pod("p", pref=[(30, term(ZONE, {"app": "web"}))])
    status = plugin_with().pre_score(CycleState(), incoming, table.subset([]))
    assert status is not None and status.code == Code.SKIP


def test_score_without_pre_score_state() -> None:
    table = make_table(NODES, existing_for_scoring())
    incoming = pod("p", pref=[(30, term(ZONE, {"app": "web"}))])
    with_snapshot = plugin_with(table=table)
    assert [with_snapshot.score(CycleState(), incoming, ni) for ni in table.infos] == [30, 30, 0, 0]
    without = InterPodAffinity()
    assert without.score_nodes(CycleState(), incoming, table.all()).tolist() == [30, 30, 0, 0]
    out = without.score(CycleState(), incoming, table.infos[0])
    assert isinstance(out, tuple) and out[1] is not None and out[1].code == Code.ERROR


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ([-5, 0, 10], [0, 33, 100]),
        ([3, 3, 3], [0, 0, 0]),
        ([1, 2, 3, 4], [0, 33, 66, 100]),
        ([-7, -1], [0, 100]),
        # float64 as upstream: 100.0 * (29 / 100) = 28.999999999999996 -> 28 (integer math would say 29)
        ([0, 29, 100], [0, 28, 100]),
    ],
)
def test_normalize_min_max(raw: list[int], expected: list[int]) -> None:
    table = make_table([node(f"n{i}", "a") for i in range(len(raw))], [pod("w", {"app": "w"}, node="n0")])
    incoming = pod("p", pref=[(1, term(ZONE, {"app": "w"}))])
    plugin = plugin_with()
    state = CycleState()
    assert plugin.pre_score(state, incoming, table.all()) is None
    scores = np.array(raw, dtype=np.int64)
    plugin.normalize_score(state, incoming, table.all(), scores)
    assert scores.tolist() == expected


# --------------------------------------------------------------------------- args


def test_default_args() -> None:
    assert decode_args(InterPodAffinity, None) == InterPodAffinityArgs(
        hard_pod_affinity_weight=1, ignore_preferred_terms_of_existing_pods=False
    )
    plugin = instantiate(InterPodAffinity)
    assert plugin.args == InterPodAffinityArgs()


def test_args_decode_camel_case() -> None:
    args = decode_args(
        InterPodAffinity, {"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": True}
    )
    assert args == InterPodAffinityArgs(
        hard_pod_affinity_weight=100, ignore_preferred_terms_of_existing_pods=True
    )
    assert decode_args(InterPodAffinity, {"hardPodAffinityWeight": 0}).hard_pod_affinity_weight == 0


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        (
            {"hardPodAffinityWeight": 101},
            "args.hardPodAffinityWeight",
            "must be in the range [0, 100], got 101",
        ),
        (
            {"hardPodAffinityWeight": -1},
            "args.hardPodAffinityWeight",
            "must be in the range [0, 100], got -1",
        ),
        ({"hardPodAffinityWeight": "heavy"}, "args.hardPodAffinityWeight", "Expected `int`, got `str`"),
        (
            {"hardPodAffinityWeigth": 2},
            "args.hardPodAffinityWeigth",
            'unknown field (did you mean "hardPodAffinityWeight"?)',
        ),
    ],
)
def test_arg_validation_errors(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(InputError) as exc:
        decode_args(InterPodAffinity, raw)
    assert (exc.value.path, exc.value.message) == (path, message)


def test_invalid_args_refused_at_construction() -> None:
    with pytest.raises(InputError, match=r"hardPodAffinityWeight: must be in the range \[0, 100\], got 200"):
        InterPodAffinity(InterPodAffinityArgs(hard_pod_affinity_weight=200))


def test_registered_builtin() -> None:
    assert default_registry(entry_points=False)["InterPodAffinity"] is InterPodAffinity


# --------------------------------------------------------------------------- queueing


def _hint(resource: Resource) -> QueueingHintFn:
    (hint,) = [r.hint for r in InterPodAffinity().events_to_register() if r.event.resource == resource]
    assert hint is not None
    return hint


_pending = pod("p", affinity=[term(ZONE, {"app": "web"})], anti=[term(ZONE, {"app": "db"})])
_web = pod("w", {"app": "web"}, node="a1")
_db = pod("d", {"app": "db"}, node="a1")
_other = pod("o", {"app": "other"}, node="a1")
_guard = pod("g", node="a1", anti=[term(ZONE, {})])
_two_anti = pod("p", anti=[term(ZONE, {"service": "scan"}), term(ZONE, {"app": "web"})])
_two_affinity = pod("p", affinity=[term(HOST, {"aaa": ""}), term(ZONE, {"bbb": ""})])


def _unbound(p: Pod) -> Pod:
    return msgspec.structs.replace(p, spec=msgspec.structs.replace(p.spec, node_name=""))


def _nominated(p: Pod) -> Pod:
    p = _unbound(p)
    return msgspec.structs.replace(p, status=msgspec.structs.replace(p.status, nominated_node_name="a1"))


# The cases of v1.37.2's interpodaffinity Test_isSchedulableAfterAssignedPodChange.
HINT_CASES: list[tuple[str, Pod, object, object, QueueingHint]] = [
    ("added pod matching the affinity", _pending, None, _web, QueueingHint.QUEUE),
    ("added unscheduled pod", _pending, None, _unbound(_web), QueueingHint.SKIP),
    ("added pod matching nothing", _pending, None, _other, QueueingHint.SKIP),
    ("added pod matching an anti-affinity term", _pending, None, _db, QueueingHint.SKIP),
    ("relabelled into an affinity match", _pending, _other, _web, QueueingHint.QUEUE),
    (
        "matches before and after",
        _pending,
        _web,
        pod("w", {"app": "web", "v": "2"}, node="a1"),
        QueueingHint.SKIP,
    ),
    ("unscheduled pod relabelled", _pending, _unbound(_other), _unbound(_web), QueueingHint.SKIP),
    ("relabelled out of an affinity match", _pending, _web, _other, QueueingHint.SKIP),
    (
        "relabelled out of one of two affinity terms",
        _two_affinity,
        pod("o", {"aaa": "", "bbb": ""}, node="a1"),
        pod("o", {"aaa": ""}, node="a1"),
        QueueingHint.SKIP,
    ),
    (
        "relabelled into both affinity terms",
        _two_affinity,
        pod("o", {"aaa": "a"}, node="a1"),
        pod("o", {"aaa": "", "bbb": ""}, node="a1"),
        QueueingHint.QUEUE,
    ),
    ("relabelled out of an anti-affinity match", _pending, _db, _other, QueueingHint.QUEUE),
    ("relabelled into an anti-affinity match", _pending, _other, _db, QueueingHint.SKIP),
    ("deleted pod not matching the anti-affinity", _pending, _other, None, QueueingHint.SKIP),
    ("deleted pod matching the anti-affinity", _pending, _db, None, QueueingHint.QUEUE),
    (
        "deleted pod whose anti-affinity selected the pod",
        pod("p", {"x": "y"}),
        _guard,
        None,
        QueueingHint.QUEUE,
    ),
    (
        "deleted pod whose anti-affinity does not select the pod",
        pod("p", {"x": "y"}),
        pod("g", node="a1", anti=[term(ZONE, {"x": "z"})]),
        None,
        QueueingHint.SKIP,
    ),
    ("deleted nominated pod not matching", _pending, _nominated(_other), None, QueueingHint.SKIP),
    ("deleted nominated pod matching the anti-affinity", _pending, _nominated(_db), None, QueueingHint.QUEUE),
    (
        "relabelled from one anti-affinity term's match to none",
        _two_anti,
        pod("o", {"service": "scan", "app": "bar"}, node="a1"),
        pod("o", {"service": "foo", "app": "bar"}, node="a1"),
        QueueingHint.QUEUE,
    ),
    (
        "relabelled but still matching one anti-affinity term",
        _two_anti,
        pod("o", {"service": "scan", "app": "bar"}, node="a1"),
        pod("o", {"service": "foo", "app": "web"}, node="a1"),
        QueueingHint.SKIP,
    ),
    (
        "deleted match of the pod's affinity (kept nothing from starting)",
        _pending,
        _web,
        None,
        QueueingHint.SKIP,
    ),
    ("deleted unscheduled pod", _pending, _unbound(_db), None, QueueingHint.SKIP),
    ("not a pod", _pending, "not-a-pod", None, QueueingHint.QUEUE),
]


@pytest.mark.parametrize(
    ("pending", "old", "new", "expected"), [c[1:] for c in HINT_CASES], ids=[c[0] for c in HINT_CASES]
)
def test_pod_event_hint(pending: Pod, old: object, new: object, expected: QueueingHint) -> None:
    assert _hint(Resource.ASSIGNED_POD)(pending, old, new) is expected


def test_target_pod_label_hint_always_queues() -> None:
    assert _hint(Resource.TARGET_POD)(_pending, _pending, _pending) is QueueingHint.QUEUE


_aff = pod("p", affinity=[term(ZONE, {"app": "web"})])
_anti = pod("p", anti=[term(ZONE, {"app": "web"})])


# The cases of v1.37.2's interpodaffinity Test_isSchedulableAfterNodeChange.
@pytest.mark.parametrize(
    ("pending", "old", "new", "expected"),
    [
        (_aff, None, "not-a-node", QueueingHint.QUEUE),
        (_aff, None, node("n", "a"), QueueingHint.QUEUE),  # added with the affinity's key
        (_aff, None, node("n"), QueueingHint.SKIP),
        (_aff, node("n"), node("n", "a"), QueueingHint.QUEUE),  # gained the key
        (_aff, node("n", "a"), node("n", "b"), QueueingHint.QUEUE),  # changed its value
        (_aff, node("n", "a"), node("n", "a", x="y"), QueueingHint.SKIP),
        (_aff, node("n", "a"), node("n"), QueueingHint.SKIP),  # lost the key: no new domain
        (_anti, None, node("n"), QueueingHint.QUEUE),  # any node added
        (_anti, node("n", "a"), node("n"), QueueingHint.QUEUE),  # lost the key
        (_anti, node("n", "a"), node("n", "b"), QueueingHint.QUEUE),
        (_anti, node("n"), node("n", "a"), QueueingHint.SKIP),  # gained it: only more conflict
        (_anti, node("n", "a"), node("n", "a", x="y"), QueueingHint.SKIP),
        (pod("p"), None, node("n", "a"), QueueingHint.SKIP),  # no terms
    ],
)
def test_node_event_hint(pending: Pod, old: object, new: object, expected: QueueingHint) -> None:
    assert _hint(Resource.NODE)(pending, old, new) is expected


# --------------------------------------------------------------------------- batch == per node == spec

_APPS = ["x", "y", None]
_KEYS = [ZONE, "rack", HOST]
_NAMESPACES = ["default", "other"]
#: `default` carries team=t; `other` has no labels.
_NS_OBJECTS = [namespace("default", team="t"), namespace("other")]

_selector_st = st.one_of(
    st.none(),
    st.just({}),
    st.builds(lambda v: {"matchLabels": {"app": v}}, st.sampled_from(["x", "y"])),
    st.builds(
        lambda vs: {"matchExpressions": [{"key": "app", "operator": "In", "values": vs}]},
        st.lists(st.sampled_from(["x", "y"]), min_size=1, max_size=2, unique=True),
    ),
)
_ns_choices: list[dict[str, Any]] = [
    {},
    {"namespaces": ["other"]},
    {"namespaceSelector": {}},
    {"namespaceSelector": {"matchLabels": {"team": "t"}}},
]
_ns_st = st.sampled_from(_ns_choices)


@st.composite
def _term_st(draw: st.DrawFn) -> Term:
    t: Term = {"topologyKey": draw(st.sampled_from(_KEYS)), **draw(_ns_st)}
    selector = draw(_selector_st)
    if selector is not None:
        t["labelSelector"] = selector
    return t


_terms = st.lists(_term_st(), max_size=2)
_weighted = st.lists(st.tuples(st.integers(1, 9), _term_st()), max_size=2)


@st.composite
def _pod_st(draw: st.DrawFn, name: str, node_names: Sequence[str]) -> Pod:
    app = draw(st.sampled_from(_APPS))
    with_terms = draw(st.booleans())
    return pod(
        name,
        {"app": app} if app else {},
        node=draw(st.sampled_from(node_names)) if node_names else "",
        ns=draw(st.sampled_from(_NAMESPACES)),
        affinity=draw(_terms) if with_terms else (),
        anti=draw(_terms) if with_terms else (),
        pref=draw(_weighted) if with_terms else (),
        pref_anti=draw(_weighted) if with_terms else (),
    )


@st.composite
def _cluster_st(draw: st.DrawFn) -> tuple[NodeTable, Pod]:
    count = draw(st.integers(1, 5))
    nodes = [
        node(
            f"n{i}",
            draw(st.sampled_from(["a", "b", None])),
            **({"rack": r} if (r := draw(st.sampled_from(["r1", "r2", None]))) else {}),
        )
        for i in range(count)
    ]
    names = [n.metadata.name for n in nodes]
    existing = [draw(_pod_st(f"e{i}", names)) for i in range(draw(st.integers(0, 8)))]
    return make_table(nodes, existing), draw(_pod_st("incoming", []))


def _ns_labels(name: str) -> dict[str, str]:
    return next((dict(ns.metadata.labels) for ns in _NS_OBJECTS if ns.metadata.name == name), {})


def _selects(t: Term, owner: Pod, target: Pod) -> bool:
    """The spec, plainly: does `owner`'s term `t` select `target`?"""
    namespaces, ns_selector = t.get("namespaces", []), t.get("namespaceSelector")
    if not namespaces and ns_selector is None:
        ns_ok = target.metadata.namespace == owner.metadata.namespace
    else:
        ns_ok = target.metadata.namespace in namespaces or (
            ns_selector is not None and _selector_matches(ns_selector, _ns_labels(target.metadata.namespace))
        )
    selector = t.get("labelSelector")
    return ns_ok and selector is not None and _selector_matches(selector, target.metadata.labels)


def _selector_matches(selector: dict[str, Any], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items()) and all(
        labels.get(e["key"]) in e["values"] for e in selector.get("matchExpressions", [])
    )


def _terms_of(p: Pod, kind: str, which: str) -> list[Any]:
    aff = p.spec.affinity
    part = None if aff is None else (aff.pod_affinity if kind == "affinity" else aff.pod_anti_affinity)
    if part is None:
        return []
    raw = msgspec.to_builtins(part)
    key = f"{which}DuringSchedulingIgnoredDuringExecution"
    return (
        [(w["weight"], w["podAffinityTerm"]) for w in raw.get(key, [])]
        if which == "preferred"
        else raw.get(key, [])
    )


def _oracle_filter(table: NodeTable, incoming: Pod) -> dict[str, str]:
    """Upstream's filtering.go read literally: compare domains pod by pod, no counting."""
    running = [(pi.pod, ni.labels) for ni in table.infos for pi in ni.pods.values()]
    required = _terms_of(incoming, "affinity", "required")
    anti = _terms_of(incoming, "anti", "required")
    matching_all = [lab for p, lab in running if required and all(_selects(t, incoming, p) for t in required)]
    none_counted = all(t["topologyKey"] not in lab for lab in matching_all for t in required)
    self_affine = bool(required) and all(_selects(t, incoming, incoming) for t in required)
    out: dict[str, str] = {}
    for ni in table.infos:
        labels = ni.labels
        if required:
            if any(t["topologyKey"] not in labels for t in required):
                out[ni.name] = "aff"
                continue
            satisfied = all(
                any(lab.get(t["topologyKey"]) == labels[t["topologyKey"]] for lab in matching_all)
                for t in required
            )
            if not satisfied and not (none_counted and self_affine):
                out[ni.name] = "aff"
                continue
        if any(
            t["topologyKey"] in labels and lab.get(t["topologyKey"]) == labels[t["topologyKey"]]
            for t in anti
            for p, lab in running
            if _selects(t, incoming, p)
        ):
            out[ni.name] = "anti"
            continue
        if any(
            t["topologyKey"] in lab and labels.get(t["topologyKey"]) == lab[t["topologyKey"]]
            for p, lab in running
            for t in _terms_of(p, "anti", "required")
            if _selects(t, p, incoming)
        ):
            out[ni.name] = "existing"
            continue
        out[ni.name] = "ok"
    return out


def _oracle_scores(table: NodeTable, incoming: Pod, hard: int, ignore: bool) -> dict[str, int] | None:
    """Upstream's scoring.go read literally: per node, the sum over running pods in the same domains. None =
    Skip."""
    has_preferred = bool(
        _terms_of(incoming, "affinity", "preferred") or _terms_of(incoming, "anti", "preferred")
    )
    if ignore and not has_preferred:
        return None
    contributions: list[tuple[str, str, int]] = []  # (topology key, value, amount)
    for ni in table.infos:
        for pi in ni.pods.values():
            p, lab = pi.pod, ni.labels
            rules: list[tuple[Term, int, Pod, Pod]] = []
            rules += [(t, w, incoming, p) for w, t in _terms_of(incoming, "affinity", "preferred")]
            rules += [(t, -w, incoming, p) for w, t in _terms_of(incoming, "anti", "preferred")]
            if hard > 0:
                rules += [(t, hard, p, incoming) for t in _terms_of(p, "affinity", "required")]
            if not ignore:
                rules += [(t, w, p, incoming) for w, t in _terms_of(p, "affinity", "preferred")]
                rules += [(t, -w, p, incoming) for w, t in _terms_of(p, "anti", "preferred")]
            for t, amount, owner, target in rules:
                if t["topologyKey"] in lab and _selects(t, owner, target):
                    contributions.append((t["topologyKey"], lab[t["topologyKey"]], amount))
    if not contributions:
        return None
    return {
        ni.name: sum(amount for key, value, amount in contributions if ni.labels.get(key) == value)
        for ni in table.infos
    }


@settings(max_examples=400, deadline=None)
@given(_cluster_st(), st.integers(0, 3), st.booleans(), st.data())
def test_batch_agrees_with_per_node_and_the_spec(
    cluster: tuple[NodeTable, Pod], hard: int, ignore: bool, data: st.DataObject
) -> None:
    table, incoming = cluster
    plugin = plugin_with(_NS_OBJECTS, hard=hard, ignore=ignore)
    rows = sorted(data.draw(st.sets(st.integers(0, len(table) - 1), min_size=1)))
    subset = NodeSet(table, np.array(rows, dtype=np.intp))

    # Filter: both forms agree (run_filter asserts it) on the whole table and on a subset.
    expected = _oracle_filter(table, incoming)
    got = verdicts(run_filter(plugin, incoming, table))
    if got == "skip":
        assert set(expected.values()) == {"ok"}
    else:
        assert got == expected
        assert verdicts(run_filter(plugin, incoming, table, subset)) == {n: expected[n] for n in subset.names}
        # ... and on one-node tables built from a node (how nominated pods and preemption filter).
        state = CycleState()
        plugin.pre_filter(state, incoming, table.all())
        for ni in table.infos:
            alone = plugin.filter_nodes(state, incoming, NodeTable([ni]).all())
            assert alone.passed.tolist() == [expected[ni.name] == "ok"]

    # Score: both forms agree and match the spec over the scored subset.
    oracle = _oracle_scores(table, incoming, hard, ignore)
    scored = run_score(plugin, incoming, table, subset)
    if oracle is None:
        assert isinstance(scored, Status) and scored.code == Code.SKIP
        return
    assert not isinstance(scored, Status)
    raw, normalized = scored
    assert raw == {n: oracle[n] for n in subset.names}
    low, high = min(raw.values()), max(raw.values())
    assert normalized == {
        n: int(100 * ((s - low) / (high - low))) if high > low else 0 for n, s in raw.items()
    }


# --------------------------------------------------------------------------- through the CLI

CLUSTER_YAML = f"""
apiVersion: v1
kind: Node
metadata: {{name: n1, labels: {{{HOST}: n1, {ZONE}: a}}}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}
---
apiVersion: v1
kind: Node
metadata: {{name: n2, labels: {{{HOST}: n2, {ZONE}: a}}}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}
---
apiVersion: v1
kind: Node
metadata: {{name: n3, labels: {{{HOST}: n3, {ZONE}: b}}}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}
---
apiVersion: v1
kind: Node
metadata: {{name: n4, labels: {{{HOST}: n4, {ZONE}: c}}}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}
---
apiVersion: v1
kind: Node
metadata: {{name: n5, labels: {{{HOST}: n5}}}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: db-1, namespace: default, labels: {{app: db}}}}
spec: {{nodeName: n1, containers: [{{name: c, image: db}}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: web-1, namespace: default, labels: {{app: web}}}}
spec:
  nodeName: n3
  containers: [{{name: c, image: web}}]
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {{matchLabels: {{role: batch}}}}
        topologyKey: {ZONE}
---
apiVersion: v1
kind: Pod
metadata: {{name: cache-1, namespace: default, labels: {{app: cache}}}}
spec:
  nodeName: n4
  containers: [{{name: c, image: cache}}]
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {{matchLabels: {{app: api}}}}
        topologyKey: {ZONE}
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        podAffinityTerm:
          labelSelector: {{matchLabels: {{app: api}}}}
          topologyKey: {ZONE}
---
apiVersion: v1
kind: Pod
metadata: {{name: api, namespace: default, labels: {{app: api, role: batch}}}}
spec:
  priority: 10
  containers: [{{name: c, image: api}}]
  affinity:
    podAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 20
        podAffinityTerm:
          labelSelector: {{matchLabels: {{app: db}}}}
          topologyKey: {ZONE}
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {{matchLabels: {{app: db}}}}
        topologyKey: {HOST}
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 5
        podAffinityTerm:
          labelSelector: {{matchLabels: {{app: cache}}}}
          topologyKey: {HOST}
---
apiVersion: v1
kind: Pod
metadata: {{name: follower, namespace: default, labels: {{app: follower}}}}
spec:
  containers: [{{name: c, image: f}}]
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {{matchLabels: {{app: api}}}}
        topologyKey: {ZONE}
"""


def test_simulate_explains_inter_pod_affinity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`api` (priority 10) goes first. n1 holds db-1, which api's hostname anti-affinity refuses;
    n3 is in web-1's zone, whose anti-affinity refuses role=batch. Raw scores: n2 +20 (prefers db's
    zone a); n4 +10 (cache-1's preferred term) +5 (cache-1's required term x hardPodAffinityWeight 5)
    -5 (api's preferred anti-affinity to cache on n4) = 10; n5 0. Min-max: 100, 50, 0.
    `follower` then needs api's zone (a): n3, n4 lack it, n5 has no zone label."""
    config = single_plugin_config("InterPodAffinity", {"hardPodAffinityWeight": 5})
    report = simulate_explain(tmp_path, capsys, CLUSTER_YAML, config)
    pods = {p["name"]: p for p in report["pods"]}
    assert set(pods) == {"api", "follower"}

    api = pods["api"]
    assert (api["result"], api["node"]) == ("Scheduled", "n2")
    assert api["filter"] == {
        "n1": {"plugin": "InterPodAffinity", "code": "Unschedulable", "reasons": [REASON_ANTI]},
        "n3": {"plugin": "InterPodAffinity", "code": "Unschedulable", "reasons": [REASON_EXISTING]},
    }
    assert {n: s["plugins"] for n, s in api["scores"].items()} == {
        "n2": {"InterPodAffinity": 100},
        "n4": {"InterPodAffinity": 50},
        "n5": {"InterPodAffinity": 0},
    }

    follower = pods["follower"]
    assert follower["result"] == "Scheduled" and follower["node"] in {"n1", "n2"}
    unresolvable = {
        "plugin": "InterPodAffinity",
        "code": "UnschedulableAndUnresolvable",
        "reasons": [REASON_AFFINITY],
    }
    assert follower["filter"] == {"n3": unresolvable, "n4": unresolvable, "n5": unresolvable}
    # Nothing scores the follower (no preferred terms; no running pod's term selects it): PreScore skipped.
    assert {n: s["plugins"] for n, s in follower["scores"].items()} == {"n1": {}, "n2": {}}
