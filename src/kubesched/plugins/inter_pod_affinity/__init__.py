"""InterPodAffinity: place a pod relative to the pods already running, by topology domain.

A pod affinity term says "in the topology domain (`topologyKey` value) of the node, there is a pod
matching this selector in these namespaces"; anti-affinity says there is none. Filter enforces the
required terms of the incoming pod and the required anti-affinity terms of the pods already
running; Score adds up preferred terms (both directions) and the running pods' required affinity.

Everything is counted per topology domain once per cycle (PreFilter / PreScore), then each node is
judged by looking its domain up in those counts. The counts come from per-row tallies remembered
per NodeTable and brought up to date from its pod change log: the pods matching one of the
incoming pod's terms (identical terms of one workload share a compiled object, hence a tally), and
the running pods' own terms grouped by distinct term, so a cycle visits each distinct term once
rather than every running pod. The batch forms do the lookup as one numpy gather per topology key
over the NodeTable's interned label column, so the per-node cost is independent of how many pods
run in the cluster.

As upstream's `interpodaffinity` package: `args` (pluginConfig), `terms` (compiled terms),
`counting` (per-domain counts), `filtering`, `scoring` and `plugin`.
"""

from kubesched.plugins.inter_pod_affinity.args import InterPodAffinityArgs
from kubesched.plugins.inter_pod_affinity.filtering import (
    ERR_REASON_AFFINITY,
    ERR_REASON_ANTI_AFFINITY,
    ERR_REASON_EXISTING_ANTI_AFFINITY,
)
from kubesched.plugins.inter_pod_affinity.plugin import InterPodAffinity
from kubesched.plugins.inter_pod_affinity.terms import AffinityTerm, PodAffinityTerms, compile_pod_terms

__all__ = [
    "ERR_REASON_AFFINITY",
    "ERR_REASON_ANTI_AFFINITY",
    "ERR_REASON_EXISTING_ANTI_AFFINITY",
    "AffinityTerm",
    "InterPodAffinity",
    "InterPodAffinityArgs",
    "PodAffinityTerms",
    "compile_pod_terms",
]
