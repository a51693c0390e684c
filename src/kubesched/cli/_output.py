"""Writing a command's output file: checked before the work starts, replaced all at once when done."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from kubesched.errors import InputError

__all__ = ["check_writable", "write_atomically"]


def check_writable(file: str) -> None:
    """Refuse a FILE that cannot be written before the work (an hour of recording, say), not after it."""
    if file == "-":
        return
    directory = Path(file).resolve().parent
    if not directory.is_dir() or not os.access(directory, os.W_OK):
        raise InputError("cannot write here: the directory does not exist or is not writable", source=file)


def write_atomically(file: str, data: bytes) -> None:
    """Write all or nothing: a temporary file in the same directory, renamed into place."""
    if file == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    target = Path(file)
    fd, tmp = tempfile.mkstemp(dir=target.resolve().parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(err.strerror or str(err), source=file) from None
