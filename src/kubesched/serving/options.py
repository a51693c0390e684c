"""What kube-scheduler's serving flags describe: an HTTPS server with delegated auth.

The flags (`kubesched.cli.serving_flags`), their defaults and meanings are upstream's
(`k8s.io/apiserver` secure serving, delegating authentication and authorization options as
kube-scheduler sets them up):

* `--bind-address` (0.0.0.0), `--secure-port` (10259; 0 serves no HTTPS), `--cert-dir`,
  `--tls-cert-file`, `--tls-private-key-file`, `--tls-min-version`, `--tls-cipher-suites`;
* `--authentication-kubeconfig`, `--authentication-token-webhook-cache-ttl` (10s),
  `--client-ca-file`, `--authentication-skip-lookup`, `--authentication-tolerate-lookup-failure`;
* `--authorization-kubeconfig`, `--authorization-always-allow-paths` (/healthz,/readyz,/livez),
  `--authorization-webhook-cache-authorized-ttl` / `-unauthorized-ttl` (10s).

Without `--tls-cert-file` the certificate is self-signed in memory (or kept in `--cert-dir`, as
upstream, when that is given). Without `--authentication-kubeconfig` (and likewise for
authorization) reviews go to the API server the process already talks to (`--kubeconfig` or the
in-cluster service account); upstream uses only the in-cluster account there and falls back to
anonymous-only, which outside a cluster leaves `/metrics` closed to everyone. Without
`--client-ca-file`, the client CA is looked up as upstream does, in the ConfigMap
`kube-system/extension-apiserver-authentication` (key `client-ca-file`), once at startup.

The server these options build is `kubesched.serving.secure`'s; this module stays free of its
imports (uvicorn, Starlette, cryptography), so parsing the flags does not load them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["DEFAULT_ALWAYS_ALLOW_PATHS", "ServingOptions"]

DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")


@dataclass(frozen=True, slots=True)
class ServingOptions:
    """What the serving flags asked for (defaults are upstream's)."""

    bind_address: str = "0.0.0.0"
    secure_port: int = 10259
    cert_dir: str | None = None
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    tls_min_version: str = "VersionTLS12"
    tls_cipher_suites: tuple[str, ...] = ()
    authentication_kubeconfig: str | None = None
    authentication_cache_ttl: float = 10.0
    authentication_skip_lookup: bool = False
    authentication_tolerate_lookup_failure: bool = True
    client_ca_file: str | None = None
    authorization_kubeconfig: str | None = None
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    always_allow_groups: tuple[str, ...] = ("system:masters",)
    allow_ttl: float = 10.0
    deny_ttl: float = 10.0
    #: The name self-signed certificates are kept under in `cert_dir` (upstream: the component's).
    pair_name: str = field(default="kubesched")
