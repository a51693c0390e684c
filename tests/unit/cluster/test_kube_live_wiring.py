"""What LiveCluster wires up besides Pods and Nodes: PodGroup objects and the config's extenders.

PodGroups: the kind is watched when the CRD is served (skipped when it is not, or when listing it is
forbidden), `Handle.lister("PodGroup")` sees it, and its events requeue the gang Coscheduling turned
away. Extenders: the config's filter extender is called by the live scheduling cycle, and a bindVerb
extender binds with the state lock let go. Informers are scripted; the extender is a real HTTP server
on 127.0.0.1 (stdlib), so the client's wire format is exercised too.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kube_fakes import FakeKube, ScriptedListWatch, event_line, list_page, node_json, pod_json

from kubesched.api.scheduler_plugins import PodGroup
from kubesched.cluster.kube.client import ApiError, Response
from kubesched.cluster.kube.informer import KINDS, ResourceKind
from kubesched.cluster.kube.live import LiveCluster, LiveOptions
from kubesched.config import decode_config
from kubesched.plugins import default_registry
from kubesched.plugins.contrib.coscheduling import POD_GROUP_LABEL

GANG_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: kubesched
  plugins:
    queueSort: {enabled: [{name: Coscheduling}], disabled: [{name: "*"}]}
    preFilter: {enabled: [{name: Coscheduling}]}
    postFilter: {enabled: [{name: Coscheduling}]}
    reserve: {enabled: [{name: Coscheduling}]}
    permit: {enabled: [{name: Coscheduling}]}
  pluginConfig:
  - name: Coscheduling
    args: {permitWaitingTimeSeconds: 30, podGroupBackoffSeconds: 0}
"""


def wait_until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


class Sources:
    """One source per kind: scripted Pods/Nodes, and PodGroups whose watch event waits for `go`."""

    def __init__(self, nodes: list[Any], pods: list[Any], pod_group: Any = None) -> None:
        self.scripted = {
            "Node": ScriptedListWatch([[list_page(nodes, rv="10")]], []),
            "Pod": ScriptedListWatch([[list_page(pods, rv="10")]], []),
        }
        self.pod_group = pod_group
        self.go = threading.Event()
        self.release = threading.Event()

    def list_page(
        self, kind: ResourceKind, *, limit: int, continue_token: str, resource_version: str = ""
    ) -> bytes:
        if kind.kind == "PodGroup":
            return list_page([], rv="10")
        return self.scripted[kind.kind].list_page(kind, limit=limit, continue_token=continue_token)

    @contextlib.contextmanager
    def watch(
        self,
        kind: ResourceKind,
        *,
        resource_version: str,
        timeout_seconds: int,
        on_open: Callable[[Callable[[], None]], None] | None = None,
    ) -> Iterator[Iterable[bytes]]:
        if kind.kind != "PodGroup":
            with self.scripted[kind.kind].watch(
                kind, resource_version=resource_version, timeout_seconds=timeout_seconds
            ) as lines:
                yield lines
            return

        def lines() -> Iterator[bytes]:
            if self.go.wait(10) and self.pod_group is not None and not self.release.is_set():
                yield event_line("ADDED", self.pod_group)
                self.pod_group = None
            self.release.wait(5)

        yield lines()

    def stop(self) -> None:
        self.go.set()
        self.release.set()
        for s in self.scripted.values():
            s.release.set()


def gang_pod(name: str, group: str) -> dict[str, Any]:
    pod = pod_json(name, scheduler="kubesched")
    pod["metadata"]["labels"] = {POD_GROUP_LABEL: group}
    return pod


def pod_group_json(name: str, min_member: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-pg-{name}", "resourceVersion": "11"},
        "spec": {"minMember": min_member},
    }


# --------------------------------------------------------------------------- PodGroup


def test_pod_group_is_a_known_kind_of_the_scheduler_plugins_api() -> None:
    rk = KINDS["PodGroup"]
    assert rk.path == "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"
    assert rk.type is PodGroup and rk.field_selector == ""


class DiscoveryKube:
    """Discovery answers plus one LIST outcome for podgroups: served and readable, or forbidden."""

    def __init__(self, *, crd: bool, forbidden: bool = False) -> None:
        self.server = "https://fake"
        self.crd = crd
        self.forbidden = forbidden
        self.gets: list[str] = []

    def served_resources(self, group_version: str) -> set[str] | None:
        if group_version == "v1":
            return {"pods", "nodes"}
        if group_version == "scheduling.x-k8s.io/v1alpha1" and self.crd:
            return {"podgroups"}
        return None

    def get(self, path: str, params: Any = None) -> Response:
        self.gets.append(path)
        if self.forbidden:
            raise ApiError(
                403, "Forbidden", 'podgroups.scheduling.x-k8s.io is forbidden: User "x" cannot list'
            )
        return Response(200, list_page([], rv="1"))


@pytest.mark.parametrize(
    ("crd", "forbidden", "watched"),
    [(True, False, True), (False, False, False), (True, True, False)],
    ids=["crd-installed", "crd-absent", "list-forbidden"],
)
def test_pod_groups_are_watched_only_when_served_and_readable(
    crd: bool, forbidden: bool, watched: bool, caplog: pytest.LogCaptureFixture
) -> None:
    registry = default_registry(entry_points=False)
    cfg = decode_config(GANG_CONFIG, "test.yaml", registry)
    kube = DiscoveryKube(crd=crd, forbidden=forbidden)
    cluster = LiveCluster(cfg, registry, kube, options=LiveOptions(kinds=("PodGroup",)))  # type: ignore[arg-type]
    try:
        kinds = [rk.kind for rk in cluster.discover()]
    finally:
        cluster.stop(1)
    assert kinds == (["Node", "Pod", "PodGroup"] if watched else ["Node", "Pod"])
    if forbidden:
        assert "grant get/list/watch on podgroups in API group scheduling.x-k8s.io" in caplog.text
    if not crd:
        assert kube.gets == []  # nothing is listed for a kind the server does not serve


def test_pod_group_events_reach_the_lister_and_requeue_the_gang() -> None:
    """Two members of gang `g` with no PodGroup are turned away; the PodGroup arriving brings them back."""
    registry = default_registry(entry_points=False)
    cfg = decode_config(GANG_CONFIG, "test.yaml", registry)
    kube = FakeKube()
    source = Sources(
        [node_json("n1")], [gang_pod("a", "g"), gang_pod("b", "g")], pod_group=pod_group_json("g", 2)
    )
    cluster = LiveCluster(cfg, registry, kube, options=LiveOptions(bind_depth=2), source=source)  # type: ignore[arg-type]
    handlers = cluster.feeds.handlers_for("PodGroup")
    assert handlers is not None  # PodGroup events are not dropped
    cluster.start_informers([KINDS["Node"], KINDS["Pod"], KINDS["PodGroup"]])
    try:
        assert cluster.wait_for_sync(5)
        cluster.start_loop()
        cluster.set_leading(True)
        wait_until(lambda: cluster.snapshot_counts()["unschedulable"] == 2)
        assert kube.bound == {}
        # Events are sent off the scheduling loop: they may follow the queue's count by a moment.
        wait_until(lambda: any(e["reason"] == "FailedScheduling" for e in kube.events))
        notes = [e["note"] for e in kube.events if e["reason"] == "FailedScheduling"]
        assert notes and all("pod group default/g not found" in n for n in notes), notes

        source.go.set()  # the PodGroup is created: ADDED arrives on the watch
        wait_until(lambda: len(kube.bound) == 2, timeout=15)
        assert kube.bound == {"default/a": "n1", "default/b": "n1"}
        (group,) = cluster.lister("PodGroup")
        assert isinstance(group, PodGroup) and group.spec.min_member == 2
        assert group.api_version == "scheduling.x-k8s.io/v1alpha1"
        # The members re-entered the queue on the PodGroup's event, not on a timer.
        incoming = cluster.scheduler.queue.incoming
        assert any(label == "PodGroupAdd" for _, label in incoming), incoming
    finally:
        source.stop()
        cluster.stop(5)


# --------------------------------------------------------------------------- extenders


class ExtenderServer:
    """A filter + bind extender on 127.0.0.1: keeps only `keep`; bind waits for `release_bind`."""

    def __init__(self, keep: str) -> None:
        self.keep = keep
        self.filter_calls: list[list[str]] = []
        self.binds: list[dict[str, Any]] = []
        self.bind_arrived = threading.Event()
        self.release_bind = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path.endswith("/filter"):
                    names = list(body["NodeNames"])
                    outer.filter_calls.append(names)
                    failed = {n: "rejected by the test extender" for n in names if n != outer.keep}
                    kept = [n for n in names if n == outer.keep]
                    answer: dict[str, Any] = {
                        "Nodes": None,
                        "NodeNames": kept,
                        "FailedNodes": failed,
                        "FailedAndUnresolvableNodes": None,
                        "Error": "",
                    }
                else:
                    outer.binds.append(body)
                    outer.bind_arrived.set()
                    outer.release_bind.wait(10)
                    answer = {"Error": ""}
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="test-extender", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.release_bind.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def test_config_extenders_filter_and_bind_in_the_live_cycle_with_the_lock_let_go() -> None:
    ext = ExtenderServer(keep="n2")
    registry = default_registry(entry_points=False)
    cfg = decode_config(
        f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: kubesched
extenders:
- urlPrefix: {ext.url}
  filterVerb: filter
  bindVerb: bind
  nodeCacheCapable: true
  httpTimeout: 10s
""",
        "test.yaml",
        registry,
    )
    kube = FakeKube()
    source = Sources(
        [node_json("n1"), node_json("n2"), node_json("n3")], [pod_json("p", scheduler="kubesched")]
    )
    cluster = LiveCluster(cfg, registry, kube, options=LiveOptions(bind_depth=2), source=source)  # type: ignore[arg-type]
    assert cluster.extenders is not None and cluster.scheduler.extenders is cluster.extenders
    cluster.start_informers([KINDS["Node"], KINDS["Pod"]])
    try:
        assert cluster.wait_for_sync(5)
        cluster.start_loop()
        cluster.set_leading(True)
        assert ext.bind_arrived.wait(10)
        assert sorted(ext.filter_calls[0]) == ["n1", "n2", "n3"]
        assert ext.binds == [
            {"PodName": "p", "PodNamespace": "default", "PodUID": "uid-default-p", "Node": "n2"}
        ]
        # The extender is still answering the bind: the state lock must be free meanwhile.
        counted = threading.Event()
        threading.Thread(target=lambda: (cluster.snapshot_counts(), counted.set()), daemon=True).start()
        assert counted.wait(3), "the state lock was held through the extender's bind"
        ext.release_bind.set()
        wait_until(lambda: any(e["reason"] == "Scheduled" for e in kube.events))
        (event,) = [e for e in kube.events if e["reason"] == "Scheduled"]
        assert "n2" in event["note"]
        assert kube.bind_calls == []  # the extender bound it, not DefaultBinder
    finally:
        source.stop()
        cluster.stop(5)
        ext.stop()
