"""Which kinds the live scheduler watches: those it wants that this API server serves and lets it list.

Split from `live` because it is a question asked of the server once, before any informer starts,
with rules of its own: a kind behind a feature gate that is off is never asked about (a cluster
without the API must not see a request for it); Pods and Nodes are required; and an optional kind
the scheduler's RBAC does not cover is skipped with a warning rather than left unsynced forever.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kubesched.api.scheduling_groups import COMPOSITE_POD_GROUP_KEY, POD_GROUP_KEY, WORKLOAD_KEY
from kubesched.cluster.kube.client import ApiError, KubeClient
from kubesched.cluster.kube.informer import KINDS, ResourceKind
from kubesched.config.features import FeatureGates

__all__ = ["GROUP_KINDS", "REQUIRED_KINDS", "served_kinds"]

log = logging.getLogger(__name__)

#: The scheduling.k8s.io kinds (kept in `LiveCluster.groups`).
GROUP_KINDS = frozenset({POD_GROUP_KEY, COMPOSITE_POD_GROUP_KEY, WORKLOAD_KEY})
#: Optional kinds that a cluster may serve after the scheduler's RBAC was written: a CRD installed
#: later, an API enabled later (and upstream's kube-scheduler role grants no `workloads`). A LIST we
#: are forbidden to make would keep the informer, and so the scheduler, unsynced forever; such a
#: kind is skipped with a warning naming the missing permission instead.
_SKIP_IF_FORBIDDEN = frozenset({"PodGroup", *GROUP_KINDS})
#: Kinds without which there is nothing to schedule.
REQUIRED_KINDS = ("Node", "Pod")


def served_kinds(
    client: KubeClient,
    wanted: Iterable[str],
    features: FeatureGates,
    *,
    served_resources: Callable[[str], set[str] | None] | None = None,
) -> list[ResourceKind]:
    """The kinds of `wanted` (Pods and Nodes always) that this server serves and lets us list.

    `served_resources` answers for `client.served_resources` (discovery fetched early:
    `InitialLists.served_resources`)."""
    ask = served_resources or client.served_resources
    names = list(dict.fromkeys([*REQUIRED_KINDS, *wanted]))
    served: dict[str, set[str] | None] = {}
    kinds: list[ResourceKind] = []
    for name in names:
        rk = KINDS[name]
        if rk.gate and not features.enabled(rk.gate):
            continue
        if rk.group_version not in served:
            served[rk.group_version] = ask(rk.group_version)
        resources = served[rk.group_version]
        if resources is not None and rk.plural in resources:
            if name in _SKIP_IF_FORBIDDEN and _forbidden(client, rk):
                continue
            kinds.append(rk)
        elif name in REQUIRED_KINDS:
            raise ApiError(404, "NotFound", f"the server does not serve {rk.path}")
        else:
            log.info("not watching %s: the server does not serve %s", name, rk.path)
    return kinds


def _forbidden(client: KubeClient, rk: ResourceKind) -> bool:
    """True (and a warning) when we may not list `rk`; see `_SKIP_IF_FORBIDDEN`."""
    try:
        client.get(rk.path, {"limit": 1})
    except ApiError as exc:
        if exc.code != 403:
            raise
        log.warning(
            "not watching %s: listing %s is forbidden (%s); grant get/list/watch on %s in API group %s "
            "for the scheduler's service account",
            rk.kind,
            rk.path,
            exc.message,
            rk.plural,
            rk.group,
        )
        return True
    return False
