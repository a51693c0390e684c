"""The serving certificate: PEM files given by flags, or a self-signed pair made in memory.

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

from kubesched.errors import InputError

__all__ = ["CertKeyPair", "default_hosts", "load_pair", "pem_paths", "self_signed_pair"]

#: A year, as upstream's self-signed serving certificates; the process restarts long before.
SELF_SIGNED_VALIDITY = datetime.timedelta(days=365)


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
    the chain) while the leaf carries the names. EC P-256 keys: generated in a millisecond.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(hours=1), now + SELF_SIGNED_VALIDITY
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{common_name}-ca@{int(now.timestamp())}")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(h for h in hosts if h):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    leaf = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{common_name}@{int(now.timestamp())}")])
        )
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return CertKeyPair(leaf.public_bytes(pem) + ca.public_bytes(pem), key_pem, "self-signed in memory")


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
