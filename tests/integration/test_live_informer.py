"""The informer against the real API server: lean decoding of real objects, and a watch whose
resourceVersion has expired (the server answers with an in-stream ERROR 410) recovered by a relist
that also reports what changed while it was not watching.

A fresh API server's watch cache still holds every version since it started, so nothing would expire
in a test's lifetime; this module runs its own control plane with the watch cache off and etcd
compacted every second, which is what a long-running cluster looks like to a watch that resumes late.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.cluster.kube.client import KubeClient
from kubesched.cluster.kube.informer import KINDS, ApiListWatch, Informer, ResourceKind
from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import ApiClient, create_namespace, create_pod, delete_pod


@pytest.fixture(scope="module")
def compacting_plane() -> Iterator[ControlPlane]:
    with ControlPlane(extra_apiserver_args=["--watch-cache=false", "--etcd-compaction-interval=1s"]) as cp:
        yield cp


class Seen:
    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.calls: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def _note(self, op: str, pod: Pod) -> None:
        if pod.metadata.namespace == self.namespace:
            with self.lock:
                self.calls.append((op, pod.metadata.name))

    def on_add(self, obj: Any) -> None:
        self._note("add", obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._note("update", new)

    def on_delete(self, obj: Any) -> None:
        self._note("delete", obj)


class StaleFirstWatch(ApiListWatch):
    """The first watch resumes from a long-compacted resourceVersion, after `meanwhile` ran."""

    def __init__(self, client: KubeClient, meanwhile: Callable[[], None]) -> None:
        super().__init__(client)
        self.meanwhile = meanwhile
        self.watched_from: list[str] = []

    def watch(
        self,
        kind: ResourceKind,
        *,
        resource_version: str,
        timeout_seconds: int,
        on_open: Callable[[Callable[[], None]], None] | None = None,
    ) -> AbstractContextManager[Iterable[bytes]]:
        if not self.watched_from:
            self.meanwhile()
            resource_version = "1"
        self.watched_from.append(resource_version)
        return super().watch(
            kind, resource_version=resource_version, timeout_seconds=timeout_seconds, on_open=on_open
        )


def wait_until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_expired_watch_is_recovered_by_a_relist_with_synthetic_deletes(
    compacting_plane: ControlPlane,
) -> None:
    control_plane = compacting_plane
    api = ApiClient.for_control_plane(control_plane)
    namespace = f"it-{uuid.uuid4().hex[:8]}"
    create_namespace(api, namespace)
    create_pod(api, "kept", namespace=namespace, scheduler_name="nobody")
    create_pod(api, "deleted-meanwhile", namespace=namespace, scheduler_name="nobody")

    def meanwhile() -> None:
        time.sleep(2.5)  # two compaction periods: resourceVersion 1 is long gone
        delete_pod(api, "deleted-meanwhile", namespace)
        create_pod(api, "created-meanwhile", namespace=namespace, scheduler_name="nobody")

    seen = Seen(namespace)
    with KubeClient.from_kubeconfig(str(control_plane.kubeconfig_path), qps=-1, burst=1) as client:
        source = StaleFirstWatch(client, meanwhile)
        informer = Informer(KINDS["Pod"], source, seen)
        informer.start()
        try:
            assert informer.wait_for_sync(30)
            wait_until(lambda: informer.relists_after_expiry == 1, 30, "a relist after 410")
            wait_until(lambda: ("add", "created-meanwhile") in seen.calls, 30, "the pod created meanwhile")
            assert ("delete", "deleted-meanwhile") in seen.calls
            assert sorted(seen.calls[:2]) == [("add", "deleted-meanwhile"), ("add", "kept")]
            names = {p.metadata.name for p in informer.objects() if p.metadata.namespace == namespace}
            assert names == {"kept", "created-meanwhile"}
            assert source.watched_from[0] == "1" and source.watched_from[1] not in ("", "1")
            # Back to normal: later changes arrive through the resumed watch.
            create_pod(api, "later", namespace=namespace, scheduler_name="nobody")
            wait_until(lambda: ("add", "later") in seen.calls, 30, "a later pod")
            pod = informer.get(f"{namespace}/later")
            assert isinstance(pod, Pod) and pod.spec.scheduler_name == "nobody"
            assert pod.spec.containers[0].resources.requests == {"cpu": "100m", "memory": "128Mi"}
        finally:
            informer.stop()
            informer.join(10)
