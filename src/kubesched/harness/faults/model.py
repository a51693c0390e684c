"""What a fault scenario is given (Scale) and what it comes to (Figures)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Figures", "Scale"]


@dataclass(frozen=True)
class Scale:
    """How big a scenario is and how fast leases turn over."""

    nodes: int = 50
    pods: int = 300
    qps: int = 50
    burst: int = 100
    lease: tuple[int, int, int] = (4, 3, 1)  # leaseDuration, renewDeadline, retryPeriod (s)
    settle_timeout: float = 120.0


@dataclass
class Figures:
    """What one scenario run came to (see the package docstring)."""

    scenario: str
    flavour: str
    double_binds: int = 0
    lost_pods: int = 0
    binds_after_loss: int = 0
    binds_to_deleted_nodes: int = 0
    overfilled_nodes: int = 0
    duplicate_scheduled_events: int = 0
    bound_without_event: int = 0
    events_lost_with_process: int = 0
    #: The first few `bound_without_event` pods: who bound them, and when, against any death.
    without_event: list[str] = field(default_factory=list)
    #: Leader lost (killed or paused) -> the standby's first Binding, and Lease acquired -> that
    #: Binding: the lease's own wait, then how hot the standby was.
    takeover_seconds: float | None = None
    acquired_to_first_bind_seconds: float | None = None
    exit_code: int | None = None
    exit_seconds: float | None = None
    peak_rss_mib: float = 0.0
    bound: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
