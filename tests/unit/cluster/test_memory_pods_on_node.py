"""MemoryCluster.pods_on_node: a node's bound pods from an index, exactly what a scan of `pods`
finds (a replay deletes a node's pods in that order), through creates, binds, updates and deletes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Pod
from kubesched.cluster.memory import MemoryCluster
from kubesched.testing.builders import make_node, make_pod

NODES = ("n0", "n1", "n2")


def _stored(cluster: MemoryCluster, name: str) -> Pod | None:
    return next((p for p in cluster.pods.values() if p.metadata.name == name), None)


def _scan(cluster: MemoryCluster, node: str) -> list[str]:
    return [p.metadata.name for p in cluster.pods.values() if p.spec.node_name == node]


def _index(cluster: MemoryCluster, node: str) -> list[str]:
    return [p.metadata.name for p in cluster.pods_on_node(node)]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["create", "create-bound", "bind", "update", "delete"]), st.integers(0, 7)),
        max_size=50,
    ),
    st.lists(st.tuples(st.integers(0, 7), st.integers(0, 2)), max_size=4),
)
def test_pods_on_node_is_the_scan_of_pods(ops: list[tuple[str, int]], initial: list[tuple[int, int]]) -> None:
    # Pods given at construction (a repeated name is stored once, in its first place), bound or not.
    given_pods = [make_pod(f"p{i}", cpu="1", node_name=NODES[n] if i % 2 else "") for i, n in initial]
    cluster = MemoryCluster(LoadedObjects(nodes=[make_node(n, cpu="64") for n in NODES], pods=given_pods))
    for step, (op, i) in enumerate(ops):
        name, node = f"p{i}", NODES[step % len(NODES)]
        current = _stored(cluster, name)
        if op == "create" and current is None:
            cluster.create_pod(make_pod(name, cpu="1"))
        elif op == "create-bound" and current is None:
            cluster.create_pod(make_pod(name, cpu="1", node_name=node))
        elif op == "bind" and current is not None and not current.spec.node_name:
            cluster.bind(current, node)
        elif op == "update" and current is not None and not current.spec.node_name:
            cluster.update_pod(make_pod(name, cpu="2", labels={"step": str(step)}))
        elif op == "delete" and current is not None:
            cluster.delete_pod(current, reason="test", message="")
        for n in (*NODES, "absent"):
            assert _index(cluster, n) == _scan(cluster, n)


def test_a_pod_keeps_its_creation_place_when_bound_later() -> None:
    cluster = MemoryCluster(LoadedObjects(nodes=[make_node("n0", cpu="64")]))
    for name in ("a", "b", "c"):
        cluster.create_pod(make_pod(name, cpu="1"))
    for name in ("c", "a", "b"):
        stored = _stored(cluster, name)
        assert stored is not None
        cluster.bind(stored, "n0")
    assert _index(cluster, "n0") == ["a", "b", "c"] == _scan(cluster, "n0")
