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
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesched.errors import InputError
from kubesched.serving.asgi import ASGIApp, RequestAuth
from kubesched.serving.authn import DelegatingAuthenticator, TokenReviewer
from kubesched.serving.authz import DelegatingAuthorizer
from kubesched.serving.certs import CertKeyPair, default_hosts, load_pair, self_signed_pair
from kubesched.serving.server import BackgroundServer, server_config
from kubesched.serving.tls import server_context

__all__ = ["DEFAULT_ALWAYS_ALLOW_PATHS", "SecureServing", "ServingOptions", "serving_pair"]

log = logging.getLogger(__name__)

DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
AUTH_CONFIGMAP = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"


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


def serving_pair(opts: ServingOptions) -> CertKeyPair:
    """The certificate to serve: the files given, else one kept in --cert-dir, else one made in memory."""
    if opts.tls_cert_file and opts.tls_private_key_file:
        return load_pair(opts.tls_cert_file, opts.tls_private_key_file)
    hosts = default_hosts(opts.bind_address)
    if not opts.cert_dir:
        return self_signed_pair(hosts, common_name=opts.pair_name)
    cert, key = Path(opts.cert_dir) / f"{opts.pair_name}.crt", Path(opts.cert_dir) / f"{opts.pair_name}.key"
    if cert.is_file() and key.is_file():
        return load_pair(str(cert), str(key))
    pair = self_signed_pair(hosts, common_name=opts.pair_name)
    try:
        cert.parent.mkdir(parents=True, exist_ok=True)
        cert.write_bytes(pair.cert_pem)
        key.touch(mode=0o600)
        key.write_bytes(pair.key_pem)
    except OSError as exc:
        raise InputError(
            f"cannot write the self-signed certificate: {exc.strerror or exc}",
            source=f"--cert-dir {opts.cert_dir}",
        ) from None
    return CertKeyPair(pair.cert_pem, pair.key_pem, str(cert))


def _client_ca(opts: ServingOptions, client: Any) -> tuple[str | None, str]:
    """PEM of the client CA and where it came from: the flag, else the cluster's ConfigMap."""
    if opts.client_ca_file:
        try:
            return Path(opts.client_ca_file).read_text(
                encoding="utf-8"
            ), f"--client-ca-file {opts.client_ca_file}"
        except OSError as exc:
            raise InputError(
                f"cannot read: {exc.strerror or exc}", source=f"--client-ca-file {opts.client_ca_file}"
            ) from None
    if opts.authentication_skip_lookup or client is None:
        return None, ""
    from kubesched.cluster.kube.client import ApiError

    origin = "configmap kube-system/extension-apiserver-authentication"
    try:
        data = client.get(AUTH_CONFIGMAP).decode().get("data") or {}
    except ApiError as exc:
        if not opts.authentication_tolerate_lookup_failure:
            raise InputError(f"cannot read the client CA: {exc}", source=origin) from None
        log.warning("client certificates will not authenticate: cannot read %s: %s", origin, exc)
        return None, ""
    ca = data.get("client-ca-file")
    return (str(ca), origin) if ca else (None, "")


class SecureServing:
    """An ASGI app served over HTTPS behind delegated authentication and authorization.

    `connect(kubeconfig)` makes an API client for reviews (None: the scheduler's own connection);
    the clients it makes are closed by `stop()`.
    """

    def __init__(self, app: ASGIApp, opts: ServingOptions, connect: Callable[[str | None], Any]) -> None:
        self.opts = opts
        self._clients: list[Any] = []
        authn_client = self._client(connect, opts.authentication_kubeconfig)
        authz_client = (
            authn_client
            if opts.authorization_kubeconfig == opts.authentication_kubeconfig
            else self._client(connect, opts.authorization_kubeconfig)
        )
        pair = serving_pair(opts)
        client_ca, origin = _client_ca(opts, authn_client)
        context = server_context(
            pair,
            min_version=opts.tls_min_version,
            cipher_suites=opts.tls_cipher_suites,
            client_ca_pem=client_ca,
            client_ca_origin=origin,
        )
        self.authenticator = DelegatingAuthenticator(
            TokenReviewer(authn_client), cache_ttl=opts.authentication_cache_ttl
        )
        self.authorizer = DelegatingAuthorizer(
            TokenReviewer(authz_client),
            always_allow_paths=opts.always_allow_paths,
            always_allow_groups=opts.always_allow_groups,
            allow_ttl=opts.allow_ttl,
            deny_ttl=opts.deny_ttl,
        )
        self.certificate = pair.origin
        self.client_ca = origin or "none (client certificates are not accepted)"
        self.server = BackgroundServer(
            server_config(
                RequestAuth(app, self.authenticator, self.authorizer),
                opts.bind_address,
                opts.secure_port,
                ssl_context=context,
            )
        )

    def _client(self, connect: Callable[[str | None], Any], kubeconfig: str | None) -> Any:
        client = connect(kubeconfig)
        self._clients.append(client)
        return client

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def port(self) -> int:
        return self.server.port

    def start(self) -> SecureServing:
        self.server.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self.server.stop(timeout)
        for client in self._clients:
            client.close()
        self._clients.clear()
