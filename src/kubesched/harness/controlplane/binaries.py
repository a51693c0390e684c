"""etcd, kube-apiserver, kube-scheduler, kubectl and kube-controller-manager of Kubernetes v1.37.2:
where they are, building them on first use from the Go modules pinned in `tools/kube`."""

from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kubesched.harness.controlplane.process import ControlPlaneError

__all__ = [
    "KubeBinaries",
    "binaries_built",
    "binary_supports",
    "find_binaries",
    "find_kube_controller_manager",
    "find_kubectl",
]

#: Where tools/kube/build.sh lives when running from a source checkout (src layout).
BUILD_SCRIPT = Path(__file__).resolve().parents[4] / "tools" / "kube" / "build.sh"
#: Builds kubectl or kube-controller-manager (same Kubernetes version, each its own module and cache
#: entry) and prints its directory.
TOOL_BUILD_SCRIPT = BUILD_SCRIPT.with_name("build-tool.sh")
BINARY_NAMES = ("etcd", "kube-apiserver", "kube-scheduler")


@dataclass(frozen=True)
class KubeBinaries:
    """Paths of the three binaries, all from one build so their versions match."""

    directory: Path

    @property
    def etcd(self) -> Path:
        return self.directory / "etcd"

    @property
    def kube_apiserver(self) -> Path:
        return self.directory / "kube-apiserver"

    @property
    def kube_scheduler(self) -> Path:
        return self.directory / "kube-scheduler"


def _checked_binaries(directory: Path, origin: str) -> KubeBinaries:
    missing = [n for n in BINARY_NAMES if not os.access(directory / n, os.X_OK)]
    if missing:
        raise ControlPlaneError(f"{origin} {directory} lacks executable {', '.join(missing)}")
    return KubeBinaries(directory)


def binaries_built() -> bool:
    """Whether the three binaries exist already (`KUBESCHED_KUBE_BIN`, or a finished build in the
    cache), so a caller can leave out what needs them instead of starting a ~6-minute build."""
    prebuilt = os.environ.get("KUBESCHED_KUBE_BIN")
    if prebuilt:
        directories = [Path(prebuilt)]
    else:
        root = Path(os.environ.get("KUBESCHED_KUBE_CACHE") or Path.home() / ".cache" / "kubesched")
        directories = [d for d in root.glob("kube-v*") if d.is_dir() and not d.name.endswith(".partial")]
    return any(all(os.access(d / n, os.X_OK) for n in BINARY_NAMES) for d in directories)


@functools.cache
def find_binaries() -> KubeBinaries:
    """Locate (building on first use) etcd, kube-apiserver and kube-scheduler.

    ``KUBESCHED_KUBE_BIN`` wins, so a machine with prebuilt binaries never needs Go. Otherwise
    ``tools/kube/build.sh`` is run: it returns at once from its cache, or builds (about 6 minutes cold
    on 2 cores) with its progress on our stderr, so a person sees why the first run is slow.
    """
    prebuilt = os.environ.get("KUBESCHED_KUBE_BIN")
    if prebuilt:
        return _checked_binaries(Path(prebuilt), "KUBESCHED_KUBE_BIN=")
    if not BUILD_SCRIPT.is_file():
        raise ControlPlaneError(
            f"{BUILD_SCRIPT} not found: kubesched is not running from a source checkout. "
            "Set KUBESCHED_KUBE_BIN to a directory holding etcd, kube-apiserver and kube-scheduler."
        )
    proc = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, check=False
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise ControlPlaneError(
            f"{BUILD_SCRIPT} failed (exit {proc.returncode}); its stderr above says why. "
            "It needs Go (see tools/kube/go.mod) and the Go module proxy, or set KUBESCHED_KUBE_BIN."
        )
    return _checked_binaries(Path(lines[-1]), "tools/kube/build.sh output")


def _built_tool(tool: str, variable: str) -> Path:
    """The directory of `tool` (kubectl, kube-controller-manager) of the control plane's version:
    the one `variable` names, or built by `tools/kube/build-tool.sh` (cached)."""
    prebuilt = os.environ.get(variable)
    if prebuilt:
        return Path(prebuilt).resolve().parent
    if not TOOL_BUILD_SCRIPT.is_file():
        raise ControlPlaneError(f"{TOOL_BUILD_SCRIPT} not found: set {variable} to a {tool} binary instead")
    proc = subprocess.run(
        ["bash", str(TOOL_BUILD_SCRIPT), tool],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise ControlPlaneError(
            f"{TOOL_BUILD_SCRIPT} {tool} failed (exit {proc.returncode}); its stderr above says why. "
            f"Set {variable} to a {tool} binary instead."
        )
    return Path(lines[-1])


@functools.cache
def find_kubectl() -> Path:
    """The directory of a kubectl of the control plane's version: `KUBESCHED_KUBECTL`, or built
    (about 2 minutes the first time)."""
    return _built_tool("kubectl", "KUBESCHED_KUBECTL")


@functools.cache
def find_kube_controller_manager() -> Path:
    """A kube-controller-manager binary of the control plane's version:
    `KUBESCHED_KUBE_CONTROLLER_MANAGER`, or built (about 5 minutes the first time)."""
    return (
        _built_tool("kube-controller-manager", "KUBESCHED_KUBE_CONTROLLER_MANAGER")
        / "kube-controller-manager"
    )


@functools.cache
def binary_supports(binary: Path, flag: str) -> bool:
    """Whether ``binary --help`` mentions ``flag``; lets a prebuilt older etcd still work."""
    out = subprocess.run(
        [str(binary), "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    return flag in out.stdout or flag in out.stderr
