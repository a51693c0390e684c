"""The server's SSL context, from kube-scheduler's `--tls-*` flags.

`--tls-min-version` and `--tls-cipher-suites` take Go's names (`VersionTLS12`,
`TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`), so a container spec written for kube-scheduler works
unchanged; they are translated to OpenSSL's. As in Go, the cipher-suite list constrains TLS 1.2 and
below; TLS 1.3 suites are not configurable. With a client CA, a client certificate is requested but
not required (other callers authenticate with a token), and one that is sent must verify.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence

from kubesched.errors import InputError
from kubesched.serving.certs import CertKeyPair, pem_paths

__all__ = ["CIPHER_SUITES", "TLS_VERSIONS", "server_context"]

TLS_VERSIONS = {
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}

#: Go's TLS 1.2 cipher-suite names -> OpenSSL's (the TLS 1.3 ones Go accepts and ignores map to None).
CIPHER_SUITES: dict[str, str | None] = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_AES_128_GCM_SHA256": None,
    "TLS_AES_256_GCM_SHA384": None,
    "TLS_CHACHA20_POLY1305_SHA256": None,
}


def server_context(
    pair: CertKeyPair,
    *,
    min_version: str = "VersionTLS12",
    cipher_suites: Sequence[str] = (),
    client_ca_pem: str | None = None,
    client_ca_origin: str = "--client-ca-file",
    require_client_cert: bool = False,
) -> ssl.SSLContext:
    """An SSL context serving `pair`; InputError (naming the flag) for a bad version, suite or file."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    version = TLS_VERSIONS.get(min_version)
    if version is None:
        raise InputError(
            f"unknown version {min_version!r} (one of {', '.join(TLS_VERSIONS)})", source="--tls-min-version"
        )
    ctx.minimum_version = version
    if cipher_suites:
        unknown = [s for s in cipher_suites if s not in CIPHER_SUITES]
        if unknown:
            raise InputError(f"unknown or insecure suite {unknown[0]!r}", source="--tls-cipher-suites")
        openssl = [n for n in (CIPHER_SUITES[s] for s in cipher_suites) if n]
        if openssl:
            try:
                ctx.set_ciphers(":".join(openssl))
            except ssl.SSLError as exc:
                raise InputError(f"no usable suite: {exc}", source="--tls-cipher-suites") from None
    with pem_paths(pair) as (cert_path, key_path):
        try:
            ctx.load_cert_chain(cert_path, key_path)
        except ssl.SSLError as exc:
            raise InputError(
                f"certificate and key do not load: {exc.reason or exc}", source=pair.origin
            ) from None
    if client_ca_pem:
        try:
            ctx.load_verify_locations(cadata=client_ca_pem)
        except ssl.SSLError as exc:
            raise InputError(
                f"cannot load the client CA: {exc.reason or exc}", source=client_ca_origin
            ) from None
        ctx.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_OPTIONAL
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx
