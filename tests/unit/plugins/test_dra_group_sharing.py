"""A pending allocation shared by the members of one pod-group cycle stays pending until the last of
them lets go (upstream's in-flight sharers), or until the cluster shows the claim allocated."""

from __future__ import annotations

import msgspec

from kubesched.api.resource import AllocationResult, ResourceClaim
from kubesched.plugins.dynamic_resources.allocator_types import DeviceID
from kubesched.plugins.dynamic_resources.claims import ClaimLedger

ALLOCATION = msgspec.convert(
    {"devices": {"results": [{"request": "gpu", "driver": "d", "pool": "p", "device": "g0"}]}},
    AllocationResult,
)
G0 = DeviceID("d", "p", "g0")


def test_the_allocation_stays_pending_until_every_sharer_lets_go() -> None:
    ledger = ClaimLedger()
    ledger.add_pending("uid-c", "default/w0", ALLOCATION)
    ledger.share_pending("uid-c")  # w1 reuses it
    assert ledger.pending_allocation("uid-c") == ALLOCATION
    assert G0 in ledger.state.exclusive  # counted once, not per sharer
    assert ledger.drop_pending("uid-c") is False  # w1 unreserved: w0 still holds it
    assert G0 in ledger.state.exclusive
    assert ledger.drop_pending("uid-c") is True
    assert ledger.pending_allocation("uid-c") is None
    assert G0 not in ledger.state.exclusive


def test_sharing_nothing_pending_is_a_no_op() -> None:
    ledger = ClaimLedger()
    ledger.share_pending("uid-c")
    assert ledger.drop_pending("uid-c") is False
    assert ledger.pending_owner("uid-c") is None


def test_a_deleted_claim_frees_its_devices_when_the_event_carries_a_new_copy() -> None:
    """A live watch's DELETED event decodes the claim anew: not the object the ledger holds."""
    claim = msgspec.convert(
        {
            "metadata": {"name": "c", "namespace": "default", "uid": "uid-c"},
            "status": {"allocation": msgspec.to_builtins(ALLOCATION)},
        },
        ResourceClaim,
    )
    ledger = ClaimLedger()
    ledger.observe(None, claim)
    assert G0 in ledger.state.exclusive
    copy = msgspec.convert(msgspec.to_builtins(claim), ResourceClaim)
    assert copy is not claim
    ledger.observe(copy, None)
    assert G0 not in ledger.state.exclusive
    assert "default/c" not in ledger.by_key
