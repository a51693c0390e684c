"""`kubesched run` serves /healthz, /readyz, /livez and /metrics as kube-scheduler does, checked
against the real API server and against kube-scheduler itself.

Identities: two ServiceAccounts with real tokens from the TokenRequest API (one bound by RBAC to
`get` on the non-resource URL /metrics, one not), a token the API server never issued, a client
certificate signed by the cluster's client CA (found, as upstream finds it, in the ConfigMap
kube-system/extension-apiserver-authentication), the system:masters token, and nobody. Each asks for
each path of kubesched and of the upstream kube-scheduler started with the same authentication
flags; the two must answer with the same status codes, and the codes must be the ones RBAC implies.
"""

from __future__ import annotations

import json
import ssl
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubesched.harness.controlplane import ControlPlane, ManagedProcess
from kubesched.harness.fake_nodes import ApiClient, create_namespace
from kubesched.harness.pki import TestCA
from kubesched.harness.ports import free_port

PATHS = ("/healthz", "/readyz", "/livez", "/metrics")

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: {kubeconfig}}}
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: {name}
"""


@dataclass
class Caller:
    """One identity: a bearer token, a client certificate, or neither."""

    name: str
    token: str | None = None
    cert: tuple[Path, Path] | None = None

    def get(self, url: str, cafile: Path | None = None) -> tuple[int, str]:
        ctx = ssl.create_default_context(cafile=str(cafile)) if cafile else ssl._create_unverified_context()
        if self.cert is not None:
            ctx.load_cert_chain(str(self.cert[0]), str(self.cert[1]))
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        try:
            with urllib.request.urlopen(
                urllib.request.Request(url, headers=headers), context=ctx, timeout=10
            ) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()
        except OSError as exc:
            return 0, str(exc)


def service_account_token(api: ApiClient, namespace: str, name: str) -> str:
    api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": name}})
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    answer = api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", request)
    token: str = answer["status"]["token"]
    return token


@pytest.fixture(scope="module")
def callers(
    control_plane: ControlPlane, api: ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Caller]:
    run = uuid.uuid4().hex[:8]
    ns = f"secure-{run}"
    create_namespace(api, ns)
    reader, stranger = service_account_token(api, ns, "reader"), service_account_token(api, ns, "stranger")
    role = f"metrics-reader-{run}"
    api.post(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        {"metadata": {"name": role}, "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]},
    )
    cert_user = f"cert-reader-{run}"
    api.post(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {
            "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [
                {"kind": "ServiceAccount", "name": "reader", "namespace": ns},
                {"kind": "User", "name": cert_user, "apiGroup": "rbac.authorization.k8s.io"},
            ],
        },
    )
    pki = control_plane.workdir / "pki"
    ca = TestCA.from_files(pki / "ca.crt", pki / "ca.key", tmp_path_factory.mktemp("clients"))
    return {
        "anonymous": Caller("anonymous"),
        "reader": Caller("reader", token=reader),
        "stranger": Caller("stranger", token=stranger),
        "forged": Caller("forged", token="not-a-token-the-api-server-issued"),
        "cert-reader": Caller("cert-reader", cert=ca.client(cert_user)),
        "cert-stranger": Caller("cert-stranger", cert=ca.client(f"cert-stranger-{run}", "some-team")),
        "admin": Caller("admin", token=control_plane.token),
    }


#: What RBAC implies for each caller: the health paths for anyone who is somebody or nobody, /metrics
#: for whom it is granted (and system:masters), 401 for a token the API server rejects.
EXPECTED = {
    "anonymous": {"/healthz": 200, "/readyz": 200, "/livez": 200, "/metrics": 403},
    "reader": dict.fromkeys(PATHS, 200),
    "stranger": {"/healthz": 200, "/readyz": 200, "/livez": 200, "/metrics": 403},
    "forged": dict.fromkeys(PATHS, 401),
    "cert-reader": dict.fromkeys(PATHS, 200),
    "cert-stranger": {"/healthz": 200, "/readyz": 200, "/livez": 200, "/metrics": 403},
    "admin": dict.fromkeys(PATHS, 200),
}


def wait_ready(proc: ManagedProcess, url: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.alive(), f"{proc.name} exited:\n{proc.log_tail()}"
        if Caller("probe").get(f"{url}/readyz")[0] == 200:
            return
        time.sleep(0.2)
    raise AssertionError(f"{proc.name} not ready after {timeout:.0f} s:\n{proc.log_tail()}")


@pytest.fixture(scope="module")
def kubesched(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """`kubesched run` with default serving flags but a loopback address; yields (URL, its CA file)."""
    tmp = tmp_path_factory.mktemp("kubesched-secure")
    config = tmp / "config.yaml"
    config.write_text(
        CONFIG.format(kubeconfig=control_plane.kubeconfig_path, name=f"secure-{uuid.uuid4().hex[:6]}")
    )
    port = free_port()
    args = [sys.executable, "-m", "kubesched.cli", "run", f"--config={config}", "--bind-address=127.0.0.1"]
    args += [f"--secure-port={port}", f"--cert-dir={tmp / 'certs'}"]
    proc = ManagedProcess("kubesched-secure", args, tmp / "kubesched.log", port=port)
    url = f"https://127.0.0.1:{port}"
    try:
        wait_ready(proc, url)
        yield url, tmp / "certs" / "kubesched.crt"
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def kube_scheduler(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The upstream kube-scheduler with delegated authn/authz against the same API server."""
    tmp = tmp_path_factory.mktemp("kube-scheduler-secure")
    config = tmp / "config.yaml"
    config.write_text(
        CONFIG.format(kubeconfig=control_plane.kubeconfig_path, name=f"peer-{uuid.uuid4().hex[:6]}")
    )
    port = free_port()
    kubeconfig = control_plane.kubeconfig_path
    args = [str(control_plane.binaries.kube_scheduler), f"--config={config}", "--bind-address=127.0.0.1"]
    args += [f"--secure-port={port}", f"--authentication-kubeconfig={kubeconfig}"]
    args += [f"--authorization-kubeconfig={kubeconfig}", "--v=1"]
    proc = ManagedProcess("kube-scheduler-secure", args, tmp / "kube-scheduler.log", port=port)
    url = f"https://127.0.0.1:{port}"
    try:
        wait_ready(proc, url)
        yield url
    finally:
        proc.stop()


def codes(url: str, caller: Caller, cafile: Path | None = None) -> dict[str, int]:
    return {path: caller.get(f"{url}{path}", cafile)[0] for path in PATHS}


@pytest.mark.parametrize("who", sorted(EXPECTED))
def test_each_caller_gets_what_rbac_grants_as_from_kube_scheduler(
    kubesched: tuple[str, Path], kube_scheduler: str, callers: dict[str, Caller], who: str
) -> None:
    url, cafile = kubesched
    ours = codes(url, callers[who], cafile)
    assert ours == EXPECTED[who]
    assert codes(kube_scheduler, callers[who]) == ours


def test_refusals_are_the_status_objects_kube_scheduler_sends(
    kubesched: tuple[str, Path], kube_scheduler: str, callers: dict[str, Caller]
) -> None:
    url, cafile = kubesched
    for who, code in (("stranger", 403), ("forged", 401), ("anonymous", 403)):
        ours = json.loads(callers[who].get(f"{url}/metrics", cafile)[1])
        theirs = json.loads(callers[who].get(f"{kube_scheduler}/metrics")[1])
        assert ours["code"] == theirs["code"] == code
        assert ours["reason"] == theirs["reason"]
        assert ours["message"].split(":")[0] == theirs["message"].split(":")[0]
    stranger = json.loads(callers["stranger"].get(f"{url}/metrics", cafile)[1])
    assert stranger["message"].startswith('forbidden: User "system:serviceaccount:secure-')


def test_metrics_served_to_the_reader_are_the_schedulers(
    kubesched: tuple[str, Path], callers: dict[str, Caller]
) -> None:
    url, cafile = kubesched
    code, text = callers["reader"].get(f"{url}/metrics", cafile)
    assert code == 200
    assert "scheduler_pending_pods" in text


def test_the_certificate_kept_in_cert_dir_verifies_the_server(kubesched: tuple[str, Path]) -> None:
    url, cafile = kubesched
    assert cafile.is_file()
    assert Caller("anonymous").get(f"{url}/healthz", cafile) == (200, "ok")


def test_plain_http_needs_asking_and_then_serves_without_authentication(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        CONFIG.format(kubeconfig=control_plane.kubeconfig_path, name=f"plain-{uuid.uuid4().hex[:6]}")
    )
    port = free_port()
    args = [sys.executable, "-m", "kubesched.cli", "run", f"--config={config}", "--secure-port=0"]
    args += [f"--insecure-listen=127.0.0.1:{port}"]
    proc = ManagedProcess("kubesched-plain", args, tmp_path / "kubesched.log", port=port)
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.alive(), proc.log_tail()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
                    assert resp.status == 200
                    break
            except OSError:
                assert time.monotonic() < deadline, proc.log_tail()
                time.sleep(0.2)
        assert "over plain HTTP" in proc.log_tail()
    finally:
        proc.stop()
