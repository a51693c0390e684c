"""InitialLists: the Node and Pod informers' first LISTs fetched early, and handed to the informers.

What must hold: the early requests are the informer's own first-list requests; an informer on
`PrefetchedListWatch` delivers the same objects and then watches from the same version; anything the
prefetch did not get (a failure, a relist, a page that does not follow) goes to the server.
"""

from __future__ import annotations

import threading
import time
from typing import Any
from urllib.parse import urlencode

from kube_fakes import ScriptedListWatch, list_page, node_json, pod_json

from kubesched.cluster.kube.client import ApiError, Response
from kubesched.cluster.kube.informer import KINDS, ApiListWatch, Informer, object_key
from kubesched.cluster.kube.initial_lists import (
    DISCOVERED,
    FIRST_LISTS,
    PAGE_SIZE,
    InitialLists,
    ListRequest,
)

PODS = KINDS["Pod"]
NODES = KINDS["Node"]


class PagedServer:
    """A client whose GETs answer LIST pages by path and continue token; records every request."""

    def __init__(self, pages: dict[str, list[bytes]], *, fail: ApiError | None = None) -> None:
        self.pages = pages
        self.fail = fail
        self.requests: list[str] = []
        self.hold: threading.Event | None = None
        self.lock = threading.Lock()

    def get(self, path: str, params: dict[str, Any] | None = None) -> Response:
        with self.lock:
            self.requests.append(f"{path}?{urlencode(params or {})}")
        if self.hold is not None:
            assert self.hold.wait(5)
        if self.fail is not None:
            raise self.fail
        token = str((params or {}).get("continue", ""))
        return Response(200, self.pages[path][int(token) if token else 0])


class Recorder:
    def __init__(self) -> None:
        self.added: list[str] = []

    def on_add(self, obj: Any) -> None:
        self.added.append(object_key(obj))

    def on_update(self, old: Any, new: Any) -> None:
        raise AssertionError("no updates expected")

    def on_delete(self, obj: Any) -> None:
        raise AssertionError("no deletes expected")


def _pods_in_two_pages() -> dict[str, list[bytes]]:
    return {
        PODS.path: [
            list_page([pod_json("a")], rv="", cont="1"),
            list_page([pod_json("b")], rv="7"),
        ],
        NODES.path: [list_page([node_json("n1")], rv="5")],
    }


def _first_list(informer: Informer) -> None:
    informer._list()  # the informer's first LIST, as `run()` makes it


def test_the_early_lists_are_the_informers_first_list_requests() -> None:
    assert {r.key: (r.path, r.field_selector) for r in FIRST_LISTS} == {
        "Node": (NODES.path, NODES.field_selector),
        "Pod": (PODS.path, PODS.field_selector),
    }
    early, direct = PagedServer(_pods_in_two_pages()), PagedServer(_pods_in_two_pages())
    lists = InitialLists(early)  # type: ignore[arg-type]
    lists.start()
    for kind in (PODS, NODES):
        informer = Informer(kind, ApiListWatch(direct))  # type: ignore[arg-type]
        _first_list(informer)
        prefetched = Informer(kind, lists.source(ApiListWatch(early)))  # type: ignore[arg-type]
        _first_list(prefetched)
        assert [object_key(o) for o in prefetched.objects()] == [object_key(o) for o in informer.objects()]
        assert prefetched.resource_version == informer.resource_version
    assert sorted(early.requests) == sorted(direct.requests)  # sent once each, and the same
    assert f"{NODES.path}?limit={PAGE_SIZE}&resourceVersion=0" in early.requests
    assert any(
        r.startswith(f"{PODS.path}?limit={PAGE_SIZE}&resourceVersion=0&fieldSelector=")
        for r in early.requests
    )
    assert any(
        r.startswith(f"{PODS.path}?limit={PAGE_SIZE}&continue=1&fieldSelector=") for r in early.requests
    )


def test_an_informer_takes_the_prefetched_pages_and_then_watches_from_their_version() -> None:
    server = PagedServer(_pods_in_two_pages())
    lists = InitialLists(server, [ListRequest("Pod", PODS.path, PODS.field_selector)])  # type: ignore[arg-type]
    lists.start()
    inner = ScriptedListWatch(lists=[], watches=[])
    rec = Recorder()
    informer = Informer(PODS, lists.source(inner), rec)
    thread = threading.Thread(target=informer.run, daemon=True)
    thread.start()
    assert inner.idle.wait(5)
    informer.stop()
    inner.release.set()
    thread.join(5)
    assert rec.added == ["default/a", "default/b"]
    assert inner.list_calls == []  # nothing asked of the server again
    assert inner.watch_calls == ["7"]


def test_a_failed_prefetch_leaves_the_list_to_the_informer() -> None:
    server = PagedServer({}, fail=ApiError(403, "Forbidden", "pods is forbidden"))
    lists = InitialLists(server, [ListRequest("Pod", PODS.path, PODS.field_selector)])  # type: ignore[arg-type]
    lists.start()
    inner = ScriptedListWatch(lists=[[list_page([pod_json("c")], rv="9")]], watches=[])
    informer = Informer(PODS, lists.source(inner))
    _first_list(informer)
    assert [object_key(o) for o in informer.objects()] == ["default/c"]
    assert inner.list_calls == [""] and inner.list_versions == ["0"]


def test_a_page_on_its_way_is_waited_for_not_asked_twice() -> None:
    server = PagedServer(_pods_in_two_pages())
    server.hold = threading.Event()
    lists = InitialLists(server, [ListRequest("Node", NODES.path)])  # type: ignore[arg-type]
    lists.start()
    got: list[bytes | None] = []
    taker = threading.Thread(
        target=lambda: got.append(lists.take(NODES, limit=PAGE_SIZE, continue_token="", resource_version="0"))
    )
    taker.start()
    time.sleep(0.1)
    assert got == [] and taker.is_alive()
    server.hold.set()
    taker.join(5)
    assert got == [server.pages[NODES.path][0]]
    assert len(server.requests) == 1


def test_a_relist_or_a_page_out_of_turn_goes_to_the_server_and_drops_the_rest() -> None:
    server = PagedServer(_pods_in_two_pages())
    lists = InitialLists(server, [ListRequest("Pod", PODS.path, PODS.field_selector)])  # type: ignore[arg-type]
    lists.start()
    # A consistent read (a relist asks for resourceVersion ""), not the first list: not from here.
    assert lists.take(PODS, limit=PAGE_SIZE, continue_token="", resource_version="") is None
    # ...and from then on nothing of this kind is handed out, not even the first page.
    assert lists.take(PODS, limit=PAGE_SIZE, continue_token="", resource_version="0") is None
    other = InitialLists(server, [ListRequest("Pod", PODS.path, PODS.field_selector)])  # type: ignore[arg-type]
    other.start()
    assert other.take(PODS, limit=PAGE_SIZE, continue_token="5", resource_version="0") is None
    assert other.take(PODS, limit=PAGE_SIZE, continue_token="", resource_version="0") is None
    # Another page size, or a kind it does not hold: not from here either.
    third = InitialLists(server, [ListRequest("Pod", PODS.path, PODS.field_selector)])  # type: ignore[arg-type]
    third.start()
    assert third.take(PODS, limit=PAGE_SIZE + 1, continue_token="", resource_version="0") is None
    assert third.take(NODES, limit=PAGE_SIZE, continue_token="", resource_version="0") is None


def test_close_wakes_a_waiting_informer_which_then_asks_the_server() -> None:
    server = PagedServer(_pods_in_two_pages())
    server.hold = threading.Event()
    lists = InitialLists(server, [ListRequest("Node", NODES.path)])  # type: ignore[arg-type]
    lists.start()
    got: list[bytes | None] = [b"unset"]
    taker = threading.Thread(
        target=lambda: got.__setitem__(
            0, lists.take(NODES, limit=PAGE_SIZE, continue_token="", resource_version="0")
        )
    )
    taker.start()
    time.sleep(0.1)
    lists.close()
    taker.join(5)
    server.hold.set()
    assert not taker.is_alive() and got == [None]


class Discovery:
    """A client answering discovery: the resources each group version serves (None: a 404)."""

    def __init__(self, served: dict[str, set[str] | None], *, fail: ApiError | None = None) -> None:
        self.served = served
        self.fail = fail
        self.asked: list[str] = []
        self.hold: threading.Event | None = None

    def served_resources(self, group_version: str) -> set[str] | None:
        self.asked.append(group_version)
        if self.hold is not None:
            assert self.hold.wait(5)
        if self.fail is not None:
            raise self.fail
        return self.served.get(group_version)


def test_the_early_discovery_asks_what_discovery_asks_without_gates() -> None:
    ungated = [rk.group_version for rk in KINDS.values() if not rk.gate]
    assert list(DISCOVERED) == list(dict.fromkeys(ungated))


def test_discovery_takes_the_answers_received_once_then_asks_the_server() -> None:
    client = Discovery({"v1": {"pods", "nodes"}, "apps/v1": {"replicasets"}})
    lists = InitialLists(client, [], discovered=["v1", "apps/v1", "policy/v1"])  # type: ignore[arg-type]
    lists.start()
    assert lists.served_resources("v1") == {"pods", "nodes"}
    assert lists.served_resources("policy/v1") is None  # not served: the 404's None, received early
    assert lists.served_resources("apps/v1") == {"replicasets"}
    assert client.asked == ["v1", "apps/v1", "policy/v1"]
    assert lists.served_resources("v1") == {"pods", "nodes"}  # a second discovery (a retry) asks again
    assert lists.served_resources("storage.k8s.io/v1") is None  # never fetched early: asked now
    assert client.asked == ["v1", "apps/v1", "policy/v1", "v1", "storage.k8s.io/v1"]


def test_a_failed_early_discovery_is_asked_again_and_meets_the_error() -> None:
    client = Discovery({}, fail=ApiError(0, "ConnectError", "GET /api/v1: connection refused"))
    lists = InitialLists(client, [], discovered=["v1", "apps/v1"])  # type: ignore[arg-type]
    lists.start()
    try:
        lists.served_resources("v1")
        raise AssertionError("expected the error")
    except ApiError as exc:
        assert "connection refused" in str(exc)
    assert client.asked == ["v1", "v1"]


def test_discovery_in_flight_is_waited_for() -> None:
    client = Discovery({"v1": {"pods"}})
    client.hold = threading.Event()
    lists = InitialLists(client, [], discovered=["v1"])  # type: ignore[arg-type]
    lists.start()
    got: list[set[str] | None] = []
    asker = threading.Thread(target=lambda: got.append(lists.served_resources("v1")))
    asker.start()
    time.sleep(0.1)
    assert got == [] and asker.is_alive()
    client.hold.set()
    asker.join(5)
    assert got == [{"pods"}] and client.asked == ["v1"]
