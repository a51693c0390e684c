"""InterPodAffinity's pluginConfig args (kind InterPodAffinityArgs) and their validation."""

from __future__ import annotations

from typing import Final

import msgspec

from kubesched.errors import InputError

__all__ = ["MAX_HARD_POD_AFFINITY_WEIGHT", "MIN_HARD_POD_AFFINITY_WEIGHT", "InterPodAffinityArgs"]

MIN_HARD_POD_AFFINITY_WEIGHT: Final = 0
MAX_HARD_POD_AFFINITY_WEIGHT: Final = 100


class InterPodAffinityArgs(
    msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True, frozen=True
):
    """pluginConfig args (kind InterPodAffinityArgs).

    `hardPodAffinityWeight` is what a running pod's *required* affinity term matching the incoming
    pod adds to its domain's score (0 turns that off); `ignorePreferredTermsOfExistingPods` stops
    the running pods' preferred terms from scoring, which saves the scan when the incoming pod has
    no preferred terms of its own.
    """

    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False

    def validate(self) -> list[InputError]:
        w = self.hard_pod_affinity_weight
        if not MIN_HARD_POD_AFFINITY_WEIGHT <= w <= MAX_HARD_POD_AFFINITY_WEIGHT:
            return [
                InputError(
                    f"must be in the range [{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}],"
                    f" got {w}",
                    path="hardPodAffinityWeight",
                )
            ]
        return []
