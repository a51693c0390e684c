"""How the `kubesched` process ends: `run` skips the interpreter's teardown (its heap would take
seconds to collect after a SIGTERM, past the exit bound), flushing what it wrote first; every other
command exits normally, so its at-exit clean-ups (temporary directories, pools) still run."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: Registers an at-exit marker, writes to a block-buffered stdout, then runs the executable's entry.
_SCRIPT = """
import atexit, sys
atexit.register(lambda: print("teardown ran", file=sys.stderr))
print("written before the command")
sys.argv = ["kubesched", *sys.argv[1:]]
from kubesched.cli import entry
entry()
"""


def _kubesched(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT, *argv], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize(
    ("argv", "teardown"),
    [
        (["run", "--config", "/nonexistent/kubesched.yaml"], False),
        (["config", "validate", "/nonexistent/kubesched.yaml"], True),
    ],
)
def test_only_run_skips_the_teardown_and_nothing_written_is_lost(argv: list[str], teardown: bool) -> None:
    done = _kubesched(*argv)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "written before the command\n"  # flushed although the buffer was not full
    assert done.stderr.startswith("kubesched: /nonexistent/kubesched.yaml"), done.stderr
    assert ("teardown ran" in done.stderr) is teardown, done.stderr
