"""The serving certificate: PEM files given by flags, or a self-signed pair made in memory; and the
one maker of certificates (`CertificateAuthority`), which the test harness uses too.

kube-scheduler, given no `--tls-cert-file`, makes a self-signed certificate in memory at startup
(a CA and a serving certificate for `localhost`, the bind address and the host name) and writes
nothing. Python's `ssl` module loads certificates only from paths, so the generated PEM is handed to
it through an anonymous in-memory file (`memfd`): no disk, and a read-only root filesystem is fine.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import socket
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Self

from kubesched.errors import InputError

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

__all__ = [
    "CertKeyPair",
    "CertificateAuthority",
    "default_hosts",
    "load_pair",
    "pem_paths",
    "rsa_private_key_pem",
    "self_signed_pair",
]

#: A year, as upstream's self-signed serving certificates; the process restarts long before.
SELF_SIGNED_VALIDITY = datetime.timedelta(days=365)
#: Certificates start an hour in the past, so a peer whose clock is a little behind accepts them.
_SKEW = datetime.timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class CertKeyPair:
    """PEM bytes of a certificate chain and its private key."""

    cert_pem: bytes
    key_pem: bytes
    #: Where it came from, for log lines ("self-signed in memory" or the cert file).
    origin: str


def load_pair(cert_file: str, key_file: str) -> CertKeyPair:
    """Read a certificate and key from PEM files; InputError naming the file that cannot be read."""
    data: list[bytes] = []
    for path, flag in ((cert_file, "--tls-cert-file"), (key_file, "--tls-private-key-file")):
        try:
            data.append(Path(path).read_bytes())
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", source=f"{flag} {path}") from None
    if b"-----BEGIN" not in data[0]:
        raise InputError("not a PEM certificate", source=f"--tls-cert-file {cert_file}")
    if b"PRIVATE KEY-----" not in data[1]:
        raise InputError("not a PEM private key", source=f"--tls-private-key-file {key_file}")
    return CertKeyPair(data[0], data[1], cert_file)


def self_signed_pair(hosts: Iterable[str], *, common_name: str = "kubesched") -> CertKeyPair:
    """A CA and a serving certificate signed by it, for `hosts` (DNS names or IP addresses).

    Two certificates, as upstream makes them, so a client may pin the CA (the second PEM block of
    the chain) while the leaf carries the names.
    """
    stamp = int(datetime.datetime.now(datetime.UTC).timestamp())
    ca = CertificateAuthority.create(f"{common_name}-ca@{stamp}")
    leaf = ca.issue(f"{common_name}@{stamp}", hosts=hosts)
    return CertKeyPair(leaf.cert_pem + ca.cert_pem, leaf.key_pem, "self-signed in memory")


class CertificateAuthority:
    """A CA certificate and key that sign serving and client certificates: the one certificate maker.

    The scheduler's self-signed serving pair, the test control plane's PKI and the certificates
    tests present are all made here, so they share one set of extensions. EC P-256 keys: generated
    in a millisecond. `cryptography` is imported on first use, not when serving is imported.
    """

    def __init__(self, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
        self.cert = cert
        self.key = key

    @classmethod
    def create(cls, common_name: str, *, validity: datetime.timedelta = SELF_SIGNED_VALIDITY) -> Self:
        """A new self-signed CA named `common_name`, valid from an hour ago (clock skew) for `validity`."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        cert = (
            _builder(name, name, key.public_key(), validity, ca=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(cert, key)

    @classmethod
    def from_pem(cls, cert_pem: bytes, key_pem: bytes) -> Self:
        """An existing CA (e.g. a cluster's), to issue more certificates with."""
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec, rsa

        key = serialization.load_pem_private_key(key_pem, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
            raise InputError(f"a CA key must be EC or RSA, not {type(key).__name__}")
        return cls(x509.load_pem_x509_certificate(cert_pem), key)

    @property
    def cert_pem(self) -> bytes:
        return _cert_pem(self.cert)

    @property
    def key_pem(self) -> bytes:
        return _private_pem(self.key)

    def issue(
        self,
        common_name: str,
        *,
        hosts: Iterable[str] = (),
        organizations: Iterable[str] = (),
        client: bool = False,
        validity: datetime.timedelta = SELF_SIGNED_VALIDITY,
    ) -> CertKeyPair:
        """A certificate signed by this CA: for serving `hosts` (DNS names or IP addresses), or with
        `client`, for a client whose user is `common_name` and whose groups are `organizations` (as
        Kubernetes reads a client certificate)."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        builder = (
            _builder(x509.Name(attrs), self.cert.subject, key.public_key(), validity, ca=False)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False
            )
        )
        names: list[x509.GeneralName] = []
        for host in dict.fromkeys(h for h in hosts if h):
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        origin = f"issued by {self.cert.subject.rfc4514_string()}"
        return CertKeyPair(_cert_pem(cert), _private_pem(key), origin)


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    validity: datetime.timedelta,
    *,
    ca: bool,
) -> x509.CertificateBuilder:
    """What a CA and its leaves share: names, key, serial, validity, constraints and key usage
    (a CA signs certificates and CRLs; a leaf signs and enciphers, as client-go's leaves do)."""
    from cryptography import x509

    start = datetime.datetime.now(datetime.UTC) - _SKEW
    usage = x509.KeyUsage(not ca, False, not ca, False, False, ca, ca, False, False)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + _SKEW + validity)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(usage, critical=True)
    )


def rsa_private_key_pem(bits: int = 2048) -> bytes:
    """A new RSA key (PKCS#8 PEM), for signers that want RSA, such as service-account token keys."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    return _private_pem(rsa.generate_private_key(public_exponent=65537, key_size=bits))


def _cert_pem(cert: x509.Certificate) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)


def _private_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def default_hosts(bind_address: str) -> list[str]:
    """Names a self-signed certificate is made for, as upstream: localhost, loopback, bind address, host."""
    hosts = ["localhost", "127.0.0.1", "::1", socket.gethostname()]
    if bind_address not in ("", "0.0.0.0", "::"):
        hosts.append(bind_address)
    return hosts


@contextlib.contextmanager
def pem_paths(pair: CertKeyPair) -> Iterator[tuple[str, str]]:
    """Paths reading as the pair's certificate and key, for `ssl.load_cert_chain`, valid in the block.

    Linux: anonymous memfds read through `/proc/self/fd/N`, so the key never touches a filesystem
    and a read-only root filesystem is fine. Elsewhere: private temporary files, removed afterwards.
    """
    with contextlib.ExitStack() as stack:
        paths = [stack.enter_context(_memory_file(data)) for data in (pair.cert_pem, pair.key_pem)]
        yield paths[0], paths[1]


@contextlib.contextmanager
def _memory_file(data: bytes) -> Iterator[str]:
    if hasattr(os, "memfd_create") and Path("/proc/self/fd").is_dir():
        fd = os.memfd_create("kubesched-tls", 0)
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    fd, path = tempfile.mkstemp(prefix="kubesched-tls-")  # pragma: no cover - not Linux
    try:  # pragma: no cover
        os.write(fd, data)
        os.close(fd)
        yield path
    finally:  # pragma: no cover
        os.unlink(path)
