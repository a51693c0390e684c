"""The pure parts of secure serving: the answer cache, always-allowed paths, identities from
certificates, self-signed certificates and the TLS settings upstream's flags name."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from cryptography import x509

from kubesched.errors import InputError
from kubesched.serving.authn import ANONYMOUS, DelegatingAuthenticator, Unauthenticated, user_from_certificate
from kubesched.serving.authz import DelegatingAuthorizer, PathMatcher
from kubesched.serving.cache import TTLCache
from kubesched.serving.certs import CertificateAuthority, default_hosts, load_pair, self_signed_pair
from kubesched.serving.tls import server_context


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_cache_entries_expire_after_their_ttl() -> None:
    clock = Clock()
    cache: TTLCache[str, int] = TTLCache(clock=clock)
    cache.put("a", 1, 10.0)
    clock.now = 9.9
    assert cache.get("a") == 1
    clock.now = 10.0
    assert cache.get("a") is None
    assert len(cache) == 0


def test_cache_stays_bounded_dropping_the_least_recently_used() -> None:
    cache: TTLCache[int, int] = TTLCache(max_entries=3)
    for i in range(3):
        cache.put(i, i, 60)
    assert cache.get(0) == 0  # 0 is now the most recent; 1 the least
    for i in range(3, 1000):
        cache.put(i, i, 60)
        assert len(cache) <= 3
    assert cache.get(1) is None and cache.get(999) == 999


@pytest.mark.parametrize(
    "patterns,path,allowed",
    [
        (["/healthz", "/readyz", "/livez"], "/healthz", True),
        (["/healthz", "/readyz", "/livez"], "/metrics", False),
        (["/healthz", "/readyz", "/livez"], "/healthz/ping", False),
        (["/healthz*"], "/healthz/ping", True),
        (["/healthz*"], "/healthzz", True),
        (["/debug/*"], "/debug", False),
        ([], "/healthz", False),
    ],
)
def test_always_allowed_paths_match_exactly_or_by_a_trailing_star(
    patterns: list[str], path: str, allowed: bool
) -> None:
    assert PathMatcher(patterns).matches(path) is allowed


@pytest.mark.parametrize("pattern", ["/a*b", "/*/x", "/**"])
def test_a_star_anywhere_but_the_end_is_bad_input(pattern: str) -> None:
    with pytest.raises(InputError, match=r"--authorization-always-allow-paths: .*only a trailing"):
        PathMatcher([pattern])


def test_authorizer_without_an_api_server_allows_only_listed_paths_and_groups() -> None:
    authz = DelegatingAuthorizer(None)
    assert authz.authorize(ANONYMOUS, "get", "/readyz").allowed
    assert not authz.authorize(ANONYMOUS, "get", "/metrics").allowed
    admin = user_from_certificate(
        {"subject": ((("organizationName", "system:masters"),), (("commonName", "root"),))}
    )
    assert admin is not None and authz.authorize(admin, "get", "/metrics").allowed


def test_identity_of_a_certificate_is_cn_and_organisations() -> None:
    cert = {
        "subject": (
            (("organizationName", "team-a"),),
            (("organizationName", "monitoring"),),
            (("commonName", "prometheus"),),
        )
    }
    user = user_from_certificate(cert)
    assert user is not None
    assert user.name == "prometheus"
    assert user.groups == ("team-a", "monitoring", "system:authenticated")
    assert user_from_certificate({"subject": ((("organizationName", "x"),),)}) is None


@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Bearer", "Bearer  ", "token abc"])
def test_credentials_that_are_not_a_bearer_token_are_refused_not_ignored(header: str) -> None:
    authn = DelegatingAuthenticator(None)
    with pytest.raises(Unauthenticated):
        authn.authenticate({"authorization": header}, None)


def test_no_credentials_is_anonymous_unless_anonymous_is_off() -> None:
    assert DelegatingAuthenticator(None).authenticate({}, None) == ANONYMOUS
    with pytest.raises(Unauthenticated):
        DelegatingAuthenticator(None, allow_anonymous=False).authenticate({}, None)


def test_a_token_with_no_api_server_to_review_it_is_unauthenticated() -> None:
    with pytest.raises(Unauthenticated):
        DelegatingAuthenticator(None).authenticate({"authorization": "Bearer abc"}, None)


def test_self_signed_pair_names_the_hosts_and_carries_its_ca() -> None:
    pair = self_signed_pair(["localhost", "127.0.0.1", "kubesched.kube-system.svc"])
    certs = x509.load_pem_x509_certificates(pair.cert_pem)
    assert len(certs) == 2
    leaf, ca = certs
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(san.get_values_for_type(x509.DNSName)) == {"localhost", "kubesched.kube-system.svc"}
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert leaf.issuer == ca.subject
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert pair.origin == "self-signed in memory"


def test_a_client_certificate_names_its_user_and_groups_and_a_ca_read_back_from_pem_signs_it() -> None:
    made = CertificateAuthority.create("test-ca")
    ca = CertificateAuthority.from_pem(made.cert_pem, made.key_pem)
    cert = x509.load_pem_x509_certificate(ca.issue("alice", organizations=["team-a"], client=True).cert_pem)
    cert.verify_directly_issued_by(made.cert)
    assert cert.subject.rfc4514_string() == "CN=alice,O=team-a"
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]
    with pytest.raises(x509.ExtensionNotFound):
        cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)


def test_default_hosts_add_a_specific_bind_address_only() -> None:
    assert "10.1.2.3" in default_hosts("10.1.2.3")
    assert "0.0.0.0" not in default_hosts("0.0.0.0")
    assert {"localhost", "127.0.0.1"} <= set(default_hosts("0.0.0.0"))


def test_server_context_serves_the_pair_and_checks_client_certificates_only_when_asked(
    tmp_path: Path,
) -> None:
    pair = self_signed_pair(["localhost"])
    ctx = server_context(pair)
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    assert ctx.verify_mode == ssl.CERT_NONE
    ca = pair.cert_pem.split(b"-----END CERTIFICATE-----")[1] + b"-----END CERTIFICATE-----\n"
    ctx = server_context(pair, min_version="VersionTLS13", client_ca_pem=ca.strip().decode())
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_3
    assert ctx.verify_mode == ssl.CERT_OPTIONAL


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"min_version": "TLS1.2"}, "--tls-min-version: unknown version 'TLS1.2'"),
        ({"cipher_suites": ["TLS_RSA_WITH_RC4_128_SHA"]}, "--tls-cipher-suites: unknown or insecure suite"),
        ({"client_ca_pem": "not a certificate"}, "--client-ca-file: cannot load the client CA"),
    ],
)
def test_bad_tls_settings_are_one_line_naming_the_flag(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InputError) as err:
        server_context(self_signed_pair(["localhost"]), **kwargs)  # type: ignore[arg-type]
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_unreadable_or_wrong_pem_files_name_the_file(tmp_path: Path) -> None:
    pair = self_signed_pair(["localhost"])
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    assert load_pair(str(cert), str(key)).cert_pem == pair.cert_pem
    with pytest.raises(InputError, match=f"--tls-private-key-file {tmp_path}/missing.key: cannot read"):
        load_pair(str(cert), str(tmp_path / "missing.key"))
    with pytest.raises(InputError, match=r"--tls-private-key-file .*: not a PEM private key"):
        load_pair(str(cert), str(cert))
    junk = tmp_path / "junk.crt"
    junk.write_text("junk")
    with pytest.raises(InputError, match=r"--tls-cert-file .*: not a PEM certificate"):
        load_pair(str(junk), str(key))
