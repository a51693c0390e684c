"""kube-scheduler's command line for `kubesched run`, so a Deployment moves between them by image.

Honoured, with upstream's names and meanings: `--config`, `--kubeconfig`, `--master`,
`--kube-api-qps`, `--kube-api-burst`, `--kube-api-content-type` (JSON only), the `--leader-elect`
family, `--v`, `--write-config-to`, and the serving flags (`kubesched.serving.options`). A flag given
on the command line wins over the config file. Upstream differs in one place: with `--config` it
ignores `--kubeconfig` and `--kube-api-*` (deprecated there); kubesched applies them, since a flag a
user typed should not be dropped silently.

`--feature-gates` is taken as `kubesched.config.features` describes. kube-scheduler flags kubesched
cannot honour (profiling endpoints, metric filters, other log formats, request-header
authentication, SNI certificates, ...) are accepted by the parser only to stop the command with one
line naming the flag.
"""

from __future__ import annotations

import argparse

import msgspec

from kubesched import __version__
from kubesched.cli._flags import add_bool_flag, add_feature_gates_flag, add_unsupported, go_duration
from kubesched.config import FeatureGates, KubeSchedulerConfiguration, format_duration, validate
from kubesched.config.plugin_catalog import PluginCatalog
from kubesched.errors import FieldErrors, InputError

__all__ = ["add_kube_scheduler_flags", "apply_flags", "log_level"]

_FALSE = ("false", "False", "FALSE", "0", "f", "F")
JSON_CONTENT_TYPE = "application/json"


def add_kube_scheduler_flags(parser: argparse.ArgumentParser) -> None:
    """The connection, leader-election and logging flags of kube-scheduler, plus the unsupported ones."""
    c = parser.add_argument_group("connection (as kube-scheduler; wins over the config file)")
    c.add_argument("--master", metavar="URL", help="API server address, overriding the kubeconfig's")
    c.add_argument("--kube-api-qps", type=float, metavar="QPS", help="clientConnection.qps")
    c.add_argument("--kube-api-burst", type=int, metavar="N", help="clientConnection.burst")
    c.add_argument(
        "--kube-api-content-type", metavar="TYPE", help="clientConnection.contentType (application/json only)"
    )
    le = parser.add_argument_group("leader election (as kube-scheduler; wins over the config file)")
    add_bool_flag(le, "--leader-elect", "leaderElection.leaderElect")
    le.add_argument(
        "--leader-elect-lease-duration",
        type=go_duration,
        metavar="DURATION",
        help="leaderElection.leaseDuration",
    )
    le.add_argument(
        "--leader-elect-renew-deadline",
        type=go_duration,
        metavar="DURATION",
        help="leaderElection.renewDeadline",
    )
    le.add_argument(
        "--leader-elect-retry-period", type=go_duration, metavar="DURATION", help="leaderElection.retryPeriod"
    )
    le.add_argument(
        "--leader-elect-resource-lock", metavar="KIND", help="leases (the only lock kubesched takes)"
    )
    le.add_argument("--leader-elect-resource-name", metavar="NAME", help="leaderElection.resourceName")
    le.add_argument(
        "--leader-elect-resource-namespace", metavar="NS", help="leaderElection.resourceNamespace"
    )
    g = parser.add_argument_group("logging and output (as kube-scheduler)")
    g.add_argument("-v", "--v", type=int, metavar="N", help="log verbosity: 4 or more logs at debug level")
    g.add_argument(
        "--logging-format",
        choices=("text", "json"),
        default="text",
        help="text lines (default) or one JSON object per line",
    )
    g.add_argument(
        "--write-config-to", metavar="FILE", help="write the effective configuration to FILE and exit"
    )
    add_feature_gates_flag(g)
    for flag, reason in (
        ("--vmodule", "per-file verbosity is a klog feature"),
        ("--log-text-info-buffer-size", "a klog feature"),
        ("--log-json-info-buffer-size", "a klog feature"),
        ("--log-json-split-stream", "kubesched logs text lines"),
        ("--show-hidden-metrics-for-version", "kubesched has no hidden metrics"),
        ("--allow-metric-labels", "metric label filtering is not implemented"),
        ("--allow-metric-labels-manifest", "metric label filtering is not implemented"),
        ("--disabled-metrics", "metric filtering is not implemented"),
        ("--requestheader-client-ca-file", "request-header (front proxy) authentication is not implemented"),
        ("--requestheader-allowed-names", "request-header (front proxy) authentication is not implemented"),
        (
            "--requestheader-username-headers",
            "request-header (front proxy) authentication is not implemented",
        ),
        ("--requestheader-group-headers", "request-header (front proxy) authentication is not implemented"),
        (
            "--requestheader-extra-headers-prefix",
            "request-header (front proxy) authentication is not implemented",
        ),
        ("--requestheader-uid-headers", "request-header (front proxy) authentication is not implemented"),
        ("--tls-sni-cert-key", "SNI certificates are not implemented"),
        ("--pod-max-in-unschedulable-pods-duration", "removed upstream; use the config file"),
        ("--emulated-version", "kubesched emulates v1.37 only"),
        ("--min-compatibility-version", "kubesched emulates v1.37 only"),
        ("--tls-curve-preferences", "the TLS library chooses the curves"),
    ):
        add_unsupported(g, flag, reason)
    for flag, reason in (
        ("--profiling", "no /debug/pprof endpoint"),
        ("--contention-profiling", "no /debug/pprof endpoint"),
        ("--permit-port-sharing", "SO_REUSEPORT is not used"),
        ("--permit-address-sharing", "SO_REUSEADDR sharing is not used"),
        ("--log-text-split-stream", "one stream (stderr)"),
    ):
        add_unsupported(g, flag, reason, takes_value=False, accept=_FALSE)
    # Honoured trivially: kubesched speaks HTTP/1.1 only and flushes every log line.
    g.add_argument("--http2-max-streams-per-connection", type=int, help=argparse.SUPPRESS)
    g.add_argument("--disable-http2-serving", nargs="?", const=True, help=argparse.SUPPRESS)
    g.add_argument(
        "--version", action="version", version=f"kubesched {__version__}", help="print the version"
    )
    g.add_argument("--log-flush-frequency", type=go_duration, help=argparse.SUPPRESS)


def log_level(args: argparse.Namespace) -> str:
    """`--log-level` when given, else from `--v` (klog levels 4+ are debug detail), else info."""
    if args.log_level:
        return str(args.log_level)
    if args.v is not None and args.v >= 4:
        return "debug"
    return "info"


def apply_flags(
    cfg: KubeSchedulerConfiguration, args: argparse.Namespace, registry: PluginCatalog, gates: FeatureGates
) -> KubeSchedulerConfiguration:
    """The config with the flags given on the command line written over it, then validated again."""
    cc = cfg.client_connection
    le = cfg.leader_election
    assert cc is not None and le is not None  # filled in by defaulting
    if args.kube_api_content_type is not None and args.kube_api_content_type != JSON_CONTENT_TYPE:
        raise InputError(
            f"kubesched talks {JSON_CONTENT_TYPE} only, not {args.kube_api_content_type!r}",
            source="--kube-api-content-type",
        )
    if args.leader_elect_resource_lock is not None and args.leader_elect_resource_lock != "leases":
        raise InputError("kubesched takes a Lease only: use leases", source="--leader-elect-resource-lock")
    cc_changes = {
        "kubeconfig": args.kubeconfig,
        "qps": args.kube_api_qps,
        "burst": args.kube_api_burst,
        "content_type": args.kube_api_content_type,
    }
    le_changes = {
        "leader_elect": args.leader_elect,
        "lease_duration": _duration(args.leader_elect_lease_duration),
        "renew_deadline": _duration(args.leader_elect_renew_deadline),
        "retry_period": _duration(args.leader_elect_retry_period),
        "resource_lock": args.leader_elect_resource_lock,
        "resource_name": args.leader_elect_resource_name,
        "resource_namespace": args.leader_elect_resource_namespace,
    }
    cc = msgspec.structs.replace(cc, **{k: v for k, v in cc_changes.items() if v is not None})
    le = msgspec.structs.replace(le, **{k: v for k, v in le_changes.items() if v is not None})
    cfg = msgspec.structs.replace(cfg, client_connection=cc, leader_election=le)
    try:
        validate(cfg, registry, gates)
    except FieldErrors as exc:
        raise exc.at(source=f"{args.config} with the command-line flags") from None
    return cfg


def _duration(seconds: float | None) -> str | None:
    return None if seconds is None else format_duration(seconds)
