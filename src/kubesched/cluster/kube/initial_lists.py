"""The Node and Pod informers' first LISTs, sent while `kubesched run` is still starting.

Before its first bind `kubesched run` spends most of its time importing and building the scheduler;
its informers' first LISTs then wait for the API server to read its cache and encode every Node and
Pod, after discovery has asked, one group version after another, which kinds it serves.
`InitialLists` sends those LISTs (each on a thread of its own) and the discovery requests (on a
third) as soon as the connection is known, so the server's share of them runs while the scheduler
is still being built (the threads wait on the network and hold the GIL only to receive bytes). The
informers then take the pages already received (`PrefetchedListWatch`), and discovery the answers
(`served_resources`), instead of asking again.

Only *when* the bytes are fetched changes. The requests are the informers' first-list requests, to
the parameter (`list_params`: `limit`, `resourceVersion=0`, the field selector, continue tokens),
sent through the same client and its rate limiter; the informer still decodes, stores and delivers
every object itself, and discovery still decides which kinds to watch. A page or an answer that was
not received (an error, no answer) is asked for again, which then meets the error as it always did:
the same log lines, retries and backoff. Each is handed out once, pages only to the first list;
anything else (a relist, a page that does not match) goes to the server, and from then on that
kind's prefetched pages are dropped.

This module imports nothing heavier than the client, so `run` can start the lists before the
scheduler's modules are imported.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from kubesched.cluster.kube.client import KubeClient

if TYPE_CHECKING:
    from kubesched.cluster.kube.informer import ListWatch, ResourceKind

__all__ = [
    "DISCOVERED",
    "FIRST_LISTS",
    "NON_TERMINAL_PODS",
    "PAGE_SIZE",
    "InitialLists",
    "ListRequest",
    "PrefetchedListWatch",
    "list_params",
]

log = logging.getLogger(__name__)

#: Items per LIST page, as client-go's pager uses.
PAGE_SIZE = 500
#: Pods that finished hold no resources; kube-scheduler's pod informer leaves them out the same way.
NON_TERMINAL_PODS = "status.phase!=Succeeded,status.phase!=Failed"
#: The resourceVersion of an informer's first LIST: "0" lets the server answer from its watch cache.
FIRST_LIST_VERSION = "0"


def list_params(
    *, limit: int, continue_token: str, resource_version: str, field_selector: str, exact: bool = False
) -> dict[str, str | int]:
    """The query of one LIST page (`ApiListWatch.list_page`'s, and the prefetched pages')."""
    params: dict[str, str | int] = {"limit": limit}
    if continue_token:
        params["continue"] = continue_token
    elif resource_version:
        params["resourceVersion"] = resource_version
        if exact:
            params["resourceVersionMatch"] = "Exact"
    if field_selector:
        params["fieldSelector"] = field_selector
    return params


@dataclass(frozen=True, slots=True)
class ListRequest:
    """One kind's collection as its informer lists it (`ResourceKind`'s key, path, field selector)."""

    key: str
    path: str
    field_selector: str = ""


#: The kinds every `kubesched run` watches whatever the server serves (discovery requires them) and
#: whose lists are the big ones: Nodes and the non-terminal Pods.
FIRST_LISTS: tuple[ListRequest, ...] = (
    ListRequest("Node", "/api/v1/nodes"),
    ListRequest("Pod", "/api/v1/pods", NON_TERMINAL_PODS),
)
#: The API group versions discovery asks about before the informers start, whatever the feature
#: gates (`discovery.served_kinds`: those of `informer.KINDS` that no gate holds back), in its order.
DISCOVERED: tuple[str, ...] = (
    "v1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1",
    "policy/v1",
    "apps/v1",
    "scheduling.x-k8s.io/v1alpha1",
    "resource.k8s.io/v1",
)


class _Meta(msgspec.Struct, kw_only=True, frozen=True):
    continue_: str = msgspec.field(default="", name="continue")


class _Envelope(msgspec.Struct, kw_only=True, frozen=True):
    metadata: _Meta = _Meta()


_envelope = msgspec.json.Decoder(_Envelope)


@dataclass
class _Pages:
    """One kind's pages: received (with the continue token each was asked with), not yet taken."""

    request: ListRequest
    pages: deque[tuple[str, bytes]] = field(default_factory=deque)
    #: The fetching thread is over (every page received, or it stopped at a failure).
    finished: bool = False
    #: Dropped: nothing more is handed out for this kind.
    closed: bool = False


class InitialLists:
    """The first LIST of each of `requests` and the discovery of `discovered` (the resources each
    group version serves), fetched on threads from `start()` (see module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        requests: Iterable[ListRequest] = FIRST_LISTS,
        *,
        discovered: Iterable[str] = DISCOVERED,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.client = client
        self.page_size = page_size
        self._kinds = {r.key: _Pages(r) for r in requests}
        self._changed = threading.Condition()
        self._discovered = list(discovered)
        #: Group version -> the resources it serves (None: not served), as received, not yet taken.
        self._served: dict[str, set[str] | None] = {}
        self._discovery_over = not self._discovered

    def start(self) -> None:
        for pages in self._kinds.values():
            threading.Thread(
                target=self._fetch, args=(pages,), name=f"first-list-{pages.request.key}", daemon=True
            ).start()
        if self._discovered:
            threading.Thread(target=self._discover, name="first-discovery", daemon=True).start()

    def served_resources(self, group_version: str) -> set[str] | None:
        """`KubeClient.served_resources`, answered from the discovery received when it holds this
        group version (waiting while it is on its way), else asked of the server. Once each."""
        with self._changed:
            while (
                group_version in self._discovered
                and group_version not in self._served
                and not self._discovery_over
            ):
                self._changed.wait()
            if group_version in self._served:
                return self._served.pop(group_version)
        return self.client.served_resources(group_version)

    def source(self, inner: ListWatch) -> ListWatch:
        """`inner` with the first pages answered from what was received."""
        return PrefetchedListWatch(inner, self)

    def close(self) -> None:
        """Drop every page and hand out no more (waiting informers ask the server instead)."""
        with self._changed:
            for pages in self._kinds.values():
                pages.closed = True
                pages.pages.clear()
            self._discovery_over = True
            self._served.clear()
            self._changed.notify_all()

    def take(
        self, kind: ResourceKind, *, limit: int, continue_token: str, resource_version: str
    ) -> bytes | None:
        """The page an informer asks for, if it is the next one fetched (waiting while it is on its
        way); None: ask the server. A request that is not the next page closes the kind."""
        pages = self._kinds.get(kind.key)
        if pages is None:
            return None
        request = pages.request
        wanted = (
            kind.path == request.path
            and kind.field_selector == request.field_selector
            and limit == self.page_size
            and (continue_token != "" or resource_version == FIRST_LIST_VERSION)
        )
        with self._changed:
            while wanted and not pages.closed and not pages.pages and not pages.finished:
                self._changed.wait()
            if wanted and not pages.closed and pages.pages and pages.pages[0][0] == continue_token:
                return pages.pages.popleft()[1]
            pages.closed = True
            pages.pages.clear()
            return None

    def _fetch(self, pages: _Pages) -> None:
        request = pages.request
        token = ""
        try:
            while True:
                params = list_params(
                    limit=self.page_size,
                    continue_token=token,
                    resource_version=FIRST_LIST_VERSION,
                    field_selector=request.field_selector,
                )
                body = self.client.get(request.path, params).body
                with self._changed:
                    if pages.closed:
                        return
                    pages.pages.append((token, body))
                    self._changed.notify_all()
                token = _envelope.decode(body).metadata.continue_
                if not token:
                    return
        except Exception as exc:  # the informer asks again and meets (and reports) whatever this was
            log.debug("first list of %s not prefetched: %s", request.path, exc)
        finally:
            with self._changed:
                pages.finished = True
                self._changed.notify_all()

    def _discover(self) -> None:
        try:
            for group_version in self._discovered:
                served = self.client.served_resources(group_version)
                with self._changed:
                    if self._discovery_over:
                        return
                    self._served[group_version] = served
                    self._changed.notify_all()
        except Exception as exc:  # discovery asks again and meets (and reports) whatever this was
            log.debug("discovery not prefetched: %s", exc)
        finally:
            with self._changed:
                self._discovery_over = True
                self._changed.notify_all()


class PrefetchedListWatch:
    """A ListWatch whose first LIST pages come from `InitialLists` when they were received there."""

    def __init__(self, inner: ListWatch, lists: InitialLists) -> None:
        self.inner = inner
        self.lists = lists

    def list_page(
        self, kind: ResourceKind, *, limit: int, continue_token: str, resource_version: str = ""
    ) -> bytes:
        page = self.lists.take(
            kind, limit=limit, continue_token=continue_token, resource_version=resource_version
        )
        if page is not None:
            return page
        return self.inner.list_page(
            kind, limit=limit, continue_token=continue_token, resource_version=resource_version
        )

    def watch(
        self,
        kind: ResourceKind,
        *,
        resource_version: str,
        timeout_seconds: int,
        on_open: Callable[[Callable[[], None]], None] | None = None,
    ) -> AbstractContextManager[Iterable[bytes]]:
        return self.inner.watch(
            kind, resource_version=resource_version, timeout_seconds=timeout_seconds, on_open=on_open
        )
