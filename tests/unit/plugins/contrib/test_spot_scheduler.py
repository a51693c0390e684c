"""SpotScheduler: spot nodes of EKS / Karpenter / GKE / AKS, the pod's policy (annotation, spot taint
toleration, default), Filter (require, avoidRequired, the replica cap with PreFilter extensions),
Score, args validation, batch / per-node agreement, requeue hints, and `kubesched simulate`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.plugins.explain_harness import simulate_explain, single_plugin_config

from kubesched.api.objects import Node, Pod, Toleration
from kubesched.errors import FieldErrors, InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, QueueingHint, Resource
from kubesched.framework.interfaces import Handle, extension_points_of
from kubesched.framework.node_info import PodInfo
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.registry import decode_args, instantiate
from kubesched.framework.status import Code, Status
from kubesched.plugins import default_registry
from kubesched.plugins.contrib.spot_scheduler import (
    AVOID_REASON,
    REQUIRE_REASON,
    SpotLabel,
    SpotScheduler,
    SpotSchedulerArgs,
    SpotTaint,
    cap_reason,
)
from kubesched.testing.builders import make_node, make_pod, make_table

POLICY = "spot.kubesched.io/policy"
KARPENTER = {"karpenter.sh/capacity-type": "spot"}
UNRES = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


class FakeHandle:
    """Pods the cluster knows (bound and pending) and the node snapshot."""

    def __init__(self, pods: Sequence[Pod] = (), snapshot: NodeTable | None = None) -> None:
        self.pods = list(pods)
        self.snapshot = snapshot if snapshot is not None else make_table([])

    def lister(self, kind: str) -> list[Any]:
        return self.pods if kind == "Pod" else []


def handle(pods: Sequence[Pod], table: NodeTable) -> Handle:
    return cast(Handle, FakeHandle(pods, table))


def pod(
    name: str = "p",
    *,
    policy: str | None = None,
    tolerations: Sequence[Toleration] = (),
    owner: str | None = None,
    uid: str | None = None,
    node: str = "",
    extra: Mapping[str, Any] | None = None,
) -> Pod:
    """A pod with an optional policy annotation and an optional ReplicaSet controller."""
    p = make_pod(
        name,
        node_name=node,
        annotations={POLICY: policy} if policy is not None else {},
        tolerations=tolerations,
    )
    meta: dict[str, Any] = dict(extra or {})
    if owner is not None:
        ref: dict[str, Any] = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": owner,
            "controller": True,
        }
        if uid != "":
            ref["uid"] = uid or f"uid-{owner}"
        meta["ownerReferences"] = [ref]
    if not meta:
        return p
    raw = msgspec.to_builtins(p)
    raw["metadata"].update(meta)
    return msgspec.convert(raw, Pod)


def spot_node(name: str, labels: Mapping[str, str] | None = None) -> Node:
    return make_node(name, labels=dict(KARPENTER if labels is None else labels))


def on_demand(name: str, labels: Mapping[str, str] | None = None) -> Node:
    return make_node(name, labels=dict(labels or {"karpenter.sh/capacity-type": "on-demand"}))


def run_filter(plugin: SpotScheduler, p: Pod, table: NodeTable) -> tuple[Status | None, list[Status | None]]:
    """(PreFilter status, per-node statuses), checking the batch form says the same."""
    state = CycleState()
    pre = plugin.pre_filter(state, p, table.all())
    per_node = [plugin.filter(state, p, ni) for ni in table.infos]
    res = plugin.filter_nodes(state, p, table.all())
    assert [None if c < 0 else res.statuses[c] for c in res.codes] == per_node
    return pre, per_node


def run_score(plugin: SpotScheduler, p: Pod, table: NodeTable) -> list[int]:
    state = CycleState()
    assert plugin.pre_score(state, p, table.all()) is None
    batch: list[int] = plugin.score_nodes(state, p, table.all()).tolist()
    assert batch == [plugin.score(state, p, ni) for ni in table.infos]
    return batch


# --------------------------------------------------------------------------- spot nodes


@pytest.mark.parametrize(
    ("labels", "spot"),
    [
        ({"eks.amazonaws.com/capacityType": "SPOT"}, True),
        ({"eks.amazonaws.com/capacityType": "ON_DEMAND"}, False),
        ({"eks.amazonaws.com/capacityType": "CAPACITY_BLOCK"}, False),
        ({"karpenter.sh/capacity-type": "spot"}, True),
        ({"karpenter.sh/capacity-type": "on-demand"}, False),
        ({"karpenter.sh/capacity-type": "reserved"}, False),
        ({"cloud.google.com/gke-spot": "true"}, True),
        ({"cloud.google.com/gke-spot": "false"}, False),
        ({"cloud.google.com/gke-preemptible": "true"}, True),
        ({"kubernetes.azure.com/scalesetpriority": "spot"}, True),
        ({"kubernetes.azure.com/scalesetpriority": "regular"}, False),
        ({"karpenter.sh/capacity-type": "SPOT"}, False),  # values are case-sensitive, as providers write them
        ({}, False),
    ],
)
def test_provider_labels(labels: dict[str, str], spot: bool) -> None:
    plugin = SpotScheduler()
    assert plugin.is_spot(labels) is spot
    table = make_table([make_node("n", labels=labels)])
    # Score tells both forms apart: an avoid pod gets 0 on spot and 100 elsewhere.
    assert run_score(plugin, pod(), table) == [0 if spot else 100]


def test_configured_labels_replace_the_defaults() -> None:
    args = SpotSchedulerArgs(
        spot_labels=[
            SpotLabel(key="example.com/lifecycle", values=["Ec2Spot"]),
            SpotLabel(key="example.com/preemptible", values=[]),  # any value
            SpotLabel(key="example.com/lifecycle", values=["spot"]),  # listed twice: values add up
        ]
    )
    plugin = SpotScheduler(args)
    assert plugin.is_spot({"example.com/lifecycle": "Ec2Spot"})
    assert plugin.is_spot({"example.com/lifecycle": "spot"})
    assert plugin.is_spot({"example.com/preemptible": ""})
    assert not plugin.is_spot({"example.com/lifecycle": "normal"})
    assert not plugin.is_spot(KARPENTER)
    any_value = SpotScheduler(
        SpotSchedulerArgs(spot_labels=[SpotLabel(key="k", values=["a"]), SpotLabel(key="k", values=[])])
    )
    assert any_value.is_spot({"k": "zzz"})
    nodes = [make_node(f"n{i}", labels=lab) for i, lab in enumerate([{"example.com/preemptible": "x"}, {}])]
    assert run_score(plugin, pod(policy="prefer"), make_table(nodes)) == [100, 0]


# --------------------------------------------------------------------------- policy


AKS_TAINT = Toleration(
    key="kubernetes.azure.com/scalesetpriority", operator="Equal", value="spot", effect="NoSchedule"
)


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        (pod(policy="prefer"), "prefer"),
        (pod(policy="avoid"), "avoid"),
        (pod(policy="require"), "require"),
        (pod(policy=" Require "), "require"),  # case and blanks do not matter
        (pod(), "avoid"),  # defaultPolicy
        (pod(tolerations=[AKS_TAINT]), "prefer"),
        (pod(tolerations=[Toleration(key="karpenter.sh/capacity-type", operator="Exists")]), "prefer"),
        (pod(tolerations=[Toleration(key="cloud.google.com/gke-spot", value="true")]), "prefer"),
        (pod(tolerations=[Toleration(key="cloud.google.com/gke-spot", value="false")]), "avoid"),
        (
            pod(
                tolerations=[
                    Toleration(
                        key="kubernetes.azure.com/scalesetpriority", effect="NoExecute", operator="Exists"
                    )
                ]
            ),
            "avoid",
        ),
        (pod(tolerations=[Toleration(operator="Exists")]), "avoid"),  # tolerate-everything says nothing
        (pod(tolerations=[Toleration(key="nvidia.com/gpu", operator="Exists")]), "avoid"),
        (pod(policy="avoid", tolerations=[AKS_TAINT]), "avoid"),  # the annotation wins
    ],
)
def test_policy(p: Pod, expected: str) -> None:
    assert SpotScheduler().policy_of(p) == expected


def test_default_policy_prefer() -> None:
    assert SpotScheduler(SpotSchedulerArgs(default_policy="prefer")).policy_of(pod()) == "prefer"


def test_spot_taints_and_annotation_are_args() -> None:
    args = SpotSchedulerArgs(
        spot_taints=[SpotTaint(key="example.com/spot", value="", effect="NoExecute")],
        policy_annotation="example.com/spot-policy",
    )
    plugin = SpotScheduler(args)
    assert (
        plugin.policy_of(pod(tolerations=[Toleration(key="example.com/spot", operator="Exists")])) == "prefer"
    )
    assert plugin.policy_of(pod(tolerations=[AKS_TAINT])) == "avoid"
    assert plugin.policy_of(pod(policy="prefer")) == "avoid"  # the default annotation is not read
    annotated = make_pod("p", annotations={"example.com/spot-policy": "require"})
    assert plugin.policy_of(annotated) == "require"


@pytest.mark.parametrize("bad", ["maybe", "", "spot"])
def test_invalid_annotation(bad: str) -> None:
    expected = Status(UNRES, f"invalid annotation {POLICY}={bad!r}: must be one of prefer, avoid, require")
    table = make_table([spot_node("s"), on_demand("o")])
    pre, per_node = run_filter(SpotScheduler(), pod(policy=bad), table)
    assert pre == expected and per_node == [expected, expected]
    assert SpotScheduler().pre_score(CycleState(), pod(policy=bad), table.all()) == expected
    assert SpotScheduler().score(CycleState(), pod(policy=bad), table.infos[0]) == (0, expected)
    with pytest.raises(ValueError, match="must be one of"):
        SpotScheduler().score_nodes(CycleState(), pod(policy=bad), table.all())


# --------------------------------------------------------------------------- filter and score


AVOIDED = Status(UNRES, AVOID_REASON)
REQUIRED = Status(UNRES, REQUIRE_REASON)


@pytest.mark.parametrize(
    ("policy", "avoid_required", "pre", "verdicts"),
    [
        ("prefer", False, Status.skip(), [None, None, None]),
        ("prefer", True, Status.skip(), [None, None, None]),
        ("avoid", False, Status.skip(), [None, None, None]),
        ("avoid", True, None, [AVOIDED, None, None]),
        (None, True, None, [AVOIDED, None, None]),  # the default policy is avoid
        ("require", False, None, [None, REQUIRED, REQUIRED]),
        ("require", True, None, [None, REQUIRED, REQUIRED]),
    ],
)
def test_filter(
    policy: str | None, avoid_required: bool, pre: Status | None, verdicts: list[Status | None]
) -> None:
    table = make_table([spot_node("spot"), on_demand("od"), make_node("plain")])
    plugin = SpotScheduler(SpotSchedulerArgs(avoid_required=avoid_required))
    got_pre, per_node = run_filter(plugin, pod(policy=policy), table)
    assert got_pre == pre
    assert per_node == verdicts


def test_avoid_required_spares_spot_tolerating_pods() -> None:
    plugin = SpotScheduler(SpotSchedulerArgs(avoid_required=True))
    table = make_table([make_node("aks", labels={"kubernetes.azure.com/scalesetpriority": "spot"})])
    assert run_filter(plugin, pod(tolerations=[AKS_TAINT]), table) == (Status.skip(), [None])
    assert run_filter(plugin, pod(), table) == (None, [AVOIDED])


@pytest.mark.parametrize(
    ("policy", "expected"),
    [("prefer", [100, 0, 0]), ("require", [100, 0, 0]), ("avoid", [0, 100, 100]), (None, [0, 100, 100])],
)
def test_score(policy: str | None, expected: list[int]) -> None:
    table = make_table([spot_node("spot"), on_demand("od"), make_node("plain")])
    assert run_score(SpotScheduler(), pod(policy=policy), table) == expected


def test_score_without_pre_score() -> None:
    table = make_table([spot_node("spot"), on_demand("od")])
    assert SpotScheduler().score_nodes(CycleState(), pod(tolerations=[AKS_TAINT]), table.all()).tolist() == [
        100,
        0,
    ]
    assert [SpotScheduler().score(CycleState(), pod(), ni) for ni in table.infos] == [0, 100]


# --------------------------------------------------------------------------- replica cap


def cap_plugin(percent: int, pods: Sequence[Pod], table: NodeTable, **kw: Any) -> SpotScheduler:
    return SpotScheduler(SpotSchedulerArgs(max_spot_replicas_percent=percent, **kw), handle(pods, table))


def web_cluster(on_spot: int, on_demand_count: int = 0, pending: int = 1) -> tuple[NodeTable, list[Pod]]:
    """Replicas of ReplicaSet web-abc: `on_spot` on spot node s1, some on on-demand node od, and
    `pending` not yet scheduled (the incoming pod `web-new` among them)."""
    running = [pod(f"web-s{i}", owner="web-abc", node="s1") for i in range(on_spot)]
    running += [pod(f"web-o{i}", owner="web-abc", node="od") for i in range(on_demand_count)]
    waiting = [pod("web-new", owner="web-abc")] + [
        pod(f"web-w{i}", owner="web-abc") for i in range(pending - 1)
    ]
    table = make_table([spot_node("s1"), on_demand("od"), spot_node("s2")], running)
    return table, running + waiting


def test_cap_reached() -> None:
    table, pods = web_cluster(on_spot=2, pending=2)  # 4 replicas, 2 on spot; at most 50% = 2
    plugin = cap_plugin(50, pods, table)
    capped = Status(
        Code.UNSCHEDULABLE,
        "spot replica cap reached: 2 of 4 replicas of ReplicaSet web-abc on spot (max 50%)",
    )
    pre, per_node = run_filter(plugin, pods[2], table)
    assert pre is None
    assert per_node == [capped, None, capped]


def test_cap_not_reached() -> None:
    table, pods = web_cluster(on_spot=1, on_demand_count=1, pending=2)  # 4 replicas, 1 on spot
    assert run_filter(cap_plugin(50, pods, table), pods[2], table) == (None, [None, None, None])


def test_cap_rounds_down() -> None:
    # 3 replicas at 50%: at most 1 (floor 1.5) on spot.
    table, pods = web_cluster(on_spot=1, on_demand_count=1)
    (_, per_node) = run_filter(cap_plugin(50, pods, table), pods[-1], table)
    assert per_node[0] == Status(
        Code.UNSCHEDULABLE,
        "spot replica cap reached: 1 of 3 replicas of ReplicaSet web-abc on spot (max 50%)",
    )
    # 67% of 3 = 2.01 -> 2: one more fits.
    assert run_filter(cap_plugin(67, pods, table), pods[-1], table)[1] == [None, None, None]


def test_cap_zero_keeps_every_replica_off_spot_and_100_is_no_cap() -> None:
    table, pods = web_cluster(on_spot=0)
    _, per_node = run_filter(cap_plugin(0, pods, table), pods[-1], table)
    assert per_node[0] == Status(Code.UNSCHEDULABLE, cap_reason(0, 1, "ReplicaSet web-abc", 0))
    table, pods = web_cluster(on_spot=5)
    assert run_filter(cap_plugin(100, pods, table), pods[-1], table) == (Status.skip(), [None, None, None])


def test_cap_counts_only_live_replicas_of_the_same_controller() -> None:
    running = [
        pod("web-1", owner="web-abc", node="s1"),
        pod("web-2", owner="web-abc", node="s1", extra={"deletionTimestamp": "2026-01-01T00:00:00Z"}),
        pod("api-1", owner="api-xyz", node="s1"),
        pod("lone", node="s1"),
        pod("web-3", owner="web-abc", node="od"),
    ]
    done = msgspec.convert(
        {**msgspec.to_builtins(pod("web-4", owner="web-abc")), "status": {"phase": "Succeeded"}}, Pod
    )
    incoming = pod("web-new", owner="web-abc")
    table = make_table([spot_node("s1"), on_demand("od")], running)
    # Live replicas: web-1, web-3, web-new = 3; on spot: web-1. 34% of 3 -> 1: reached.
    plugin = cap_plugin(34, [*running, done, incoming], table)
    _, per_node = run_filter(plugin, incoming, table)
    assert per_node == [Status(Code.UNSCHEDULABLE, cap_reason(1, 3, "ReplicaSet web-abc", 34)), None]


def test_cap_ignores_pods_without_controller() -> None:
    table, pods = web_cluster(on_spot=3)
    plugin = cap_plugin(10, pods, table)
    assert run_filter(plugin, pod("lone"), table) == (Status.skip(), [None, None, None])


def test_cap_without_lister_counts_the_nodes() -> None:
    table, _ = web_cluster(on_spot=1, on_demand_count=1)
    plugin = SpotScheduler(SpotSchedulerArgs(max_spot_replicas_percent=50))  # no handle: nodes + the pod
    _, per_node = run_filter(plugin, pod("web-new", owner="web-abc"), table)
    assert per_node[0] == Status(Code.UNSCHEDULABLE, cap_reason(1, 3, "ReplicaSet web-abc", 50))


def test_cap_groups_by_namespace_kind_name_without_uid() -> None:
    running = [pod("web-1", owner="web-abc", uid="", node="s1")]
    incoming = pod("web-new", owner="web-abc", uid="")
    table = make_table([spot_node("s1"), on_demand("od")], running)
    _, per_node = run_filter(cap_plugin(50, [*running, incoming], table), incoming, table)
    assert per_node[0] == Status(Code.UNSCHEDULABLE, cap_reason(1, 2, "ReplicaSet web-abc", 50))
    # Same name, but a uid: a different workload (the uid-less web-1 is not one of its replicas).
    other_uid = pod("web-new", owner="web-abc", uid="another")
    _, per_node = run_filter(cap_plugin(50, [*running, other_uid], table), other_uid, table)
    assert per_node[0] == Status(Code.UNSCHEDULABLE, cap_reason(0, 1, "ReplicaSet web-abc", 50))


def test_cap_applies_to_require_pods_and_avoid_required_wins_for_avoid_pods() -> None:
    table, pods = web_cluster(on_spot=2, pending=2)
    req = pod("web-new", owner="web-abc", policy="require")
    pods = [*pods[:-2], req, pods[-1]]
    capped = Status(Code.UNSCHEDULABLE, cap_reason(2, 4, "ReplicaSet web-abc", 50))
    assert run_filter(cap_plugin(50, pods, table), req, table)[1] == [capped, REQUIRED, capped]
    avoid = pods[-1]
    assert run_filter(cap_plugin(50, pods, table, avoid_required=True), avoid, table)[1] == [
        AVOIDED,
        None,
        AVOIDED,
    ]


def test_pre_filter_extensions_move_the_cap() -> None:
    table, pods = web_cluster(on_spot=2, pending=2)
    plugin = cap_plugin(50, pods, table)
    incoming = pods[2]
    state = CycleState()
    assert plugin.pre_filter(state, incoming, table.all()) is None
    s1 = table.infos[0]
    assert plugin.filter(state, incoming, s1) is not None
    # Preemption considers evicting a replica on s1: the cap is no longer reached.
    victim = next(iter(s1.pods.values()))
    trial = state.clone()
    assert plugin.remove_pod(trial, incoming, victim, s1) is None
    assert plugin.filter(trial, incoming, s1) is None
    assert plugin.filter(state, incoming, s1) is not None  # the original state is untouched
    # A nominated replica on a spot node counts; on an on-demand node, or another workload's, not.
    assert plugin.add_pod(trial, incoming, PodInfo(pod("web-x", owner="web-abc")), table.infos[1]) is None
    assert plugin.filter(trial, incoming, s1) is None
    assert plugin.add_pod(trial, incoming, PodInfo(pod("api", owner="api-xyz")), s1) is None
    assert plugin.filter(trial, incoming, s1) is None
    plugin.add_pod(trial, incoming, PodInfo(pod("web-y", owner="web-abc")), s1)
    assert plugin.filter(trial, incoming, s1) == Status(
        Code.UNSCHEDULABLE, cap_reason(2, 4, "ReplicaSet web-abc", 50)
    )


def test_filter_without_pre_filter_counts_over_the_snapshot() -> None:
    table, pods = web_cluster(on_spot=2, pending=2)
    plugin = cap_plugin(50, pods, table)
    assert plugin.filter(CycleState(), pods[2], table.infos[0]) == Status(
        Code.UNSCHEDULABLE, cap_reason(2, 4, "ReplicaSet web-abc", 50)
    )


def test_counts_follow_new_pods_between_cycles() -> None:
    table, pods = web_cluster(on_spot=1, pending=3)  # 4 replicas, 1 on spot: room for one more
    plugin = cap_plugin(50, pods, table)
    incoming = pods[1]
    assert run_filter(plugin, incoming, table)[1][0] is None
    table.add_pod(2, PodInfo(pod("web-w1", owner="web-abc", node="s2")))  # a replica bound to s2
    assert run_filter(plugin, incoming, table)[1][0] == Status(
        Code.UNSCHEDULABLE, cap_reason(2, 4, "ReplicaSet web-abc", 50)
    )


# --------------------------------------------------------------------------- args


def test_defaults_and_registry() -> None:
    args = decode_args(SpotScheduler, None)
    assert args == SpotSchedulerArgs()
    assert [(lab.key, lab.values) for lab in args.spot_labels] == [
        ("eks.amazonaws.com/capacityType", ["SPOT"]),
        ("karpenter.sh/capacity-type", ["spot"]),
        ("cloud.google.com/gke-spot", ["true"]),
        ("cloud.google.com/gke-preemptible", ["true"]),
        ("kubernetes.azure.com/scalesetpriority", ["spot"]),
    ]
    assert [(t.key, t.value, t.effect) for t in args.spot_taints] == [
        ("eks.amazonaws.com/capacityType", "SPOT", "NoSchedule"),
        ("karpenter.sh/capacity-type", "spot", "NoSchedule"),
        ("cloud.google.com/gke-spot", "true", "NoSchedule"),
        ("cloud.google.com/gke-preemptible", "true", "NoSchedule"),
        ("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule"),
    ]
    assert (args.policy_annotation, args.default_policy, args.avoid_required) == (POLICY, "avoid", False)
    assert args.max_spot_replicas_percent == 100
    assert default_registry(entry_points=False)["SpotScheduler"] is SpotScheduler
    assert isinstance(instantiate(SpotScheduler), SpotScheduler)
    assert extension_points_of(SpotScheduler) == ["preFilter", "filter", "preScore", "score"]


def test_camel_case_args_decode() -> None:
    args = decode_args(
        SpotScheduler,
        {
            "spotLabels": [{"key": "a.io/spot", "values": ["yes"]}],
            "spotTaints": [{"key": "a.io/spot", "value": "yes"}],
            "policyAnnotation": "a.io/policy",
            "defaultPolicy": "prefer",
            "avoidRequired": True,
            "maxSpotReplicasPercent": 30,
        },
    )
    assert args.spot_labels == [SpotLabel(key="a.io/spot", values=["yes"])]
    assert args.spot_taints == [SpotTaint(key="a.io/spot", value="yes", effect="NoSchedule")]
    assert (args.policy_annotation, args.default_policy, args.avoid_required) == (
        "a.io/policy",
        "prefer",
        True,
    )
    assert args.max_spot_replicas_percent == 30


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        ({"spotLabels": []}, "args.spotLabels", "at least one spot label is required"),
        ({"spotLabels": [{"key": "bad key"}]}, "args.spotLabels[0].key", "invalid label key 'bad key'"),
        ({"spotLabels": [{"values": ["x"]}]}, "args.spotLabels[0].key", "invalid label key ''"),
        (
            {"spotLabels": [{"key": "k", "values": ["ok", "not ok"]}]},
            "args.spotLabels[0].values[1]",
            "invalid label value",
        ),
        ({"spotTaints": [{"key": "a/b/c"}]}, "args.spotTaints[0].key", "at most one '/'"),
        (
            {"spotTaints": [{"key": "k", "value": "-x"}]},
            "args.spotTaints[0].value",
            "invalid taint value '-x'",
        ),
        (
            {"spotTaints": [{"key": "k", "effect": "Never"}]},
            "args.spotTaints[0].effect",
            'unsupported value "Never"',
        ),
        (
            {"spotTaints": [{"key": "k", "effect": ""}]},
            "args.spotTaints[0].effect",
            '"NoSchedule", "PreferNoSchedule"',
        ),
        ({"policyAnnotation": "x/"}, "args.policyAnnotation", "invalid annotation key 'x/'"),
        ({"defaultPolicy": "require"}, "args.defaultPolicy", 'supported values: "prefer", "avoid"'),
        ({"maxSpotReplicasPercent": 101}, "args.maxSpotReplicasPercent", "must be in the range [0, 100]"),
        ({"maxSpotReplicasPercent": -1}, "args.maxSpotReplicasPercent", "must be in the range [0, 100]"),
        ({"avoidRequired": "yes"}, "args.avoidRequired", "Expected `bool`"),
        ({"spotLabels": [{"key": "k", "value": "v"}]}, "args.spotLabels[0].value", "unknown field"),
    ],
)
def test_arg_validation(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        decode_args(SpotScheduler, raw)
    assert info.value.path == path
    assert message in info.value.message


def test_invalid_args_fail_the_constructor() -> None:
    with pytest.raises(FieldErrors) as info:
        SpotScheduler(SpotSchedulerArgs(spot_labels=[], max_spot_replicas_percent=200))
    assert [e.path for e in info.value.errors] == ["spotLabels", "maxSpotReplicasPercent"]


# --------------------------------------------------------------------------- requeueing


def test_events_and_hints() -> None:
    capped = SpotScheduler(SpotSchedulerArgs(max_spot_replicas_percent=50))
    regs = capped.events_to_register()
    assert [r.event for r in regs] == [
        ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        ClusterEvent(Resource.POD, ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_POD_TOLERATION),
    ]
    assert regs[0].hint is None
    hint = regs[1].hint
    assert hint is not None
    web = pod("web-new", owner="web-abc")
    sibling, stranger = pod("web-1", owner="web-abc", node="s"), pod("api-1", owner="api-xyz", node="s")
    assert hint(web, sibling, None) is QueueingHint.QUEUE  # a replica left: the cap moved
    assert hint(web, None, sibling) is QueueingHint.QUEUE  # a replica came: the total grew
    assert hint(web, stranger, None) is QueueingHint.SKIP
    assert hint(pod("lone"), sibling, None) is QueueingHint.SKIP
    assert hint(web, web, pod("web-new", owner="web-abc", tolerations=[AKS_TAINT])) is QueueingHint.QUEUE
    assert hint(web, None, None) is QueueingHint.QUEUE
    uncapped = SpotScheduler().events_to_register()[1].hint
    assert uncapped is not None and uncapped(web, sibling, None) is QueueingHint.SKIP


# --------------------------------------------------------------------------- batch == per node

_node_labels = st.sampled_from(
    [
        {},
        KARPENTER,
        {"karpenter.sh/capacity-type": "on-demand"},
        {"eks.amazonaws.com/capacityType": "SPOT"},
        {"cloud.google.com/gke-spot": "true", "cloud.google.com/gke-preemptible": "true"},
        {"kubernetes.azure.com/scalesetpriority": "regular"},
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    nodes=st.lists(st.tuples(_node_labels, st.integers(0, 3), st.integers(0, 2)), max_size=6),
    policy=st.sampled_from([None, "prefer", "avoid", "require", "bogus"]),
    tolerant=st.booleans(),
    owned=st.booleans(),
    pending=st.integers(0, 3),
    percent=st.sampled_from([0, 25, 50, 100]),
    avoid_required=st.booleans(),
    data=st.data(),
)
def test_batch_agrees_with_per_node(
    nodes: list[tuple[dict[str, str], int, int]],
    policy: str | None,
    tolerant: bool,
    owned: bool,
    pending: int,
    percent: int,
    avoid_required: bool,
    data: st.DataObject,
) -> None:
    running: list[Pod] = []
    for i, (_, mine, others) in enumerate(nodes):
        running += [pod(f"w{i}-{j}", owner="web", node=f"n{i}") for j in range(mine)]
        running += [pod(f"o{i}-{j}", owner="other", node=f"n{i}") for j in range(others)]
    table = make_table([make_node(f"n{i}", labels=labels) for i, (labels, _, _) in enumerate(nodes)], running)
    incoming = pod(
        "new", policy=policy, tolerations=[AKS_TAINT] if tolerant else (), owner="web" if owned else None
    )
    listed = [*running, incoming, *(pod(f"pending{j}", owner="web") for j in range(pending))]
    plugin = SpotScheduler(
        SpotSchedulerArgs(max_spot_replicas_percent=percent, avoid_required=avoid_required),
        handle(listed, table),
    )
    rows = sorted(data.draw(st.sets(st.integers(0, len(nodes) - 1))) if nodes else set())
    subset = NodeSet(table, np.asarray(rows, dtype=np.intp))
    state = CycleState()
    plugin.pre_filter(state, incoming, table.all())
    res = plugin.filter_nodes(state, incoming, subset)
    assert [None if c < 0 else res.statuses[c] for c in res.codes] == [
        plugin.filter(state, incoming, ni) for ni in subset
    ]
    state = CycleState()
    if plugin.pre_score(state, incoming, subset) is None:
        assert plugin.score_nodes(state, incoming, subset).tolist() == [
            plugin.score(state, incoming, ni) for ni in subset
        ]


# --------------------------------------------------------------------------- kubesched simulate

CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: spot-a, labels: {karpenter.sh/capacity-type: spot}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: spot-b, labels: {cloud.google.com/gke-spot: "true"}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: on-demand, labels: {karpenter.sh/capacity-type: on-demand}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
"""

REPLICA = """\
---
apiVersion: v1
kind: Pod
metadata:
  name: web-{i}
  namespace: default
  annotations: {{spot.kubesched.io/policy: prefer}}
  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: web-abc, uid: u-web, controller: true}}]
spec:
  containers: [{{name: c, image: x}}]
"""


def test_simulate_explains_spot_scheduler(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = CLUSTER + "".join(REPLICA.format(i=i) for i in range(4))
    config = single_plugin_config("SpotScheduler", {"maxSpotReplicasPercent": 50})
    expected_args = {
        "SpotScheduler": {
            "kind": "SpotSchedulerArgs",
            "maxSpotReplicasPercent": 50,
            "defaultPolicy": "avoid",
            "avoidRequired": False,
        }
    }
    explained = simulate_explain(tmp_path, capsys, objects, config, expected_args=expected_args)
    report = {p["name"]: p for p in explained["pods"]}
    placed = [report[f"web-{i}"]["node"] for i in range(4)]
    # Four prefer-spot replicas, at most 50% (2) on spot: two go to spot, then the cap sends the
    # other two to the on-demand node.
    assert sum(n.startswith("spot-") for n in placed) == 2 and placed.count("on-demand") == 2
    first_capped = next(report[f"web-{i}"] for i in range(4) if report[f"web-{i}"]["filter"])
    capped = {
        "plugin": "SpotScheduler",
        "code": "Unschedulable",
        "reasons": ["spot replica cap reached: 2 of 4 replicas of ReplicaSet web-abc on spot (max 50%)"],
    }
    assert first_capped["filter"] == {"spot-a": capped, "spot-b": capped}
    assert first_capped["node"] == "on-demand"
    first = report["web-0"]
    assert first["filter"] == {}
    assert first["scores"] == {
        "spot-a": {"plugins": {"SpotScheduler": 100}, "total": 100},
        "spot-b": {"plugins": {"SpotScheduler": 100}, "total": 100},
        "on-demand": {"plugins": {"SpotScheduler": 0}, "total": 0},
    }
