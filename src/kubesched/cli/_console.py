"""The console commands print tables on: the terminal's width, or `COLUMNS` when piped."""

from __future__ import annotations

import os
import sys

from rich.console import Console

#: Width of tables written to a pipe or file when `COLUMNS` is not set.
PIPE_WIDTH = 200


def stdout_console() -> Console:
    """A Console on stdout; rich itself reads `COLUMNS`, and a pipe without it gets PIPE_WIDTH."""
    columns = os.environ.get("COLUMNS", "")
    width = None if sys.stdout.isatty() or columns.isdigit() else PIPE_WIDTH
    return Console(width=width, highlight=False)
