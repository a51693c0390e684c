"""The docs tests' own bookkeeping: the reasons for not running a command name commands the docs
still show, each walkthrough section is still there, and the output check fails on drift."""

from __future__ import annotations

import pytest
from doc_commands import MEASURED, ON_A_CLUSTER, all_commands, output_problem
from inventory import NOT_RUNNABLE, WALKTHROUGHS, Walkthrough


def test_every_command_not_run_is_still_in_the_docs() -> None:
    shown = {c.key for c in all_commands()}
    stale = [f"{doc}: {text}" for doc, text in NOT_RUNNABLE if (doc, text) not in shown]
    assert not stale, "NOT_RUNNABLE names commands the docs no longer show:\n" + "\n".join(stale)


@pytest.mark.parametrize("walkthrough", WALKTHROUGHS, ids=lambda w: f"{w.doc}:{w.start}")
def test_every_walkthrough_has_commands(walkthrough: Walkthrough) -> None:
    assert walkthrough.commands(), f"{walkthrough.doc}: no commands from {walkthrough.start!r}"


SHOWN = (
    "NAME              READY   STATUS    NODE",
    "hello-kubesched   0/1     Pending   fake-node-00002",
)


def test_output_that_matches_apart_from_padding_and_what_varies() -> None:
    printed = "NAME READY STATUS NODE\nhello-kubesched 0/1 Pending fake-node-00000\n"
    assert output_problem(SHOWN, printed, ON_A_CLUSTER) is None
    assert output_problem(("scheduled 50 pods in 0.12s",), "scheduled 50 pods in 3.40s\n", MEASURED) is None


@pytest.mark.parametrize(
    "printed",
    [
        "NAME READY STATUS NODE\nhello-kubesched 0/1 Running fake-node-00000\n",  # a word changed
        "NAME READY STATUS NODE\n",  # a line missing
        "hello-kubesched 0/1 Pending fake-node-00000\nNAME READY STATUS NODE\n",  # out of order
        "scheduled 51 pods in 0.12s\n",  # a count is not a measurement
    ],
)
def test_output_that_drifted_is_a_problem(printed: str) -> None:
    shown = SHOWN if "NAME" in printed else ("scheduled 50 pods in 0.12s",)
    problem = output_problem(shown, printed, {**MEASURED, **ON_A_CLUSTER})
    assert problem is not None and "the doc shows" in problem


def test_an_ellipsis_line_stands_for_lines_left_out_only() -> None:
    shown = ("first line", "...", "last line")
    assert output_problem(shown, "first line\nmany\nothers\nlast line\n", {}) is None
    assert output_problem(shown, "first line\nmany\n", {}) is not None
