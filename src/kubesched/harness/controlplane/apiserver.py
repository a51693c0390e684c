"""kube-apiserver for the control plane: the flags that make a kubelet-less cluster usable for
scheduling, its users (a token each, all `system:masters`), the audit policy that logs bindings, and
the kubeconfigs its clients use."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["ADMIN", "AUDIT_POLICY", "apiserver_args", "write_kubeconfig", "write_tokens"]

#: The user of the control plane's main token and kubeconfig.
ADMIN = "kubesched-admin"

#: Only the requests that bind pods, with the Binding (its target node), at the end of each.
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Request
  verbs: [create]
  resources:
  - group: ""
    resources: [pods/binding]
- level: None
"""


def apiserver_args(
    binary: Path,
    workdir: Path,
    etcd_url: str,
    port: int,
    *,
    audit_log: Path | None,
    extra: Sequence[str],
) -> list[str]:
    """The command line, with `workdir`'s `pki/` and `tokens.csv`; `extra` is appended last, so it can
    override any flag. With `audit_log`, every `pods/binding` request is logged there as JSON lines
    (`workdir/audit-policy.yaml` must hold AUDIT_POLICY)."""
    pki = workdir / "pki"
    audit = (
        []
        if audit_log is None
        else [
            f"--audit-policy-file={workdir / 'audit-policy.yaml'}",
            f"--audit-log-path={audit_log}",
            "--audit-log-format=json",
            "--audit-log-mode=blocking",
            "--audit-log-maxsize=0",
        ]
    )
    return [
        str(binary),
        f"--etcd-servers={etcd_url}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",  # else it looks for a default route, which may not exist
        f"--secure-port={port}",
        f"--cert-dir={pki}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--token-auth-file={workdir / 'tokens.csv'}",
        "--authorization-mode=RBAC",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki / 'sa.key'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        "--service-cluster-ip-range=10.0.0.0/24",
        # No controller creates ServiceAccounts or lifts the not-ready taint from kubelet-less nodes.
        "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
        "--allow-privileged=true",
        "--endpoint-reconciler-type=none",  # loopback endpoints for the kubernetes Service are rejected
        # Benchmarks measure schedulers, not the apiserver's request queues.
        "--enable-priority-and-fairness=false",
        "--max-requests-inflight=0",
        "--max-mutating-requests-inflight=0",
        "--v=1",
        *audit,
        *extra,
    ]


def write_tokens(path: Path, tokens: Mapping[str, str]) -> None:
    """The static token file: each user (name → token) in `system:masters`."""
    path.write_text("".join(f'{token},{user},{user},"system:masters"\n' for user, token in tokens.items()))


def write_kubeconfig(path: Path, server: str, ca_file: Path, user: str, token: str) -> None:
    """A kubeconfig for `user` (token auth, the CA embedded), readable only by us."""
    ca_data = base64.b64encode(ca_file.read_bytes()).decode("ascii")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "kubesched", "cluster": {"server": server, "certificate-authority-data": ca_data}}
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "kubesched", "context": {"cluster": "kubesched", "user": user}}],
        "current-context": "kubesched",
    }
    path.write_text(json.dumps(config, indent=2) + "\n")  # JSON is valid YAML
    path.chmod(0o600)
