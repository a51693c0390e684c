"""AZScheduler: preferred zones (args and annotation), spreading a workload's replicas over zones with
hand-computed scores, weights, owner kinds, args validation, batch / per-node agreement, and a run
through `kubesched simulate`."""

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

from kubesched.api.objects import Node, Pod
from kubesched.errors import FieldErrors, InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import Handle, extension_points_of
from kubesched.framework.node_info import PodInfo
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.registry import decode_args, instantiate
from kubesched.framework.status import Status
from kubesched.plugins import default_registry
from kubesched.plugins.contrib.az_scheduler import AZScheduler, AZSchedulerArgs
from kubesched.testing.builders import make_node, make_pod, make_table

ZONE = "topology.kubernetes.io/zone"
PREFERRED = "zone.kubesched.io/preferred"


def zoned(name: str, zone: str | None) -> Node:
    return make_node(name, labels={ZONE: zone} if zone is not None else {})


def pod(
    name: str = "p",
    *,
    owner: str | None = None,
    kind: str = "ReplicaSet",
    node: str = "",
    preferred: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Pod:
    p = make_pod(name, node_name=node, annotations={PREFERRED: preferred} if preferred is not None else {})
    extra: dict[str, Any] = dict(meta or {})
    if owner is not None:
        extra["ownerReferences"] = [{"kind": kind, "name": owner, "uid": f"uid-{owner}", "controller": True}]
    if not extra:
        return p
    raw = msgspec.to_builtins(p)
    raw["metadata"].update(extra)
    return msgspec.convert(raw, Pod)


def cluster(replicas: Mapping[str, int], owner: str = "web", kind: str = "ReplicaSet") -> NodeTable:
    """Nodes a1, a2 (zone a), b1 (b), c1 (c), x1 (no zone label); `replicas` node -> pods of `owner`."""
    nodes = [zoned("a1", "a"), zoned("a2", "a"), zoned("b1", "b"), zoned("c1", "c"), zoned("x1", None)]
    running = [
        pod(f"{owner}-{n}-{i}", owner=owner, kind=kind, node=n)
        for n, count in replicas.items()
        for i in range(count)
    ]
    table: NodeTable = make_table(nodes, running)
    return table


def scores(
    plugin: AZScheduler, p: Pod, table: NodeTable, rows: Sequence[int] | None = None
) -> dict[str, int]:
    """Normalized scores by node; checks that both Score forms give the same raw scores."""
    nodes = table.all() if rows is None else NodeSet(table, np.asarray(rows, dtype=np.intp))
    state = CycleState()
    status = plugin.pre_score(state, p, nodes)
    assert status is None, status
    raw = plugin.score_nodes(state, p, nodes)
    assert raw.tolist() == [plugin.score(state, p, ni) for ni in nodes]
    assert plugin.normalize_score(state, p, nodes, raw) is None
    return dict(zip(nodes.names, raw.tolist(), strict=True))


# --------------------------------------------------------------------------- preferred zones


def test_preferred_zones_from_args() -> None:
    plugin = AZScheduler(AZSchedulerArgs(preferred_zones=["b", "c"]))
    # Raw: b1, c1 = 2*100 = 200; others 0 -> normalized 100 / 0.
    assert scores(plugin, pod(), cluster({})) == {"a1": 0, "a2": 0, "b1": 100, "c1": 100, "x1": 0}


def test_annotation_overrides_args() -> None:
    plugin = AZScheduler(AZSchedulerArgs(preferred_zones=["b"]))
    assert scores(plugin, pod(preferred="a, c"), cluster({})) == {
        "a1": 100,
        "a2": 100,
        "b1": 0,
        "c1": 100,
        "x1": 0,
    }
    # An empty annotation clears the configured preference: nothing left to score.
    assert plugin.pre_score(CycleState(), pod(preferred=" , "), cluster({}).all()) == Status.skip()
    assert plugin.preferred_zones(pod(preferred="")) == frozenset()
    assert plugin.preferred_zones(pod()) == {"b"}


def test_annotation_name_and_zone_label_are_args() -> None:
    args = AZSchedulerArgs(zone_label="example.com/rack", preferred_zones_annotation="example.com/racks")
    plugin = AZScheduler(args)
    table = make_table([make_node("r1", labels={"example.com/rack": "r1"}), zoned("z", "r1")])
    p = make_pod("p", annotations={"example.com/racks": "r1"})
    assert scores(plugin, p, table) == {"r1": 100, "z": 0}
    assert plugin.pre_score(CycleState(), pod(preferred="r1"), table.all()) == Status.skip()


# --------------------------------------------------------------------------- spreading


def test_spread_hand_computed() -> None:
    # web replicas: zone a 2 (a1: 1, a2: 1), b 1, c 0; max among scored zones 2.
    # spread = 100 * (2 - count) // 2: a 0, b 50, c 100; raw = 1 * spread; x1 (no zone) 0.
    # Normalized by the best (100): unchanged.
    table = cluster({"a1": 1, "a2": 1, "b1": 1})
    assert scores(AZScheduler(), pod(owner="web"), table) == {"a1": 0, "a2": 0, "b1": 50, "c1": 100, "x1": 0}


def test_preference_and_spread_combined() -> None:
    # Zone counts a 2, b 1, c 0 (max 2); the pod prefers b.
    # raw = 2 * preferred + 1 * spread: a 0, b 200 + 50 = 250, c 100, x1 0.
    # Normalized 100 * raw // 250: a 0, b 100, c 40.
    table = cluster({"a1": 2, "b1": 1})
    got = scores(AZScheduler(), pod(owner="web", preferred="b"), table)
    assert got == {"a1": 0, "a2": 0, "b1": 100, "c1": 40, "x1": 0}
    # Equal weights: b 100 + 50 = 150, c 0 + 100 = 100 -> 100, 66.
    equal = AZScheduler(AZSchedulerArgs(preferred_zone_weight=1, spread_weight=1))
    assert scores(equal, pod(owner="web", preferred="b"), table) == {
        "a1": 0,
        "a2": 0,
        "b1": 100,
        "c1": 66,
        "x1": 0,
    }


def test_no_replicas_yet_every_zone_is_equal() -> None:
    assert scores(AZScheduler(), pod(owner="web"), cluster({})) == {
        "a1": 100,
        "a2": 100,
        "b1": 100,
        "c1": 100,
        "x1": 0,
    }


def test_max_is_taken_over_the_scored_nodes_only() -> None:
    # Zone a holds 4 replicas but its nodes were filtered out: among b (1) and c (0), max 1.
    table = cluster({"a1": 4, "b1": 1})
    assert scores(AZScheduler(), pod(owner="web"), table, rows=[2, 3]) == {"b1": 0, "c1": 100}


def test_only_live_pods_of_the_same_controller_count() -> None:
    nodes = [zoned("a1", "a"), zoned("b1", "b")]
    running = [
        pod("web-1", owner="web", node="a1"),
        pod("web-2", owner="web", node="b1", meta={"deletionTimestamp": "2026-01-01T00:00:00Z"}),
        pod("api-1", owner="api", node="b1"),
        pod("api-2", owner="api", node="b1"),
        pod("lone", node="b1"),
    ]
    assert scores(AZScheduler(), pod(owner="web"), make_table(nodes, running)) == {"a1": 0, "b1": 100}


def test_owner_kinds() -> None:
    table = cluster({"a1": 2}, owner="train", kind="Job")
    # Jobs are not spread by default: nothing to score.
    assert AZScheduler().pre_score(CycleState(), pod(owner="train", kind="Job"), table.all()) == Status.skip()
    jobs = AZScheduler(AZSchedulerArgs(spread_owner_kinds=["Job"]))
    assert scores(jobs, pod(owner="train", kind="Job"), table) == {
        "a1": 0,
        "a2": 0,
        "b1": 100,
        "c1": 100,
        "x1": 0,
    }
    assert jobs.pre_score(CycleState(), pod(owner="web"), table.all()) == Status.skip()


@pytest.mark.parametrize(
    ("pref_w", "spread_w", "expected"),
    [
        # Counts a 2, b 0, c 0; pod prefers a.
        (0, 1, {"a1": 0, "a2": 0, "b1": 100, "c1": 100, "x1": 0}),  # preferences ignored
        (1, 0, {"a1": 100, "a2": 100, "b1": 0, "c1": 0, "x1": 0}),  # no spreading
        (3, 1, {"a1": 100, "a2": 100, "b1": 33, "c1": 33, "x1": 0}),  # 300 vs 100
    ],
)
def test_weights(pref_w: int, spread_w: int, expected: dict[str, int]) -> None:
    plugin = AZScheduler(AZSchedulerArgs(preferred_zone_weight=pref_w, spread_weight=spread_w))
    assert scores(plugin, pod(owner="web", preferred="a"), cluster({"a1": 2})) == expected


def test_skip_when_nothing_to_prefer() -> None:
    table = cluster({"a1": 1})
    # No controller and no preferred zone.
    assert AZScheduler().pre_score(CycleState(), pod(), table.all()) == Status.skip()
    # A replica, but spreading is off; a preferred zone, but preferences weigh nothing.
    no_spread = AZScheduler(AZSchedulerArgs(spread_weight=0))
    assert no_spread.pre_score(CycleState(), pod(owner="web"), table.all()) == Status.skip()
    no_preference = AZScheduler(AZSchedulerArgs(preferred_zones=["a"], preferred_zone_weight=0))
    assert no_preference.pre_score(CycleState(), pod(), table.all()) == Status.skip()
    assert no_preference.pre_score(CycleState(), pod(owner="web"), table.all()) is None


def test_counts_follow_new_pods_between_cycles() -> None:
    table = cluster({"a1": 1})
    plugin = AZScheduler()
    assert scores(plugin, pod(owner="web"), table)["b1"] == 100
    table.add_pod(table.index["b1"], PodInfo(pod("web-new", owner="web", node="b1")))
    table.add_pod(table.index["b1"], PodInfo(pod("web-new2", owner="web", node="b1")))
    # Now a 1, b 2, c 0 -> a 50, b 0, c 100.
    assert scores(plugin, pod(owner="web"), table) == {"a1": 50, "a2": 50, "b1": 0, "c1": 100, "x1": 0}


def test_score_without_pre_score() -> None:
    table = cluster({"a1": 2, "b1": 1})
    p = pod(owner="web", preferred="b")
    batch = AZScheduler().score_nodes(CycleState(), p, table.all())
    assert batch.tolist() == [0, 0, 250, 100, 0]

    class FakeHandle:
        snapshot = table

    # Per node, with the snapshot from the handle; without a handle only the preference is known.
    assert [
        AZScheduler(handle=cast(Handle, FakeHandle())).score(CycleState(), p, ni) for ni in table.infos
    ] == batch.tolist()
    assert [AZScheduler().score(CycleState(), p, ni) for ni in table.infos] == [0, 0, 200, 0, 0]


# --------------------------------------------------------------------------- args


def test_defaults_and_registry() -> None:
    args = decode_args(AZScheduler, None)
    assert args == AZSchedulerArgs()
    assert (args.zone_label, args.preferred_zones, args.preferred_zones_annotation) == (ZONE, [], PREFERRED)
    assert (args.preferred_zone_weight, args.spread_weight) == (2, 1)
    assert args.spread_owner_kinds == ["ReplicaSet", "StatefulSet", "ReplicationController"]
    assert default_registry(entry_points=False)["AZScheduler"] is AZScheduler
    assert isinstance(instantiate(AZScheduler), AZScheduler)
    assert extension_points_of(AZScheduler) == ["preScore", "score"]
    assert AZScheduler().events_to_register() == []


def test_camel_case_args_decode() -> None:
    args = decode_args(
        AZScheduler,
        {
            "zoneLabel": "example.com/zone",
            "preferredZones": ["us-east-1a"],
            "preferredZonesAnnotation": "example.com/zones",
            "preferredZoneWeight": 5,
            "spreadWeight": 0,
            "spreadOwnerKinds": ["StatefulSet"],
        },
    )
    assert (args.zone_label, args.preferred_zones, args.preferred_zones_annotation) == (
        "example.com/zone",
        ["us-east-1a"],
        "example.com/zones",
    )
    assert (args.preferred_zone_weight, args.spread_weight, args.spread_owner_kinds) == (
        5,
        0,
        ["StatefulSet"],
    )


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        ({"zoneLabel": "bad key"}, "args.zoneLabel", "invalid label key 'bad key'"),
        ({"preferredZonesAnnotation": ""}, "args.preferredZonesAnnotation", "invalid annotation key ''"),
        ({"preferredZones": ["a", ""]}, "args.preferredZones[1]", "invalid zone '': must not be empty"),
        ({"preferredZones": ["us east"]}, "args.preferredZones[0]", "invalid zone 'us east'"),
        ({"preferredZoneWeight": -1}, "args.preferredZoneWeight", "must be in the range [0, 100]"),
        ({"spreadWeight": 101}, "args.spreadWeight", "must be in the range [0, 100]"),
        ({"preferredZoneWeight": 0, "spreadWeight": 0}, "args.spreadWeight", "must not both be 0"),
        ({"spreadOwnerKinds": [""]}, "args.spreadOwnerKinds[0]", "must not be empty"),
        ({"preferredZones": "a"}, "args.preferredZones", "Expected `array`"),
        ({"zones": ["a"]}, "args.zones", "unknown field"),
    ],
)
def test_arg_validation(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        decode_args(AZScheduler, raw)
    assert info.value.path == path
    assert message in info.value.message


def test_invalid_args_fail_the_constructor() -> None:
    with pytest.raises(FieldErrors) as info:
        AZScheduler(AZSchedulerArgs(preferred_zones=[""], spread_weight=-5))
    assert [e.path for e in info.value.errors] == ["preferredZones[0]", "spreadWeight"]


# --------------------------------------------------------------------------- batch == per node


@settings(max_examples=300, deadline=None)
@given(
    nodes=st.lists(
        st.tuples(st.sampled_from([None, "a", "b", "c", ""]), st.integers(0, 3), st.integers(0, 2)),
        max_size=7,
    ),
    preferred=st.sampled_from([None, "", "a", "b,c", "zz"]),
    owned=st.booleans(),
    pref_w=st.integers(0, 3),
    spread_w=st.integers(0, 3),
    data=st.data(),
)
def test_batch_agrees_with_per_node(
    nodes: list[tuple[str | None, int, int]],
    preferred: str | None,
    owned: bool,
    pref_w: int,
    spread_w: int,
    data: st.DataObject,
) -> None:
    if pref_w == spread_w == 0:
        spread_w = 1
    running: list[Pod] = []
    for i, (_, mine, others) in enumerate(nodes):
        running += [pod(f"w{i}-{j}", owner="web", node=f"n{i}") for j in range(mine)]
        running += [pod(f"o{i}-{j}", owner="api", node=f"n{i}") for j in range(others)]
    table = make_table([zoned(f"n{i}", z) for i, (z, _, _) in enumerate(nodes)], running)
    rows = sorted(data.draw(st.sets(st.integers(0, len(nodes) - 1))) if nodes else set())
    subset = NodeSet(table, np.asarray(rows, dtype=np.intp))
    plugin = AZScheduler(
        AZSchedulerArgs(preferred_zones=["b"], preferred_zone_weight=pref_w, spread_weight=spread_w)
    )
    incoming = pod("new", owner="web" if owned else None, preferred=preferred)
    state = CycleState()
    if plugin.pre_score(state, incoming, subset) is not None:
        return
    raw = plugin.score_nodes(state, incoming, subset)
    assert raw.tolist() == [plugin.score(state, incoming, ni) for ni in subset]
    assert all(0 <= s <= 100 * (pref_w + spread_w) for s in raw.tolist())
    plugin.normalize_score(state, incoming, subset, raw)
    assert all(0 <= s <= 100 for s in raw.tolist())


# --------------------------------------------------------------------------- kubesched simulate


def _node(name: str, zone: str) -> str:
    return f"""\
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{topology.kubernetes.io/zone: {zone}}}}}
status: {{allocatable: {{cpu: "8", memory: 32Gi, pods: "110"}}}}
---
"""


def _replica(name: str, node: str = "") -> str:
    bound = f"\n  nodeName: {node}" if node else ""
    return f"""\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: web-abc, uid: u-web, controller: true}}]
spec:{bound}
  containers: [{{name: c, image: x}}]
---
"""


def test_simulate_explains_az_scheduler(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = (
        _node("a-1", "us-east-1a")
        + _node("b-1", "us-east-1b")
        + _node("c-1", "us-east-1c")
        + _replica("web-0", "a-1")
        + _replica("web-1", "a-1")
        + _replica("web-2", "c-1")
        + _replica("web-new")
    )
    config = single_plugin_config("AZScheduler", {"preferredZones": ["us-east-1c"]})
    expected_args = {"AZScheduler": {"kind": "AZSchedulerArgs", "preferredZones": ["us-east-1c"]}}
    report = simulate_explain(tmp_path, capsys, objects, config, expected_args=expected_args)
    (new,) = [p for p in report["pods"] if p["name"] == "web-new"]
    # Replicas: a 2, b 0, c 1 (max 2) -> spread a 0, b 100, c 50; c is preferred (2 * 100).
    # Raw: a 0, b 100, c 250 -> normalized 100 * raw // 250: 0, 40, 100.
    assert new["node"] == "c-1"
    assert new["scores"] == {
        "a-1": {"plugins": {"AZScheduler": 0}, "total": 0},
        "b-1": {"plugins": {"AZScheduler": 40}, "total": 40},
        "c-1": {"plugins": {"AZScheduler": 100}, "total": 100},
    }
