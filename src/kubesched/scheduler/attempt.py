"""What the Scheduler reports: the outcome of each attempt and each decision dropped before its
bind, and what a scheduling cycle hands its binding cycle."""

from __future__ import annotations

from dataclasses import dataclass, field

from kubesched.api.objects import Pod
from kubesched.framework.status import Status

__all__ = ["TOP_REASONS", "Abandoned", "Attempt", "ScheduleResult"]

#: Filter reasons an Attempt keeps for logs (the message has them all).
TOP_REASONS = 3


@dataclass(slots=True)
class Attempt:
    """The outcome of one scheduling attempt (or of its binding cycle), for reports and metrics."""

    pod: Pod
    profile: str
    result: str  # Scheduled | Unschedulable | Error | Waiting
    node: str | None = None
    message: str | None = None
    nominated_node: str | None = None
    filter: dict[str, Status] | None = None
    scores: dict[str, tuple[dict[str, int], int]] | None = None
    #: The PreFilter rejection that ended this attempt before any node was filtered.
    pre_filter: Status | None = None
    #: What the PostFilter plugins (preemption) said when no node fit; "" when they did not run.
    post_filter: str = ""
    duration: float = 0.0
    #: Scheduling attempts of the pod so far, this one included.
    attempts: int = 0
    #: When no node fit: the most frequent filter reasons and their node counts, most first.
    reasons: list[tuple[str, int]] = field(default_factory=list)
    #: Nodes evaluated and found feasible by this attempt's filters (0 when unknown).
    evaluated: int = 0
    feasible: int = 0
    #: For an Error: the exception (a plugin's own is its `__cause__`), for tracebacks on request.
    error: BaseException | None = None
    #: Pods evicted by this attempt's PostFilter (preemption), as `namespace/name`.
    victims: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Abandoned:
    """A decision dropped just before its bind was sent; the pod went back to activeQ if still pending.

    `reason`: `NodeGone` (the node left the cache), `NoLongerFits` (a re-run of the cheap filters
    failed), `PodGone` (deleted or bound by someone else meanwhile) or `Refused` (this scheduler may
    not bind now: it lost its Lease or is shutting down).
    """

    pod: Pod
    profile: str
    node: str
    reason: str
    message: str


@dataclass(slots=True)
class ScheduleResult:
    """The node a scheduling cycle chose, with what its Attempt reports once the pod is bound."""

    node: str
    evaluated: int
    feasible: int
    scores: dict[str, tuple[dict[str, int], int]] | None = None
    filter: dict[str, Status] | None = None
