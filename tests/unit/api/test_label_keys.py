"""matchLabelKeys / mismatchLabelKeys merged at pod creation, as kube-apiserver v1.37.2 does (and the
simulator's admission with it). The differential test `test_v137_deltas` checks the same against the
real API server."""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.label_keys import merge_label_keys
from kubesched.api.loader import LoadedObjects
from kubesched.api.meta import LabelSelectorRequirement
from kubesched.api.objects import Pod
from kubesched.cluster.memory import MemoryCluster

ZONE = "topology.kubernetes.io/zone"


def _pod(labels: dict[str, str], spec: dict[str, Any], uid: str = "", name: str = "p") -> Pod:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels}
    if uid:
        meta["uid"] = uid
    body = {"metadata": meta, "spec": {"containers": [{"name": "c"}], **spec}}
    return msgspec.convert(body, Pod, from_attributes=False)


SPREAD = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
            "matchLabelKeys": ["version", "absent"],
        }
    ]
}
AFFINITY = {
    "affinity": {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": ZONE,
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "matchLabelKeys": ["version"],
                    "mismatchLabelKeys": ["tenant"],
                }
            ],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "podAffinityTerm": {"topologyKey": ZONE, "matchLabelKeys": ["version"]}}
            ],
        }
    }
}


def test_spread_keys_the_pod_has_are_appended_as_in_requirements() -> None:
    merged = merge_label_keys(_pod({"app": "web", "version": "v2"}, SPREAD))
    selector = merged.spec.topology_spread_constraints[0].label_selector
    assert selector is not None
    assert selector.match_labels == {"app": "web"}
    assert selector.match_expressions == [
        LabelSelectorRequirement(key="version", operator="In", values=["v2"])
    ]
    # matchLabelKeys itself stays, as the API server keeps it
    assert merged.spec.topology_spread_constraints[0].match_label_keys == ["version", "absent"]


def test_affinity_match_keys_become_in_and_mismatch_keys_not_in() -> None:
    merged = merge_label_keys(_pod({"version": "v1", "tenant": "t1"}, AFFINITY))
    anti = merged.spec.affinity.pod_anti_affinity  # type: ignore[union-attr]
    assert anti is not None
    selector = anti.required_during_scheduling_ignored_during_execution[0].label_selector
    assert selector is not None
    assert selector.match_expressions == [
        LabelSelectorRequirement(key="version", operator="In", values=["v1"]),
        LabelSelectorRequirement(key="tenant", operator="NotIn", values=["t1"]),
    ]
    # a term without labelSelector stays without one (it selects nothing either way)
    preferred = anti.preferred_during_scheduling_ignored_during_execution[0].pod_affinity_term
    assert preferred.label_selector is None


def test_a_pod_without_label_keys_is_returned_unchanged() -> None:
    p = _pod({"app": "web"}, {})
    assert merge_label_keys(p) is p


def test_simulator_admission_merges_only_pods_no_api_server_has_seen() -> None:
    fresh = _pod({"app": "web", "version": "v2"}, SPREAD)
    read_back = _pod({"app": "web", "version": "v2"}, SPREAD, uid="u-1", name="q")
    cluster = MemoryCluster(LoadedObjects(pods=[fresh, read_back]))
    by_name = {p.metadata.name: p for p in cluster.pods.values()}
    admitted = by_name["p"]
    selector = admitted.spec.topology_spread_constraints[0].label_selector
    assert selector is not None and len(selector.match_expressions) == 1
    # a pod with a uid came from an API server, which merged already: merging twice is what
    # "live mode does not merge twice" forbids
    kept = by_name["q"]
    selector = kept.spec.topology_spread_constraints[0].label_selector
    assert selector is not None and selector.match_expressions == []
