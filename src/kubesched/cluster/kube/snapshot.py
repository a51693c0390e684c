"""A read-only snapshot of a live cluster: the objects a profile needs, listed once, consistently.

`kubesched explain`, `simulate`, `capacity` and `compare` run on it: the lists become
`LoadedObjects`, the same thing a YAML file gives, and the scheduling then runs on a MemoryCluster.
Only GET requests are made (discovery and paginated LISTs), so a user with read-only RBAC can run it.

Consistency: the first kind (Nodes) is listed as the server has it now; every other kind is then
listed at that list's resourceVersion with `resourceVersionMatch=Exact`. All built-in kinds (and
CRDs in the same etcd) share etcd's revision, so the objects are one point in time: no pod bound to
a node that is not in the node list, no claim missing for a pod. If the server has compacted that
revision meanwhile (410 Gone), the whole read starts over once; if it is gone again, the other kinds
are listed as they are now and a note says the snapshot is not of one instant.

Kinds the server does not serve (a CRD that is not installed, such as scheduler-plugins' PodGroup
on most clusters) are skipped, all named in one note: a cluster without the API has none of them,
and a line per kind on every command would bury the notes that matter. Optional kinds the user may
not list are skipped with a note each. Pods and Nodes are required. The kinds are listed in
parallel, in pages bigger than an informer's (one snapshot, not a cache kept for hours), so that
the server encoding one list overlaps with this process decoding another. As kube-scheduler's
informers do, finished pods (Succeeded, Failed) are left out by the server, unless `all_pods`
asks for them (a simulated Job counts its finished pods).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesched.api import resource as dra
from kubesched.api.controllers import CronJob, DaemonSet, Deployment, Job
from kubesched.api.loader import LoadedObjects
from kubesched.cluster.kube.client import ApiError, KubeClient
from kubesched.cluster.kube.informer import KINDS, ApiListWatch, ObjectDecoder, ResourceKind, list_objects
from kubesched.config.features import DEFAULT_GATES, FeatureGates
from kubesched.errors import InputError

__all__ = ["REQUIRED_KINDS", "SNAPSHOT_KINDS", "Snapshot", "read_snapshot"]

#: Without these there is nothing to schedule; Nodes come first: their list fixes the revision.
REQUIRED_KINDS = ("Node", "Pod")
#: Objects per LIST page: a 5000-node cluster is a few round trips, each page still bounded.
SNAPSHOT_PAGE_SIZE = 2500
#: Kinds listed at once.
PARALLEL_LISTS = 4
#: Tries at one revision before the remaining kinds are listed as they are now.
CONSISTENT_TRIES = 2

#: What a simulation reads besides the scheduler's own kinds: the workloads that own pods (their
#: controllers run in the simulation) and the claim templates DRA pods name.
SNAPSHOT_KINDS: dict[str, ResourceKind] = {
    **KINDS,
    **{
        rk.kind: rk
        for rk in (
            ResourceKind("Deployment", "apps", "v1", "deployments", Deployment),
            ResourceKind("DaemonSet", "apps", "v1", "daemonsets", DaemonSet),
            ResourceKind("Job", "batch", "v1", "jobs", Job),
            ResourceKind("CronJob", "batch", "v1", "cronjobs", CronJob),
            ResourceKind(
                "ResourceClaimTemplate",
                "resource.k8s.io",
                "v1",
                "resourceclaimtemplates",
                dra.ResourceClaimTemplate,
            ),
        )
    },
}


@dataclass
class Snapshot:
    objects: LoadedObjects
    server: str
    #: Kinds read, and what was left out and why (not served, not allowed, objects that did not decode).
    kinds: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: The revision every kind was listed at ("" when the server's revision moved on: see `notes`).
    resource_version: str = ""


#: Called once a kind is read: its name and how many objects it holds.
KindRead = Callable[[str, int], None]


def read_snapshot(
    client: KubeClient,
    kinds: Iterable[str],
    *,
    all_pods: bool = False,
    on_kind: KindRead | None = None,
    gates: FeatureGates = DEFAULT_GATES,
) -> Snapshot:
    """LIST `kinds` (keys of `SNAPSHOT_KINDS`; plus Pods and Nodes) from the API server into
    LoadedObjects, at one revision. A kind whose feature gate is off in `gates` is not listed (nor
    discovered), as kube-scheduler would not watch it.

    Raises InputError naming the server when it cannot be reached or refuses a required list.
    """
    started = time.perf_counter()
    names = list(dict.fromkeys([*REQUIRED_KINDS, *kinds]))
    wanted = [SNAPSHOT_KINDS[name] for name in names if name in SNAPSHOT_KINDS]
    wanted = [rk for rk in wanted if not rk.gate or gates.enabled(rk.gate)]
    if all_pods:
        wanted = [dataclasses.replace(rk, field_selector="") if rk.kind == "Pod" else rk for rk in wanted]
    notes = [f"{name}: not read, kubesched does not list it" for name in names if name not in SNAPSHOT_KINDS]
    listable = _listable(client, wanted, notes)
    snap = _read_consistent(client, listable, on_kind)
    snap.notes[:0] = notes
    snap.seconds = time.perf_counter() - started
    return snap


def _listable(client: KubeClient, wanted: list[ResourceKind], notes: list[str]) -> list[ResourceKind]:
    served = {gv: _served(client, gv) for gv in dict.fromkeys(rk.group_version for rk in wanted)}
    listable: list[ResourceKind] = []
    absent: list[str] = []
    for rk in wanted:
        resources = served[rk.group_version]
        if resources is not None and rk.plural in resources:
            listable.append(rk)
        elif rk.kind in REQUIRED_KINDS:
            raise InputError(f"the server does not serve {rk.path}", source=client.server)
        else:
            absent.append(f"{rk.kind} ({rk.group_version})")
    if absent:
        notes.append(
            f"APIs this cluster does not serve, so it has none of their objects: {', '.join(absent)}"
        )
    return listable


def _read_consistent(client: KubeClient, listable: list[ResourceKind], on_kind: KindRead | None) -> Snapshot:
    """The first kind as it is now, the others at its revision; over again once if that revision
    was compacted meanwhile, then the others as they are now (with a note)."""
    first, rest = listable[0], listable[1:]
    version = ""
    for _ in range(CONSISTENT_TRIES):
        snap = Snapshot(LoadedObjects(), client.server)
        version = _take(snap, client, first, _list_kind(ApiListWatch(client), first, ""), on_kind)
        results = _list_all(ApiListWatch(client, exact=True), rest, version)
        if not any(error is not None and error.code == 410 for _, _, error, _ in results):
            for rk, result in zip(rest, results, strict=True):
                _take(snap, client, rk, result, on_kind)
            snap.resource_version = version
            return snap
    snap = Snapshot(LoadedObjects(), client.server)
    _take(snap, client, first, _list_kind(ApiListWatch(client), first, ""), on_kind)
    for rk, result in zip(rest, _list_all(ApiListWatch(client), rest, ""), strict=True):
        _take(snap, client, rk, result, on_kind)
    snap.notes.append(
        f"the objects are not of one instant: the server compacted revision {version} while they were "
        f"read ({CONSISTENT_TRIES} tries), so kinds after {first.kind} were listed as they were then"
    )
    return snap


def _list_all(source: ApiListWatch, kinds: list[ResourceKind], version: str) -> list[_Listed]:
    with ThreadPoolExecutor(PARALLEL_LISTS, thread_name_prefix="snapshot") as pool:
        return list(pool.map(lambda rk: _list_kind(source, rk, version), kinds))


_Listed = tuple[list[Any], list[str], ApiError | None, str]


def _take(
    snap: Snapshot, client: KubeClient, rk: ResourceKind, result: _Listed, on_kind: KindRead | None
) -> str:
    """File one kind's list into `snap` (or judge the error that stopped it); its resourceVersion."""
    items, notes, error, version = result
    if error is not None:
        if error.code == 403 and rk.kind not in REQUIRED_KINDS:
            snap.notes.append(f"{rk.key}: not read, listing {rk.path} is forbidden")
            return version
        raise _unreachable(client, rk.path, error)
    for obj in items:
        snap.objects.add(obj)
    snap.notes.extend(notes)
    snap.kinds.append(rk.key)
    if on_kind is not None:
        on_kind(rk.key, len(items))
    return version


def _served(client: KubeClient, group_version: str) -> set[str] | None:
    try:
        return client.served_resources(group_version)
    except ApiError as exc:
        path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        raise _unreachable(client, path, exc) from None


def _list_kind(source: ApiListWatch, rk: ResourceKind, version: str) -> _Listed:
    """One kind's objects, notes, the error that stopped its LIST (judged by the caller), and the
    list's resourceVersion."""
    try:
        return _list(source, rk, version)
    except ApiError as exc:
        return [], [], exc, ""


def _list(source: ApiListWatch, rk: ResourceKind, version: str) -> _Listed:
    decoder = ObjectDecoder(rk.type)
    bad = 0

    def decode(raw: msgspec.Raw) -> Any | None:
        nonlocal bad
        try:
            return decoder.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            bad += 1
            return None

    items, listed_at = list_objects(
        source, rk, decode, page_size=SNAPSHOT_PAGE_SIZE, resource_version=version
    )
    notes = [f"{rk.key}: {bad} object(s) could not be decoded and were left out"] if bad else []
    return items, notes, None, listed_at


def _unreachable(client: KubeClient, path: str, exc: ApiError) -> InputError:
    if exc.code in (401, 403):
        return InputError(
            f"reading {path} was refused ({exc}); kubesched needs get/list on it (deploy/explain-rbac.yaml)",
            source=client.server,
        )
    if exc.is_transport:
        return InputError(f"cannot reach the API server: {exc.message}", source=client.server)
    return InputError(f"reading {path} failed: {exc}", source=client.server)
