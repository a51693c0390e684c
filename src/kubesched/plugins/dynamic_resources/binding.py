"""Binding conditions: whether an allocated claim's devices are ready, failed or timed out, and
PreBind's wait for them; plus the write of the scheduler-made extended-resource claim.

Separate because it is PreBind's cluster-facing half (writes, polling, wall-clock timeouts), kept
apart from the decisions (upstream: `bindClaim`, `isClaimReadyForBinding`, `isClaimTimeout`).
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Mapping

from kubesched.api.objects import Pod, PodExtendedResourceClaimStatus
from kubesched.api.resource import AllocationResult, ResourceClaim
from kubesched.framework.status import Status
from kubesched.plugins.dynamic_resources.claims import ClaimLedger
from kubesched.plugins.dynamic_resources.extended_claim import ExtendedClaim
from kubesched.plugins.dynamic_resources.writer import ResourceClaimWriter

__all__ = [
    "BINDING_POLL_SECONDS",
    "bind_extended_claim",
    "binding_failed",
    "binding_state",
    "wait_for_binding_conditions",
]

#: How often PreBind looks at binding conditions (upstream polls every 5 s).
BINDING_POLL_SECONDS = 5.0


def bind_extended_claim(
    ledger: ClaimLedger,
    ext: ExtendedClaim,
    claim: ResourceClaim,
    allocation: AllocationResult | None,
    pod: Pod,
    writer: ResourceClaimWriter,
) -> ResourceClaim:
    """Create the extended-resource claim, store its allocation, and tell the pod which request
    serves which container (upstream `bindClaim` for the special claim)."""
    created = writer.create_claim(claim)
    ext.created = created
    ledger.rename_pending(claim.metadata.uid, created.metadata.uid)
    stored = writer.write_claim_allocation(created, allocation, pod)
    if not ext.mappings:
        raise RuntimeError(
            f"nil or empty request mappings, no update of pod {pod.key} ExtendedResourceClaimStatus"
        )
    writer.write_extended_resource_claim_status(
        pod,
        PodExtendedResourceClaimStatus(
            request_mappings=ext.mappings, resource_claim_name=created.metadata.name
        ),
    )
    return stored


def wait_for_binding_conditions(
    claims: list[ResourceClaim],
    current_claims: Callable[[], Mapping[str, ResourceClaim]],
    writer: ResourceClaimWriter,
    timeout: float,
) -> Status | None:
    """Poll the claims until every device's binding conditions are True (or one failure condition is)."""
    deadline = time.monotonic() + timeout
    keys = [c.key for c in claims]
    while True:
        current = current_claims()
        pending = False
        for key in keys:
            claim = current.get(key)
            if claim is None:
                return Status.as_error(f"claim {key} got deleted in the meantime")
            verdict = binding_state(claim)
            if verdict is not None and verdict.startswith("failed:"):
                return Status.as_error(f"claim {key} binding failed: {verdict.removeprefix('failed:')}")
            if verdict == "pending":
                pending = True
        if not pending:
            return None
        if time.monotonic() >= deadline:
            return Status.as_error("device binding timeout")
        writer.pause(min(BINDING_POLL_SECONDS, max(deadline - time.monotonic(), 0.0)))


def binding_failed(claim: ResourceClaim, timeout: float) -> bool:
    """A binding failure condition is True, or the binding conditions are not all True
    `timeout` (bindingTimeout) after `allocationTimestamp` (upstream `isClaimReadyForBinding` /
    `isClaimTimeout`, as Filter applies them)."""
    verdict = binding_state(claim)
    if verdict is None:
        return False
    if verdict.startswith("failed:"):
        return True
    allocation = claim.status.allocation
    stamp = allocation.allocation_timestamp if allocation is not None else None
    if not stamp:
        return False
    try:
        allocated_at = datetime.datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return False
    return allocated_at + timeout < time.time()  # wall clock, as the timestamp


def binding_state(claim: ResourceClaim) -> str | None:
    """None: nothing to wait for; "pending"; or "failed:reason=..., message=..."."""
    allocation = claim.status.allocation
    if allocation is None:
        return None
    devices = {(d.driver, d.pool, d.device): d for d in claim.status.devices}
    waiting = False
    for r in allocation.devices.results:
        if not r.binding_conditions:
            continue
        status = devices.get((r.driver, r.pool, r.device))
        conditions = {c.type: c for c in status.conditions} if status is not None else {}
        for name in r.binding_failure_conditions:
            cond = conditions.get(name)
            if cond is not None and cond.status == "True":
                return f'failed:reason={cond.reason}, message="{cond.message}"'
        if not all(
            conditions.get(n) is not None and conditions[n].status == "True" for n in r.binding_conditions
        ):
            waiting = True
    return "pending" if waiting else None
