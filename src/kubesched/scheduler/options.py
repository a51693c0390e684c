"""What a Scheduler is configured with: its resolved profiles and the options of the whole run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["TIE_BREAKS", "TIE_BREAK_NODE_NAME", "TIE_BREAK_RANDOM", "ProfileSpec", "SchedulerOptions"]

#: Among nodes with the same best total score, kube-scheduler takes one uniformly at random (seeded here).
TIE_BREAK_RANDOM = "random"
#: The lowest node name instead: the rule of the FGD paper's simulator (Weng et al., ATC'23), which
#: changed kube-scheduler's selectHost so that its runs repeat; its published figures depend on it.
TIE_BREAK_NODE_NAME = "nodeName"
TIE_BREAKS = (TIE_BREAK_RANDOM, TIE_BREAK_NODE_NAME)


@dataclass(frozen=True, slots=True)
class ProfileSpec:
    """One resolved profile: plugins per extension point (name, weight) and their decoded args."""

    scheduler_name: str
    points: Mapping[str, Sequence[tuple[str, int]]]
    plugin_args: Mapping[str, Any]
    percentage_of_nodes_to_score: int | None = None


@dataclass(frozen=True, slots=True)
class SchedulerOptions:
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    seed: int = 0
    #: Keep per-node filter statuses and per-plugin scores of each attempt (simulate --explain).
    explain: bool = False
    #: How equal best scores are decided (TIE_BREAKS); not a kube-scheduler setting.
    tie_break: str = TIE_BREAK_RANDOM

    def __post_init__(self) -> None:
        if self.tie_break not in TIE_BREAKS:
            raise ValueError(f"tie_break must be one of {', '.join(TIE_BREAKS)}, not {self.tie_break!r}")
