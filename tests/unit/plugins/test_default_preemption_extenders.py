"""DefaultPreemption asks preempt-verb extenders which candidates and victims to keep."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.framework import PodInfo, Status
from kubesched.plugins.default_preemption import Candidate, DefaultPreemption
from kubesched.scheduler.extenders import ExtenderError, Extenders
from kubesched.testing.builders import make_pod


def victims(*names: str) -> list[PodInfo]:
    return [PodInfo(make_pod(n, priority=0)) for n in names]


CANDIDATES = [Candidate("n1", victims("a", "b"), 0), Candidate("n2", victims("c"), 1)]


class Handle:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.seen: dict[str, tuple[list[Pod], int]] = {}

    def process_preemption_with_extenders(self, pod: Pod, proposed: dict[str, Any]) -> Any:
        self.seen = proposed
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer(proposed)


def test_extenders_see_every_candidate_and_can_drop_nodes_and_victims() -> None:
    handle = Handle(lambda proposed: {"n1": ([proposed["n1"][0][1]], 0)})
    pruned = DefaultPreemption._prune_with_extenders(handle, make_pod("p"), CANDIDATES)  # type: ignore[arg-type]
    assert {n: [p.metadata.name for p in pods] for n, (pods, _) in handle.seen.items()} == {
        "n1": ["a", "b"],
        "n2": ["c"],
    }
    assert isinstance(pruned, list)
    assert [(c.name, [v.name for v in c.victims]) for c in pruned] == [("n1", ["b"])]


def test_an_extender_error_fails_the_preemption() -> None:
    handle = Handle(ExtenderError("preempt with extender at URL http://x/preempt: no answer within 5s"))
    status = DefaultPreemption._prune_with_extenders(handle, make_pod("p"), CANDIDATES)  # type: ignore[arg-type]
    assert isinstance(status, Status) and "no answer within 5s" in status.message()


class FakeExtender:
    def __init__(
        self, name: str, keep: set[str] | None, *, ignorable: bool = False, preempt: bool = True
    ) -> None:
        self.name = name
        self.keep = keep
        self.ignorable = ignorable
        self.supports_preemption = preempt
        self.calls = 0

    def is_interested(self, pod: Pod) -> bool:
        return True

    def process_preemption(self, pod: Pod, current: dict[str, Any], table: Any) -> dict[str, Any]:
        self.calls += 1
        if self.keep is None:
            raise ExtenderError(f"{self.name} is down")
        return {n: v for n, v in current.items() if n in self.keep}

    def close(self) -> None:
        pass


def test_extenders_prune_in_order_skip_ignorable_errors_and_stop_when_nothing_is_left() -> None:
    down = FakeExtender("down", None, ignorable=True)
    first = FakeExtender("first", {"n1", "n2"})
    second = FakeExtender("second", set())
    third = FakeExtender("third", {"n1"})
    no_verb = FakeExtender("no-verb", set(), preempt=False)
    exts = Extenders([down, no_verb, first, second, third])  # type: ignore[list-item]
    out = exts.process_preemption(make_pod("p"), {"n1": ([], 0), "n2": ([], 0), "n3": ([], 0)}, None)  # type: ignore[arg-type]
    assert out == {}
    assert (down.calls, no_verb.calls, first.calls, second.calls, third.calls) == (1, 0, 1, 1, 0)
    strict = Extenders([FakeExtender("strict", None)])  # type: ignore[list-item]
    with pytest.raises(ExtenderError, match="strict is down"):
        strict.process_preemption(make_pod("p"), {"n1": ([], 0)}, None)  # type: ignore[arg-type]
