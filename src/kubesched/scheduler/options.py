"""What a Scheduler is configured with: its resolved profiles and the options of the whole run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ProfileSpec", "SchedulerOptions"]


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
