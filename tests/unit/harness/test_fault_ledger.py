"""The fault ledger's reading of the audit log: which Bindings bound their pod."""

from __future__ import annotations

import pytest

from kubesched.harness.faults import Bind, binds_that_took


def bind(pod: str, node: str, code: int, at: float, user: str = "replica-0") -> Bind:
    return Bind(user=user, namespace="ns", pod=pod, node=node, received=at, code=code)


@pytest.mark.parametrize(
    ("binds", "bound_to", "took"),
    [
        pytest.param([bind("p", "n1", 201, 1)], {"p": "n1"}, [("p", 201)], id="answered"),
        pytest.param(
            # The sender died mid-request: logged 504, yet the pod is bound to that node.
            [bind("p", "n1", 504, 1)],
            {"p": "n1"},
            [("p", 504)],
            id="unanswered-but-written",
        ),
        pytest.param([bind("p", "n1", 504, 1)], {}, [], id="unanswered-and-not-written"),
        pytest.param([bind("p", "n1", 504, 1)], {"p": "n2"}, [], id="unanswered-other-node"),
        pytest.param(
            [bind("p", "n1", 504, 1), bind("p", "n1", 201, 2, user="replica-1")],
            {"p": "n1"},
            [("p", 201)],
            id="a-2xx-is-the-one",
        ),
        pytest.param(
            [bind("p", "n1", 201, 1), bind("p", "n1", 409, 2, user="replica-1")],
            {"p": "n1"},
            [("p", 201)],
            id="conflict-after",
        ),
        pytest.param(
            [bind("p", "n1", 500, 1), bind("p", "n1", 504, 3), bind("q", "n2", 201, 2)],
            {"p": "n1", "q": "n2"},
            [("q", 201), ("p", 504)],
            id="last-unanswered-in-order",
        ),
    ],
)
def test_binds_that_took(binds: list[Bind], bound_to: dict[str, str], took: list[tuple[str, int]]) -> None:
    assert [(b.pod, b.code) for b in binds_that_took(binds, bound_to)] == took
