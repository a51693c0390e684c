"""Taints and tolerations: ToleratesTaint semantics, numeric operators, first untolerated taint."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.objects import Taint, Toleration
from kubesched.api.taints import (
    DEFAULT_FILTER_EFFECTS,
    TAINT_CONTROL_PLANE,
    TAINT_NODE_UNSCHEDULABLE,
    find_untolerated_taint,
    tolerates_all,
    toleration_tolerates,
)


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> Taint:
    return Taint(key=key, value=value, effect=effect)


def tol(key: str = "", operator: str = "", value: str = "", effect: str = "") -> Toleration:
    return Toleration(key=key, operator=operator, value=value, effect=effect)


@pytest.mark.parametrize(
    ("toleration", "t", "tolerates"),
    [
        (tol("gpu", "Equal", "a100", "NoSchedule"), taint("gpu", "a100"), True),
        (tol("gpu", "Equal", "a100", "NoSchedule"), taint("gpu", "t4"), False),
        (tol("gpu", "", "a100", "NoSchedule"), taint("gpu", "a100"), True),  # "" means Equal
        (tol("gpu", "", "", "NoSchedule"), taint("gpu", "a100"), False),
        (tol("gpu", "", ""), taint("gpu", ""), True),
        (tol("gpu", "Exists", effect="NoSchedule"), taint("gpu", "anything"), True),
        (tol("gpu", "Exists"), taint("tpu"), False),  # key must match
        (tol("", "Exists"), taint("anything", "v", "NoExecute"), True),  # empty key + Exists: all
        (tol("", "Exists", effect="NoExecute"), taint("anything", "v", "NoSchedule"), False),
        (tol("gpu", "Exists", effect=""), taint("gpu", effect="PreferNoSchedule"), True),  # empty effect: all
        (tol("gpu", "Exists", effect="NoExecute"), taint("gpu", effect="NoSchedule"), False),
        (tol("gpu", "Exists", effect="NoSchedule"), taint("gpu", effect="NoSchedule"), True),
        (tol("gpu", "Foo", "x"), taint("gpu", "x"), False),  # unknown operator
        # numeric operators: taint value compared with the toleration's
        (tol("sla", "Gt", "900"), taint("sla", "950"), True),
        (tol("sla", "Gt", "950"), taint("sla", "950"), False),
        (tol("sla", "Gt", "990"), taint("sla", "950"), False),
        (tol("sla", "Lt", "990"), taint("sla", "950"), True),
        (tol("sla", "Lt", "950"), taint("sla", "950"), False),
        (tol("sla", "Lt", "900"), taint("sla", "950"), False),
        (tol("sla", "Gt", "-5"), taint("sla", "-3"), True),
        (tol("sla", "Gt", "0"), taint("sla", "0"), False),
        (tol("sla", "Gt", "900"), taint("sla", "high"), False),  # not an integer
        (tol("sla", "Gt", "x"), taint("sla", "950"), False),
        (tol("sla", "Gt", "900"), taint("sla", "0950"), False),  # leading zero is not canonical
        (tol("sla", "Gt", "900"), taint("sla", "+950"), False),
        (tol("sla", "Lt", "5"), taint("sla", "-0"), False),
        (tol("sla", "Gt", "1"), taint("sla", "9223372036854775808"), False),  # beyond int64
        (tol("sla", "Lt", "9223372036854775807"), taint("sla", "1"), True),
        (tol("sla", "Gt", "1"), taint("sla", ""), False),
        (tol("sla", "Gt", "900", "NoExecute"), taint("sla", "950"), False),  # effect still checked
        (tol("other", "Gt", "900"), taint("sla", "950"), False),  # key still checked
    ],
)
def test_toleration_tolerates(toleration: Toleration, t: Taint, tolerates: bool) -> None:
    assert toleration_tolerates(toleration, t) is tolerates


CONTROL_PLANE = taint(TAINT_CONTROL_PLANE)
SOFT = taint("soft", effect="PreferNoSchedule")
GPU = taint("gpu", "a100")
EVICT = taint("maintenance", effect="NoExecute")


@pytest.mark.parametrize(
    ("taints", "tolerations", "expected"),
    [
        ([], [], None),
        ([SOFT], [], None),  # PreferNoSchedule does not filter
        ([CONTROL_PLANE], [], CONTROL_PLANE),
        ([SOFT, GPU, EVICT], [], GPU),  # the first one
        ([SOFT, GPU, EVICT], [tol("gpu", "Exists")], EVICT),
        ([GPU, EVICT], [tol("gpu", "Exists"), tol("maintenance", "Exists", effect="NoExecute")], None),
        ([GPU, EVICT], [tol(operator="Exists")], None),
    ],
)
def test_find_untolerated_taint(
    taints: list[Taint], tolerations: list[Toleration], expected: Taint | None
) -> None:
    assert find_untolerated_taint(taints, tolerations) == expected
    assert tolerates_all(taints, tolerations) is (expected is None)


def test_effects_can_be_chosen() -> None:
    assert find_untolerated_taint([GPU, SOFT], [tol("gpu", "Exists")], {"PreferNoSchedule"}) == SOFT
    assert find_untolerated_taint([GPU, EVICT], [], {"NoExecute"}) == EVICT
    assert not tolerates_all([SOFT], [], {"PreferNoSchedule", "NoSchedule"})


def test_constants() -> None:
    assert TAINT_CONTROL_PLANE == "node-role.kubernetes.io/control-plane"
    assert TAINT_NODE_UNSCHEDULABLE == "node.kubernetes.io/unschedulable"
    assert frozenset({"NoSchedule", "NoExecute"}) == DEFAULT_FILTER_EFFECTS


@given(
    st.integers(min_value=-(2**63), max_value=2**63 - 1), st.integers(min_value=-(2**63), max_value=2**63 - 1)
)
def test_numeric_operators_compare_as_integers(taint_value: int, toleration_value: int) -> None:
    t = taint("sla", str(taint_value))
    assert toleration_tolerates(tol("sla", "Gt", str(toleration_value)), t) is (
        taint_value > toleration_value
    )
    assert toleration_tolerates(tol("sla", "Lt", str(toleration_value)), t) is (
        taint_value < toleration_value
    )


@given(st.text(max_size=8), st.text(max_size=8), st.sampled_from(["", "Equal", "Exists"]))
def test_exists_wildcard_and_equal_values(key: str, value: str, operator: str) -> None:
    t = taint(key, value, "NoExecute")
    assert toleration_tolerates(tol(operator="Exists"), t)
    # Equal (or "") with a matching key tolerates exactly the same value
    if operator != "Exists":
        assert toleration_tolerates(tol(key, operator, value), t)
        assert not toleration_tolerates(tol(key, operator, value + "x"), t)
