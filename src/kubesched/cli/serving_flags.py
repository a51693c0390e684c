"""kube-scheduler's secure-serving, authentication and authorization flags (see serving.options)."""

from __future__ import annotations

import argparse

from kubesched.cli._flags import add_bool_flag, go_duration, string_list
from kubesched.errors import InputError
from kubesched.serving.authz import PathMatcher
from kubesched.serving.options import DEFAULT_ALWAYS_ALLOW_PATHS, ServingOptions

__all__ = ["add_serving_flags", "serving_options"]


def add_serving_flags(parser: argparse.ArgumentParser, *, default_port: int = 10259) -> None:
    """Register upstream's secure-serving, authentication and authorization flags."""
    g = parser.add_argument_group("secure serving (as kube-scheduler)")
    g.add_argument(
        "--bind-address", default="0.0.0.0", metavar="IP", help="address of the HTTPS port (default 0.0.0.0)"
    )
    g.add_argument(
        "--secure-port",
        type=int,
        default=default_port,
        metavar="PORT",
        help=f"HTTPS port for /healthz, /livez, /readyz, /metrics (default {default_port}; 0 serves none)",
    )
    g.add_argument(
        "--cert-dir", metavar="DIR", help="keep the self-signed certificate here (default: in memory only)"
    )
    g.add_argument("--tls-cert-file", metavar="FILE", help="serving certificate (PEM, may hold the chain)")
    g.add_argument("--tls-private-key-file", metavar="FILE", help="private key of --tls-cert-file (PEM)")
    g.add_argument(
        "--tls-min-version",
        default="VersionTLS12",
        metavar="VERSION",
        help="VersionTLS12 (default) or VersionTLS13",
    )
    g.add_argument(
        "--tls-cipher-suites",
        type=string_list,
        default=[],
        metavar="LIST",
        help="Go cipher-suite names, comma-separated",
    )
    a = parser.add_argument_group("delegated authentication (as kube-scheduler)")
    a.add_argument(
        "--authentication-kubeconfig",
        metavar="PATH",
        help="API server for TokenReviews (default: the scheduler's own)",
    )
    a.add_argument(
        "--authentication-token-webhook-cache-ttl",
        type=go_duration,
        default=10.0,
        metavar="DURATION",
        help="cache TokenReview answers (default 10s)",
    )
    a.add_argument(
        "--client-ca-file",
        metavar="FILE",
        help="authenticate client certificates signed by this CA (CN = user, O = groups)",
    )
    add_bool_flag(
        a,
        "--authentication-skip-lookup",
        "do not look the client CA up in kube-system/extension-apiserver-authentication",
    )
    add_bool_flag(
        a, "--authentication-tolerate-lookup-failure", "start even if that lookup fails (default true)"
    )
    z = parser.add_argument_group("delegated authorization (as kube-scheduler)")
    z.add_argument(
        "--authorization-kubeconfig",
        metavar="PATH",
        help="API server for SubjectAccessReviews (default: the scheduler's own)",
    )
    z.add_argument(
        "--authorization-always-allow-paths",
        type=string_list,
        default=list(DEFAULT_ALWAYS_ALLOW_PATHS),
        metavar="LIST",
        help="paths served without authorization (default /healthz,/readyz,/livez)",
    )
    z.add_argument(
        "--authorization-webhook-cache-authorized-ttl",
        type=go_duration,
        default=10.0,
        metavar="DURATION",
        help="cache allowed answers (default 10s)",
    )
    z.add_argument(
        "--authorization-webhook-cache-unauthorized-ttl",
        type=go_duration,
        default=10.0,
        metavar="DURATION",
        help="cache denied answers (default 10s)",
    )


def serving_options(args: argparse.Namespace) -> ServingOptions:
    """The flags as ServingOptions; InputError (naming the flag) for a value that cannot work."""
    if not 0 <= args.secure_port <= 65535:
        raise InputError("must be between 0 and 65535", source="--secure-port")
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        raise InputError("--tls-cert-file and --tls-private-key-file go together", source="--tls-cert-file")
    PathMatcher(
        args.authorization_always_allow_paths
    )  # a bad pattern is bad input now, not at the first request
    return ServingOptions(
        bind_address=args.bind_address,
        secure_port=args.secure_port,
        cert_dir=args.cert_dir,
        tls_cert_file=args.tls_cert_file,
        tls_private_key_file=args.tls_private_key_file,
        tls_min_version=args.tls_min_version,
        tls_cipher_suites=tuple(args.tls_cipher_suites),
        authentication_kubeconfig=args.authentication_kubeconfig,
        authentication_cache_ttl=args.authentication_token_webhook_cache_ttl,
        authentication_skip_lookup=bool(args.authentication_skip_lookup),
        authentication_tolerate_lookup_failure=args.authentication_tolerate_lookup_failure is not False,
        client_ca_file=args.client_ca_file,
        authorization_kubeconfig=args.authorization_kubeconfig,
        always_allow_paths=tuple(args.authorization_always_allow_paths),
        allow_ttl=args.authorization_webhook_cache_authorized_ttl,
        deny_ttl=args.authorization_webhook_cache_unauthorized_ttl,
    )
