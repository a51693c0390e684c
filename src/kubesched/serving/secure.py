"""The HTTPS server `ServingOptions` describe: a certificate, TLS, delegated authn and authz, uvicorn.

Apart from `options` so that parsing the flags imports none of this: `kubesched run` builds it once
its informers' LISTs are on the wire (see `kubesched.cli.run`).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubesched.errors import InputError
from kubesched.serving.asgi import ASGIApp, RequestAuth
from kubesched.serving.authn import DelegatingAuthenticator, TokenReviewer
from kubesched.serving.authz import DelegatingAuthorizer
from kubesched.serving.certs import CertKeyPair, default_hosts, load_pair, self_signed_pair
from kubesched.serving.options import ServingOptions
from kubesched.serving.server import BackgroundServer, server_config
from kubesched.serving.tls import server_context

__all__ = ["SecureServing", "serving_pair"]

log = logging.getLogger(__name__)

AUTH_CONFIGMAP = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"


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

    def start(self, sock: socket.socket | None = None) -> SecureServing:
        """Serve (on `sock` if given: a socket already listening on the address)."""
        self.server.start(sock=sock)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self.server.stop(timeout)
        for client in self._clients:
            client.close()
        self._clients.clear()
