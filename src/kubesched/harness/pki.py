"""Certificates as files, for the servers and clients tests start: a CA that issues client and
serving certificates, and the test control plane's PKI. `serving.certs` makes every certificate."""

from __future__ import annotations

from pathlib import Path
from typing import Self

from kubesched.serving.certs import CertificateAuthority, CertKeyPair, rsa_private_key_pem

__all__ = ["TestCA", "write_control_plane_pki"]


class TestCA:
    """A CA written to `directory`, issuing client certificates (chosen CN and O) and serving ones."""

    __test__ = False

    def __init__(self, directory: Path, name: str = "test-client-ca") -> None:
        self.directory = directory
        self.authority = CertificateAuthority.create(name)
        self.ca_file = directory / f"{name}.crt"
        self.ca_file.write_bytes(self.authority.cert_pem)

    @classmethod
    def from_files(cls, cert_file: Path, key_file: Path, directory: Path) -> Self:
        """An existing CA (e.g. a test control plane's), to sign client certificates with."""
        ca = cls.__new__(cls)
        ca.directory = directory
        ca.authority = CertificateAuthority.from_pem(cert_file.read_bytes(), key_file.read_bytes())
        ca.ca_file = cert_file
        return ca

    def client(self, cn: str, *groups: str) -> tuple[Path, Path]:
        """(cert file, key file) of a client certificate for user `cn` in `groups`."""
        return _write(self.directory, cn, self.authority.issue(cn, organizations=groups, client=True))

    def server(self, cn: str, *hosts: str) -> tuple[Path, Path]:
        """(cert file, key file) of a serving certificate for `hosts` (IP addresses or DNS names)."""
        return _write(self.directory, cn, self.authority.issue(cn, hosts=hosts))


#: What clients inside and outside a cluster call the API server.
APISERVER_HOSTS = (
    "127.0.0.1",
    "10.0.0.1",
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


def write_control_plane_pki(pki: Path) -> None:
    """`ca.crt`/`ca.key`, the API server's `apiserver.crt`/`.key` signed by it, and `sa.key` (RSA),
    which signs and verifies service-account tokens.

    Our own CA, rather than the API server's self-signed fallback, means the CA file exists before
    the server starts, so clients verify TLS and the kubeconfig needs no insecure-skip-tls-verify.
    """
    pki.mkdir(parents=True, exist_ok=True)
    ca = CertificateAuthority.create("kubesched-test-ca")
    (pki / "ca.crt").write_bytes(ca.cert_pem)
    _write_private(pki / "ca.key", ca.key_pem)
    _write(pki, "apiserver", ca.issue("kube-apiserver", hosts=APISERVER_HOSTS))
    _write_private(pki / "sa.key", rsa_private_key_pem())


def _write(directory: Path, stem: str, pair: CertKeyPair) -> tuple[Path, Path]:
    cert_file, key_file = directory / f"{stem}.crt", directory / f"{stem}.key"
    cert_file.write_bytes(pair.cert_pem)
    _write_private(key_file, pair.key_pem)
    return cert_file, key_file


def _write_private(path: Path, pem: bytes) -> None:
    path.write_bytes(pem)
    path.chmod(0o600)
