"""NodePorts (upstream `pkg/scheduler/framework/plugins/nodeports/node_ports.go`): host-port collection, the
0.0.0.0 wildcard rule, PreFilter Skip, and the batch Filter agreeing with the per-node one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, QueueingHint, Resource
from kubesched.framework.node_info import NodeInfo, PodInfo
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.status import Code, Status
from kubesched.plugins.node_ports import ERR_REASON, NodePorts, pod_host_ports
from kubesched.testing.builders import make_node, make_pod, make_table

REASON = "node(s) didn't have free ports for the requested pod ports"

Port = tuple[str, str, int]  # (hostIP, protocol, hostPort) as written in the manifest


def _pod(
    name: str,
    ports: Sequence[Port],
    node_name: str = "",
    init_ports: Sequence[Port] = (),
    sidecar_ports: Sequence[Port] = (),
) -> Pod:
    def container(cname: str, ps: Sequence[Port]) -> dict[str, Any]:
        return {
            "name": cname,
            "ports": [
                {"containerPort": 8000 + i, "hostPort": port, "hostIP": ip, "protocol": proto}
                for i, (ip, proto, port) in enumerate(ps)
            ],
        }

    spec: dict[str, Any] = {"containers": [container("c", ports)]}
    if init_ports:
        spec["initContainers"] = [container("i", init_ports)]
    if sidecar_ports:
        sidecar = container("s", sidecar_ports) | {"restartPolicy": "Always"}
        spec["initContainers"] = [*spec.get("initContainers", []), sidecar]
    return make_pod(name, node_name=node_name, spec=spec)


def _verdicts(plugin: NodePorts, pod: Pod, nodes: NodeSet) -> list[Status | None]:
    state = CycleState()
    pre = plugin.pre_filter(state, pod, nodes)
    per_node = [plugin.filter(state, pod, ni) for ni in nodes]
    res = plugin.filter_nodes(state, pod, nodes)
    assert len(res.codes) == len(nodes)
    batch = [None if c < 0 else res.statuses[c] for c in res.codes]
    assert batch == per_node
    if pre is not None and pre.is_skip():
        assert all(v is None for v in per_node)
    return per_node


def test_pod_host_ports() -> None:
    pod = _pod("p", [("", "", 80), ("10.0.0.1", "UDP", 53), ("", "TCP", 0)])
    assert pod_host_ports(pod) == (("0.0.0.0", "TCP", 80), ("10.0.0.1", "UDP", 53))
    # A plain init container has finished before the pod runs: its ports are not held.
    assert pod_host_ports(_pod("p", [], init_ports=[("", "", 80)])) == ()
    # A sidecar (restartable init container) runs as long as the pod: its ports come first.
    assert pod_host_ports(_pod("p", [("", "", 81)], sidecar_ports=[("", "", 80)])) == (
        ("0.0.0.0", "TCP", 80),
        ("0.0.0.0", "TCP", 81),
    )


@pytest.mark.parametrize(
    ("existing", "incoming", "fits"),
    [
        pytest.param(
            _pod("e", [], sidecar_ports=[("", "", 80)]), _pod("p", [("", "", 80)]), False, id="sidecar holds"
        ),
        pytest.param(
            _pod("e", [("", "", 80)]), _pod("p", [], sidecar_ports=[("", "", 80)]), False, id="sidecar wants"
        ),
        pytest.param(
            _pod("e", [], init_ports=[("", "", 80)]), _pod("p", [("", "", 80)]), True, id="init finished"
        ),
    ],
)
def test_sidecar_host_ports(existing: Pod, incoming: Pod, fits: bool) -> None:
    """v1.37 counts restartable init containers' host ports, on the node and in the pod."""
    placed = msgspec.structs.replace(existing, spec=msgspec.structs.replace(existing.spec, node_name="a"))
    nodes = make_table([make_node("a")], [placed]).all()
    verdicts = _verdicts(NodePorts(), incoming, nodes)
    assert (verdicts == [None]) is fits


def test_used_ports_are_a_set() -> None:
    """Two pods on one port hold it once; removing either frees it (upstream HostPortInfo)."""
    a = PodInfo(_pod("a", [("", "", 80)], node_name="n"))
    b = PodInfo(_pod("b", [("", "", 80)], node_name="n"))
    info = NodeInfo(make_node("n"), [a, b])
    assert info.used_ports == {("0.0.0.0", "TCP", 80)}
    dry_run = info.clone()
    dry_run.remove_pod(a.key)
    assert dry_run.used_ports == set()
    assert info.used_ports == {("0.0.0.0", "TCP", 80)}


def test_pre_filter_skips_pods_without_host_ports() -> None:
    plugin = NodePorts()
    nodes = make_table([make_node("a")]).all()
    state = CycleState()
    status = plugin.pre_filter(state, make_pod("p"), nodes)
    assert status is not None
    assert status.code == Code.SKIP
    assert state.get("PreFilterNodePorts") is None
    assert plugin.pre_filter(state, _pod("p", [("", "", 0)]), nodes) == Status.skip()


def test_pre_filter_writes_the_ports() -> None:
    state = CycleState()
    assert (
        NodePorts().pre_filter(state, _pod("p", [("", "", 80)]), make_table([make_node("a")]).all()) is None
    )
    data = state.read("PreFilterNodePorts")
    assert data.clone() is data
    assert data.ports == (("0.0.0.0", "TCP", 80),)  # type: ignore[attr-defined]


CONFLICTS: list[tuple[str, list[Port], list[Port], bool]] = [
    ("no ports used on the node", [], [("", "", 80)], True),
    ("same port, both wildcard", [("", "", 80)], [("", "", 80)], False),
    ("different port", [("", "", 80)], [("", "", 81)], True),
    ("same port, other protocol", [("", "TCP", 53)], [("", "UDP", 53)], True),
    ("same port and protocol, UDP", [("", "UDP", 53)], [("", "UDP", 53)], False),
    ("empty protocol means TCP", [("", "TCP", 80)], [("", "", 80)], False),
    ("wanted specific ip, used wildcard", [("0.0.0.0", "TCP", 80)], [("127.0.0.1", "TCP", 80)], False),
    ("wanted wildcard, used specific ip", [("10.0.0.1", "TCP", 80)], [("", "TCP", 80)], False),
    ("different specific ips", [("10.0.0.1", "TCP", 80)], [("10.0.0.2", "TCP", 80)], True),
    ("same specific ip", [("10.0.0.1", "TCP", 80)], [("10.0.0.1", "TCP", 80)], False),
    ("one of several wanted ports taken", [("", "", 443)], [("", "", 80), ("", "", 443)], False),
]


@pytest.mark.parametrize(
    ("used", "wanted", "fits"), [c[1:] for c in CONFLICTS], ids=[c[0] for c in CONFLICTS]
)
def test_filter(used: list[Port], wanted: list[Port], fits: bool) -> None:
    table = make_table([make_node("a")], [_pod("e", used, node_name="a")] if used else [])
    [got] = _verdicts(NodePorts(), _pod("p", wanted), table.all())
    if fits:
        assert got is None
    else:
        assert got is not None
        assert got.code == Code.UNSCHEDULABLE
        assert got.all_reasons() == [REASON]
    assert ERR_REASON == REASON


def test_filter_many_nodes_and_a_subset() -> None:
    pods = [
        _pod("e1", [("", "", 80)], node_name="b"),
        _pod("e2", [("10.0.0.1", "", 8080)], node_name="c"),
        _pod("e3", [("", "UDP", 80)], node_name="d"),
    ]
    table = make_table([make_node(x) for x in "abcde"], pods)
    wanted = _pod("p", [("", "", 80), ("10.0.0.2", "", 8080)])
    got = _verdicts(NodePorts(), wanted, table.all())
    assert [v is None for v in got] == [True, False, True, True, True]
    got = _verdicts(
        NodePorts(), _pod("p", [("10.0.0.1", "", 8080)]), NodeSet(table, np.array([1, 2], dtype=np.intp))
    )
    assert [v is None for v in got] == [True, False]


def test_batch_sees_pods_added_to_the_table() -> None:
    table = make_table([make_node("a"), make_node("b")])
    plugin = NodePorts()
    pod = _pod("p", [("", "", 80)])
    assert [v is None for v in _verdicts(plugin, pod, table.all())] == [True, True]
    table.add_pod(1, PodInfo(_pod("e", [("", "", 80)], node_name="b")))
    assert [v is None for v in _verdicts(plugin, pod, table.all())] == [True, False]
    table.remove_pod(1, "default-e")
    assert [v is None for v in _verdicts(plugin, pod, table.all())] == [True, True]


def test_existing_pod_init_container_ports_are_not_held() -> None:
    # Both sides count regular containers only (upstream v1.30): an init container's port is free again.
    table = make_table([make_node("a")], [_pod("e", [], node_name="a", init_ports=[("", "", 9000)])])
    [got] = _verdicts(NodePorts(), _pod("p", [("", "", 9000)]), table.all())
    assert got is None


def test_filter_without_pre_filter() -> None:
    table = make_table([make_node("a")], [_pod("e", [("", "", 80)], node_name="a")])
    pod = _pod("p", [("", "", 80)])
    assert NodePorts().filter(CycleState(), pod, table.infos[0]) == Status(Code.UNSCHEDULABLE, REASON)
    assert NodePorts().filter_nodes(CycleState(), pod, table.all()).codes.tolist() == [0]
    assert NodePorts().filter_nodes(CycleState(), make_pod("q"), table.all()).codes.tolist() == [-1]


def test_events_to_register() -> None:
    """v1.37.2: a bound pod's delete, with a hint; a node add, without one."""
    regs = NodePorts().events_to_register()
    assert [(r.event.resource, r.event.action, r.hint is not None) for r in regs] == [
        (Resource.ASSIGNED_POD, ActionType.DELETE, True),
        (Resource.NODE, ActionType.ADD, False),
    ]


def _nominated(pod: Pod, node: str) -> Pod:
    return msgspec.structs.replace(pod, status=msgspec.structs.replace(pod.status, nominated_node_name=node))


# The cases of upstream's Test_isSchedulableAfterAssignedPodDeleted, plus the wildcard address and
# a nominated pod (which holds its ports on the node it is nominated to).
@pytest.mark.parametrize(
    ("deleted", "expected"),
    [
        ("not-a-pod", QueueingHint.QUEUE),
        (_pod("d", [("", "", 8080)]), QueueingHint.SKIP),  # never bound: held nothing
        (_pod("d", [], node_name="n1"), QueueingHint.SKIP),  # held no host port
        (_pod("d", [("", "", 8081)], node_name="n1"), QueueingHint.SKIP),  # another port
        (_pod("d", [("", "UDP", 8080)], node_name="n1"), QueueingHint.SKIP),  # another protocol
        (_pod("d", [("", "", 8080)], node_name="n1"), QueueingHint.QUEUE),  # freed the port
        (_pod("d", [("10.0.0.1", "TCP", 8080)], node_name="n1"), QueueingHint.QUEUE),  # 0.0.0.0 wants all
        (_nominated(_pod("d", [("", "", 8080)]), "n1"), QueueingHint.QUEUE),
    ],
)
def test_pod_deleted_hint(deleted: object, expected: QueueingHint) -> None:
    (reg,) = [r for r in NodePorts().events_to_register() if r.hint is not None]
    assert reg.hint is not None
    assert reg.hint(_pod("p", [("", "", 8080)]), deleted, None) is expected


def test_pod_deleted_hint_other_address() -> None:
    """Two specific addresses do not conflict: freeing 10.0.0.2 cannot help a pod that wants 10.0.0.1."""
    (reg,) = [r for r in NodePorts().events_to_register() if r.hint is not None]
    assert reg.hint is not None
    wanting = _pod("p", [("10.0.0.1", "TCP", 8080)])
    assert (
        reg.hint(wanting, _pod("d", [("10.0.0.2", "TCP", 8080)], node_name="n1"), None) is QueueingHint.SKIP
    )
    assert (
        reg.hint(wanting, _pod("d", [("10.0.0.1", "TCP", 8080)], node_name="n1"), None) is QueueingHint.QUEUE
    )


# --------------------------------------------------------------------------- batch == per node

_port = st.tuples(
    st.sampled_from(["", "0.0.0.0", "10.0.0.1", "10.0.0.2"]),
    st.sampled_from(["", "TCP", "UDP"]),
    st.sampled_from([0, 53, 80, 443]),
)


@st.composite
def _cluster(draw: st.DrawFn) -> tuple[NodeTable, NodeSet, Pod]:
    n = draw(st.integers(1, 6))
    existing = [
        _pod(
            f"e{j}",
            draw(st.lists(_port, max_size=3)),
            node_name=f"n{draw(st.integers(0, n - 1))}",
            init_ports=draw(st.lists(_port, max_size=1)),
        )
        for j in range(draw(st.integers(0, 6)))
    ]
    table = make_table([make_node(f"n{i}") for i in range(n)], existing)
    rows = draw(st.lists(st.integers(0, n - 1), unique=True).map(sorted))
    return (
        table,
        NodeSet(table, np.asarray(rows, dtype=np.intp)),
        _pod("p", draw(st.lists(_port, max_size=3))),
    )


@settings(max_examples=200, deadline=None)
@given(_cluster())
def test_batch_agrees_with_per_node(cluster: tuple[NodeTable, NodeSet, Pod]) -> None:
    _, nodes, pod = cluster
    _verdicts(NodePorts(), pod, nodes)
