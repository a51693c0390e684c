"""The control plane's temporary directory: on tmpfs when there is room, owned by a pid, and swept
when its owner died without removing it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["OWNER_FILE", "WORKDIR_PREFIX", "default_workdir_parent", "sweep_stale_workdirs"]

#: Temp dirs are named so and hold `OWNER_FILE` (the pid that made them), so a sweep finds only ours.
WORKDIR_PREFIX = "kubesched-cp-"
OWNER_FILE = "owner.pid"


def default_workdir_parent() -> str | None:
    """tmpfs when it has room: etcd's writes then cost no disk I/O and vanish with the run."""
    shm = Path("/dev/shm")
    try:
        if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 2 * 1024**3:
            return str(shm)
    except OSError:
        pass
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_workdirs(parent: Path) -> None:
    """Remove temp dirs of control planes whose owning process died without cleaning up.

    They are on tmpfs (memory) by default, so they must not pile up. Only dirs that name their owner
    in ``owner.pid`` are touched, and only when that process is gone.
    """
    for candidate in parent.glob(f"{WORKDIR_PREFIX}*"):
        try:
            owner = int((candidate / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue
        if not _pid_alive(owner):
            shutil.rmtree(candidate, ignore_errors=True)
