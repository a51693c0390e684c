"""A progress bar on stderr for long simulations (only when stderr is a terminal)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

#: Show the bar only once a run has lasted this long, so quick runs print nothing extra.
SHOW_AFTER_SECONDS = 0.5


@contextmanager
def progress_reporter(
    *, enabled: bool, label: str = "scheduling"
) -> Iterator[Callable[[int, int], None] | None]:
    """Yields a `callback(done, total)` for the runner, or None when disabled."""
    if not enabled:
        yield None
        return
    started = time.monotonic()
    bar = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("pods", total=None)
    shown = False

    def update(done: int, total: int) -> None:
        nonlocal shown
        if not shown and time.monotonic() - started >= SHOW_AFTER_SECONDS:
            bar.start()
            shown = True
        bar.update(task, completed=done, total=total)

    try:
        yield update
    finally:
        if shown:
            bar.stop()
