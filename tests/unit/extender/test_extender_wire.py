"""The extender/v1 wire format against JSON documents written from upstream's
`k8s.io/kube-scheduler/extender/v1/types.go`.

kube-scheduler's extender types have no json tags: keys are the Go field names, nil is `null`, and
decoding ignores case. These documents are what a Go peer sends and expects, byte for byte where
the encoding is ours.
"""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api import extender_v1 as wire
from kubesched.api.extender_v1 import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriority,
    MetaPod,
    MetaVictims,
    NodeList,
    RawNodeList,
    Victims,
    WireError,
)
from kubesched.api.objects import Node, Pod

POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u-p"}, "spec": {"containers": [{"name": "c"}]}}
NODE = {"metadata": {"name": "n1", "labels": {"zone": "a"}}, "status": {"allocatable": {"cpu": "2"}}}


# --------------------------------------------------------------------------- requests kube-scheduler sends


def test_extender_args_in_node_names_mode() -> None:
    doc = {"Pod": POD, "Nodes": None, "NodeNames": ["n1", "n2"]}
    args = wire.decode_extender_args(json.dumps(doc).encode())
    assert args.pod is not None and args.pod.metadata.name == "p" and args.pod.metadata.uid == "u-p"
    assert args.nodes is None
    assert args.node_names == ["n1", "n2"]


def test_node_names_memo_hands_back_the_list_of_the_same_bytes_only() -> None:
    memo = wire.NodeNamesMemo()

    def names(doc: dict[str, object]) -> list[str] | None:
        return wire.decode_extender_args_raw(json.dumps(doc).encode(), memo)[0].node_names

    first = names({"Pod": POD, "NodeNames": ["n1", "n2"]})
    assert first == ["n1", "n2"]
    assert names({"Pod": POD, "NodeNames": ["n1", "n2"]}) is first  # same bytes: not decoded again
    assert names({"Pod": POD, "NodeNames": ["n1", "n3"]}) == ["n1", "n3"]
    with pytest.raises(WireError, match=r"ExtenderArgs\.NodeNames"):
        names({"Pod": POD, "NodeNames": ["n1", 2]})
    assert names({"Pod": POD, "NodeNames": ["n1", "n3"]}) == ["n1", "n3"]  # a bad body kept nothing
    assert names({"Pod": POD, "NodeNames": None}) is None


def test_extender_args_in_full_nodes_mode_keeps_the_raw_items() -> None:
    doc = {"Pod": POD, "Nodes": {"metadata": {}, "items": [NODE]}, "NodeNames": None}
    body = json.dumps(doc).encode()
    args, raws = wire.decode_extender_args_raw(body)
    assert args.node_names is None
    assert args.nodes is not None
    assert [n.metadata.name for n in args.nodes.items] == ["n1"]
    assert args.nodes.items[0].metadata.labels == {"zone": "a"}
    assert raws is not None and json.loads(bytes(raws[0])) == NODE


def test_missing_and_null_fields_both_read_as_nil() -> None:
    for body in (b'{"Pod": {}}', b'{"Pod": {}, "Nodes": null, "NodeNames": null}'):
        args = wire.decode_extender_args(body)
        assert args.nodes is None and args.node_names is None


def test_empty_node_names_is_not_nil() -> None:
    args = wire.decode_extender_args(b'{"Pod": {}, "NodeNames": []}')
    assert args.node_names == []


def test_keys_match_case_insensitively_and_exact_match_wins() -> None:
    args = wire.decode_extender_args(
        b'{"pod": {"metadata": {"name": "x"}}, "nodenames": ["a"], "NODES": null}'
    )
    assert args.pod is not None and args.pod.metadata.name == "x"
    assert args.node_names == ["a"]
    # Go prefers the exact key whatever the order of the keys.
    args = wire.decode_extender_args(b'{"NodeNames": ["exact"], "nodeNames": ["folded"]}')
    assert args.node_names == ["exact"]
    args = wire.decode_extender_args(b'{"nodeNames": ["folded"], "NodeNames": ["exact"]}')
    assert args.node_names == ["exact"]


def test_unknown_keys_are_ignored_like_go() -> None:
    args = wire.decode_extender_args(b'{"Pod": {}, "NodeNames": ["a"], "Extra": {"x": 1}}')
    assert args.node_names == ["a"]


def test_nulls_inside_kubernetes_objects_count_as_unset() -> None:
    doc = {
        "Pod": {
            "metadata": {"name": "p", "labels": None, "creationTimestamp": None},
            "spec": {"tolerations": None},
        }
    }
    args = wire.decode_extender_args(json.dumps(doc).encode())
    assert args.pod is not None and args.pod.metadata.labels == {} and args.pod.spec.tolerations == []


def test_binding_args_with_go_names() -> None:
    body = b'{"PodName": "p", "PodNamespace": "ns", "PodUID": "u-1", "Node": "n1"}'
    assert wire.decode_binding_args(body) == ExtenderBindingArgs(
        pod_name="p", pod_namespace="ns", pod_uid="u-1", node="n1"
    )
    assert wire.decode_binding_args(b'{"podname": "p", "poduid": "u", "node": "n"}').pod_uid == "u"


def test_preemption_args_meta_victims_mode() -> None:
    doc = {
        "Pod": POD,
        "NodeNameToVictims": None,
        "NodeNameToMetaVictims": {
            "n1": {"Pods": [{"UID": "v1"}, {"uid": "v2"}], "NumPDBViolations": 1},
            "n2": None,
        },
    }
    args = wire.decode_preemption_args(json.dumps(doc).encode())
    assert args.node_name_to_victims is None
    assert args.node_name_to_meta_victims == {
        "n1": MetaVictims(pods=[MetaPod(uid="v1"), MetaPod(uid="v2")], num_pdb_violations=1),
        "n2": None,
    }


def test_preemption_args_full_victims_mode() -> None:
    victim = {"metadata": {"name": "v", "uid": "v1"}}
    doc = {"Pod": POD, "NodeNameToVictims": {"n1": {"Pods": [victim], "NumPDBViolations": 0}}}
    args = wire.decode_preemption_args(json.dumps(doc).encode())
    assert args.node_name_to_meta_victims is None
    assert args.node_name_to_victims is not None
    victims = args.node_name_to_victims["n1"]
    assert victims is not None and victims.pods is not None
    assert [p.metadata.uid for p in victims.pods] == ["v1"]


# --------------------------------------------------------------------------- results we send


def test_filter_result_node_names_mode_encodes_go_names_and_null() -> None:
    result = ExtenderFilterResult(
        node_names=["n1"], failed_nodes={"n2": "why"}, failed_and_unresolvable_nodes={"n3": "never"}
    )
    assert wire.encode(result) == (
        b'{"Nodes":null,"NodeNames":["n1"],"FailedNodes":{"n2":"why"},'
        b'"FailedAndUnresolvableNodes":{"n3":"never"},"Error":""}'
    )


def test_filter_result_echoes_raw_nodes_unchanged() -> None:
    raw = msgspec.Raw(b'{"metadata":{"name":"n1"},"spec":{"podCIDR":"10.0.0.0/24"}}')
    result = ExtenderFilterResult(
        nodes=RawNodeList(items=[raw]), failed_nodes={}, failed_and_unresolvable_nodes={}
    )
    decoded = json.loads(wire.encode(result))
    assert decoded["Nodes"]["items"][0]["spec"]["podCIDR"] == "10.0.0.0/24"  # a field our structs drop
    assert decoded["NodeNames"] is None


def test_nil_maps_encode_as_null() -> None:
    assert json.loads(wire.encode(ExtenderFilterResult(error="boom"))) == {
        "Nodes": None,
        "NodeNames": None,
        "FailedNodes": None,
        "FailedAndUnresolvableNodes": None,
        "Error": "boom",
    }


def test_host_priority_list_binding_and_preemption_results() -> None:
    assert wire.encode([HostPriority(host="n1", score=7)]) == b'[{"Host":"n1","Score":7}]'
    assert wire.encode(ExtenderBindingResult()) == b'{"Error":""}'
    result = ExtenderPreemptionResult(node_name_to_meta_victims={"n1": MetaVictims(pods=[MetaPod(uid="v")])})
    assert (
        wire.encode(result) == b'{"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"v"}],"NumPDBViolations":0}}}'
    )


@given(
    st.lists(
        st.tuples(st.text(), st.integers(min_value=0, max_value=wire.MAX_EXTENDER_PRIORITY)), max_size=20
    )
)
def test_host_priorities_joined_from_prefixes_encode_as_structs_do(entries: list[tuple[str, int]]) -> None:
    # Names with quotes, backslashes, control characters and non-ASCII need the encoder's escaping.
    prefixes = [wire.host_priority_prefix(host) for host, _ in entries]
    joined = wire.encode_host_priorities(prefixes, [score for _, score in entries])
    assert joined == wire.encode([HostPriority(host, score) for host, score in entries])
    assert wire.encode(msgspec.Raw(joined)) == joined


def test_requests_we_send_as_a_client() -> None:
    pod = msgspec.convert(POD, Pod)
    node = msgspec.convert(NODE, Node)
    by_names = json.loads(wire.encode(ExtenderArgs(pod=pod, node_names=["n1"])))
    assert by_names["Nodes"] is None and by_names["NodeNames"] == ["n1"]
    assert by_names["Pod"]["metadata"]["name"] == "p"
    full = json.loads(wire.encode(ExtenderArgs(pod=pod, nodes=NodeList(items=[node]))))
    assert full["NodeNames"] is None and full["Nodes"]["items"][0]["metadata"]["name"] == "n1"
    binding = json.loads(
        wire.encode(ExtenderBindingArgs(pod_name="p", pod_namespace="ns", pod_uid="u", node="n"))
    )
    assert set(binding) == {"PodName", "PodNamespace", "PodUID", "Node"}
    preempt = json.loads(
        wire.encode(ExtenderPreemptionArgs(pod=pod, node_name_to_victims={"n1": Victims(pods=[pod])}))
    )
    assert preempt["NodeNameToMetaVictims"] is None
    assert preempt["NodeNameToVictims"]["n1"]["NumPDBViolations"] == 0


# --------------------------------------------------------------------------- results external extenders send


def test_filter_result_from_a_lowercase_extender() -> None:
    body = b'{"nodenames": ["a"], "failednodes": {"b": "x"}, "failedandunresolvablenodes": null, "error": ""}'
    result = wire.decode_filter_result(body)
    assert result.node_names == ["a"]
    assert result.failed_nodes == {"b": "x"}
    assert result.failed_and_unresolvable_nodes is None


def test_host_priority_list_null_and_lowercase() -> None:
    assert wire.decode_host_priority_list(b"null") == []
    assert wire.decode_host_priority_list(b'[{"host": "a", "score": 3}]') == [HostPriority(host="a", score=3)]


# --------------------------------------------------------------------------- wrong shapes


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{", "ExtenderArgs: invalid JSON"),
        (b"", "ExtenderArgs: invalid JSON"),
        (b"[1, 2]", "ExtenderArgs: expected object, got array"),
        (b'"text"', "ExtenderArgs: expected object, got str"),
        (b'{"NodeNames": 3}', "ExtenderArgs.NodeNames: expected array, got int"),
        (b'{"NodeNames": ["a", 1]}', "ExtenderArgs.NodeNames[1]: expected str, got int"),
        (b'{"Pod": 5}', "ExtenderArgs.Pod: expected object, got int"),
        (
            b'{"Pod": {"spec": {"containers": 1}}}',
            "ExtenderArgs.Pod.spec.containers: expected array, got int",
        ),
        (
            b'{"Nodes": {"items": [{"metadata": []}]}}',
            "ExtenderArgs.Nodes.items[0].metadata: expected object",
        ),
    ],
)
def test_wrong_shapes_name_the_field(body: bytes, message: str) -> None:
    with pytest.raises(WireError) as err:
        wire.decode_extender_args(body)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_wrong_shapes_in_other_types() -> None:
    with pytest.raises(WireError, match=r"ExtenderBindingArgs.Node: expected str, got int"):
        wire.decode_binding_args(b'{"PodName": "p", "Node": 1}')
    with pytest.raises(WireError, match=r"NodeNameToMetaVictims\[n1\].Pods: expected array"):
        wire.decode_preemption_args(b'{"NodeNameToMetaVictims": {"n1": {"Pods": {}}}}')
    with pytest.raises(WireError, match=r"HostPriorityList\[0\].Score: expected int"):
        wire.decode_host_priority_list(b'[{"Host": "a", "Score": "high"}]')
