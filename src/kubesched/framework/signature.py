"""Pod signatures (KEP-5598): which pods the scheduler may treat as interchangeable.

Two pods with the same signature get the same Filter and Score results on any set of nodes, so
opportunistic batching (`scheduler/batch.py`) may reuse one pod's scored node list for the next.
A plugin says which parts of a pod it reads by returning *fragments* — `(key, value)` pairs, the
value anything `msgspec.json` encodes — from an optional `sign_pod(pod)` hook; it returns an
unschedulable `Status` when its answer depends on more than the pod and the node (other pods'
placement, claims), which makes the pod unsignable. Keys name the pod field, as upstream's do, so
plugins reading the same field share one fragment.

The framework (`Framework.sign_pod`) joins the fragments of every PreFilter, Filter, PreScore and
Score plugin of a profile; one such plugin without `sign_pod` turns signatures off for the whole
profile, as in kube-scheduler. Fragments are plain references to the pod's own fields and are
encoded only once every plugin has agreed, so an unsignable pod costs a few method calls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from kubesched.api.objects import Pod, Toleration
from kubesched.framework.interfaces import defines
from kubesched.framework.node_info import pod_host_ports
from kubesched.framework.status import Status

__all__ = [
    "AFFINITY",
    "DYNAMIC_RESOURCES",
    "HOST_PORTS",
    "IMAGES",
    "LABELS",
    "NODE_NAME",
    "NODE_SELECTOR",
    "REQUESTS",
    "REQUIRED_FEATURES",
    "SCHEDULER_NAME",
    "SIGNED_POINTS",
    "TOLERATIONS",
    "VOLUMES",
    "SignFragment",
    "affinity_fragment",
    "host_ports_fragment",
    "images_fragment",
    "labels_fragment",
    "node_name_fragment",
    "node_selector_fragment",
    "pod_signature",
    "requests_fragment",
    "signers_of",
    "tolerations_fragment",
    "volumes_fragment",
]

#: (key, value): one part of a pod a plugin's decisions depend on.
SignFragment = tuple[str, Any]

SCHEDULER_NAME = "v1.Pod.Spec.SchedulerName"
NODE_NAME = "v1.Pod.Spec.NodeName"
AFFINITY = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR = "v1.Pod.Spec.NodeSelector"
TOLERATIONS = "v1.Pod.Spec.Tolerations"
HOST_PORTS = "v1.Pod.Spec.HostPorts()"
REQUESTS = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
VOLUMES = "v1.Pod.Spec.Volumes.NonSyntheticSources()"
IMAGES = "v1.Pod.Spec.CanonicalImageNames()"
LABELS = "v1.Pod.Labels"
REQUIRED_FEATURES = "v1.Pod.Spec.RequiredFeatures()"
DYNAMIC_RESOURCES = "v1.Pod.Spec.DynamicResources"


def node_name_fragment(pod: Pod) -> SignFragment:
    return NODE_NAME, pod.spec.node_name


def affinity_fragment(pod: Pod) -> SignFragment:
    affinity = pod.spec.affinity
    return AFFINITY, affinity.node_affinity if affinity is not None else None


def node_selector_fragment(pod: Pod) -> SignFragment:
    return NODE_SELECTOR, pod.spec.node_selector


def _toleration_order(t: Toleration) -> tuple[str, str, str, str]:
    return t.key, t.value, t.operator, t.effect


def tolerations_fragment(pod: Pod) -> SignFragment:
    """Sorted, so pods listing the same tolerations in another order still match."""
    tolerations = pod.spec.tolerations
    return TOLERATIONS, sorted(tolerations, key=_toleration_order) if len(tolerations) > 1 else tolerations


def host_ports_fragment(pod: Pod) -> SignFragment:
    return HOST_PORTS, sorted(set(pod_host_ports(pod)))


def requests_fragment(pod: Pod) -> SignFragment:
    """Everything the pod's requests are computed from: containers, init containers (and whether
    they are sidecars), overhead and pod-level resources."""
    spec = pod.spec
    return REQUESTS, (
        [c.resources for c in spec.containers],
        [(c.resources, c.restart_policy) for c in spec.init_containers],
        spec.overhead,
        spec.resources,
    )


def volumes_fragment(pod: Pod) -> SignFragment:
    """The volumes with a source scheduling looks at (ConfigMap, Secret, emptyDir ... are not)."""
    kept = [
        v
        for v in pod.spec.volumes
        if v.persistent_volume_claim is not None
        or v.ephemeral is not None
        or v.csi is not None
        or v.gce_persistent_disk is not None
        or v.aws_elastic_block_store is not None
        or v.rbd is not None
        or v.iscsi is not None
    ]
    return VOLUMES, kept


def images_fragment(pod: Pod, normalize: Callable[[str], str]) -> SignFragment:
    """The canonical image names (`normalize` is ImageLocality's own rule for an image name)."""
    spec = pod.spec
    return IMAGES, [normalize(c.image) for c in (*spec.init_containers, *spec.containers)]


def labels_fragment(pod: Pod) -> SignFragment:
    return LABELS, pod.metadata.labels


#: The extension points whose plugins must all sign pods for a profile to sign any (upstream's rule).
SIGNED_POINTS = ("preFilter", "filter", "preScore", "score")


def pod_signature(pod: Pod, signers: Sequence[tuple[str, Any]]) -> tuple[bytes | None, int]:
    """(the pod's signature from these plugins' `sign_pod` fragments, -1), or (None, the position of
    the plugin that found it unsignable; -1 when one failed)."""
    parts: dict[str, Any] = {SCHEDULER_NAME: pod.spec.scheduler_name}
    try:
        for i, (_name, plugin) in enumerate(signers):
            out = plugin.sign_pod(pod)
            if isinstance(out, Status):
                if not out.is_success():
                    return None, i
                continue
            for key, value in out:
                parts.setdefault(key, value)
        # Sorted keys: the bytes do not depend on the order the plugins were asked in.
        return msgspec.json.encode(parts, order="sorted"), -1
    except Exception:
        return None, -1


def signers_of(points: Mapping[str, list[tuple[str, Any]]]) -> tuple[list[tuple[str, Any]] | None, list[str]]:
    """(a profile's plugins that sign, in profile order, or None when one cannot; the names that cannot)."""
    signers: list[tuple[str, Any]] = []
    unsigned: list[str] = []
    seen: set[str] = set()
    for point in SIGNED_POINTS:
        for name, plugin in points.get(point, []):
            if name in seen:
                continue
            seen.add(name)
            if defines(type(plugin), "sign_pod"):
                signers.append((name, plugin))
            else:
                unsigned.append(name)
    return (None if unsigned else signers), unsigned
