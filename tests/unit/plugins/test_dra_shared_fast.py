"""The shared-capacity filter gives the allocator's verdict: checked against the allocator on random
clusters of shared GPUs, and shown to step aside where it cannot speak for a node."""

from __future__ import annotations

import random

import pytest
from dra_fixtures import DRIVER, claim, device_class, exactly, gpu, node, slice_

from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import NodeTable
from kubesched.plugins.dynamic_resources.allocator import Allocator
from kubesched.plugins.dynamic_resources.allocator_types import DeviceID
from kubesched.plugins.dynamic_resources.claims import ClaimLedger
from kubesched.plugins.dynamic_resources.match_cache import MatchCache
from kubesched.plugins.dynamic_resources.pools import SliceIndex
from kubesched.plugins.dynamic_resources.shared_fast import SharedIndex, shared_request

CLASSES = {DRIVER: device_class()}
NANO = 10**9


def shared_gpu(name: str, model: str = "a100", share: str = "1000") -> dict[str, object]:
    return gpu(name, model, allowMultipleAllocations=True, capacity={"share": {"value": share}})


@pytest.mark.parametrize("seed", range(40))
def test_the_verdict_is_the_allocators(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(rng.randint(1, 4))]
    slices = []
    ledger = ClaimLedger()
    for n in names:
        devices = [shared_gpu(f"g{j}", rng.choice(["a100", "t4"])) for j in range(rng.randint(1, 4))]
        slices.append(slice_(f"{n}-s", devices, node=n))
        for d in devices:
            used = rng.choice([0, 0, 300, 500, 1000]) * NANO
            if used:
                ledger.state.consumed[DeviceID(DRIVER, n, str(d["name"]))] = {"share": used}
    fields: dict[str, object] = {}
    if rng.random() < 0.7:
        fields["capacity"] = {"requests": {"share": str(rng.choice([100, 250, 500, 700, 1000]))}}
    else:
        fields["count"] = rng.randint(1, 3)
    if rng.random() < 0.4:
        fields["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "t4"'}}]
    c = claim("c", [exactly(**fields)])
    request = shared_request([c], CLASSES)
    assert request is not None
    index = SliceIndex(slices)
    shared = SharedIndex(index, MatchCache())
    shared.sync(ledger)
    table = NodeTable([NodeInfo(node(n)) for n in [*names, "bare"]])
    handled, fits = shared.decide(request, table.all())
    assert handled.all()
    allocator = Allocator(index, CLASSES, ledger.state)
    expected = [allocator.allocate(node(n), [c]) is not None for n in [*names, "bare"]]
    assert fits.tolist() == expected


def test_it_replays_the_ledgers_changes() -> None:
    slices = [slice_("s", [shared_gpu("g0")], node="n1")]
    ledger = ClaimLedger()
    shared = SharedIndex(SliceIndex(slices), MatchCache())
    request = shared_request([claim("c", [exactly(capacity={"requests": {"share": "600"}})])], CLASSES)
    assert request is not None
    table = NodeTable([NodeInfo(node("n1"))])
    shared.sync(ledger)
    assert shared.decide(request, table.all())[1].tolist() == [True]
    taken = claim("t", [exactly(capacity={"requests": {"share": "500"}})])
    result = Allocator(SliceIndex(slices), CLASSES, ledger.state).allocate(node("n1"), [taken])
    assert result is not None
    ledger.add_pending("uid-t", "default/p", result[0])
    shared.sync(ledger)
    assert shared.decide(request, table.all())[1].tolist() == [False]
    ledger.drop_pending("uid-t")
    shared.sync(ledger)
    assert shared.decide(request, table.all())[1].tolist() == [True]


def test_it_steps_aside_where_it_cannot_speak() -> None:
    plain = slice_("plain", [gpu("g0")], node="n1")  # not shared: the device table's case
    policy = slice_(
        "policy",
        [
            gpu(
                "g0",
                allowMultipleAllocations=True,
                capacity={"share": {"value": "1000", "requestPolicy": {"default": "100"}}},
            )
        ],
        node="n2",
    )
    two_caps = slice_(
        "two",
        [gpu("g0", allowMultipleAllocations=True, capacity={"share": {"value": "1"}, "mem": {"value": "1"}})],
        node="n3",
    )
    ok = slice_("ok", [shared_gpu("g0")], node="n4")
    shared = SharedIndex(SliceIndex([plain, policy, two_caps, ok]), MatchCache())
    shared.sync(ClaimLedger())
    request = shared_request([claim("c", [exactly()])], CLASSES)
    assert request is not None
    table = NodeTable([NodeInfo(node(n)) for n in ("n1", "n2", "n3", "n4")])
    handled, fits = shared.decide(request, table.all())
    assert handled.tolist() == [False, False, False, True] and fits.tolist() == [False, False, False, True]


def test_only_one_plain_request_is_its_case() -> None:
    assert shared_request([claim("a", [exactly()]), claim("b", [exactly()])], CLASSES) is None
    assert shared_request([claim("a", [exactly(), exactly("g2")])], CLASSES) is None
    assert shared_request([claim("a", [exactly(adminAccess=True)])], CLASSES) is None
    assert shared_request([claim("a", [exactly(allocationMode="All")])], CLASSES) is None
    assert shared_request([claim("a", [exactly(cls="missing")])], CLASSES) is None
    two = claim("a", [exactly(capacity={"requests": {"share": "1", "mem": "1"}})])
    assert shared_request([two], CLASSES) is None
    # two shares: whether one request may take the same device twice is the allocator's to say
    assert (
        shared_request([claim("a", [exactly(count=2, capacity={"requests": {"share": "250"}})])], CLASSES)
        is None
    )
    found = shared_request([claim("a", [exactly(capacity={"requests": {"share": "250"}})])], CLASSES)
    assert found is not None and found.count == 1 and found.capacity == ("share", 250 * NANO)
    assert shared_request([claim("a", [exactly(count=3)])], CLASSES) is not None
