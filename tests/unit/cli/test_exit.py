"""How the `kubesched` process ends: `run` and `explain` skip the interpreter's teardown (a big heap
takes seconds to collect after a SIGTERM, past the exit bound; explain's answer is written by then),
flushing what they wrote first; every other command exits normally, so its at-exit clean-ups
(temporary directories, pools) still run. `explain`, a one-shot command whose heap lives until it
exits, runs without the cyclic garbage collector; the others keep it, and `run` turns it on once
started (its informers synced)."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: Registers an at-exit marker, writes to a block-buffered stdout, then runs the executable's entry.
_SCRIPT = """
import atexit, sys
atexit.register(lambda: print("teardown ran", file=sys.stderr))
print("written before the command")
import gc, kubesched.cli
dispatch = kubesched.cli._dispatch
kubesched.cli._dispatch = lambda *a: (print(f"gc {gc.isenabled()}", file=sys.stderr), dispatch(*a))[1]
sys.argv = ["kubesched", *sys.argv[1:]]
from kubesched.cli import entry
entry()
"""


def _kubesched(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT, *argv], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize(
    ("argv", "teardown", "gc"),
    [
        (["run", "--config", "/nonexistent/kubesched.yaml"], False, False),
        (["explain", "default/p", "--config", "/nonexistent/kubesched.yaml"], False, False),
        (["config", "validate", "/nonexistent/kubesched.yaml"], True, True),
        (["simulate", "--config", "/nonexistent/kubesched.yaml", "/nonexistent"], True, True),
    ],
)
def test_only_run_and_explain_skip_the_teardown_and_nothing_written_is_lost(
    argv: list[str], teardown: bool, gc: bool
) -> None:
    done = _kubesched(*argv)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "written before the command\n"  # flushed although the buffer was not full
    lines = done.stderr.splitlines()
    assert lines[0] == f"gc {gc}", done.stderr
    assert lines[1].startswith("kubesched: /nonexistent/kubesched.yaml"), done.stderr
    assert ("teardown ran" in done.stderr) is teardown, done.stderr


def test_run_freezes_what_start_up_built_and_turns_the_collector_on_with_serving_thresholds() -> None:
    import gc

    from kubesched.cli.run import SERVING_GC_THRESHOLD, collect_from_now

    assert gc.isenabled()
    thresholds = gc.get_threshold()
    collect_from_now()  # already on (tests, `main`): nothing frozen, thresholds left alone
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds
    gc.disable()
    try:
        collect_from_now()
        assert gc.isenabled() and gc.get_freeze_count() > 0
        assert gc.get_threshold() == SERVING_GC_THRESHOLD != thresholds
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        gc.enable()


@pytest.mark.parametrize(("command", "off"), [("run", True), ("explain", True), ("simulate", False)])
def test_run_and_explain_import_and_parse_without_the_collector(command: str, off: bool) -> None:
    script = (
        "import gc, sys, kubesched.cli\n"
        "parser = kubesched.cli._parser\n"
        "kubesched.cli._parser = lambda *a: (print(f'parsing with gc {gc.isenabled()}', file=sys.stderr), "
        "parser(*a))[1]\n"
        "sys.argv = ['kubesched', *sys.argv[1:]]\n"
        "kubesched.cli.entry()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, command, "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.stderr.splitlines()[0] == f"parsing with gc {not off}", done.stderr
