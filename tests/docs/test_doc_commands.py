"""Every command of the README and the docs that needs no cluster, run as a reader runs it.

Each doc's commands run in order in bash (`pipefail`), in a scratch directory that links the
clone's `.venv`, `examples/`, `deploy/`, ... and holds the files the doc asks the reader to save
(`# gpu-config.yaml` blocks); `/tmp/` in a command is that directory too. A command must exit 0,
unless the doc shows it failing with kubesched's one-line error; a `> FILE` it writes must not be
empty; and what it prints must hold the doc's output: every word in the doc's order, with
whitespace (table padding, wrapping) and measured durations left aside, `...` standing for lines
the doc leaves out.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from doc_commands import (
    DOCS,
    MEASURED,
    REPO,
    output_problem,
    run_shell,
    saved_files,
    scratch_dir,
    shows_an_error,
)
from inventory import offline_commands

#: Bounds one command; the slowest (a sweep of 8 simulations) takes about 10 s on an idle machine.
COMMAND_TIMEOUT = 300.0

DOCS_WITH_COMMANDS = [doc for doc in DOCS if offline_commands(doc)]


def reader_env() -> dict[str, str]:
    """The reader's shell after `make demo`, with the venv's commands on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "PYTHONPATH", "KUBECONFIG")}
    env["PATH"] = f"{REPO / '.venv' / 'bin'}:{env['PATH']}"
    return env


@pytest.mark.parametrize("doc", DOCS_WITH_COMMANDS)
def test_the_docs_commands_run_as_shown(doc: str, tmp_path: Path) -> None:
    workdir = scratch_dir(tmp_path)
    for name, text in saved_files(doc).items():
        (workdir / name).write_text(text)
    env = reader_env()
    for command in offline_commands(doc):
        text = command.text.replace("/tmp/", f"{workdir}/")
        shown = tuple(line.replace("/tmp/", f"{workdir}/") for line in command.shown)
        done = run_shell(text, workdir, env, COMMAND_TIMEOUT)
        context = f"{command.where}: `{command.text}` exited {done.returncode}:\n{done.stdout}"
        if not shows_an_error(command):
            assert done.returncode == 0, context
        for written in re.findall(r"(?<![0-9&])>\s*(\S+)", text):
            if written != "/dev/null":
                path = workdir / written
                assert path.is_file() and path.stat().st_size > 0, f"{context}\n{written} is empty"
        problem = output_problem(shown, done.stdout, MEASURED)
        assert problem is None, f"{command.where}: `{command.text}`: {problem}"
