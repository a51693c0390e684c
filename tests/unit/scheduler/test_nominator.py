"""Nominator: pod <-> nominated node bookkeeping after preemption (upstream
`pkg/scheduler/backend/queue/nominator.go`)."""

from __future__ import annotations

import pytest

from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import Pod, PodSpec, PodStatus
from kubesched.framework.node_info import PodInfo
from kubesched.scheduler.nominator import Nominator


def make_pod(name: str, *, priority: int | None = None, nominated: str = "", node_name: str = "") -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, namespace="default", uid=f"uid-{name}"),
        spec=PodSpec(priority=priority, node_name=node_name),
        status=PodStatus(nominated_node_name=nominated),
    )


def info(name: str, *, priority: int | None = None, nominated: str = "", node_name: str = "") -> PodInfo:
    return PodInfo(make_pod(name, priority=priority, nominated=nominated, node_name=node_name))


def names(pods: list[PodInfo]) -> list[str]:
    return [p.name for p in pods]


@pytest.mark.parametrize(
    ("status_node", "arg", "expected"),
    [
        pytest.param("", "n1", "n1", id="explicit"),
        pytest.param("n1", None, "n1", id="noop-keeps-status"),
        pytest.param("", None, None, id="noop-no-status"),
        pytest.param("n1", "n2", "n2", id="override-wins"),
        pytest.param("n1", "", None, id="override-clears"),
    ],
)
def test_add_modes(status_node: str, arg: str | None, expected: str | None) -> None:
    nom = Nominator()
    nom.add(info("a", nominated=status_node), arg)
    assert nom.nominated_node("uid-a") == expected
    assert names(nom.nominated_pods_for_node(expected or "n1")) == (["a"] if expected else [])
    assert len(nom) == (expected is not None)


def test_bound_pod_is_never_nominated() -> None:
    nom = Nominator()
    nom.add(info("a", node_name="n1"), "n1")
    assert nom.nominated_node("uid-a") is None and not nom.has_nominated_pods()


def test_renominate_moves_between_nodes_and_keeps_one_entry() -> None:
    nom = Nominator()
    nom.add(info("a"), "n1")
    nom.add(info("b"), "n1")
    nom.add(info("a"), "n2")
    assert names(nom.nominated_pods_for_node("n1")) == ["b"]
    assert names(nom.nominated_pods_for_node("n2")) == ["a"]
    assert len(nom) == 2 and "uid-a" in nom


def test_delete() -> None:
    nom = Nominator()
    nom.add(info("a"), "n1")
    nom.add(info("b"), "n1")
    nom.delete("uid-a")
    nom.delete("uid-missing")
    assert names(nom.nominated_pods_for_node("n1")) == ["b"]
    nom.delete("uid-b")
    assert nom.nominated_pods_for_node("n1") == [] and not nom.has_nominated_pods()
    assert nom.nominated_node("uid-b") is None


def test_pods_for_node_is_a_copy_in_nomination_order() -> None:
    nom = Nominator()
    for n in ("c", "a", "b"):
        nom.add(info(n), "n1")
    pods = nom.nominated_pods_for_node("n1")
    pods.clear()
    assert names(nom.nominated_pods_for_node("n1")) == ["c", "a", "b"]


@pytest.mark.parametrize(
    ("old_status", "new_status", "in_memory", "expected"),
    [
        pytest.param("", "", "n1", "n1", id="keeps-in-memory-nomination"),
        pytest.param("", "", None, None, id="nothing-to-keep"),
        pytest.param("", "n2", "n1", "n2", id="added-in-status"),
        pytest.param("n1", "n2", "n1", "n2", id="changed-in-status"),
        pytest.param("n1", "", "n1", None, id="removed-from-status"),
    ],
)
def test_update(old_status: str, new_status: str, in_memory: str | None, expected: str | None) -> None:
    nom = Nominator()
    old = make_pod("a", priority=1, nominated=old_status)
    if in_memory is not None:
        nom.add(PodInfo(old), in_memory)
    new = info("a", priority=2, nominated=new_status)
    nom.update(old, new)
    assert nom.nominated_node("uid-a") == expected
    if expected is not None:
        [stored] = nom.nominated_pods_for_node(expected)
        assert stored is new  # the pod object is refreshed
    assert len(nom) == (expected is not None)


@pytest.mark.parametrize(
    ("incoming_priority", "expected"),
    [
        pytest.param(5, ["high", "equal"], id="ge-only"),
        pytest.param(0, ["low", "high", "equal"], id="all-but-self"),
        pytest.param(100, [], id="none-higher"),
    ],
)
def test_nominated_pods_for_filter(incoming_priority: int, expected: list[str]) -> None:
    nom = Nominator()
    nom.add(info("low", priority=1), "n1")
    nom.add(info("high", priority=10), "n1")
    nom.add(info("equal", priority=5), "n1")
    nom.add(info("self", priority=50), "n1")
    nom.add(info("elsewhere", priority=99), "n2")
    incoming = PodInfo(make_pod("self", priority=incoming_priority))
    assert names(nom.nominated_pods_for_filter("n1", incoming)) == expected


def test_a_pod_in_flight_shows_bare_and_holds_no_room() -> None:
    # A pod group's members, all popped together, were nominated by an earlier cycle's preemption:
    # upstream's queue cannot find a popped pod's object, so it stands in at priority 0, no requests.
    nom = Nominator()
    nom.add(PodInfo(make_pod("mate", priority=100)), "n1")
    nom.add(PodInfo(make_pod("waiting", priority=100)), "n1")
    nom.in_flight = lambda key: key == "uid-mate"
    incoming = PodInfo(make_pod("self", priority=100))
    assert names(nom.nominated_pods_for_filter("n1", incoming)) == ["waiting"]
    bare = {p.pod.metadata.name: p for p in nom.nominated_pods_for_node("n1")}["mate"]
    assert (bare.priority, bare.pod.metadata.uid) == (0, "uid-mate")
    assert not bare.pod.spec.containers
