"""The fault ledger's reading of the audit log: which Bindings bound their pod."""

from __future__ import annotations

import pytest

from kubesched.harness.faults import Bind, binds_that_took, first_bind_after
from kubesched.harness.faults.ledger import epoch_seconds


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


def test_the_takeover_is_the_first_binding_of_another_replica_after_the_loss() -> None:
    binds = [
        bind("a", "n1", 201, 1.0, user="old"),
        bind("b", "n1", 504, 5.0, user="old"),  # on the wire when it died
        bind("c", "n1", 409, 4.0, user="new"),  # before the loss: not the takeover
        bind("d", "n2", 409, 9.5, user="new"),  # refused, still the first it sent
        bind("e", "n2", 201, 9.6, user="new"),
    ]
    binds.sort(key=lambda b: b.received)
    first = first_bind_after(binds, 4.5, not_by="old")
    assert first is not None and (first.pod, first.received) == ("d", 9.5)
    assert first_bind_after(binds, 9.6, not_by="old") is None


def test_api_server_times_read_as_epoch_seconds() -> None:
    assert epoch_seconds("1970-01-01T00:01:40.250000Z") == 100.25
    assert epoch_seconds("1970-01-01T00:01:40Z") == 100.0
