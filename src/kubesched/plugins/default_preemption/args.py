"""DefaultPreemption's pluginConfig args (kind DefaultPreemptionArgs) and their validation."""

from __future__ import annotations

import msgspec

from kubesched.errors import InputError

__all__ = ["DefaultPreemptionArgs"]


class DefaultPreemptionArgs(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """pluginConfig args (kind DefaultPreemptionArgs): how many candidate nodes the dry run looks for.

    At least `max(numNodes * minCandidateNodesPercentage / 100, minCandidateNodesAbsolute)` nodes
    (capped at the number of potential nodes) are dry-run before picking one, so the choice is not
    just the first node where eviction helps, while a large cluster is not dry-run entirely.
    """

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    def validate(self) -> list[InputError]:
        """Field errors with paths relative to the args, in upstream's field-error wording."""
        pct, absolute = self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        errors: list[InputError] = []
        if not 0 <= pct <= 100:
            errors.append(
                InputError(
                    f"Invalid value: {pct}: not in valid range [0, 100]", path="minCandidateNodesPercentage"
                )
            )
        if absolute < 0:
            errors.append(
                InputError(
                    f"Invalid value: {absolute}: not in valid range [0, inf)",
                    path="minCandidateNodesAbsolute",
                )
            )
        if pct == 0 and absolute == 0:
            errors.append(
                InputError(
                    "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
                    path="minCandidateNodesPercentage",
                )
            )
            errors.append(
                InputError(
                    "Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage",
                    path="minCandidateNodesAbsolute",
                )
            )
        return errors
