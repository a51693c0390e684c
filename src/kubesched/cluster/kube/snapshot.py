"""A read-only snapshot of a live cluster: the objects a profile needs, listed once.

`kubesched explain` runs on it: the lists become `LoadedObjects`, the same thing a YAML file gives
`kubesched simulate`, and the scheduling cycle then runs on a MemoryCluster. Only GET requests are
made (discovery and paginated LISTs), so a user with read-only RBAC can run it. As kube-scheduler's
informers do, finished pods (Succeeded, Failed) are left out by the server.

Kinds the server does not serve (a CRD that is not installed) are skipped with a note; so are
optional kinds the user may not list. Pods and Nodes are required. The kinds are listed in
parallel, in pages bigger than an informer's (one snapshot, not a cache kept for hours), so that
the server encoding one list overlaps with this process decoding another.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesched.api.loader import LoadedObjects
from kubesched.cluster.kube.client import ApiError, KubeClient
from kubesched.cluster.kube.informer import KINDS, ApiListWatch, ObjectDecoder, ResourceKind, list_objects
from kubesched.errors import InputError

__all__ = ["REQUIRED_KINDS", "Snapshot", "read_snapshot"]

#: Without these there is nothing to explain.
REQUIRED_KINDS = ("Node", "Pod")
#: Objects per LIST page: a 5000-node cluster is a few round trips, each page still bounded.
SNAPSHOT_PAGE_SIZE = 2500
#: Kinds listed at once.
PARALLEL_LISTS = 4


@dataclass
class Snapshot:
    objects: LoadedObjects
    server: str
    #: Kinds read, and what was left out and why (not served, not allowed, objects that did not decode).
    kinds: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def read_snapshot(client: KubeClient, kinds: Iterable[str]) -> Snapshot:
    """LIST `kinds` (plus Pods and Nodes) from the API server into LoadedObjects.

    Raises InputError naming the server when it cannot be reached or refuses a required list.
    """
    started = time.perf_counter()
    snap = Snapshot(LoadedObjects(), client.server)
    names = list(dict.fromkeys([*REQUIRED_KINDS, *kinds]))
    wanted = [KINDS[name] for name in names if name in KINDS]
    snap.notes.extend(
        f"{name}: not read, the live adapter does not list it" for name in names if name not in KINDS
    )
    source = ApiListWatch(client)
    served = {gv: _served(client, gv) for gv in dict.fromkeys(rk.group_version for rk in wanted)}
    listable: list[ResourceKind] = []
    for rk in wanted:
        resources = served[rk.group_version]
        if resources is not None and rk.plural in resources:
            listable.append(rk)
        elif rk.kind in REQUIRED_KINDS:
            raise InputError(f"the server does not serve {rk.path}", source=client.server)
        else:
            snap.notes.append(f"{rk.kind}: not served by this cluster ({rk.path})")
    with ThreadPoolExecutor(PARALLEL_LISTS, thread_name_prefix="snapshot") as pool:
        results = list(pool.map(lambda rk: _list_kind(source, rk), listable))
    for rk, (items, notes, error) in zip(listable, results, strict=True):
        if error is not None:
            if error.code == 403 and rk.kind not in REQUIRED_KINDS:
                snap.notes.append(f"{rk.kind}: not read, listing {rk.path} is forbidden")
                continue
            raise _unreachable(client, rk.path, error)
        for obj in items:
            snap.objects.add(obj)
        snap.notes.extend(notes)
        snap.kinds.append(rk.kind)
    snap.seconds = time.perf_counter() - started
    return snap


def _served(client: KubeClient, group_version: str) -> set[str] | None:
    try:
        return client.served_resources(group_version)
    except ApiError as exc:
        path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        raise _unreachable(client, path, exc) from None


def _list_kind(source: ApiListWatch, rk: ResourceKind) -> tuple[list[Any], list[str], ApiError | None]:
    """One kind's objects and notes, or the error that stopped its LIST (judged by the caller)."""
    try:
        return (*_list(source, rk), None)
    except ApiError as exc:
        return [], [], exc


def _list(source: ApiListWatch, rk: ResourceKind) -> tuple[list[Any], list[str]]:
    decoder = ObjectDecoder(rk.type)
    bad = 0

    def decode(raw: msgspec.Raw) -> Any | None:
        nonlocal bad
        try:
            return decoder.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            bad += 1
            return None

    items, _ = list_objects(source, rk, decode, page_size=SNAPSHOT_PAGE_SIZE)
    notes = [f"{rk.kind}: {bad} object(s) could not be decoded and were left out"] if bad else []
    return items, notes


def _unreachable(client: KubeClient, path: str, exc: ApiError) -> InputError:
    if exc.code in (401, 403):
        return InputError(
            f"reading {path} was refused ({exc}); `kubesched explain` needs get/list on it "
            "(deploy/explain-rbac.yaml)",
            source=client.server,
        )
    if exc.is_transport:
        return InputError(f"cannot reach the API server: {exc.message}", source=client.server)
    return InputError(f"reading {path} failed: {exc}", source=client.server)
