"""A throw-away CA and client certificates for TLS tests (EC keys: instant)."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["TestCA"]


class TestCA:
    """A CA that signs client certificates with a chosen CN and O, written to `directory`."""

    __test__ = False

    def __init__(self, directory: Path, name: str = "test-client-ca") -> None:
        self.directory = directory
        self.key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(self.name)
            .issuer_name(self.name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        self.ca_file = directory / f"{name}.crt"
        self.ca_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    @classmethod
    def from_files(cls, cert_file: Path, key_file: Path, directory: Path) -> TestCA:
        """An existing CA (e.g. a test control plane's), to sign client certificates with."""
        ca = cls.__new__(cls)
        ca.directory = directory
        ca.cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
        key = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey)
        ca.key = key
        ca.name = ca.cert.subject
        ca.ca_file = cert_file
        return ca

    def client(self, cn: str, *groups: str) -> tuple[Path, Path]:
        """(cert file, key file) of a client certificate for user `cn` in `groups`."""
        return self._issue(cn, groups, x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), [])

    def server(self, cn: str, *hosts: str) -> tuple[Path, Path]:
        """(cert file, key file) of a serving certificate for `hosts` (IP addresses or DNS names)."""
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        return self._issue(cn, (), x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), names)

    def _issue(
        self, cn: str, groups: tuple[str, ...], usage: x509.ExtendedKeyUsage, names: list[x509.GeneralName]
    ) -> tuple[Path, Path]:
        key = ec.generate_private_key(ec.SECP256R1())
        attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attrs))
            .issuer_name(self.name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(usage, critical=False)
        )
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        cert_file, key_file = self.directory / f"{cn}.crt", self.directory / f"{cn}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        return cert_file, key_file
