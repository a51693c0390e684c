"""Keep freed memory in the C heap while a simulation runs (glibc only; elsewhere nothing changes).

Every scheduling cycle allocates and frees arrays of one int64 per node (scores, totals, masks):
400 KB each at 50,000 nodes. glibc serves blocks that large with a fresh mmap, or hands the top of
the heap back to the kernel as soon as they are freed, so each cycle paid for the same pages again
in page faults (a third of the CPU of a 50,000-node run was system time). Raising the mmap and trim
thresholds for the run lets those blocks be reused instead; when the run ends trimming comes back
and what the run freed is returned to the kernel. The mmap threshold stays at 32 MiB, where glibc's
own dynamic threshold may take it anyway.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
from collections.abc import Iterator
from typing import Any

__all__ = ["reused_heap"]

# mallopt parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: Blocks up to this size come from the heap while a run lasts (an int64 per node of 4 million nodes).
_RUN_MMAP_THRESHOLD = 32 * 1024 * 1024
#: Free memory at the top of the heap kept while a run lasts rather than handed back.
_RUN_TRIM_THRESHOLD = 256 * 1024 * 1024
#: glibc's defaults, restored when the run ends.
_DEFAULT_TRIM_THRESHOLD = 128 * 1024


def _glibc() -> Any | None:
    """The C library when it is glibc (it has mallopt and malloc_trim), else None."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "malloc_trim"):
        return None
    return libc


@contextlib.contextmanager
def reused_heap() -> Iterator[None]:
    """Within the block, large freed blocks stay in the heap for the next cycle's arrays."""
    libc = _glibc()
    if libc is None:
        yield
        return
    libc.mallopt(_M_MMAP_THRESHOLD, _RUN_MMAP_THRESHOLD)
    libc.mallopt(_M_TRIM_THRESHOLD, _RUN_TRIM_THRESHOLD)
    try:
        yield
    finally:
        libc.mallopt(_M_TRIM_THRESHOLD, _DEFAULT_TRIM_THRESHOLD)
        libc.malloc_trim(0)
