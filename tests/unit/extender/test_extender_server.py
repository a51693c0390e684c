"""The extender's HTTP server: verbs over NodeFilterLabel + NodeResourcesFit, both node modes, errors."""

from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any

import httpx2
import msgspec
import pytest
from extender_helpers import engine, node_json, objects, pod_json, serve_in_thread, server
from starlette.testclient import TestClient

from kubesched.api.objects import Node, Pod
from kubesched.cluster.kube.binder import BindConflict
from kubesched.cluster.kube.client import ApiError
from kubesched.extender.openapi import render
from kubesched.extender.state import ClusterState
from kubesched.harness.pki import TestCA

REPO = Path(__file__).resolve().parents[3]

NODES = [
    node_json("big", cpu="8"),
    node_json("hello", labels={"node": "hello"}),  # NodeFilterLabel: UnschedulableAndUnresolvable
    node_json("tiny", cpu="1"),  # allocatable below the request: UnschedulableAndUnresolvable in v1.37
    node_json("busy", cpu="4"),  # 3 of 4 cpus taken by a pod in the cache: Unschedulable
    node_json("half", cpu="4"),
]
RUNNING = [pod_json("running", cpu="3", node="busy")]


def snapshot_client(**options: Any) -> TestClient:
    state = ClusterState.from_objects(objects(NODES, RUNNING))
    return TestClient(server(engine(state), **options).app)


def stateless_client(**options: Any) -> TestClient:
    return TestClient(server(engine(), **options).app)


def test_filter_node_names_sorts_failures_by_status_code() -> None:
    client = snapshot_client()
    body = {"Pod": pod_json("p", cpu="2"), "Nodes": None, "NodeNames": [n["metadata"]["name"] for n in NODES]}
    resp = client.post("/filter", json=body)
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "application/json"
    result = resp.json()
    assert result["Nodes"] is None
    assert result["NodeNames"] == ["big", "half"]
    assert result["FailedNodes"] == {"busy": "Insufficient cpu"}
    assert result["FailedAndUnresolvableNodes"] == {
        "hello": "node(s) had label node=hello",
        "tiny": "Insufficient cpu",
    }
    assert result["Error"] == ""


def test_filter_node_names_unknown_to_the_cache_fail_resolvably() -> None:
    client = snapshot_client()
    result = client.post("/filter", json={"Pod": pod_json("p"), "NodeNames": ["big", "ghost"]}).json()
    assert result["NodeNames"] == ["big"]
    assert "ghost" in result["FailedNodes"]


def test_a_repeated_node_names_list_follows_the_cache() -> None:
    """The engine reuses the rows of the last NodeNames list; nodes that arrive, other lists and pods
    bound since must still count (kube-scheduler sends the same list call after call)."""
    state = ClusterState.from_objects(objects(NODES, RUNNING))
    client = TestClient(server(engine(state)).app)
    names = ["big", "new", "half"]

    def filtered(names: list[str], cpu: str = "2") -> dict[str, Any]:
        body = {"Pod": pod_json("p", cpu=cpu), "NodeNames": names}
        result: dict[str, Any] = client.post("/filter", json=body).json()
        return result

    first = filtered(names)
    assert first["NodeNames"] == ["big", "half"] and "new" in first["FailedNodes"]
    assert filtered(names) == first
    state.cache.add_node(msgspec.convert(node_json("new"), Node))
    assert filtered(names)["NodeNames"] == ["big", "new", "half"]
    assert filtered(["half"])["NodeNames"] == ["half"]
    state.assume_bound(msgspec.convert(pod_json("filler", cpu="3"), Pod), "half")
    again = filtered(names)
    assert again["NodeNames"] == ["big", "new"] and again["FailedNodes"] == {"half": "Insufficient cpu"}
    every = [n["metadata"]["name"] for n in NODES] + ["new"]
    order = state.snapshot().names  # every node in table order: the full set, read as views
    scores = client.post("/prioritize", json={"Pod": pod_json("p", cpu="1"), "NodeNames": order}).json()
    assert sorted(h["Host"] for h in scores) == sorted(every)
    assert filtered(order)["NodeNames"] == [n for n in order if n in ("big", "new")]


def test_filter_full_nodes_is_stateless_and_echoes_nodes() -> None:
    client = stateless_client()
    items = [node_json("a"), node_json("b", labels={"node": "hello"})]
    items[0]["spec"] = {"podCIDR": "10.1.0.0/24"}  # a field kubesched's structs do not keep
    resp = client.post("/filter", json={"Pod": pod_json("p"), "Nodes": {"items": items}, "NodeNames": None})
    result = resp.json()
    assert result["NodeNames"] is None
    assert result["Nodes"]["items"] == [items[0]]
    assert result["FailedAndUnresolvableNodes"] == {"b": "node(s) had label node=hello"}


def test_filter_node_names_without_a_cache_reports_an_error() -> None:
    result = stateless_client().post("/filter", json={"Pod": pod_json("p"), "NodeNames": ["a"]}).json()
    assert "needs full Nodes" in result["Error"]
    assert result["NodeNames"] is None


def test_prioritize_maps_scores_onto_zero_to_ten() -> None:
    client = snapshot_client()
    body = {"Pod": pod_json("p", cpu="1"), "NodeNames": ["big", "busy", "half"]}
    resp = client.post("/prioritize", json=body)
    assert resp.status_code == 200
    scores = {h["Host"]: h["Score"] for h in resp.json()}
    assert set(scores) == {"big", "busy", "half"}
    assert all(0 <= s <= 10 for s in scores.values())
    # LeastAllocated: the emptiest node scores highest, the busy one lowest.
    assert scores["big"] > scores["half"] > scores["busy"]


def test_prioritize_with_lowercase_keys() -> None:
    resp = snapshot_client().post(
        "/prioritize", content=json.dumps({"pod": pod_json("p"), "nodenames": ["big"]})
    )
    assert [h["Host"] for h in resp.json()] == ["big"]


def test_prioritize_node_names_without_a_cache_is_503() -> None:
    resp = stateless_client().post("/prioritize", json={"Pod": pod_json("p"), "NodeNames": ["a"]})
    assert resp.status_code == 503


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"{not json", "invalid JSON"),
        (b"[]", "expected object, got array"),
        (b'{"Pod": {}, "NodeNames": "big"}', "ExtenderArgs.NodeNames: expected array, got str"),
        (b'{"NodeNames": ["big"]}', "ExtenderArgs.Pod: required"),
    ],
)
def test_bad_bodies_get_400_with_one_line_and_the_server_keeps_serving(body: bytes, fragment: str) -> None:
    client = snapshot_client()
    resp = client.post("/filter", content=body)
    assert resp.status_code == 400
    assert fragment in resp.text
    assert resp.text.count("\n") == 1
    ok = client.post("/filter", json={"Pod": pod_json("p"), "NodeNames": ["big"]})
    assert ok.status_code == 200 and ok.json()["NodeNames"] == ["big"]


def test_bad_node_quantity_is_400_naming_the_node() -> None:
    items = [node_json("a", cpu="lots")]
    resp = stateless_client().post("/filter", json={"Pod": pod_json("p"), "Nodes": {"items": items}})
    assert resp.status_code == 400
    assert "Nodes.items[0]" in resp.text


def test_body_size_limit() -> None:
    client = snapshot_client(max_body_bytes=200)
    resp = client.post("/filter", json={"Pod": pod_json("p"), "NodeNames": ["big"] * 50})
    assert resp.status_code == 413
    assert client.post("/filter", json={"Pod": {}, "NodeNames": []}).status_code == 200


def test_bearer_token() -> None:
    client = snapshot_client(token="s3cret")
    body = {"Pod": pod_json("p"), "NodeNames": ["big"]}
    assert client.post("/filter", json=body).status_code == 401
    assert client.post("/filter", json=body, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.post("/filter", json=body, headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert client.get("/healthz").status_code == 200  # probes need no token
    assert client.get("/readyz").status_code == 200


@pytest.mark.parametrize("path", ["/metrics", "/openapi.json"])
def test_metrics_and_openapi_sit_behind_the_same_authentication(path: str) -> None:
    client = snapshot_client(token="s3cret")
    assert client.get(path).status_code == 401
    assert client.get(path, headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert stateless_client().get(path).status_code == 200  # no authentication configured: open


def test_only_post_and_configured_paths() -> None:
    client = TestClient(server(paths={"filter": "/scheduler/filter"}).app)
    assert client.get("/scheduler/filter").status_code == 405
    assert client.post("/prioritize", json={}).status_code == 404
    assert client.post("/scheduler/filter", json={"Pod": {}, "Nodes": {"items": []}}).status_code == 200


def test_health_ready_and_metrics() -> None:
    client = snapshot_client()
    assert client.get("/healthz").text == "ok"
    assert client.get("/readyz").text == "ok"
    client.post("/filter", json={"Pod": pod_json("p"), "NodeNames": ["big"]})
    client.post("/filter", content=b"{")
    text = client.get("/metrics").text
    assert 'kubesched_extender_requests_total{code="200",verb="filter"} 1.0' in text
    assert 'kubesched_extender_requests_total{code="400",verb="filter"} 1.0' in text
    assert 'kubesched_extender_request_duration_seconds_count{verb="filter"} 2.0' in text


def test_openapi_is_served_and_matches_the_repository_copy() -> None:
    served = snapshot_client().get("/openapi.json").json()
    kept = json.loads((REPO / "docs" / "extender-openapi.json").read_text())
    assert served == kept
    assert (REPO / "docs" / "extender-openapi.json").read_text() == render()
    assert set(served["paths"]) >= {"/filter", "/prioritize", "/preempt", "/bind", "/healthz", "/metrics"}


# --------------------------------------------------------------------------- preempt


def test_preempt_meta_victims_drops_nodes_where_the_pod_still_does_not_fit() -> None:
    nodes = [node_json("a", cpu="4"), node_json("b", cpu="4", labels={"node": "hello"})]
    running = [pod_json("va", cpu="3", node="a", uid="va"), pod_json("vb", cpu="3", node="b", uid="vb")]
    client = TestClient(server(engine(ClusterState.from_objects(objects(nodes, running)))).app)
    body = {
        "Pod": pod_json("p", cpu="2"),
        "NodeNameToVictims": None,
        "NodeNameToMetaVictims": {
            "a": {"Pods": [{"UID": "va"}], "NumPDBViolations": 1},
            "b": {"Pods": [{"UID": "vb"}], "NumPDBViolations": 0},
        },
    }
    resp = client.post("/preempt", json=body)
    assert resp.status_code == 200
    assert resp.json() == {"NodeNameToMetaVictims": {"a": {"Pods": [{"UID": "va"}], "NumPDBViolations": 1}}}


def test_preempt_without_removing_enough_keeps_nothing() -> None:
    nodes = [node_json("a", cpu="4")]
    running = [pod_json("v1", cpu="2", node="a", uid="v1"), pod_json("v2", cpu="2", node="a", uid="v2")]
    client = TestClient(server(engine(ClusterState.from_objects(objects(nodes, running)))).app)
    body = {"Pod": pod_json("p", cpu="3"), "NodeNameToMetaVictims": {"a": {"Pods": [{"UID": "v1"}]}}}
    assert client.post("/preempt", json=body).json() == {"NodeNameToMetaVictims": {}}


def test_preempt_stateless_uses_nodes_from_recent_filter_requests() -> None:
    client = stateless_client()
    items = [node_json("a"), node_json("b", labels={"node": "hello"})]
    client.post("/filter", json={"Pod": pod_json("p"), "Nodes": {"items": items}})
    victims = {"Pods": [pod_json("v", uid="v")], "NumPDBViolations": 0}
    body = {"Pod": pod_json("p"), "NodeNameToVictims": {"a": victims, "b": victims, "unseen": victims}}
    result = client.post("/preempt", json=body).json()["NodeNameToMetaVictims"]
    assert set(result) == {"a", "unseen"}  # b is rejected by its label; unseen cannot be judged
    assert result["a"] == {"Pods": [{"UID": "v"}], "NumPDBViolations": 0}


# --------------------------------------------------------------------------- bind


class FakeBinder:
    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[tuple[str, str, str, str]] = []
        self.error = error

    def __call__(self, pod: Pod, node: str) -> None:
        self.calls.append((pod.metadata.namespace, pod.metadata.name, pod.metadata.uid, node))
        if self.error is not None:
            raise self.error


def test_bind_posts_through_the_binder_and_accounts_the_pod() -> None:
    binder = FakeBinder()
    state = ClusterState.from_objects(objects(NODES, [pod_json("p", cpu="4")]))
    eng = engine(state, binder=binder)
    client = TestClient(server(eng).app)
    body = {"PodName": "p", "PodNamespace": "default", "PodUID": "uid-p", "Node": "half"}
    resp = client.post("/bind", json=body)
    assert resp.json() == {"Error": ""}
    assert binder.calls == [("default", "p", "uid-p", "half")]
    # The freshly bound pod now counts on the node: another 1-cpu pod no longer fits there.
    result = client.post("/filter", json={"Pod": pod_json("q", cpu="1"), "NodeNames": ["half"]}).json()
    assert result["FailedNodes"] == {"half": "Insufficient cpu"}


def test_bind_errors_are_reported_in_the_result() -> None:
    conflict = BindConflict(ApiError(409, "Conflict", 'pod p is already assigned to node "other"'), "other")
    client = TestClient(server(engine(binder=FakeBinder(conflict))).app)
    result = client.post("/bind", json={"PodName": "p", "PodNamespace": "ns", "Node": "n1"}).json()
    assert "already assigned" in result["Error"]
    # Bound by someone else to the very node asked for: still not this bind's success.
    same = BindConflict(ApiError(409, "Conflict", 'pod p is already assigned to node "n1"'), "n1")
    client = TestClient(server(engine(binder=FakeBinder(same))).app)
    assert "already assigned" in client.post("/bind", json={"PodName": "p", "Node": "n1"}).json()["Error"]


def test_bind_without_api_connection() -> None:
    result = stateless_client().post("/bind", json={"PodName": "p", "Node": "n1"}).json()
    assert "--kubeconfig" in result["Error"]


# --------------------------------------------------------------------------- TLS over a real socket


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA (`ca.crt`), a server certificate for 127.0.0.1 and a client certificate."""
    d = tmp_path_factory.mktemp("pki")
    ca = TestCA(d, "ca")
    ca.server("server", "127.0.0.1")
    ca.client("client")
    return d


def test_mutual_tls(pki: Path) -> None:
    """Client certificates authenticate; without one, only the probes answer (kubelet sends none)."""
    app = server(engine(ClusterState.from_objects(objects(NODES))), client_certificates=True).app
    tls = {
        "cert_file": str(pki / "server.crt"),
        "key_file": str(pki / "server.key"),
        "client_ca_file": str(pki / "ca.crt"),
    }
    body = {"Pod": pod_json("p"), "NodeNames": ["big"]}
    with serve_in_thread(app, **tls) as srv:
        base = f"https://127.0.0.1:{srv.port}"
        ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        ctx.load_cert_chain(str(pki / "client.crt"), str(pki / "client.key"))
        with httpx2.Client(verify=ctx) as c:
            assert c.post(f"{base}/filter", json=body).json()["NodeNames"] == ["big"]
            assert c.get(f"{base}/metrics").status_code == 200
        anonymous = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        with httpx2.Client(verify=anonymous) as c:
            assert c.post(f"{base}/filter", json=body).status_code == 401
            for path in ("/metrics", "/openapi.json"):
                assert c.get(f"{base}{path}").status_code == 401
            assert c.get(f"{base}/healthz").status_code == 200
            assert c.get(f"{base}/readyz").status_code == 200
