"""What the live scheduling loop reports: each attempt as flat fields for a log line, and the
metrics it feeds (`LiveMetrics`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kubesched.scheduler.scheduler import Attempt

__all__ = ["LiveMetrics", "attempt_fields"]


def attempt_fields(attempt: Attempt) -> dict[str, object]:
    """What one scheduling attempt decided, as flat fields for a log line: pod, profile, result,
    the node or the top reasons, how long it took and how many attempts the pod has had."""
    fields: dict[str, object] = {
        "pod": attempt.pod.key,
        "profile": attempt.profile,
        "result": attempt.result,
    }
    if attempt.node and attempt.result in ("Scheduled", "Waiting"):
        fields["node"] = attempt.node
        if attempt.feasible:
            fields["feasibleNodes"] = attempt.feasible
            fields["evaluatedNodes"] = attempt.evaluated
    elif attempt.pre_filter is not None:
        fields["reasons"] = f"PreFilter {attempt.pre_filter.plugin}: {attempt.pre_filter.message()}"
    elif attempt.reasons:
        fields["reasons"] = "; ".join(f"{count} {reason}" for reason, count in attempt.reasons)
    elif attempt.message:
        fields["reasons"] = attempt.message
    if attempt.victims:
        fields["victims"] = ",".join(attempt.victims)
    if attempt.nominated_node and attempt.result != "Scheduled":
        fields["nominatedNode"] = attempt.nominated_node
    fields["durationMs"] = round(attempt.duration * 1000, 3)
    fields["attempts"] = attempt.attempts
    return fields


class LiveMetrics(Protocol):
    """What the loop reports (implemented by `kubesched.metrics.SchedulerMetrics`, which sits above
    this layer and is therefore not imported here)."""

    def observe_attempt(self, result: str, profile: str, duration: float) -> None: ...

    def observe_preemption_attempt(self) -> None: ...

    def set_pending(self, counts: Mapping[str, int]) -> None: ...

    def set_cache_size(self, nodes: int, pods: int, assumed: int) -> None: ...

    def sync_incoming(self, incoming: Mapping[tuple[str, str], int]) -> None: ...

    def sync_dropped(self, dropped: Mapping[str, int]) -> None: ...

    def instrument(self, plugins: Mapping[str, Any]) -> int: ...

    def observe_abandoned_bind(self, reason: str, profile: str) -> None: ...

    def observe_batch_attempt(self, profile: str, result: str) -> None: ...

    def observe_batch_flush(self, profile: str, reason: str) -> None: ...

    def observe_node_hint(self, profile: str, hinted: bool, seconds: float) -> None: ...

    def observe_store_results(self, profile: str, seconds: float) -> None: ...

    def observe_rescore(self, profile: str, seconds: float) -> None: ...
