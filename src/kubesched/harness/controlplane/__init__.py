"""A real, throw-away Kubernetes control plane (etcd + kube-apiserver, optionally kube-scheduler).

Integration tests and benchmarks run against the genuine API server rather than a mock, because what
matters there (binding conflicts, resourceVersions, watch semantics, admission, throttling) is exactly
what a mock gets subtly wrong. The binaries are built from the Go module pinned in ``tools/kube`` by
``tools/kube/build.sh`` (cached outside the clone) or taken from ``KUBESCHED_KUBE_BIN``.

Everything a run needs lives in one temporary directory (on tmpfs when there is room, so etcd never
waits on a disk): certificates, the static token file, the kubeconfig, etcd's data and every process's
log. The processes listen on loopback ports picked at run time, so parallel test workers do not
collide, and are stopped by pid (never by name) when the context manager exits, even after a failure.

Usage::

    with ControlPlane() as cp:
        subprocess.run(["kubectl", "--kubeconfig", str(cp.kubeconfig_path), "get", "nodes"])

``python -m kubesched.harness.controlplane`` starts one for a person and waits for Ctrl-C. The
package's modules: binaries (finding and building them), process (a started server and its
readiness), workdir, etcd, apiserver (flags, users, kubeconfigs), kube_scheduler (the upstream
peer), plane (ControlPlane, which composes them) and __main__.
"""

from kubesched.harness.controlplane.binaries import KubeBinaries, binaries_built, find_binaries, find_kubectl
from kubesched.harness.controlplane.plane import ControlPlane
from kubesched.harness.controlplane.process import ControlPlaneError, ManagedProcess, http_get

__all__ = [
    "ControlPlane",
    "ControlPlaneError",
    "KubeBinaries",
    "ManagedProcess",
    "binaries_built",
    "find_binaries",
    "find_kubectl",
    "http_get",
]
