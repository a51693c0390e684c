"""The structured allocator, table by table: upstream's order of search and its rules of eligibility."""

from __future__ import annotations

from typing import Any

import pytest
from dra_fixtures import (
    DRIVER,
    claim,
    device,
    device_class,
    exactly,
    first_available,
    gpu,
    node,
    slice_,
    sub,
)

from kubesched.api.resource import ResourceClaim
from kubesched.plugins.dynamic_resources.allocator import Allocator
from kubesched.plugins.dynamic_resources.allocator_types import AllocatedState, AllocationError, DeviceID
from kubesched.plugins.dynamic_resources.pools import SliceIndex

CLASSES = {DRIVER: device_class()}


def run(
    slices: list[Any],
    claims: list[ResourceClaim],
    *,
    on: str = "n1",
    labels: dict[str, str] | None = None,
    in_use: set[DeviceID] | None = None,
    classes: dict[str, Any] | None = None,
    consumed: dict[DeviceID, dict[str, int]] | None = None,
) -> list[list[tuple[str, str, str]]] | None:
    """Devices per claim as (request, pool, device), or None when the claims do not fit."""
    allocator = Allocator(
        SliceIndex(slices),
        classes if classes is not None else CLASSES,
        AllocatedState(exclusive=set(in_use or ()), consumed=dict(consumed or {})),
    )
    results = allocator.allocate(node(on, labels), claims)
    if results is None:
        return None
    return [[(r.request, r.pool, r.device) for r in res.devices.results] for res in results]


def ids(*names: str, pool: str = "n1") -> set[DeviceID]:
    return {DeviceID(DRIVER, pool, n) for n in names}


TWO_GPUS = [slice_("n1-gpus", [gpu("gpu-0"), gpu("gpu-1")], node="n1")]


@pytest.mark.parametrize(
    ("slices", "claims", "in_use", "expected"),
    [
        pytest.param(
            TWO_GPUS, [claim("c", [exactly()])], None, [[("gpu", "n1", "gpu-0")]], id="first-device-wins"
        ),
        pytest.param(
            TWO_GPUS, [claim("c", [exactly()])], ids("gpu-0"), [[("gpu", "n1", "gpu-1")]], id="in-use-skipped"
        ),
        pytest.param(TWO_GPUS, [claim("c", [exactly(count=3)])], None, None, id="not-enough"),
        pytest.param(
            TWO_GPUS,
            [claim("a", [exactly()]), claim("b", [exactly()])],
            None,
            [[("gpu", "n1", "gpu-0")], [("gpu", "n1", "gpu-1")]],
            id="claims-in-order",
        ),
        pytest.param(
            [
                slice_("z", [gpu("z-0")], node="n1", pool="zeta"),
                slice_("a", [gpu("a-0")], node="n1", pool="alpha"),
            ],
            [claim("c", [exactly()])],
            None,
            [[("gpu", "alpha", "a-0")]],
            id="pools-sorted-by-name",
        ),
        pytest.param(
            [slice_("other-node", [gpu("gpu-0")], node="n2")],
            [claim("c", [exactly()])],
            None,
            None,
            id="slice-of-another-node",
        ),
        pytest.param(
            [slice_("net", [gpu("gpu-0")], pool="net", allNodes=True)],
            [claim("c", [exactly()])],
            None,
            [[("gpu", "net", "gpu-0")]],
            id="all-nodes",
        ),
        pytest.param(
            [
                slice_("old", [gpu("old-0")], node="n1", pool="p", generation=1),
                slice_("new", [gpu("new-0")], node="n1", pool="p", generation=2),
            ],
            [claim("c", [exactly()])],
            None,
            [[("gpu", "p", "new-0")]],
            id="newest-generation-wins",
        ),
        pytest.param(
            [slice_("half", [gpu("gpu-0")], node="n1", count=2)],
            [claim("c", [exactly()])],
            None,
            [[("gpu", "n1", "gpu-0")]],
            id="incomplete-pool-still-serves-exact-count",
        ),
        pytest.param(
            [slice_("s", [gpu("gpu-0", model="h100"), gpu("gpu-1", model="a100")], node="n1")],
            [
                claim(
                    "c",
                    [
                        exactly(
                            selectors=[
                                {
                                    "cel": {
                                        "expression": 'device.attributes["gpu.example.com"].model == "a100"'
                                    }
                                }
                            ]
                        )
                    ],
                )
            ],
            None,
            [[("gpu", "n1", "gpu-1")]],
            id="request-selector",
        ),
    ],
)
def test_exact_count(slices: Any, claims: Any, in_use: Any, expected: Any) -> None:
    assert run(slices, claims, in_use=in_use) == expected


def test_first_available_takes_the_first_subrequest_that_fits() -> None:
    c = claim("c", [first_available("gpu", sub("two", count=2), sub("one", count=1))])
    assert run(TWO_GPUS, [c]) == [[("gpu/two", "n1", "gpu-0"), ("gpu/two", "n1", "gpu-1")]]
    assert run(TWO_GPUS, [c], in_use=ids("gpu-0")) == [[("gpu/one", "n1", "gpu-1")]]


def test_all_mode_takes_every_matching_device() -> None:
    c = claim("c", [exactly(allocationMode="All")])
    assert run(TWO_GPUS, [c]) == [[("gpu", "n1", "gpu-0"), ("gpu", "n1", "gpu-1")]]
    assert run(TWO_GPUS, [c], in_use=ids("gpu-1")) is None


def test_all_mode_over_a_pool_being_updated_is_an_error() -> None:
    slices = [slice_("half", [gpu("gpu-0")], node="n1", count=2)]
    with pytest.raises(AllocationError) as err:
        run(slices, [claim("c", [exactly(allocationMode="All")])])
    assert str(err.value) == (
        "claim default/c, request gpu: asks for all devices, but resource pool gpu.example.com/n1 "
        "is currently being updated"
    )


def test_match_attribute_keeps_devices_alike() -> None:
    slices = [
        slice_("s", [gpu("g0", model="h100"), gpu("g1", model="a100"), gpu("g2", model="a100")], node="n1")
    ]
    c = claim("c", [exactly(count=2)], constraints=[{"matchAttribute": "gpu.example.com/model"}])
    assert run(slices, [c]) == [[("gpu", "n1", "g1"), ("gpu", "n1", "g2")]]


def test_distinct_attribute_keeps_devices_apart() -> None:
    slices = [
        slice_("s", [gpu("g0", model="a100"), gpu("g1", model="a100"), gpu("g2", model="h100")], node="n1")
    ]
    c = claim("c", [exactly(count=2)], constraints=[{"distinctAttribute": "gpu.example.com/model"}])
    assert run(slices, [c]) == [[("gpu", "n1", "g0"), ("gpu", "n1", "g2")]]


def test_admin_access_ignores_other_claims_usage() -> None:
    result = Allocator(
        SliceIndex(TWO_GPUS), CLASSES, AllocatedState(exclusive=ids("gpu-0", "gpu-1"))
    ).allocate(node("n1"), [claim("c", [exactly(adminAccess=True)])])
    assert result is not None
    assert result[0].devices.results[0].device == "gpu-0"
    assert result[0].devices.results[0].admin_access is True


@pytest.mark.parametrize(
    ("taint", "tolerations", "expected"),
    [
        ({"key": "k", "effect": "NoSchedule"}, [], "g1"),
        ({"key": "k", "effect": "NoExecute"}, [], "g1"),
        ({"key": "k", "effect": "None"}, [], "g0"),
        (
            {"key": "k", "value": "v", "effect": "NoSchedule"},
            [{"key": "k", "operator": "Equal", "value": "v"}],
            "g0",
        ),
        ({"key": "k", "effect": "NoSchedule"}, [{"operator": "Exists"}], "g0"),
        (
            {"key": "k", "effect": "NoSchedule"},
            [{"key": "k", "operator": "Exists", "effect": "NoExecute"}],
            "g1",
        ),
    ],
)
def test_device_taints(taint: dict[str, str], tolerations: list[dict[str, str]], expected: str) -> None:
    slices = [slice_("s", [gpu("g0", taints=[taint]), gpu("g1")], node="n1")]
    result = run(slices, [claim("c", [exactly(tolerations=tolerations)])])
    assert result == [[("gpu", "n1", expected)]]


def test_partitionable_devices_share_counters() -> None:
    counters = [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]

    def part(name: str, memory: str) -> dict[str, Any]:
        return device(
            name, consumesCounters=[{"counterSet": "gpu-0", "counters": {"memory": {"value": memory}}}]
        )

    slices = [
        slice_(
            "s",
            [part("whole", "40Gi"), part("half-a", "20Gi"), part("half-b", "20Gi")],
            node="n1",
            sharedCounters=counters,
        )
    ]
    assert run(slices, [claim("c", [exactly(count=2)])]) == [
        [("gpu", "n1", "half-a"), ("gpu", "n1", "half-b")]
    ]
    assert run(slices, [claim("c", [exactly()])], in_use=ids("half-a")) == [[("gpu", "n1", "half-b")]]
    assert run(slices, [claim("c", [exactly(count=2)])], in_use=ids("half-a")) is None
    assert run(slices, [claim("c", [exactly()])], in_use=ids("whole")) is None


def test_consumable_capacity_shares_a_device() -> None:
    shared = device("nic", allowMultipleAllocations=True, capacity={"bandwidth": {"value": "10G"}})
    slices = [slice_("s", [shared], node="n1")]
    c = claim("c", [exactly(capacity={"requests": {"bandwidth": "4G"}})])
    result = Allocator(SliceIndex(slices), CLASSES, AllocatedState()).allocate(node("n1"), [c])
    assert result is not None
    r = result[0].devices.results[0]
    assert r.share_id and r.consumed_capacity == {"bandwidth": "4G"}
    nic = DeviceID(DRIVER, "n1", "nic")
    assert run(slices, [c], consumed={nic: {"bandwidth": 6 * 10**18}}) == [[("gpu", "n1", "nic")]]
    assert run(slices, [c], consumed={nic: {"bandwidth": 7 * 10**18}}) is None
    # One request takes a device once (v1.37.2 tries sets of devices, each device after the one
    # before it), even a shared one with room for both; two requests may share it.
    two = claim("c", [exactly(count=2, capacity={"requests": {"bandwidth": "5G"}})])
    assert run(slices, [two]) is None
    half = {"capacity": {"requests": {"bandwidth": "5G"}}}
    pair = claim("c", [exactly(name="a", **half), exactly(name="b", **half)])
    assert run(slices, [pair]) == [[("a", "n1", "nic"), ("b", "n1", "nic")]]


def test_node_selector_of_the_result() -> None:
    local = Allocator(SliceIndex(TWO_GPUS), CLASSES, AllocatedState()).allocate(
        node("n1"), [claim("c", [exactly()])]
    )
    assert local is not None and local[0].node_selector is not None
    assert local[0].node_selector.node_selector_terms[0].match_fields[0].values == ["n1"]
    everywhere = [slice_("net", [gpu("g0")], pool="net", allNodes=True)]
    anywhere = Allocator(SliceIndex(everywhere), CLASSES, AllocatedState()).allocate(
        node("n1"), [claim("c", [exactly()])]
    )
    assert anywhere is not None and anywhere[0].node_selector is None
    rack = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]
    }
    racked = [slice_("rack", [gpu("g0")], pool="rack", nodeSelector=rack)]
    assert run(racked, [claim("c", [exactly()])], labels={"rack": "r2"}) is None
    result = Allocator(SliceIndex(racked), CLASSES, AllocatedState()).allocate(
        node("n1", {"rack": "r1"}), [claim("c", [exactly()])]
    )
    assert result is not None and result[0].node_selector is not None
    assert result[0].node_selector.node_selector_terms[0].match_expressions[0].key == "rack"


def test_per_device_node_selection() -> None:
    slices = [
        slice_(
            "s", [gpu("g0", nodeName="n2"), gpu("g1", nodeName="n1")], pool="p", perDeviceNodeSelection=True
        )
    ]
    assert run(slices, [claim("c", [exactly()])]) == [[("gpu", "p", "g1")]]


def test_missing_class_is_an_error() -> None:
    with pytest.raises(AllocationError) as err:
        run(TWO_GPUS, [claim("c", [exactly(cls="nope")])])
    assert str(err.value) == (
        "claim default/c, request gpu: could not retrieve device class nope: "
        'deviceclass.resource.k8s.io "nope" not found'
    )


def test_cel_runtime_error_names_class_and_selector() -> None:
    classes = {DRIVER: device_class(expression='device.attributes["gpu.example.com"].memory > 1')}
    with pytest.raises(AllocationError) as err:
        run(TWO_GPUS, [claim("c", [exactly()])], classes=classes)
    assert str(err.value).startswith(
        "class gpu.example.com: selector #0: CEL runtime error: no such key: memory."
    )


def test_cel_compile_error_names_claim() -> None:
    c = claim("c", [exactly(selectors=[{"cel": {"expression": "device.driver =="}}])])
    with pytest.raises(
        AllocationError, match=r"^claim default/c: selector #0: CEL compile error: compilation failed"
    ):
        run(TWO_GPUS, [c])


def test_too_many_devices_in_one_claim() -> None:
    with pytest.raises(AllocationError, match="number of requested devices 33 exceeds the claim limit of 32"):
        run(TWO_GPUS, [claim("c", [exactly(count=33)])])


def test_binding_conditions_pools_go_last_and_are_copied() -> None:
    slices = [
        slice_(
            "a",
            [gpu("bc", bindingConditions=["Ready"], bindingFailureConditions=["Failed"])],
            node="n1",
            pool="a",
        ),
        slice_("b", [gpu("plain")], node="n1", pool="b"),
    ]
    assert run(slices, [claim("c", [exactly()])]) == [[("gpu", "b", "plain")]]
    result = Allocator(
        SliceIndex(slices), CLASSES, AllocatedState(exclusive={DeviceID(DRIVER, "b", "plain")})
    ).allocate(node("n1"), [claim("c", [exactly()])])
    assert result is not None
    r = result[0].devices.results[0]
    assert (r.device, r.binding_conditions, r.binding_failure_conditions) == ("bc", ["Ready"], ["Failed"])


def test_config_from_class_and_claim() -> None:
    opaque = {"opaque": {"driver": DRIVER, "parameters": {"mode": "x"}}}
    classes = {DRIVER: device_class(config=[opaque])}
    c = claim("c", [exactly("a"), exactly("b")], config=[{"requests": ["b"], **opaque}, opaque])
    result = Allocator(SliceIndex(TWO_GPUS), classes, AllocatedState()).allocate(node("n1"), [c])
    assert result is not None
    cfg = [(x.source, x.requests) for x in result[0].devices.config]
    assert cfg == [("FromClass", ["a", "b"]), ("FromClaim", ["b"]), ("FromClaim", [])]


@pytest.mark.parametrize(
    "consumes",
    [
        {"counterSet": "gpu-0", "counters": {"memory": {"value": "41Gi"}}},  # more than the set holds
        {"counterSet": "no-such-set", "counters": {"memory": {"value": "1Gi"}}},
        {"counterSet": "gpu-0", "counters": {"no-such-counter": {"value": "1"}}},
    ],
)
def test_impossible_counters_make_a_device_unallocatable(consumes: dict[str, Any]) -> None:
    counters = [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]
    slices = [slice_("s", [device("d", consumesCounters=[consumes])], node="n1", sharedCounters=counters)]
    assert run(slices, [claim("c", [exactly()])]) is None


def test_device_table_maps_the_rows_of_each_new_node_table() -> None:
    # Snapshots are new tables; a freed one's id is often reused by the next, whose rows may differ.
    from kubesched.framework.node_info import NodeInfo
    from kubesched.framework.node_table import NodeTable
    from kubesched.plugins.dynamic_resources.device_table import DeviceTable
    from kubesched.plugins.dynamic_resources.match_cache import MatchCache

    slices = [slice_(f"{n}-gpus", [gpu("gpu-0")], node=n) for n in ("n1", "n2")]
    table = DeviceTable(SliceIndex(slices), MatchCache())
    for order in (["n1", "n2"], ["n2", "n1"], ["n1", "n2"], ["n2", "n1"]):
        rows = table.rows_to_nodes(NodeTable([NodeInfo(node(n)) for n in order]))
        assert [table.nodes[i] for i in rows] == order
