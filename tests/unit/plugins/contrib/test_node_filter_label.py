"""NodeFilterLabel: the classic custom filter (default node=hello), its args and validation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.config import load_config
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, Resource
from kubesched.framework.interfaces import extension_points_of
from kubesched.framework.node_table import NodeSet
from kubesched.framework.registry import decode_args, instantiate
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.plugins import default_registry
from kubesched.plugins.contrib.node_filter_label import NodeFilterLabel, NodeFilterLabelArgs
from kubesched.scheduler.profiles import profiles_from_config
from kubesched.testing.builders import make_node, make_pod, make_table

DEMO_CONFIG = Path(__file__).resolve().parents[4] / "examples" / "demo" / "scheduler-config.yaml"


def _verdicts(plugin: NodeFilterLabel, node_labels: list[dict[str, str]]) -> tuple[list[Any], list[Any]]:
    """(per-node, batch) messages; None where the node passes."""
    table = make_table([make_node(f"n{i}", labels=labels) for i, labels in enumerate(node_labels)])
    pod = make_pod("p")
    per_node = [plugin.filter(CycleState(), pod, ni) for ni in table.infos]
    res = plugin.filter_nodes(CycleState(), pod, table.all())
    batch = [None if c < 0 else res.statuses[c] for c in res.codes]
    for status in (*per_node, *batch):
        assert status is None or status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    return [s and s.message() for s in per_node], [s and s.message() for s in batch]


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({}, None),
        ({"node": "hello"}, "node(s) had label node=hello"),
        ({"node": "world"}, None),
        ({"node": ""}, None),
        ({"other": "hello"}, None),
        ({"node": "Hello"}, None),  # values are case-sensitive
    ],
)
def test_default_args_reject_node_hello(labels: dict[str, str], expected: str | None) -> None:
    per_node, batch = _verdicts(NodeFilterLabel(), [labels])
    assert per_node == batch == [expected]


def test_registry_gives_default_args() -> None:
    plugin = instantiate(NodeFilterLabel)
    assert isinstance(plugin, NodeFilterLabel)
    assert plugin.labels == {"node": ["hello"]}
    assert decode_args(NodeFilterLabel, None).labels == {"node": ["hello"]}
    assert decode_args(NodeFilterLabel, {}).labels == {"node": ["hello"]}


CUSTOM = {"env": ["dev", "test"], "example.com/retired": [], "node": ["hello"]}


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"env": "prod"}, None),
        ({"env": "dev"}, "node(s) had label env=dev"),
        ({"env": "test"}, "node(s) had label env=test"),
        ({"example.com/retired": "true"}, "node(s) had label example.com/retired"),
        ({"example.com/retired": ""}, "node(s) had label example.com/retired"),  # key-only: any value
        ({"node": "hello"}, "node(s) had label node=hello"),
        # The first configured key that matches is reported.
        ({"node": "hello", "env": "dev"}, "node(s) had label env=dev"),
        ({"node": "hello", "example.com/retired": "x"}, "node(s) had label example.com/retired"),
        ({"env": "prod", "node": "hello"}, "node(s) had label node=hello"),
    ],
)
def test_custom_args(labels: dict[str, str], expected: str | None) -> None:
    plugin = NodeFilterLabel(decode_args(NodeFilterLabel, {"labels": CUSTOM}))
    per_node, batch = _verdicts(plugin, [labels])
    assert per_node == batch == [expected]


def test_empty_labels_filter_nothing() -> None:
    plugin = NodeFilterLabel(NodeFilterLabelArgs(labels={}))
    per_node, batch = _verdicts(plugin, [{"node": "hello"}, {}])
    assert per_node == batch == [None, None]


def test_mixed_cluster_batch_reasons() -> None:
    plugin = NodeFilterLabel(NodeFilterLabelArgs(labels=CUSTOM))
    nodes = [{"env": "dev"}, {}, {"env": "test"}, {"example.com/retired": "y"}, {"env": "dev"}]
    per_node, batch = _verdicts(plugin, nodes)
    assert batch == per_node
    assert batch == [
        "node(s) had label env=dev",
        None,
        "node(s) had label env=test",
        "node(s) had label example.com/retired",
        "node(s) had label env=dev",
    ]


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        ({"labels": {"bad key": ["x"]}}, 'args.labels["bad key"]', "invalid label key 'bad key'"),
        ({"labels": {"Example.com/x": []}}, "args.labels[Example.com/x]", "invalid label key"),
        ({"labels": {"": ["x"]}}, 'args.labels[""]', "invalid label key ''"),
        ({"labels": {"a/b/c": []}}, "args.labels[a/b/c]", "at most one '/'"),
        ({"labels": {"node": ["ok", "not ok"]}}, "args.labels[node][1]", "invalid label value 'not ok'"),
        ({"labels": {"node": ["x" * 64]}}, "args.labels[node][0]", "no more than 63 characters"),
    ],
)
def test_arg_validation_errors(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        decode_args(NodeFilterLabel, raw)
    assert info.value.path == path
    assert message in info.value.message


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(msgspec.ValidationError, match="unknown field `label`"):
        msgspec.convert({"label": {"node": ["x"]}}, NodeFilterLabelArgs, strict=False)


def test_validate_reports_every_problem() -> None:
    errors = NodeFilterLabelArgs(labels={"bad key": ["-x"], "ok": ["fine", "-y"]}).validate()
    assert [e.path for e in errors] == ['labels["bad key"]', 'labels["bad key"][0]', "labels[ok][1]"]
    assert NodeFilterLabelArgs(labels={"example.com/a-b_c.d": ["A.b-c_9", ""]}).validate() == []


def test_extension_points_and_events() -> None:
    assert extension_points_of(NodeFilterLabel) == ["filter"]
    assert NodeFilterLabel.args_type is NodeFilterLabelArgs
    events = [e.event for e in NodeFilterLabel().events_to_register()]
    assert events == [ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)]


_keys = ["node", "env", "zone"]
_vals = ["hello", "dev", "a", ""]
labels_st = st.dictionaries(st.sampled_from(_keys), st.sampled_from(_vals), max_size=3)
args_st = st.dictionaries(
    st.sampled_from([*_keys, "absent"]), st.lists(st.sampled_from([*_vals, "nope"]), max_size=3), max_size=4
)


@settings(max_examples=200, deadline=None)
@given(st.lists(labels_st, max_size=6), args_st, st.data())
def test_batch_agrees_with_per_node(
    node_labels: list[dict[str, str]], args: dict[str, list[str]], data: st.DataObject
) -> None:
    table = make_table([make_node(f"n{i}", labels=lab) for i, lab in enumerate(node_labels)])
    rows = sorted(data.draw(st.sets(st.integers(0, len(node_labels) - 1))) if node_labels else set())
    nodes = NodeSet(table, np.array(rows, dtype=np.intp))
    plugin = NodeFilterLabel(NodeFilterLabelArgs(labels=args))
    pod = make_pod("p")
    res = plugin.filter_nodes(CycleState(), pod, nodes)
    batch: list[Status | None] = [None if c < 0 else res.statuses[c] for c in res.codes]
    assert batch == [plugin.filter(CycleState(), pod, ni) for ni in nodes]


def test_signs_pods_by_nothing_so_its_profile_still_signs() -> None:
    """Its verdict reads no part of the pod: it signs with no fragment, and a profile with it signs
    pods (batching) and gives them filter shapes (the filter memo) as the default profile does."""
    pods = [make_pod("a", cpu="1", labels={"app": "x"}), make_pod("b", cpu="1", labels={"app": "y"})]
    assert [NodeFilterLabel().sign_pod(p) for p in pods] == [[], []]
    registry = default_registry()
    config = load_config(DEMO_CONFIG, registry)
    spec = next(s for s in profiles_from_config(config, registry) if s.scheduler_name == "nodelabelfilter")
    fwk = Framework(spec.scheduler_name, spec.points, spec.plugin_args, registry, None)
    assert "NodeFilterLabel" in fwk.plugins_at("filter") and fwk.unsigned_plugins == []
    shapes = [fwk.filter_shape(p) for p in pods]
    assert shapes[0] is not None and shapes[0] == shapes[1]  # labels are no part of a filter shape
    assert fwk.filter_shape(make_pod("c", cpu="2")) != shapes[0]
