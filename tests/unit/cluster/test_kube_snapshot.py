"""The live snapshot is one instant: Nodes are listed first, every other kind at their revision
(`resourceVersionMatch=Exact`), paginated; a compacted revision starts the read over once, then the
other kinds are listed as they are now, with a note saying so."""

from __future__ import annotations

import threading
from typing import Any, cast

import msgspec
import pytest
from tests.unit.cluster.kube_fakes import list_page, node_json, pod_json

from kubesched.cluster.kube.client import ApiError, KubeClient, Response
from kubesched.cluster.kube.snapshot import SNAPSHOT_KINDS, read_snapshot

GROUPS = {rk.group_version: {k.plural for k in SNAPSHOT_KINDS.values() if k.group_version == rk.group_version}
          for rk in SNAPSHOT_KINDS.values()}  # fmt: skip


class FakeServer:
    """Serves `objects` (path -> items) at revision `revision`; each `compactions` LIST at an exact
    revision answers 410 Gone (then the revision moves on by one), as a compacted etcd does."""

    server = "https://fake:6443"

    def __init__(self, objects: dict[str, list[Any]], *, compactions: int = 0, page: int = 0) -> None:
        self.objects = objects
        self.revision = 100
        self.compactions = compactions
        self.page = page
        self.requests: list[tuple[str, dict[str, str | int]]] = []
        self.lock = threading.Lock()

    def served_resources(self, group_version: str) -> set[str] | None:
        return GROUPS.get(group_version)

    def get(self, path: str, params: dict[str, str | int] | None = None) -> Response:
        params = dict(params or {})
        with self.lock:
            self.requests.append((path, params))
            if params.get("resourceVersionMatch") == "Exact" and self.compactions:
                self.compactions -= 1
                self.revision += 1
                raise ApiError(410, "Expired", "too old resource version")
        items = self.objects.get(path, [])
        start = int(params.get("continue", 0))
        size = int(params.get("limit", len(items) or 1)) if not self.page else self.page
        end = start + size
        more = str(end) if end < len(items) else ""
        return Response(200, list_page(items[start:end], str(self.revision), more))


def client(fake: FakeServer) -> KubeClient:
    return cast(KubeClient, fake)


def cluster() -> dict[str, list[Any]]:
    return {
        "/api/v1/nodes": [node_json("n1"), node_json("n2"), node_json("n3")],
        "/api/v1/pods": [pod_json("a"), pod_json("b", node="n1")],
        "/apis/apps/v1/deployments": [],
    }


def test_every_kind_after_the_nodes_is_listed_at_their_revision() -> None:
    fake = FakeServer(cluster(), page=2)
    read: list[tuple[str, int]] = []
    snap = read_snapshot(client(fake), ["Deployment"], on_kind=lambda kind, n: read.append((kind, n)))
    assert (len(snap.objects.nodes), len(snap.objects.pods)) == (3, 2)
    assert snap.resource_version == "100" and snap.notes == []
    assert read == [("Node", 3), ("Pod", 2), ("Deployment", 0)]
    first = [(path, p) for path, p in fake.requests if "continue" not in p]
    assert first[0] == ("/api/v1/nodes", {"limit": 2500})
    for path, params in first[1:]:
        assert (params["resourceVersion"], params["resourceVersionMatch"]) == ("100", "Exact"), path
    # Pages after the first carry the continue token only (it holds the revision).
    pages = [p for path, p in fake.requests if path == "/api/v1/nodes"]
    assert pages[1] == {"limit": 2500, "continue": "2"}


def test_finished_pods_are_left_out_unless_asked_for() -> None:
    fake = FakeServer(cluster())
    read_snapshot(client(fake), [])
    read_snapshot(client(fake), [], all_pods=True)
    selectors = [p.get("fieldSelector") for path, p in fake.requests if path == "/api/v1/pods"]
    assert selectors == ["status.phase!=Succeeded,status.phase!=Failed", None]


def test_a_compacted_revision_starts_the_read_over_once() -> None:
    fake = FakeServer(cluster(), compactions=1)
    snap = read_snapshot(client(fake), [])
    assert snap.resource_version == "101" and snap.notes == []
    assert [path for path, _ in fake.requests].count("/api/v1/nodes") == 2
    assert len(snap.objects.pods) == 2


def test_compacted_twice_the_rest_is_read_as_it_is_now_and_a_note_says_so() -> None:
    fake = FakeServer(cluster(), compactions=2)
    snap = read_snapshot(client(fake), [])
    assert snap.resource_version == ""
    assert snap.notes == [
        "the objects are not of one instant: the server compacted revision 101 while they were read "
        "(2 tries), so kinds after Node were listed as they were then"
    ]
    assert (len(snap.objects.nodes), len(snap.objects.pods)) == (3, 2)
    last = [p for path, p in fake.requests if path == "/api/v1/pods"][-1]
    assert "resourceVersion" not in last


def test_a_forbidden_optional_kind_is_a_note_and_a_forbidden_pod_list_an_error() -> None:
    class Forbidding(FakeServer):
        def __init__(self, path: str) -> None:
            super().__init__(cluster())
            self.forbidden = path

        def get(self, path: str, params: dict[str, str | int] | None = None) -> Response:
            if path == self.forbidden:
                raise ApiError(403, "Forbidden", "no")
            return super().get(path, params)

    snap = read_snapshot(client(Forbidding("/apis/apps/v1/deployments")), ["Deployment"])
    assert snap.notes == ["Deployment: not read, listing /apis/apps/v1/deployments is forbidden"]
    with pytest.raises(Exception, match="reading /api/v1/pods was refused"):
        read_snapshot(client(Forbidding("/api/v1/pods")), [])


def test_workload_kinds_decode_into_the_loaded_objects() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "d1", "resourceVersion": "7"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}},
        },
    }
    fake = FakeServer({**cluster(), "/apis/apps/v1/deployments": [msgspec.to_builtins(deployment)]})
    snap = read_snapshot(client(fake), ["Deployment"])
    assert [d.metadata.name for d in snap.objects.deployments] == ["web"]


def test_kinds_the_cluster_does_not_serve_share_one_plain_note() -> None:
    """Before, a note per kind on every command ('PodGroup: not served by this cluster (...)', on
    every cluster without scheduler-plugins' CRD)."""

    class Bare(FakeServer):
        def served_resources(self, group_version: str) -> set[str] | None:
            return (
                None
                if group_version.startswith(("scheduling.", "resource.k8s.io"))
                else super().served_resources(group_version)
            )

    snap = read_snapshot(client(Bare(cluster())), ["PodGroup", "DeviceClass", "ResourceSlice", "Deployment"])
    assert snap.notes == [
        "APIs this cluster does not serve, so it has none of their objects: PodGroup "
        "(scheduling.x-k8s.io/v1alpha1), DeviceClass (resource.k8s.io/v1), ResourceSlice (resource.k8s.io/v1)"
    ]
    assert snap.kinds == ["Node", "Pod", "Deployment"]
