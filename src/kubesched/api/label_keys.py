"""`matchLabelKeys` / `mismatchLabelKeys` merged into label selectors, as kube-apiserver does at pod creation.

Since v1.34 (topology spread, `MatchLabelKeysInPodTopologySpreadSelectorMerge`) and v1.33 (pod
affinity, KEP-3633) the API server's pod strategy appends, for every listed key the new pod
carries, `key In (value)` (`mismatchLabelKeys`: `key NotIn (value)`) to the term's or constraint's
`labelSelector.matchExpressions`. A term without `labelSelector` is left alone (it selects nothing
either way). A pod read back from an API server therefore already holds the merged selector;
only a pod that never went through one (a hand-written manifest given to the simulator) needs this.

What the v1.37.2 scheduler does afterwards differs per plugin (checked on the binary): the
PodTopologySpread plugin merges the pod's *current* values once more, InterPodAffinity never
merges. Both plugins keep that behaviour; this module is only the API server's part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from kubesched.api.meta import LabelSelector, LabelSelectorRequirement
from kubesched.api.objects import Pod, PodAffinity, PodAffinityTerm, TopologySpreadConstraint

__all__ = ["merge_label_keys", "selector_with_label_keys"]


def selector_with_label_keys(
    selector: LabelSelector | None,
    labels: Mapping[str, str],
    match_keys: Sequence[str] = (),
    mismatch_keys: Sequence[str] = (),
) -> LabelSelector | None:
    """`selector` with `key In/NotIn (labels[key])` appended for every listed key `labels` has."""
    if selector is None:
        return None
    added = [
        LabelSelectorRequirement(key=key, operator=operator, values=[labels[key]])
        for keys, operator in ((match_keys, "In"), (mismatch_keys, "NotIn"))
        for key in keys
        if key in labels
    ]
    if not added:
        return selector
    return msgspec.structs.replace(selector, match_expressions=[*selector.match_expressions, *added])


def _term(term: PodAffinityTerm, labels: Mapping[str, str]) -> PodAffinityTerm:
    if not (term.match_label_keys or term.mismatch_label_keys):
        return term
    merged = selector_with_label_keys(
        term.label_selector, labels, term.match_label_keys, term.mismatch_label_keys
    )
    return term if merged is term.label_selector else msgspec.structs.replace(term, label_selector=merged)


def _affinity(block: PodAffinity | None, labels: Mapping[str, str]) -> PodAffinity | None:
    if block is None:
        return None
    required = [_term(t, labels) for t in block.required_during_scheduling_ignored_during_execution]
    preferred = [
        msgspec.structs.replace(w, pod_affinity_term=_term(w.pod_affinity_term, labels))
        for w in block.preferred_during_scheduling_ignored_during_execution
    ]
    return msgspec.structs.replace(
        block,
        required_during_scheduling_ignored_during_execution=required,
        preferred_during_scheduling_ignored_during_execution=preferred,
    )


def _constraint(c: TopologySpreadConstraint, labels: Mapping[str, str]) -> TopologySpreadConstraint:
    if not c.match_label_keys:
        return c
    merged = selector_with_label_keys(c.label_selector, labels, c.match_label_keys)
    return c if merged is c.label_selector else msgspec.structs.replace(c, label_selector=merged)


def _uses_label_keys(pod: Pod) -> bool:
    spec = pod.spec
    if any(c.match_label_keys for c in spec.topology_spread_constraints):
        return True
    affinity = spec.affinity
    if affinity is None:
        return False
    for block in (affinity.pod_affinity, affinity.pod_anti_affinity):
        if block is None:
            continue
        terms = [
            *block.required_during_scheduling_ignored_during_execution,
            *(w.pod_affinity_term for w in block.preferred_during_scheduling_ignored_during_execution),
        ]
        if any(t.match_label_keys or t.mismatch_label_keys for t in terms):
            return True
    return False


def merge_label_keys(pod: Pod) -> Pod:
    """The pod as the API server stores it on creation: label keys merged into its selectors."""
    if not _uses_label_keys(pod):
        return pod
    labels = pod.metadata.labels
    spec = pod.spec
    constraints = [_constraint(c, labels) for c in spec.topology_spread_constraints]
    affinity = spec.affinity
    if affinity is not None:
        affinity = msgspec.structs.replace(
            affinity,
            pod_affinity=_affinity(affinity.pod_affinity, labels),
            pod_anti_affinity=_affinity(affinity.pod_anti_affinity, labels),
        )
    spec = msgspec.structs.replace(spec, topology_spread_constraints=constraints, affinity=affinity)
    return msgspec.structs.replace(pod, spec=spec)
